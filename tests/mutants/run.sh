#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/mutants/run.sh - how many plausible planted bugs does the suite catch?
#
# Each entry of tests/mutants/mutants.txt is one small bug a maintainer could
# write (an inverted test, an off-by-one, a missing call, the wrong device).
# For each, this script plants it in a scratch copy of the tree, builds, runs
# the tests that need no GPU, and records whether a test failed (caught) or
# every test passed (survived).  The working tree is never modified.
#
# Not run by CI: one incremental build and one test run per mutant take a
# few minutes each on a small machine.  Run it by hand after changing the
# loader, the CPU plugin or the tests:
#
#   tests/mutants/run.sh              every mutant (entries marked
#                                     `equivalent:` are listed, not run)
#   tests/mutants/run.sh ID...        only these (equivalent ones too)
#   tests/mutants/run.sh --baseline   no mutant: the suite must pass
#   tests/mutants/run.sh --check      only check that every entry applies
#
# Environment: MUTANTS_DIR (scratch root, default build-mutants: src/ is the
# copy of the tree, build/ its RelWithDebInfo build, logs/ one log per
# mutant), JOBS (default 2), CTEST_TIMEOUT (seconds per test, default 60),
# CTEST_EXCLUDE (a ctest -E regex; default bad_input.opencl-*: the bad-input
# table on OpenCL takes minutes, and its rows also run on cpu and cpu-noalloc;
# set it empty to run everything).
#
# Exit status: 0 when every entry applied and built; 1 when an entry no
# longer applies (its snippet is not found exactly once) or does not build;
# 2 on a usage error or when the unmutated tree fails to build or pass.
set -uo pipefail

root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel) || exit 2
cd "$root"
list=tests/mutants/mutants.txt
dir=$(realpath -m "${MUTANTS_DIR:-build-mutants}")
src=$dir/src
bld=$dir/build
logs=$dir/logs
jobs=${JOBS:-2}
ctest_timeout=${CTEST_TIMEOUT:-60}
ctest_exclude=${CTEST_EXCLUDE-'^bad_input\.opencl'}

mode=run
want=()
for a in "$@"; do
    case $a in
    --baseline) mode=baseline ;;
    --check) mode=check ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $a" >&2; exit 2 ;;
    *) want+=("$a") ;;
    esac
done

# ------------------------------------------------------------ the list
ids=() files=() olds=() news=() whys=() equivs=()
parse_list() {
    local id="" file="" old="" new="" why="" equiv="" line key val n=0
    flush() {
        if [ -n "$id" ]; then
            if [ -z "$file" ] || [ -z "$old" ]; then
                echo "run.sh: $list: entry $id lacks file: or old:" >&2
                exit 2
            fi
            ids+=("$id") files+=("$file") olds+=("$old") news+=("$new") whys+=("$why") equivs+=("$equiv")
        fi
        id="" file="" old="" new="" why="" equiv=""
    }
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        case $line in
        '#'* | '') [ -z "$line" ] && flush; continue ;;
        esac
        key=${line%%:*}
        val=${line#*:}
        val=${val#"${val%%[! ]*}"} # leading spaces only: the snippet starts at its first character
        case $key in
        id) flush; id=$val ;;
        file) file=$val ;;
        old) old=$val ;;
        new) new=$val ;;
        why) why=$val ;;
        equivalent) equiv=$val ;;
        *) echo "run.sh: $list:$n: unknown key '$key'" >&2; exit 2 ;;
        esac
    done <"$list"
    flush
}
parse_list

# `\n` in old:/new: stands for a line break (to make a snippet unique).
count_in() { # file old -> occurrences
    OLD=$2 perl -0777 -ne '(my $o = $ENV{OLD}) =~ s/\\n/\n/g; my $n = () = /\Q$o\E/g; print $n' "$1"
}
apply_in() { # file old new
    OLD=$2 NEW=$3 perl -0777 -i -pe '
        BEGIN { ($o = $ENV{OLD}) =~ s/\\n/\n/g; ($r = $ENV{NEW}) =~ s/\\n/\n/g; }
        s/\Q$o\E/$r/' "$1"
}

# ------------------------------------------------------------ the copy
# Copy the files git knows (tracked, or untracked and not ignored) whose
# content differs; unchanged files keep their times, so builds stay
# incremental, and a file once mutated is rebuilt from the restored copy.
sync_tree() {
    mkdir -p "$src" "$logs"
    git ls-files -co --exclude-standard -z | while IFS= read -r -d '' f; do
        [ -f "$f" ] || continue
        if ! cmp -s "$f" "$src/$f"; then
            mkdir -p "$src/$(dirname "$f")"
            cp "$f" "$src/$f"
            rm -f "$logs/baseline.ok" # the tree changed: check it passes again
        fi
    done
    # A file the tree no longer has goes from the copy too: a stale header
    # left there would shadow the one that moved (test.h, say, which moved
    # from the tests folder to tests/harness).
    local keep
    keep=$(mktemp)
    git ls-files -co --exclude-standard | sort >"$keep"
    (cd "$src" && find . -type f | sed 's|^\./||' | sort) | comm -23 - "$keep" | while IFS= read -r f; do
        rm -f "$src/$f"
        rm -f "$logs/baseline.ok"
    done
    rm -f "$keep"
}

build() { # log [reconfigure]
    # CMake reads the test list (tests/test_list.h) when it configures: a
    # changed tree is configured again so that new tests are registered.
    if [ ! -f "$bld/CMakeCache.txt" ] || [ -n "${2:-}" ]; then
        cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINFINIRT_BUILD_BENCH=OFF \
            -DINFINIRT_WERROR=OFF >>"$1" 2>&1 || return 1
    fi
    cmake --build "$bld" -j "$jobs" >>"$1" 2>&1
}

# Two passes, so that a caught mutant is usually told apart in seconds: the
# quick tests first, then - only if they all passed - the few slow ones.
slow='^(bad_input\.|alloc\.invariants_stress$|conformance\.cpu\.all_in_one$|loader\.exported_symbols$)'
run_tests() { # log
    local ex=$slow
    [ -n "$ctest_exclude" ] && ex="$ex|$ctest_exclude"
    (cd "$bld" && ctest -LE "gpu|bench|format" -E "$ex" -j "$jobs" --timeout "$ctest_timeout" --stop-on-failure) \
        >>"$1" 2>&1 || return 1
    (cd "$bld" && ctest -LE "gpu|bench|format" -R "$slow" ${ctest_exclude:+-E "$ctest_exclude"} -j "$jobs" \
        --timeout "$ctest_timeout" --stop-on-failure) >>"$1" 2>&1
}

first_failure() { # log -> name of the first failing test
    sed -n '/The following tests FAILED/,$p' "$1" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\).*/\1/p' | head -1
}

restore_file="" restore_backup=""
restore() {
    if [ -n "$restore_file" ]; then
        cp "$restore_backup" "$restore_file"
        rm -f "$restore_backup"
        restore_file=""
    fi
}
trap 'restore' EXIT
trap 'restore; exit 130' INT TERM

# ------------------------------------------------------------ check
bad=0
for i in "${!ids[@]}"; do
    f=${files[$i]}
    if [ ! -f "$f" ]; then
        echo "run.sh: ${ids[$i]}: no file $f" >&2
        bad=1
        continue
    fi
    c=$(count_in "$f" "${olds[$i]}")
    if [ "$c" != 1 ]; then
        echo "run.sh: ${ids[$i]}: the snippet occurs $c times in $f (must be once): update the entry" >&2
        bad=1
    fi
done
for w in "${want[@]+"${want[@]}"}"; do
    printf '%s\n' "${ids[@]}" | grep -qx -- "$w" || { echo "run.sh: no mutant $w" >&2; exit 2; }
done
if [ "$mode" = check ]; then
    echo "${#ids[@]} entries; $([ $bad = 0 ] && echo "all apply" || echo "some do not apply")"
    exit $bad
fi

sync_tree
echo "== baseline (no mutant): build, then the tests"
: >"$logs/baseline.log"
changed=""
[ -f "$logs/baseline.ok" ] || changed=1
if ! build "$logs/baseline.log" "$changed"; then
    echo "run.sh: the unmutated tree does not build; see $logs/baseline.log" >&2
    exit 2
fi
if [ "$mode" = baseline ] || [ ! -f "$logs/baseline.ok" ]; then
    if ! run_tests "$logs/baseline.log"; then
        echo "run.sh: the unmutated tree fails its tests ($(first_failure "$logs/baseline.log")); see $logs/baseline.log" >&2
        exit 2
    fi
    touch "$logs/baseline.ok"
fi
[ "$mode" = baseline ] && { echo "baseline passes"; exit 0; }

# ------------------------------------------------------------ mutants
caught=0 survived=0 equiv=0 broken=0
table=()
for i in "${!ids[@]}"; do
    id=${ids[$i]} f=${files[$i]}
    if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx -- "$id"; then
        continue
    fi
    if [ -n "${equivs[$i]}" ] && [ ${#want[@]} -eq 0 ]; then
        equiv=$((equiv + 1))
        table+=("$(printf '%-28s %-26s %-10s %s' "$id" "$f" equivalent "${equivs[$i]}")")
        continue
    fi
    log=$logs/$id.log
    : >"$log"
    if [ "$(count_in "$src/$f" "${olds[$i]}")" != 1 ]; then
        broken=$((broken + 1))
        table+=("$(printf '%-28s %-26s %-10s %s' "$id" "$f" NOT-APPLIED "snippet not found once")")
        continue
    fi
    t0=$(date +%s)
    restore_backup=$(mktemp)
    cp "$src/$f" "$restore_backup"
    restore_file=$src/$f
    apply_in "$src/$f" "${olds[$i]}" "${news[$i]}"
    printf '%-28s ' "$id"
    if ! build "$log"; then
        result=NO-BUILD note="see $log"
        broken=$((broken + 1))
    elif run_tests "$log"; then
        result=SURVIVED note="${whys[$i]}"
        survived=$((survived + 1))
    else
        result=caught note="by $(first_failure "$log")"
        caught=$((caught + 1))
    fi
    restore
    echo "$result ($(($(date +%s) - t0)) s)"
    table+=("$(printf '%-28s %-26s %-10s %s' "$id" "$f" "$result" "$note")")
done
# Leave the build matching the unmutated tree.
build "$logs/restore.log" || true

echo
printf '%-28s %-26s %-10s %s\n' ID FILE RESULT NOTE
printf '%s\n' "${table[@]}"
total=$((caught + survived))
echo
if [ $total -gt 0 ]; then
    echo "caught $caught of $total ($(awk "BEGIN{printf \"%.2f\", 100*$caught/$total}") %); $equiv equivalent (not counted); $broken not applied or not built"
fi
[ $broken -eq 0 ] && [ $bad -eq 0 ]
