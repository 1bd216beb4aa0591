# Helpers for end-to-end test scripts; source it from a t_*.sh script.
# Every check prints exactly one "PASS name" or "FAIL name: why" line.

TMP=$(mktemp -d /tmp/crec-e2e.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# expect_eq NAME EXPECTED ACTUAL
expect_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "expected '$2', got '$3'"; fi
}

# same_as_native NAME 'SHELL LINE'
# Runs the line twice with sh -c: once with every '@' replaced by nothing
# (native) and once with '@' replaced by "$CREC run --".  Requires the same
# stdout and the same exit status.
same_as_native() {
    name=$1 line=$2
    native=$(printf '%s' "$line" | sed 's/@ //g')
    emu=$(printf '%s' "$line" | sed "s|@ |$CREC run -- |g")
    (cd "$TMP" && sh -c "$native") >"$TMP/native.out" 2>"$TMP/native.err"
    nrc=$?
    (cd "$TMP" && sh -c "$emu") >"$TMP/emu.out" 2>"$TMP/emu.err"
    erc=$?
    if [ "$nrc" != "$erc" ]; then
        fail "$name" "exit status native=$nrc crec=$erc; stderr: $(head -c 300 "$TMP/emu.err")"
    elif ! cmp -s "$TMP/native.out" "$TMP/emu.out"; then
        fail "$name" "stdout differs ($(wc -c <"$TMP/native.out") vs $(wc -c <"$TMP/emu.out") bytes); stderr: $(head -c 300 "$TMP/emu.err")"
    else
        pass "$name"
    fi
}

# expect_status NAME STATUS COMMAND...: run COMMAND, require exit STATUS.
expect_status() {
    name=$1 want=$2
    shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" = "$want" ]; then pass "$name"; else
        fail "$name" "exit $rc, expected $want; stderr: $(head -c 300 "$TMP/err")"
    fi
}

# one_error_line NAME: the last command's stderr ($TMP/err) is one line.
one_error_line() {
    n=$(wc -l <"$TMP/err")
    if [ "$n" = 1 ]; then pass "$1"; else fail "$1" "stderr has $n lines: $(head -c 300 "$TMP/err")"; fi
}
