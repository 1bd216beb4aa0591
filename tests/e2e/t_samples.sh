#!/bin/sh
# t_samples.sh - run every case of traces-sample/answers.txt and compare
# the output byte for byte.  The same answers must hold on every host: make
# test runs this with the native crec, make test-s390x with the s390x build
# under qemu (CREC_WRAP=qemu-s390x).
#
# The answers file (traces-sample/README.md describes it):
#   # ...             a comment
#   $ crec ARGS       a case: ARGS run in traces-sample/ with the crec under test
#   | TEXT            one expected line of standard output
#   ! TEXT            one expected line of standard error
#   = N               the expected exit status; ends the case
# Timing is the only thing not compared: in standard output, a line's
# trailing ", 0.03 s, 1.3 MIPS" (as `crec replay` prints) reads ", TIME".
#
# Environment: CREC (required), CREC_WRAP (a command to run it with, e.g.
# qemu-s390x; without one, an x86-64 host runs every case twice, the second
# time with CREC_DATA_MMIO=1),
# ANSWERS (default traces-sample/answers.txt).  With ANSWERS_WRITE=1 the
# answers file is rewritten from what this crec prints (traces-sample/make.sh
# does that on x86-64); comments and the list of commands are kept.
: "${CREC:?set CREC to the crec binary}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ANSWERS=${ANSWERS:-$ROOT/traces-sample/answers.txt}
SAMPLES=$(dirname "$ANSWERS")
case "$CREC" in /*) ;; *) CREC=$(pwd)/$CREC ;; esac
TMP=$(mktemp -d /tmp/crec-samples.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# no_index: the samples' index files go (the first query of each builds
# it again): `replay --jobs` cuts at the restart points of an index that
# is there, and says so, so every pass must start from the same state.
no_index() {
    rm -f "$SAMPLES"/*.crec.idx "$SAMPLES"/*.crec.p*.idx
}

# run_case ARGS: run crec ARGS in traces-sample/, outputs in $TMP/got.*
run_case() {
    (cd "$SAMPLES" && eval "$CREC_WRAP \"\$CREC\" $1") </dev/null >"$TMP/raw.out" 2>"$TMP/got.err"
    echo $? >"$TMP/got.rc"
    sed -E 's/, [0-9]+\.[0-9]+ s(, [0-9]+\.[0-9]+ MIPS)?$/, TIME/' "$TMP/raw.out" >"$TMP/got.out"
}

if [ "${ANSWERS_WRITE:-0}" = 1 ]; then
    out=$TMP/answers.new
    : >"$out"
    no_index
    while IFS= read -r line; do
        case "$line" in
        '#'* | '') printf '%s\n' "$line" >>"$out" ;;
        '$ crec '*)
            args=${line#'$ crec '}
            run_case "$args"
            {
                printf '%s\n' "$line"
                sed 's/^/| /' "$TMP/got.out"
                sed 's/^/! /' "$TMP/got.err"
                printf '= %s\n' "$(cat "$TMP/got.rc")"
            } >>"$out"
            ;;
        esac
    done <"$ANSWERS"
    cp "$out" "$ANSWERS"
    echo "wrote $(grep -c '^\$ crec ' "$ANSWERS") cases to $ANSWERS"
    exit 0
fi

# check_all LABEL: run and compare every case.
check_all() {
    where=$1
    n=0
    no_index
    while IFS= read -r line; do
        case "$line" in
        '$ crec '*)
            args=${line#'$ crec '}
            : >"$TMP/exp.out"
            : >"$TMP/exp.err"
            ;;
        '| '*) printf '%s\n' "${line#'| '}" >>"$TMP/exp.out" ;;
        '! '*) printf '%s\n' "${line#'! '}" >>"$TMP/exp.err" ;;
        '|') echo >>"$TMP/exp.out" ;;
        '!') echo >>"$TMP/exp.err" ;;
        '= '*)
            want=${line#'= '}
            n=$((n + 1))
            run_case "$args"
            got=$(cat "$TMP/got.rc")
            name="samples$where: crec $args"
            if [ "$got" != "$want" ]; then
                echo "FAIL $name: exit $got, expected $want; stderr: $(head -c 300 "$TMP/got.err")"
            elif ! cmp -s "$TMP/exp.out" "$TMP/got.out"; then
                echo "FAIL $name: standard output differs:"
                diff "$TMP/exp.out" "$TMP/got.out" | head -20
            elif ! cmp -s "$TMP/exp.err" "$TMP/got.err"; then
                echo "FAIL $name: standard error differs:"
                diff "$TMP/exp.err" "$TMP/got.err" | head -20
            else
                echo "PASS $name"
            fi
            ;;
        esac
    done <"$ANSWERS"
    [ "$n" -gt 0 ] || echo "FAIL samples$where: no case in $ANSWERS"
}

if [ -n "$CREC_WRAP" ]; then
    check_all " ($CREC_WRAP)"
else
    check_all ""
fi
# On x86-64, once more with guest data mapped as MMIO, the way crec replays
# on every other host (emu/mem.c): keeps that path tested where the
# recordings are made.
if [ -z "$CREC_WRAP" ] && [ "$(uname -m)" = x86_64 ]; then
    CREC_DATA_MMIO=1
    export CREC_DATA_MMIO
    check_all " (data as MMIO)"
    unset CREC_DATA_MMIO
fi
