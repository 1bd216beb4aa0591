#!/bin/sh
# Run every Criterion unit-test binary given on the command line.
# Prints "unit: N passed, N failed", counting Criterion tests; a binary that
# fails without a synthesis line counts as one more failure.
passed=0 failed=0
for t in "$@"; do
    "$t" --jobs 2 >"$t.log" 2>&1
    rc=$?
    syn=$(grep 'Synthesis:' "$t.log" | tail -n 1)
    p=$(echo "$syn" | awk -F'|' '{ sub(/.*Passing: /, "", $2); print $2 + 0 }')
    f=$(echo "$syn" | awk -F'|' '{ sub(/.*Failing: /, "", $3); sub(/.*Crashing: /, "", $4); print $3 + $4 }')
    if [ -z "$syn" ]; then
        cat "$t.log"
        echo "FAIL $(basename "$t"): no Criterion synthesis (exit $rc)"
        failed=$((failed + 1))
        continue
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$rc" -ne 0 ]; then
        grep -E '^\[----\]|\[FAIL\]' "$t.log"
        [ "$f" -gt 0 ] || failed=$((failed + 1))
    fi
    echo "$(basename "$t"): $syn"
done
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
