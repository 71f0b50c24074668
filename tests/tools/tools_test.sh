#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tools_test.sh CHECK PROGRAM - the tools tell the truth about what they
# found.  The config comes from INFINIRT_CONFIG (set by CTest).
#   info-no-device        infinirt-info with no device: exits non-zero, says so
#   info-default-device   infinirt-info shows the default device (the config
#                         sets [loader] default_device = cpu:1)
#   conformance-no-device infinirt-conformance --all with no device to test:
#                         the tests skip (none fails), and it exits non-zero
#                         saying so
#   demo-warm             the demo times warm copies and says what it timed
#   dev-usage             ./dev with no argument prints its usage, exits non-zero
#   dev-lock-wait         ./dev waits for a package lock another process
#                         holds, says which lock and which process, goes on
#                         when it is released and gives up after
#                         DEV_LOCK_TIMEOUT seconds (a scratch file stands
#                         for the lock, DEV_APT_LOCKS)
#   options               an installed program's command line: --help and -h
#                         (usage on stdout, exit 0), --version and -V ("NAME
#                         infinirt $EXPECT_VERSION", exit 0), both without
#                         starting the library; an unknown option: usage on
#                         stderr, nothing on stdout, exit 2
#   info-list             infinirt-info -l and --list: one line per device,
#                         "TYPE:ID: NAME [plugin P]" and " (UUID: U)" where
#                         there is one; the config has cpu:0, cpu:1 and a
#                         fake ascend:0 with a UUID
#   info-config-report CPU_PLUGIN   infinirt-info shows the environment
#                         overrides, a missing plugin folder and the config's
#                         problems, in text and JSON (its own config)
#   info-env-table README infinirt-info lists the variables of the README's
#                         environment table, in its order, text and JSON
#   info-starting CPU_PLUGIN FAKE_PLUGIN   a plugin whose init never returns
#                         (the fake held on a gate that never opens):
#                         infinirt-info --wait=1 reports it starting, lists
#                         the CPU device, names it on stderr and exits 3, in
#                         text, JSON and -l; with the gate open, all of it
set -u
check=$1
prog=$2
T=$(mktemp -d /tmp/infinirt-tools-XXXXXX)
trap 'rm -rf "$T"' EXIT

run() { # run the program, keep stdout, stderr and the exit code
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
}
fail() {
    echo "FAIL: $*"
    echo "-- exit code $rc; stdout:"
    cat "$T/out"
    echo "-- stderr:"
    cat "$T/err"
    exit 1
}

case $check in
info-no-device)
    run "$prog"
    [ "$rc" -ne 0 ] || fail "infinirt-info exits 0 with no device"
    grep -q "no device found" "$T/err" || fail "infinirt-info does not say that no device was found"
    run "$prog" --json
    [ "$rc" -ne 0 ] || fail "infinirt-info --json exits 0 with no device"
    grep -q "no device found" "$T/err" || fail "infinirt-info --json does not say that no device was found"
    run "$prog" -l
    [ "$rc" -eq 1 ] || fail "infinirt-info -l does not exit 1 with no device"
    [ ! -s "$T/out" ] || fail "infinirt-info -l prints a device line with no device"
    grep -q "no device found" "$T/err" || fail "infinirt-info -l does not say that no device was found"
    ;;
info-default-device)
    run "$prog"
    [ "$rc" -eq 0 ] || fail "infinirt-info failed"
    grep -q "^default device: cpu:1 " "$T/out" || fail "infinirt-info does not show the default device cpu:1"
    run "$prog" --json
    [ "$rc" -eq 0 ] || fail "infinirt-info --json failed"
    grep -q '"default_device":{"type":"cpu","id":1,"present":true}' "$T/out" ||
        fail "infinirt-info --json does not show the default device cpu:1"
    ;;
conformance-no-device)
    run "$prog" --all
    [ "$rc" -ne 0 ] || fail "infinirt-conformance --all exits 0 when every test skipped"
    # Only the tests that need no device may run (and pass).
    grep -q "^[0-9]* passed, 0 failed, [1-9][0-9]* skipped" "$T/out" || fail "a test failed with no device"
    grep -q "nothing was tested: .* 0 device(s) found" "$T/err" ||
        fail "infinirt-conformance does not say that nothing was tested"
    ;;
demo-warm)
    run "$prog" cpu
    [ "$rc" -eq 0 ] || fail "the demo failed"
    grep -q "^timed: [0-9]* warm rounds (after 1 untimed round" "$T/out" ||
        fail "the demo does not say that it times warm copies"
    grep -q "GB/s per copy; data correct" "$T/out" || fail "the demo shows no bandwidth or wrong data"
    ;;
dev-usage)
    run "$prog"
    [ "$rc" -ne 0 ] || fail "./dev with no argument exits 0"
    head -1 "$T/err" | grep -q "^usage: ./dev " || fail "./dev with no argument does not start with its usage"
    # The usage, not lines of the script's source.
    ! grep -Eq '^#|\(\)|esac|cmd_' "$T/err" "$T/out" || fail "./dev with no argument prints script source"
    ;;
dev-lock-wait)
    command -v flock >/dev/null || { echo "skip: no flock (util-linux)"; exit 77; }
    # A process that holds a lock on $T/lock, as apt-get holds its own:
    # flock (not its child, -o), until it is killed; the child only says the
    # lock is taken and ends with it.
    flock -o "$T/lock" sh -c ': >"$1"; while kill -0 $PPID 2>/dev/null; do sleep 0.2; done' sh "$T/held" &
    holder=$!
    trap 'kill $holder 2>/dev/null; rm -rf "$T"' EXIT
    n=0
    while [ ! -e "$T/held" ] && [ $n -lt 600 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    [ -e "$T/held" ] || fail "the helper did not take the lock in 60 s"
    # Held past the time limit: it says what it waits for, then gives up.
    run env DEV_APT_LOCKS="$T/none $T/lock" DEV_LOCK_TIMEOUT=1 bash "$prog" wait-locks
    [ "$rc" -ne 0 ] || fail "./dev goes on while the lock is held"
    grep -q "waiting for the package lock $T/lock, held by process $holder (flock)" "$T/err" ||
        fail "./dev does not say which lock it waits for and which process holds it"
    grep -q "still held by process $holder (flock) after 1 s" "$T/err" || fail "./dev does not say why it gave up"
    # Released while it waits: it goes on.
    env DEV_APT_LOCKS="$T/lock" DEV_LOCK_TIMEOUT=300 bash "$prog" wait-locks >"$T/out" 2>"$T/err" &
    waiter=$!
    n=0
    while ! grep -q "waiting for" "$T/err" && [ $n -lt 600 ]; do
        sleep 0.1
        n=$((n + 1))
    done
    kill $holder
    wait $waiter
    rc=$?
    [ "$rc" -eq 0 ] || fail "./dev does not go on when the lock is released"
    grep -q "waiting for the package lock $T/lock" "$T/err" || fail "./dev did not say that it waited"
    grep -q "package locks are free after" "$T/out" || fail "./dev does not say that the locks are free"
    ;;
options)
    name=$(basename "$prog")
    for opt in --help -h; do
        # A config that cannot be read: the library must not start.
        run env INFINIRT_CONFIG=/nonexistent/infinirt.ini "$prog" $opt
        [ "$rc" -eq 0 ] || fail "$name $opt does not exit 0"
        head -1 "$T/out" | grep -q "^usage: $name " || fail "$name $opt does not print its usage on stdout"
        [ ! -s "$T/err" ] || fail "$name $opt writes to stderr"
    done
    for opt in --version -V; do
        run env INFINIRT_CONFIG=/nonexistent/infinirt.ini "$prog" $opt
        [ "$rc" -eq 0 ] || fail "$name $opt does not exit 0"
        [ "$(cat "$T/out")" = "$name infinirt ${EXPECT_VERSION:?}" ] ||
            fail "$name $opt does not print exactly '$name infinirt $EXPECT_VERSION'"
        [ ! -s "$T/err" ] || fail "$name $opt writes to stderr"
    done
    run "$prog" --no-such-option
    [ "$rc" -eq 2 ] || fail "$name --no-such-option does not exit 2"
    [ ! -s "$T/out" ] || fail "$name --no-such-option writes to stdout"
    grep -q "^usage: $name " "$T/err" || fail "$name --no-such-option does not print its usage on stderr"
    grep -q "no-such-option" "$T/err" || fail "$name --no-such-option does not name the option"
    ;;
info-list)
    run "$prog" -l
    [ "$rc" -eq 0 ] || fail "infinirt-info -l failed"
    cp "$T/out" "$T/list"
    [ "$(wc -l <"$T/list")" -eq 3 ] || fail "infinirt-info -l does not print one line for each of 3 devices"
    grep -Eq '^cpu:0: [^[]+ \[plugin cpu\]$' "$T/list" || fail "no line 'cpu:0: NAME [plugin cpu]'"
    grep -Eq '^cpu:1: [^[]+ \[plugin cpu\]$' "$T/list" || fail "no line 'cpu:1: NAME [plugin cpu]'"
    grep -Eq '^ascend:0: [^[]+ \[plugin good\] \(UUID: FAKE-0000-UUID\)$' "$T/list" ||
        fail "no line 'ascend:0: NAME [plugin good] (UUID: FAKE-0000-UUID)'"
    # The names are the ones the full report gives.
    run "$prog" --json
    [ "$rc" -eq 0 ] || fail "infinirt-info --json failed"
    cpu0=$(sed -n 's/^cpu:0: \(.*\) \[plugin cpu\]$/\1/p' "$T/list")
    grep -Fq "\"type\":\"cpu\",\"type_id\":0,\"id\":0,\"name\":\"$cpu0\"" "$T/out" ||
        fail "cpu:0's name in the list, '$cpu0', is not the one --json gives"
    run "$prog" --list
    [ "$rc" -eq 0 ] || fail "infinirt-info --list failed"
    cmp -s "$T/out" "$T/list" || fail "infinirt-info --list differs from -l"
    run "$prog" -l --json
    [ "$rc" -eq 2 ] || fail "infinirt-info -l --json does not exit 2"
    grep -q "^usage: infinirt-info " "$T/err" || fail "infinirt-info -l --json does not print its usage on stderr"
    ;;
info-config-report)
    cpu=$3
    printf '[loader]\nplugins = cpu, opencl\nplugin_dir = %s/none\n[plugin.cpu]\nlibrary = %s\ndevices = 2\n' "$T" "$cpu" \
        >"$T/c.ini"
    export INFINIRT_CONFIG="$T/c.ini" INFINIRT_PLUGINS=cpu INFINIRT_VISIBLE_DEVICES=cpu:1
    unset INFINIRT_PLUGIN_PATH INFINIRT_LOG INFINIRT_LOG_FILE
    run "$prog"
    [ "$rc" -eq 0 ] || fail "infinirt-info failed"
    grep -q "^  INFINIRT_PLUGINS  *cpu  only these plugins load; overrides \[loader\] plugins = cpu, opencl ($T/c.ini:2)" \
        "$T/out" || fail "infinirt-info does not show INFINIRT_PLUGINS and what it did"
    grep -q "^  INFINIRT_VISIBLE_DEVICES cpu:1  cpu device 1 as cpu:0" "$T/out" ||
        fail "infinirt-info does not show INFINIRT_VISIBLE_DEVICES and what it did"
    grep -q "^  INFINIRT_PLUGIN_PATH  *-  unset$" "$T/out" || fail "infinirt-info does not show an unset variable"
    grep -q "INFINIRT_VISIBLE_DEVICES shows 1 of its 2 devices: cpu:0 is its 1" "$T/out" ||
        fail "the cpu plugin's report does not say what INFINIRT_VISIBLE_DEVICES did"
    grep -q "^  $T/none (plugin_dir): does not exist$" "$T/out" ||
        fail "infinirt-info does not say that plugin_dir does not exist"
    grep -q "^  plugin folder $T/none (plugin_dir at $T/c.ini:3) does not exist" "$T/out" ||
        fail "infinirt-info does not list the missing plugin folder among the config's problems"
    grep -q "warn: plugin folder $T/none (plugin_dir at $T/c.ini:3) does not exist" "$T/err" ||
        fail "no warning names the missing plugin folder"
    run "$prog" --json
    [ "$rc" -eq 0 ] || fail "infinirt-info --json failed"
    grep -q '"environment":\[{"name":"INFINIRT_CONFIG","value":"'"$T"'/c.ini","problem":false,' "$T/out" ||
        fail "infinirt-info --json does not show INFINIRT_CONFIG"
    grep -q '{"name":"INFINIRT_VISIBLE_DEVICES","value":"cpu:1","problem":false,"message":"cpu device 1 as cpu:0' \
        "$T/out" || fail "infinirt-info --json does not show INFINIRT_VISIBLE_DEVICES"
    grep -q '{"path":"'"$T"'/none","from":"plugin_dir","problem":true,"message":"does not exist"}' "$T/out" ||
        fail "infinirt-info --json does not say that plugin_dir does not exist"
    grep -q '"config_problems":\[.*"plugin folder '"$T"'/none (plugin_dir at' "$T/out" ||
        fail "infinirt-info --json does not list the missing plugin folder among the config's problems"
    ;;
info-env-table)
    readme=$3
    # One variable per row of the table that follows "| Variable | Meaning |".
    want=$(sed -n '/^| Variable | Meaning |$/,/^$/p' "$readme" | sed -n 's/^| `\([A-Z_]*\)` |.*/\1/p')
    [ -n "$want" ] || fail "no environment table in $readme"
    run "$prog"
    [ "$rc" -eq 0 ] || fail "infinirt-info failed"
    got=$(sed -n '/^Environment:$/,/^$/p' "$T/out" | sed -n 's/^  \([A-Z_][A-Z_]*\) .*/\1/p')
    [ "$want" = "$got" ] || fail "the README's environment table lists $(echo $want), infinirt-info $(echo $got)"
    run "$prog" --json
    got=$(grep -o '{"name":"[A-Z_]*","value":' "$T/out" | sed 's/{"name":"\([A-Z_]*\)".*/\1/')
    [ "$want" = "$got" ] || fail "the README's environment table lists $(echo $want), infinirt-info --json $(echo $got)"
    ;;
info-starting)
    cpu=$3 fake=$4
    printf '[loader]\nplugins = cpu, slow\n[plugin.cpu]\nlibrary = %s\n[plugin.slow]\nlibrary = %s\nanswer = 42\ninit_gate = %s\n' \
        "$cpu" "$fake" "$T/gate" >"$T/c.ini"
    export INFINIRT_CONFIG="$T/c.ini"
    unset INFINIRT_PLUGINS INFINIRT_PLUGIN_PATH INFINIRT_VISIBLE_DEVICES
    run "$prog" --wait=1
    [ "$rc" -eq 3 ] || fail "infinirt-info does not exit 3 with a plugin still starting"
    grep -q "^  ascend: plugin slow is still starting (its init has been running for [0-9.]* s)" "$T/out" ||
        fail "infinirt-info does not say that the ascend plugin is still starting"
    grep -q "^  slow  *starting$" "$T/out" || fail "the plugin report does not show slow as starting"
    grep -q "^  cpu:0  " "$T/out" || fail "infinirt-info does not list the CPU device"
    grep -q "^infinirt-info: plugin slow (ascend devices) is still starting after 1 s" "$T/err" ||
        fail "infinirt-info does not name the starting plugin on stderr"
    run "$prog" --json --wait 1
    [ "$rc" -eq 3 ] || fail "infinirt-info --json does not exit 3 with a plugin still starting"
    grep -q '{"name":"slow","path":"[^"]*","status":"starting","loaded":false,"device_type":"ascend"' "$T/out" ||
        fail "infinirt-info --json does not show slow as starting"
    grep -q '"type":"cpu","type_id":0,"id":0,' "$T/out" || fail "infinirt-info --json does not list the CPU device"
    run "$prog" -l --wait=1
    [ "$rc" -eq 3 ] || fail "infinirt-info -l does not exit 3 with a plugin still starting"
    [ "$(cat "$T/out" | wc -l)" -eq 1 ] && grep -q "^cpu:0: " "$T/out" || fail "infinirt-info -l lists not just cpu:0"
    : >"$T/gate"
    run "$prog" --wait=60
    [ "$rc" -eq 0 ] || fail "infinirt-info fails once the plugin can start"
    grep -q "^  slow  *loaded (2 ascend devices)$" "$T/out" || fail "slow is not loaded once its gate is open"
    ;;
*)
    echo "tools_test.sh: unknown check $check" >&2
    exit 2
    ;;
esac
echo "ok: $check"
