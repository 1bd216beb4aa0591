#!/bin/sh
# make test: unit tests, then end-to-end tests.  BUILD CREC TESTBIN...
# The last line is the total, "test: N passed, N failed".
build=$1 crec=$2
shift 2
sh tests/run_unit.sh "$@" | tee "$build/unit.log"
unit_rc=$?
CREC=$crec sh tests/e2e/run.sh | tee "$build/e2e.log"
up=$(sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$build/unit.log")
ep=$(sed -n 's/^e2e: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$build/e2e.log")
set -- $up $ep
p=$(( ${1:-0} + ${3:-0} )) f=$(( ${2:-0} + ${4:-0} ))
[ -n "$up" ] && [ -n "$ep" ] || f=$((f + 1))
echo "test: $p passed, $f failed"
[ "$f" -eq 0 ]
