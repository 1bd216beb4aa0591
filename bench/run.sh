#!/usr/bin/env bash
# make bench: time every workload natively, under qemu-x86_64 and under
# crec, alternating modes within each round so that machine noise hits all
# modes alike; then gdb's record full against crec record, crec gdb's
# reverse motions on a long recording (bench/gdb_reverse.sh), the scaling of
# record with instruction count, index builds and query latency.  `make
# bench` first installs what this needs (PKGS_BENCH in the Makefile).
# Writes bench/results/latest.{md,json,png}, latest-scaling.png and a copy
# of each in bench/results/runs/.  bench/README.md explains every figure.
#
# QUICK=1: small inputs, one round (under 3 minutes).  ROUNDS=N and
# MODES="..." override the defaults; INDEX_BUDGET, QUERY_COLD_BUDGET and
# QUERY_WARM_BUDGET cap, in seconds, the parts whose cost depends on how
# fast crec's index is (see bench/README.md).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
: "${CREC:=build/crec}"
CREC=$(cd "$(dirname "$CREC")" && pwd)/$(basename "$CREC")
QUICK=${QUICK:-0}
[ "$QUICK" = 1 ] || QUICK=0
GUESTS=$top/build/guests
BENCH_SRC=$top/bench
export CREC QUICK GUESTS BENCH_SRC

if [ "$QUICK" = 1 ]; then
    rounds=${ROUNDS:-1}
    index_budget=${INDEX_BUDGET:-15} cold_budget=${QUERY_COLD_BUDGET:-30}
    warm_budget=${QUERY_WARM_BUDGET:-15} cold_n=2 warm_n=30
    query_py_n=5 scale_sizes="250000 500000 750000 1000000"
else
    rounds=${ROUNDS:-5}
    index_budget=${INDEX_BUDGET:-90} cold_budget=${QUERY_COLD_BUDGET:-180}
    warm_budget=${QUERY_WARM_BUDGET:-120} cold_n=3 warm_n=100
    query_py_n=7 scale_sizes="1000000 2000000 4000000 8000000"
fi
modes=${MODES:-native qemu crec-run crec-record crec-replay crec-replay-j2}

data=$top/build/bench
mkdir -p "$data"
cd "$data"
rm -f ./*.tsv ./*.json rec.*.crec rec.*.crec.idx
. "$BENCH_SRC/workloads.sh"

now() { date +%s%N; }
# seconds_since T0: seconds from T0 (ns) to now, 3 decimals.
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
bench_start=$(now)
cp /proc/loadavg loadavg.start
date +%s >started
phase_start=$bench_start
printf 'phase\tseconds\n' >phases.tsv
# phase_done NAME: log how long the phase took, to stderr and phases.tsv.
phase_done() {
    local s
    s=$(seconds_since "$phase_start")
    printf '%s\t%s\n' "$1" "$s" >>phases.tsv
    echo "bench: $1 done in ${s} s" >&2
    phase_start=$(now)
}
# progress TEXT: one status line, only on a terminal.
progress() { if [ -t 2 ]; then printf '\r\033[Kbench: %s' "$1" >&2; fi; }
progress_end() { if [ -t 2 ]; then printf '\r\033[K' >&2; fi; }

printf 'workload\tmode\tmessage\n' >failures.tsv
# fail NAME MODE MESSAGE: note a failure; the report lists it.
fail() {
    printf '%s\t%s\t%s\n' "$1" "$2" "$(printf '%s' "$3" | tr '\t\n' '  ' | head -c 400)" >>failures.tsv
    echo "bench: $1 under $2 failed: $3" >&2
}

bench_inputs
phase_done inputs

# --- 1. every workload in every mode ---------------------------------------
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

# instructions_in FILE: the guest instruction count crec printed.
instructions_in() {
    sed -n -e 's/^crec: \(recorded \)\{0,1\}\([0-9][0-9]*\) instructions.*/\2/p' \
        -e 's/.*replay verified[^:]*: \([0-9][0-9]*\) instructions.*/\1/p' "$1" | head -n 1
}

# repeats_of MODE: how many times one timing runs the command.  Native and
# qemu runs take tens of milliseconds, where a moment's wait for a CPU on
# a shared machine would weigh as much as the run: they are run several
# times back to back, and the time divided by the count.
repeats_of() {
    case $1 in
    native) echo 5 ;;
    qemu) echo 3 ;;
    *) echo 1 ;;
    esac
}

# time_one NAME MODE ROUND COMMAND: run once, check what it printed, and
# append a row to raw.tsv.  Returns 1 (after noting why) on a failure.
time_one() {
    local name=$1 mode=$2 round=$3 cmd=$4 line t0 secs rss out=out.$1.$2 err=err.$1.$2 reps
    line=$(command_for "$name" "$mode" "$cmd")
    reps=$(repeats_of "$mode")
    t0=$(now)
    if ! /usr/bin/time -f '%M' -o time.out \
        sh -c "for i in \$(seq $reps); do $line >$out || exit; done" </dev/null 2>"$err"; then
        fail "$name" "$mode" "exit status $(sed -n 's/^Command exited with non-zero status //p' time.out): $(tail -c 300 "$err")"
        return 1
    fi
    secs=$(awk -v s="$(seconds_since "$t0")" -v n="$reps" 'BEGIN { printf "%.4f", s / n }')
    rss=$(tail -n 1 time.out)
    case $mode in
    native) ;;
    crec-replay*)
        grep -q 'replay verified' "$out" || {
            fail "$name" "$mode" "no 'replay verified': $(head -c 300 "$out")"
            return 1
        } ;;
    *)
        cmp -s "out.$name.native" "$out" || {
            fail "$name" "$mode" "printed something else than natively"
            return 1
        } ;;
    esac
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$mode" "$round" "$secs" "$rss" \
        "$(instructions_in "$err")$(instructions_in "$out")" >>"$raw"
}

bench_workloads >workloads.tsv
declare -A failed=()
while IFS=$'\t' read -r name cmd; do
    for round in $(seq 1 "$rounds"); do
        for mode in $modes; do
            [ -z "${failed[$name/$mode]:-}" ] || continue
            case $mode in
            crec-replay*) [ -z "${failed[$name/crec-record]:-}" ] || continue ;;
            esac
            progress "$name, $mode, round $round/$rounds"
            time_one "$name" "$mode" "$round" "$cmd" || failed[$name/$mode]=1
        done
    done
done <workloads.tsv
progress_end

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
phase_done modes

# --- 2. gdb's record full against crec record ------------------------------
bash "$BENCH_SRC/gdb.sh" >gdb.tsv 2>gdb.log || fail gdb "record full" "$(tail -c 300 gdb.log)"
phase_done gdb

# --- 2b. crec gdb: reverse motions on a recording of 1.1e9 instructions ------
bash "$BENCH_SRC/gdb_reverse.sh" >gdb_reverse.tsv 2>gdb_reverse.log ||
    fail gdb_reverse "crec gdb" "$(tail -c 300 gdb_reverse.log)"
phase_done gdb_reverse

# --- 3. scaling: crec record of sha256sum at four input sizes ---------------
# The sizes alternate within each round, as the modes do above.
printf 'bytes\tinstructions\tseconds\ttrace_bytes\n' >scaling.tsv
for round in $(seq 1 "$rounds"); do
    for n in $scale_sizes; do
        bench_text "$n" "scale.in.$n"
        progress "scaling, $n bytes, round $round/$rounds"
        t0=$(now)
        if "$CREC" record --stats -o rec.scale.crec -- "$(command -v sha256sum)" "scale.in.$n" \
            </dev/null >/dev/null 2>scale.err; then
            printf '%s\t%s\t%s\t%s\n' "$n" "$(instructions_in scale.err)" "$(seconds_since "$t0")" \
                "$(stat -c %s rec.scale.crec)" >>scaling.tsv
        else
            fail scaling "$n bytes" "$(tail -c 300 scale.err)"
        fi
    done
done
rm -f rec.scale.crec
progress_end
phase_done scaling

# --- 4. the index of each recording, smallest first, within a budget -------
# The first memory query of a recording builds FILE.idx; we ask for the
# stack word at the initial stack pointer, at the end.
printf 'workload\tinstructions\tseconds\tindex_bytes\tstatus\n' >index.tsv
index_start=$(now)
sort -t "$(printf '\t')" -k4,4n <(tail -n +2 sizes.tsv) | while IFS=$'\t' read -r name _ _ insns; do
    left=$(awk -v b="$index_budget" -v s="$(seconds_since "$index_start")" 'BEGIN { printf "%d", b - s }')
    if [ "$left" -le 0 ]; then
        printf '%s\t%s\t\t\tskipped\n' "$name" "$insns" >>index.tsv
        continue
    fi
    progress "index of $name (at most $left s)"
    rm -f "rec.$name.crec.idx"
    if ! sp=$("$CREC" query "rec.$name.crec" rsp@0 </dev/null 2>index.out | sed -n 's/.*= \(0x[0-9a-f]*\).*/\1/p') ||
        [ -z "$sp" ]; then
        fail "$name" index "rsp@0: $(tail -c 300 index.out)"
        continue
    fi
    t0=$(now)
    if timeout "$left" "$CREC" query "rec.$name.crec" "$sp@end" </dev/null >index.out 2>&1; then
        printf '%s\t%s\t%s\t%s\tbuilt\n' "$name" "$insns" "$(seconds_since "$t0")" \
            "$(stat -c %s "rec.$name.crec.idx")" >>index.tsv
    elif [ $? = 124 ]; then
        printf '%s\t%s\t%s\t\ttimed out\n' "$name" "$insns" "$(seconds_since "$t0")" >>index.tsv
    else
        fail "$name" index "$(tail -c 300 index.out)"
    fi
done
progress_end
phase_done index

# --- 5. query latency on a long recording ------------------------------------
# python3 summing range(10**7) is about 1.6e9 instructions (QUICK: 10**5).
# --strace logs the heap's brk and mmap results, where query.py picks
# heap addresses.
query_cmd=(/usr/bin/python3 -c "print(sum(range(10**$query_py_n)))")
progress "recording ${query_cmd[*]}"
t0=$(now)
if "$CREC" record --stats --strace -o rec.query.crec -- "${query_cmd[@]}" >query.out 2>query.strace; then
    query_record_s=$(seconds_since "$t0")
    progress "queries"
    python3 "$BENCH_SRC/query.py" --crec "$CREC" --recording rec.query.crec \
        --program "$(readlink -f /usr/bin/python3)" --strace query.strace \
        --record-seconds "$query_record_s" --seed 8 \
        --cold "$cold_n" --cold-budget "$cold_budget" \
        --warm "$warm_n" --warm-budget "$warm_budget" >query.json 2>query.log ||
        fail query harness "$(tail -c 300 query.log)"
else
    fail query record "$(tail -c 300 query.strace)"
fi
progress_end
phase_done queries

# --- 6. the flight recorder: a ring's cost, key frames on demand ------------
progress "flight recorder"
bash "$BENCH_SRC/flight.sh" >flight.tsv 2>flight.log || fail flight "ring, keyframes" "$(tail -c 300 flight.log)"
progress_end
phase_done flight

printf 'total\t%s\n' "$(seconds_since "$bench_start")" >>phases.tsv
python3 "$BENCH_SRC/report.py" "$data" "$top/bench/results" \
    --quick "$QUICK" --rounds "$rounds" --crec "$CREC"
