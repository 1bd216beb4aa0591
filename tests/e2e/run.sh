#!/bin/sh
# Run every end-to-end test script tests/e2e/t_*.sh against the built crec
# ($CREC).  Each script prints "PASS name" or "FAIL name ..." lines; the last
# line here is "e2e: N passed, N failed".
: "${CREC:?set CREC to the crec binary}"
CREC=$(cd "$(dirname "$CREC")" && pwd)/$(basename "$CREC")
GUESTS=$(pwd)/build/guests
CRECTOOLS=$(cd "${CRECTOOLS:-build/tools}" 2>/dev/null && pwd)
E2E_DIR=$(cd "$(dirname "$0")" && pwd)
export CREC GUESTS E2E_DIR CRECTOOLS
log=$(mktemp)
for t in "$E2E_DIR"/t_*.sh; do
    [ -e "$t" ] || continue
    sh "$t" 2>&1 | tee -a "$log"
done
p=$(grep -c '^PASS ' "$log")
f=$(grep -c '^FAIL ' "$log")
rm -f "$log"
echo "e2e: $p passed, $f failed"
[ "$f" -eq 0 ] && [ "$p" -gt 0 ]
