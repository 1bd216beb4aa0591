#!/bin/sh
# Run every end-to-end test script tests/e2e/t_*.sh against the built crec
# ($CREC).  Each script prints "PASS name" or "FAIL name ..." lines; the last
# line here is "e2e: N passed, N failed".
#
# The scripts are independent (each has its own temporary directory), so
# they run E2E_JOBS at a time (default: one per core), the slowest first
# so that none is left running alone at the end; each script's output is
# printed whole, in name order, as it is collected.
: "${CREC:?set CREC to the crec binary}"
CREC=$(cd "$(dirname "$CREC")" && pwd)/$(basename "$CREC")
GUESTS=$(pwd)/build/guests
CRECTOOLS=$(cd "${CRECTOOLS:-build/tools}" 2>/dev/null && pwd)
E2E_DIR=$(cd "$(dirname "$0")" && pwd)
export CREC GUESTS E2E_DIR CRECTOOLS
jobs=${E2E_JOBS:-$(nproc 2>/dev/null || echo 1)}
# The slow ones, measured (a few minutes each on a shared core); the rest
# take seconds.
slow="t_record.sh t_threads.sh t_flight.sh t_procs.sh t_reliab.sh t_gdb.sh t_run.sh t_signals.sh"
outdir=$(mktemp -d /tmp/crec-e2e-run.XXXXXX)
trap 'rm -rf "$outdir"' EXIT

{
    for s in $slow; do [ -e "$E2E_DIR/$s" ] && echo "$E2E_DIR/$s"; done
    for t in "$E2E_DIR"/t_*.sh; do
        case " $slow " in *" $(basename "$t") "*) ;; *) [ -e "$t" ] && echo "$t" ;; esac
    done
} | xargs -P "$jobs" -I{} sh -c 's=$(date +%s); sh "$1" >"$2/$(basename "$1").out" 2>&1
    echo "# $(basename "$1"): $(( $(date +%s) - s )) s" >>"$2/$(basename "$1").out"
    touch "$2/$(basename "$1").done"' _ {} "$outdir" &
runner=$!

for t in "$E2E_DIR"/t_*.sh; do
    [ -e "$t" ] || continue
    n=$(basename "$t")
    while [ ! -e "$outdir/$n.done" ] && kill -0 "$runner" 2>/dev/null; do sleep 1; done
    if [ -e "$outdir/$n.done" ]; then
        cat "$outdir/$n.out"
    else
        echo "FAIL $n: did not finish"
    fi
done | tee "$outdir/all.log"
wait "$runner"
p=$(grep -c '^PASS ' "$outdir/all.log")
f=$(grep -c '^FAIL ' "$outdir/all.log")
echo "e2e: $p passed, $f failed"
[ "$f" -eq 0 ] && [ "$p" -gt 0 ]
