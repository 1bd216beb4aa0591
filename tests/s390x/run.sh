#!/bin/sh
# make test-s390x: the replay side on a big-endian host, under qemu-user.
#   sh tests/s390x/run.sh CREC UNIT_TEST...
# S390X_RUN is the emulator (default qemu-s390x; no -L: the s390x libraries
# are found in Debian's multiarch paths, and -L would mix two glibc builds).
#  1. every case of traces-sample/answers.txt (crec info, crec replay, ...),
#     byte for byte the answers an x86-64 host gives (tests/e2e/t_samples.sh);
#  2. the unit tests given (mk/s390x.mk: test_format, test_common), built
#     against tests/s390x/criterion/criterion.h: format round trips, golden
#     bytes, and byte-swapped, flipped and truncated files reported corrupt;
#  3. the replay-only command line: `crec record` does not exist.
# The last line is "s390x: N passed, N failed" (.ci/run adds it up).
crec=$1
shift
run=${S390X_RUN:-qemu-s390x}
log=$(mktemp)
trap 'rm -f "$log" "$log.unit"' EXIT
t0=$(date +%s)

# The unit tests run beside the samples (each is one qemu process; the
# samples are many short ones), their lines printed after the samples'.
(
    for t in "$@"; do
        $run "$t" >"$t.log" 2>&1
        rc=$?
        grep -E '^\[(PASS|FAIL|SKIP)\]' "$t.log" | sed "s|^\[PASS\] |PASS $(basename "$t") ($run): |; s|^\[FAIL\] |FAIL $(basename "$t") ($run): |"
        if [ "$rc" -ne 0 ] && ! grep -q '^\[FAIL\]' "$t.log"; then
            echo "FAIL $(basename "$t") ($run): exit $rc; see $t.log"
        elif [ "$rc" -ne 0 ]; then
            grep -v '^\[' "$t.log" | head -20
        fi
    done
) >"$log.unit" 2>&1 &
unit=$!

CREC=$crec CREC_WRAP=$run sh tests/e2e/t_samples.sh | tee -a "$log"
wait $unit
tee -a "$log" <"$log.unit"
rm -f "$log.unit"

$run "$crec" record -o /dev/null -- /bin/true >/dev/null 2>"$log.err"
rc=$?
if [ "$rc" = 2 ] && grep -q "unknown command 'record'" "$log.err"; then
    echo "PASS cli ($run): crec record is not in a replay-only build" | tee -a "$log"
else
    echo "FAIL cli ($run): crec record: exit $rc, $(head -c 200 "$log.err")" | tee -a "$log"
fi
rm -f "$log.err"

p=$(grep -c '^PASS ' "$log")
f=$(grep -c '^FAIL ' "$log")
echo "test-s390x: $(($(date +%s) - t0)) s under $run"
echo "s390x: $p passed, $f failed"
[ "$f" -eq 0 ] && [ "$p" -gt 0 ]
