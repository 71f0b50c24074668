#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# trace_tool_test.sh CHECK INFINIRT_TRACE FIXTURES - infinirt-trace on the
# fixture traces, its figures checked against the ones worked out by hand
# (in the comments beside them).
#   summary           fixtures/small.json: every figure of the summary
#   cut_short         fixtures/cut_short.json (small.json's first 24 events
#                     and half of the 25th, as after a crash): exit 0, a
#                     warning with the byte offset, the figures of the 24
#   odd_values        fixtures/odd.json: values out of range, events that
#                     are not objects, a repeated key, markup in names
#   malformed         fixtures/malformed/*: exit 1 and the message, with
#                     the byte offset, line and column
#   html_browser      the pages of small, cut_short and odd in a headless
#                     Chromium: the status element says "drawn" with the
#                     lanes, charts, points and spans expected, painted
#                     pixels read back, no error; small zoomed by its link
#                     (#view=...) draws only what lies in the view; the page
#                     fetches nothing; a screenshot is far from blank.  Exit 77 (skip)
#                     without Chromium (CHROMIUM=path to choose one)
#   html_catches_errors  the check above fails on a page whose drawing
#                     throws (the error is shown in the status element) and
#                     on one whose script never runs
#   workload_browser  (a 4th argument: trace-test) the trace of the real
#                     workload (trace-test workload, two streams, an event
#                     between them, stream-ordered memory, a graph; on the
#                     backend of INFINIRT_CONFIG), its page in Chromium as
#                     above: a lane per stream and per calling thread, a
#                     chart per device, every counter point and every span
#                     counted from the trace file itself.  Exit 77 without
#                     Chromium
set -u
check=$1
tool=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
fixtures=$(cd "$3" && pwd)
trace_test=${4:-}
T=$(mktemp -d /tmp/infinirt-trace-test-XXXXXX)
trap 'rm -rf "$T"' EXIT
bad=0
fail() {
    echo "FAIL: $*"
    bad=1
}

# The tool on a fixture, from the fixtures' folder (names stay short):
# stdout with runs of spaces made one (the columns' widths are not the
# point), stderr, exit code.
run() { # fixture [options]
    f=$1
    shift
    (cd "$fixtures" && "$tool" "$@" "$f") >"$T/raw" 2>"$T/err"
    rc=$?
    sed 's/  */ /g; s/^ //' "$T/raw" >"$T/out"
}
# A line of the output, exactly (after the spaces are made one).
has() {
    grep -Fxq -- "$1" "$T/out" || fail "no line '$1' in the output of $f:"
}
show_on_failure() {
    [ "$bad" -eq 0 ] || { echo "--- stdout:"; cat "$T/raw"; echo "--- stderr:"; cat "$T/err"; }
}

case $check in
summary)
    run small.json
    [ "$rc" -eq 0 ] || fail "exit $rc on a valid trace"
    [ ! -s "$T/err" ] || fail "something on stderr for a valid trace"
    # 42 events in all; from the start-up span at 0 to infinirtFree's end
    # at 100 + 1.25 = 101.25 us.  Ignored: a "gc" instant and a phase "Z"
    # (unknown kinds), an infinirtMemset call without "dur" (incomplete).
    has "infinirt trace small.json: infinirt 0.1.0, 42 events over 101.250 us"
    has "Events: 7 calls, 5 stream ops, 4 flow events, 9 allocator events, 7 memory counters, 1 start-up spans, 1 trace notes, 5 metadata; 3 ignored (2 of unknown kinds, 1 incomplete)"
    # otherData.dropped_events = 3, and a note of 3: the same 3.
    has "WARNING: the writer dropped 3 events (its buffer was full): the figures below miss them"
    # Calls: all of them 35.5 + 20 + 10 + 1.25 = 66.75 us.
    # StreamSynchronize: 35.5 / 66.75 = 53.18 %.
    has "53.18 35.500 1 35.500 35.500 35.500 35.500 infinirtStreamSynchronize"
    # MemcpyAsync: 2, 4, 6, 8 (two threads): total 20, 29.96 %, mean 5,
    # p50 the 2nd of 4 (nearest rank: ceil(0.5 * 4)) = 4, p99 the 4th = 8.
    has "29.96 20.000 4 5.000 4.000 8.000 8.000 infinirtMemcpyAsync"
    has "14.98 10.000 1 10.000 10.000 10.000 10.000 infinirtMalloc"
    has "1.87 1.250 1 1.250 1.250 1.250 1.250 infinirtFree"
    # Sorted by total time.
    order=$(grep -o 'infinirt[A-Za-z]*$' "$T/out" | tr '\n' ' ')
    [ "$order" = "infinirtStreamSynchronize infinirtMemcpyAsync infinirtMalloc infinirtFree " ] ||
        fail "calls not sorted by total time: $order"
    ! grep -q infinirtMemset "$T/out" || fail "the call without dur is counted"
    # Stream 0x5a1: copies 22-27 and 32-40, a fill 38-45 (overlapping),
    # a host function 60-90: busy 5 + 13 + 30 = 48 us, 48 / 101.25 =
    # 47.41 %; gaps 27-32 and 45-60: 2, 20 us in all, the longest 15.
    has "48.000 47.41 4 2 20.000 15.000 stream cpu:0 0x5a1"
    # The NULL stream: one D2H copy 52-62: 10 / 101.25 = 9.88 %.
    has "10.000 9.88 1 0 0.000 0.000 stream cpu:0 NULL"
    # cpu:0: 4096 then 4096 + 8192 = 12288 allocated in a 2 MiB segment,
    # both freed, the segment trimmed and released: back to 0 and 0.
    # Events: 2 mallocs, 2 frees, 1 reserve, 1 release, 1 trim, 1 OOM retry.
    has "cpu:0 12288 2097152 0 0 2 2 1 1 1 1"
    has "cpu:1 512 1048576 512 1048576 1 0 0 0 0 0"
    has "0.000 4.000 start plugin cpu"
    ! grep -q "cut short" "$T/out" || fail "a complete trace is said to be cut short"
    ;;
cut_short)
    run cut_short.json
    size=$(wc -c <"$fixtures/cut_short.json" | tr -d ' ')
    [ "$rc" -eq 0 ] || fail "exit $rc on a trace cut short (it must be summarised)"
    grep -q "^infinirt-trace: warning: cut_short.json is cut short at byte $size (the input ends where a string's closing quote was expected)" "$T/err" ||
        fail "no warning naming byte $size on stderr"
    # The 24 events before the cut: from 0 to the host function's end at 90.
    has "infinirt trace cut_short.json: infinirt 0.1.0, 24 events over 90.000 us"
    has "Events: 3 calls, 4 stream ops, 2 flow events, 5 allocator events, 5 memory counters, 1 start-up spans, 0 trace notes, 3 metadata; 1 ignored (1 of unknown kinds, 0 incomplete)"
    has "WARNING: the trace is cut short at byte $size (the input ends where a string's closing quote was expected): this summary covers the events before it"
    # Malloc 10 and MemcpyAsync 2 + 4 of 16 us: 62.50 % and 37.50 %;
    # p50 of (2, 4): the 1st = 2, p99 the 2nd = 4.
    has "62.50 10.000 1 10.000 10.000 10.000 10.000 infinirtMalloc"
    has "37.50 6.000 2 3.000 2.000 4.000 4.000 infinirtMemcpyAsync"
    # The same four ops of stream 0x5a1: 48 / 90 = 53.33 %.
    has "48.000 53.33 4 2 20.000 15.000 stream cpu:0 0x5a1"
    ! grep -q "NULL" "$T/out" || fail "the NULL stream's work came after the cut"
    # No frees yet: the end is the peak.
    has "cpu:0 12288 2097152 12288 2097152 2 0 1 0 0 1"
    has "cpu:1 512 1048576 512 1048576 1 0 0 0 0 0"
    ! grep -q "dropped" "$T/out" || fail "dropped events reported; the trace says 0"
    ;;
odd_values)
    run odd.json
    [ "$rc" -eq 0 ] || fail "exit $rc"
    # 13 events: ignored are 42, null and [] (not events), a ts of 1e999
    # and one of 1e16 us (out of range), a negative dur, a counter whose
    # only value is 2^64 - 1 (past 2^63).
    has "infinirt trace odd.json: infinirt (version unknown), 13 events over 4.000 us"
    has "Events: 2 calls, 1 stream ops, 0 flow events, 0 allocator events, 2 memory counters, 0 start-up spans, 0 trace notes, 1 metadata; 7 ignored (3 of unknown kinds, 4 incomplete)"
    # The name is printed as it is; "c" is an X (the first "ph" wins).
    has "66.67 2.000 1 2.000 2.000 2.000 2.000 </script><script>document.title='injected'</script>"
    has "33.33 1.000 1 1.000 1.000 1.000 1.000 c"
    # A stream track without a name, and a named one without work.
    has "3.000 75.00 1 0 0.000 0.000 pid 1 tid 7"
    has "0.000 0.00 0 0 0.000 0.000 stream <b>x</b>"
    # reserved 100 (allocated unset: 0), then allocated 40 (reserved kept).
    has "gpu:0 40 100 40 100 0 0 0 0 0 0"
    ;;
malformed)
    # FILE|message on stderr after "infinirt-trace: FILE: "; offsets by hand
    # (bad_escape: '{"traceEvents":[{' is 17 bytes, "ph":"X", 9 more,
    # "name":" 8 more, then a, \ and q at 36).
    cat >"$T/table" <<'EOF'
bad_escape.json|malformed JSON at byte 36 (line 1, column 37): expected an escape (one of "\/bfnrtu), found 'q'
bad_literal.json|malformed JSON at byte 34 (line 1, column 35): expected true, found '}'
binary.json|not a trace: it starts with neither '{' (a trace object) nor '[' (an array of events)
control_char.json|malformed JSON at byte 35 (line 1, column 36): a control character (0x09) in a string
deep.json|malformed JSON at byte 78 (line 1, column 79): nesting deeper than 64 levels
empty.json|the file is empty: not a trace
garbage_after.json|malformed JSON at byte 19 (line 1, column 20): more data after the trace's end
leading_zero.json|malformed JSON at byte 32 (line 1, column 33): expected ',' or '}', found '1'
missing_comma.json|malformed JSON at byte 26 (line 1, column 27): expected ',' or '}', found '"'
no_trace_events.json|not a trace: the object has no traceEvents array
trailing_comma.json|malformed JSON at byte 38 (line 2, column 22): expected a member name (a string), found '}'
EOF
    n=0
    while IFS='|' read -r file msg; do
        n=$((n + 1))
        run "malformed/$file"
        [ "$rc" -eq 1 ] || fail "$file: exit $rc, not 1"
        [ ! -s "$T/raw" ] || fail "$file: a summary printed for a malformed trace"
        [ "$(cat "$T/err")" = "infinirt-trace: malformed/$file: $msg" ] ||
            fail "$file: stderr is '$(cat "$T/err")', not 'infinirt-trace: malformed/$file: $msg'"
    done <"$T/table"
    [ "$n" -eq "$(ls "$fixtures/malformed" | wc -l)" ] || fail "a file of malformed/ has no row in the table"
    run no-such-file.json
    [ "$rc" -eq 1 ] && grep -q "no-such-file.json: cannot open: No such file or directory" "$T/err" ||
        fail "a missing file: exit $rc, $(cat "$T/err")"
    run small.json --html /nonexistent-dir/page.html
    [ "$rc" -eq 1 ] && grep -q "cannot write /nonexistent-dir/page.html" "$T/err" ||
        fail "a page that cannot be written: exit $rc, $(cat "$T/err")"
    ;;
html_browser | html_catches_errors | workload_browser)
    chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
    if [ -z "$chromium" ]; then
        echo "skip: no Chromium (apt-get install chromium; ./dev installs it)"
        exit 77
    fi
    mkdir -p "$T/home"
    # browser OUTFILE ARGS...: headless, its own profile and home, no
    # sandbox (root in CI), a fixed window so that the pixels are stable.
    browser() {
        out=$1
        shift
        HOME="$T/home" timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
            --no-first-run --no-default-browser-check --user-data-dir="$T/profile" --window-size=1280,1000 \
            "$@" >"$out" 2>>"$T/browser.err"
    }
    # page_ok PAGE LANES CHARTS POINTS SPANS: the page, loaded from file://,
    # draws what it should and reports no error.  0 or 1, and says why.
    page_ok() {
        page=$1
        browser "$T/dom" --dump-dom "file://$page" || { echo "chromium failed on $page:"; tail -5 "$T/browser.err"; return 1; }
        st=$(grep -o '<div id="status"[^>]*>[^<]*</div>' "$T/dom")
        echo "status of $(basename "$page"): $st"
        ok=0
        case $st in *'data-state="drawn"'*) ;; *) echo "  not drawn"; ok=1 ;; esac
        case $st in *error*) echo "  an error"; ok=1 ;; esac
        for kv in "lanes=$2" "charts=$3" "points=$4" "spans=$5"; do
            case $st in *"data-${kv%%=*}=\"${kv#*=}\""*) ;; *) echo "  expected data-${kv%%=*}=\"${kv#*=}\""; ok=1 ;; esac
        done
        case $st in *">drawn: $2 lanes"*) ;; *) echo "  the text does not say 'drawn: $2 lanes'"; ok=1 ;; esac
        painted=$(echo "$st" | sed -n 's/.*data-painted="\([0-9]*\)".*/\1/p')
        # 1280 px wide: the lanes' spans and the charts' fills are tens of
        # thousands of pixels; the axis and labels alone a few thousand.
        [ "${painted:-0}" -gt 20000 ] || { echo "  only ${painted:-0} pixels painted"; ok=1; }
        grep -q '<title>infinirt trace: ' "$T/dom" || { echo "  the title changed"; ok=1; }
        return $ok
    }
    if [ "$check" = workload_browser ]; then
        # The workload's own checks pass, and its trace stays in $T.
        TRACE_TEST_DIR=$T "$trace_test" workload >"$T/workload.log" 2>&1 ||
            { fail "trace-test workload failed:"; cat "$T/workload.log"; exit 1; }
        w=$T/workload.json
        "$tool" --html "$T/workload.html" "$w" >"$T/summary" 2>"$T/err" || fail "infinirt-trace --html: exit $?"
        [ ! -s "$T/err" ] || { fail "infinirt-trace said on stderr:"; cat "$T/err"; }
        ! grep -Eiq 'https?:|<link|<img|<iframe| src=' "$T/workload.html" || fail "workload.html refers to something outside it"
        # The trace writes one event a line: the figures by grep.  Lanes:
        # the streams' tracks (named "stream ...") and the threads that
        # made calls; a chart per "memory ..." counter, a point per value;
        # a span per call and per stream op.
        streams=$(grep -c '"name":"thread_name".*"args":{"name":"stream ' "$w")
        threads=$(grep '"cat":"call"' "$w" | grep -o '"tid":[0-9]*' | sort -u | wc -l)
        charts=$(grep '"ph":"C"' "$w" | grep -o '"name":"memory [^"]*"' | sort -u | wc -l)
        points=$(grep -c '"ph":"C"' "$w")
        spans=$(($(grep -c '"ph":"X","cat":"call"' "$w") + $(grep -c '"ph":"X","cat":"stream"' "$w")))
        echo "workload trace: $streams streams, $threads calling threads, $charts memory charts, $points points, $spans spans"
        [ "$streams" -eq 2 ] || fail "the workload's trace names $streams streams, not its 2"
        [ "$charts" -ge 1 ] && [ "$threads" -ge 1 ] && [ "$spans" -gt 30 ] || fail "a trace too thin to check a page with"
        page_ok "$T/workload.html" $((streams + threads)) "$charts" "$points" "$spans" || fail "workload.html"
        case $st in *"($streams streams, $threads threads)"*) ;; *) fail "the page does not say $streams streams, $threads threads" ;; esac
        show_on_failure
        [ "$bad" -eq 0 ] || exit 1
        echo "ok: $check"
        exit 0
    fi
    for f in small cut_short odd; do
        (cd "$fixtures" && "$tool" --html "$T/$f.html" "$f.json") >/dev/null 2>&1
        [ -s "$T/$f.html" ] || fail "no page written for $f.json"
        # Self-contained: nothing fetched from anywhere.
        ! grep -Eiq 'https?:|<link|<img|<iframe| src=' "$T/$f.html" || fail "$f.html refers to something outside it"
    done
    if [ "$check" = html_browser ]; then
        # small: 2 streams + 2 threads, cpu:0 (6 points) and cpu:1 (1),
        # 5 stream ops + 7 calls.  cut_short: 1 stream + 1 thread, 4 + 1
        # points, 4 ops + 3 calls.  odd: 2 streams (one empty) + 2
        # threads, gpu:0 with 2 points, 1 op + 2 calls.
        page_ok "$T/small.html" 4 2 7 12 || fail "small.html"
        page_ok "$T/cut_short.html" 2 2 5 7 || fail "cut_short.html"
        page_ok "$T/odd.html" 4 1 2 3 || fail "odd.html"
        # A view from the link: 20-46 us shows stream 0x5a1's copies and
        # fill (3) and thread 1's three MemcpyAsync calls (20-22 touches
        # the start); cpu:0's points at 8 us (the value at 20) and 100.6
        # (where the line ends), cpu:1's at 12.
        page_ok "$T/small.html#view=20000,46000&scale=allocated" 4 2 3 6 || fail "small.html zoomed"
        case $st in *'data-view="20000,46000"'*'data-scale="allocated"'*) ;;
        *) fail "the zoomed page does not report view 20000,46000 and scale allocated" ;; esac
        # A screenshot far from a blank page's.
        printf '<!DOCTYPE html><html><body></body></html>\n' >"$T/blank.html"
        (cd "$T" && browser "$T/shot-blank.log" --screenshot="$T/blank.png" "file://$T/blank.html")
        (cd "$T" && browser "$T/shot.log" --screenshot="$T/small.png" "file://$T/small.html")
        blank=$(wc -c <"$T/blank.png" 2>/dev/null || echo 0)
        shot=$(wc -c <"$T/small.png" 2>/dev/null || echo 0)
        echo "screenshot: $shot bytes, a blank page's: $blank bytes"
        [ "$(head -c 4 "$T/small.png" | od -An -c | tr -d ' ')" = "211PNG" ] || fail "the screenshot is not a PNG"
        [ "$shot" -gt $((blank * 4)) ] || fail "the screenshot ($shot bytes) is close to a blank page's ($blank)"
    else
        # The drawing throws: the status says so, and the check refuses it.
        sed 's|/\*draw-start\*/|undefinedDrawHelper();|' "$T/small.html" >"$T/throws.html"
        grep -q undefinedDrawHelper "$T/throws.html" || fail "the draw-start marker is not in the page"
        if page_ok "$T/throws.html" 4 2 7 12; then fail "a page whose drawing throws passed"; fi
        grep -q 'data-state="error"[^>]*>error: .*undefinedDrawHelper' "$T/dom" ||
            fail "the error is not in the status element"
        # The script never runs: the status stays "loading".
        sed 's|^(function () {$|(function () { return;|' "$T/small.html" >"$T/inert.html"
        if page_ok "$T/inert.html" 4 2 7 12; then fail "a page whose script did not run passed"; fi
        grep -q 'data-state="loading"' "$T/dom" || fail "the inert page's status is not 'loading'"
    fi
    ;;
*)
    echo "trace_tool_test.sh: unknown check $check" >&2
    exit 2
    ;;
esac
show_on_failure
[ "$bad" -eq 0 ] || exit 1
echo "ok: $check"
