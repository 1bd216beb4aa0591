#!/usr/bin/env bash
# gdb's `record full` against `crec record`, both on the bench's C kernel
# (tests/guests/bench_memkernel.c), as steady-state instructions per second.
# Called by bench/run.sh in the bench data directory; prints a TSV:
#   recorder  size  instructions  seconds
# with one row per run.  Each recorder runs at two input sizes, and the
# report divides the difference in instructions by the difference in wall
# time: what each pays per recorded instruction once it is running, with
# start-up (gdb loading, breakpoints, crec's loader and first translations)
# cancelled out.  gdb records from main to the call of exit; AVX is hidden
# from glibc, because record full can't follow AVX instructions.
set -euo pipefail
: "${CREC:?}" "${GUESTS:?}" "${QUICK:=0}"
kernel=$GUESTS/bench_memkernel
# gdb records thousands of instructions per second, crec millions: each
# gets sizes that it records in a few seconds.
if [ "$QUICK" = 1 ]; then
    gdb_sizes="100 250" crec_sizes="50000 150000" crec_reps=1
else
    gdb_sizes="100 400" crec_sizes="100000 300000" crec_reps=3
fi

now() { date +%s%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

printf 'recorder\tsize\tinstructions\tseconds\n'
for n in $gdb_sizes; do
    t0=$(now)
    gdb -batch -nx \
        -ex 'set environment GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX2,-AVX,-ERMS,-FSRM' \
        -ex 'break main' -ex run -ex 'record full' \
        -ex 'set record full insn-number-max unlimited' \
        -ex 'break exit' -ex continue -ex 'info record' \
        --args "$kernel" "$n" >gdb.$n.out 2>&1 || true
    secs=$(seconds_since "$t0")
    insns=$(sed -n 's/^Log contains \([0-9]*\) instructions.*/\1/p' gdb.$n.out)
    if [ -z "$insns" ] || ! grep -q 'Breakpoint 2, ' gdb.$n.out; then
        echo "gdb record full did not reach exit at size $n: $(grep -i -m 2 'record\|error' gdb.$n.out)" >&2
        exit 1
    fi
    printf 'gdb record full\t%s\t%s\t%s\n' "$n" "$insns" "$secs"
done

# Alternate the two sizes, and print each rep; the report takes medians.
for _ in $(seq 1 "$crec_reps"); do
    for n in $crec_sizes; do
        t0=$(now)
        "$CREC" record --stats -o rec.gdb-cmp.crec -- "$kernel" "$n" >/dev/null 2>crec.$n.err
        secs=$(seconds_since "$t0")
        insns=$(sed -n 's/^crec: recorded \([0-9]*\) instructions.*/\1/p' crec.$n.err)
        printf 'crec record\t%s\t%s\t%s\n' "$n" "$insns" "$secs"
    done
done
rm -f rec.gdb-cmp.crec
