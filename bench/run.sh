#!/usr/bin/env bash
# make bench: time every workload natively, under qemu-x86_64 and under
# crec, alternating modes within each round so that machine noise hits all
# modes alike.  Writes bench/results/latest.{md,json,png} and keeps a dated
# copy of each run.  QUICK=1: small inputs, fewer rounds (under 3 minutes).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CREC:=build/crec}"
CREC=$(cd "$(dirname "$CREC")" && pwd)/$(basename "$CREC")
QUICK=${QUICK:-0}
GUESTS=$top/build/guests
BENCH_SRC=$top/bench
export CREC QUICK GUESTS BENCH_SRC

sh "$top/tools/deps.sh" time qemu-user gnuplot-nox lua5.4 sqlite3 python3 gdb

rounds=${ROUNDS:-$([ "$QUICK" = 1 ] && echo 1 || echo 3)}
modes=${MODES:-native qemu crec-run crec-record crec-replay crec-replay-j2}
data=$top/build/bench
mkdir -p "$data"
cd "$data"
. "$BENCH_SRC/workloads.sh"
bench_inputs

raw=$data/raw.tsv
printf 'workload\tmode\tround\tseconds\tmax_rss_kb\tinstructions\n' >"$raw"

# command_for NAME MODE COMMAND: the shell line that runs the workload in
# MODE.  Record writes rec.NAME.crec, which the replay modes then use.
command_for() {
    local name=$1 mode=$2 cmd=$3
    case $mode in
    native) echo "${cmd//@ /}" ;;
    qemu) echo "${cmd//@ /qemu-x86_64 }" ;;
    crec-run) echo "${cmd//@ /$CREC run --stats -- }" ;;
    crec-record) echo "${cmd//@ /$CREC record --stats -o rec.$name.crec -- }" ;;
    crec-replay) echo "$CREC replay rec.$name.crec" ;;
    crec-replay-j2) echo "$CREC replay --jobs 2 rec.$name.crec" ;;
    esac
}

# time_one NAME MODE ROUND COMMAND: run once, append a row to raw.tsv.
time_one() {
    local name=$1 mode=$2 round=$3 cmd=$4 line t0 t1 rss insns
    line=$(command_for "$name" "$mode" "$cmd")
    t0=$(date +%s%N)
    if ! /usr/bin/time -f '%M' -o time.out sh -c "$line" >out.$mode 2>err.$mode; then
        echo "bench: $name under $mode failed: $(head -c 300 err.$mode)" >&2
        exit 1
    fi
    t1=$(date +%s%N)
    rss=$(tail -n 1 time.out)
    insns=$(sed -n 's/^crec: \(recorded \)\{0,1\}\([0-9][0-9]*\) instructions.*/\2/p' err.$mode | head -n 1)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$round" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')" \
        "$rss" "${insns:-}" >>"$raw"
    case $mode in crec-replay*) return ;; esac
    if [ "$mode" != native ] && ! cmp -s out.native "out.$mode"; then
        echo "bench: $name under $mode printed something else than natively" >&2
        exit 1
    fi
}

bench_workloads >workloads.tsv
while IFS=$'\t' read -r name cmd; do
    for round in $(seq 1 "$rounds"); do
        for mode in $modes; do
            [ -t 2 ] && printf "\r\033[Kbench: %s, %s, round %s/%s" "$name" "$mode" "$round" "$rounds" >&2
            time_one "$name" "$mode" "$round" "$cmd"
        done
    done
done <workloads.tsv
[ -t 2 ] && printf "\r\033[K" >&2

# gdb's own recorder (record full) on a small input, against crec record on
# the same input: instructions per second.  AVX is hidden from glibc, which
# record full can't follow.
gdb_n=$([ "$QUICK" = 1 ] && echo 100 || echo 300)
t0=$(date +%s%N)
gdb -batch -nx \
    -ex 'set environment GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX2,-AVX,-ERMS,-FSRM' \
    -ex 'break main' -ex run -ex 'record full' -ex 'set record full insn-number-max unlimited' \
    -ex 'break exit' -ex continue -ex 'info record' \
    --args "$GUESTS/bench_memkernel" "$gdb_n" >gdb.out 2>&1 || true
t1=$(date +%s%N)
gdb_insns=$(sed -n 's/^Log contains \([0-9]*\) instructions.*/\1/p' gdb.out)
t2=$(date +%s%N)
"$CREC" record --stats -o rec.gdb-small.crec -- "$GUESTS/bench_memkernel" "$gdb_n" >/dev/null 2>crec-small.err
t3=$(date +%s%N)
crec_insns=$(sed -n 's/^crec: recorded \([0-9]*\) instructions.*/\1/p' crec-small.err)
printf 'recorder\tinstructions\tseconds\n' >gdb.tsv
printf 'gdb record full\t%s\t%s\n' "${gdb_insns:-0}" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" >>gdb.tsv
printf 'crec record\t%s\t%s\n' "${crec_insns:-0}" "$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" >>gdb.tsv

# Scaling: record time and trace size of sha256sum at four input sizes.
printf 'bytes\tinstructions\tseconds\ttrace_bytes\n' >scaling.tsv
for mb in $([ "$QUICK" = 1 ] && echo "1 2 3 4" || echo "5 10 20 40"); do
    [ -f "scale.$mb" ] || head -c "${mb}000000" /dev/zero | tr '\0' 'y' >"scale.$mb"
    t0=$(date +%s%N)
    "$CREC" record --stats -o rec.scale.crec -- "$(command -v sha256sum)" "scale.$mb" \
        >/dev/null 2>scale.err
    t1=$(date +%s%N)
    printf '%s\t%s\t%s\t%s\n' "${mb}000000" \
        "$(sed -n 's/^crec: recorded \([0-9]*\) instructions.*/\1/p' scale.err)" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')" \
        "$(stat -c %s rec.scale.crec)" >>scaling.tsv
done

# The size of each recording, for bits per instruction.
printf 'workload\tfile_bytes\tbits_per_instruction\tinstructions\n' >sizes.tsv
while IFS=$'\t' read -r name cmd; do
    [ -f "rec.$name.crec" ] || continue
    "$CREC" info --json "rec.$name.crec" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("%s\t%d\t%s\t%d" % (sys.argv[1], d["file_bytes"], d["bits_per_instruction"], d["instructions"]))
' "$name" >>sizes.tsv
done <workloads.tsv

python3 "$BENCH_SRC/report.py" "$raw" "$top/bench/results" sizes.tsv gdb.tsv scaling.tsv
