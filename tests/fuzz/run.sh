#!/bin/sh
# Run one libFuzzer target: run.sh BINARY SECONDS SEEDS [TIMEOUT_S RSS_MB MALLOC_MB].
# Seeds come from SEEDS (tests/fuzz/corpus-*/, never written to), and every
# seed is run first, so the inputs of fixed bugs kept there (regress-*)
# are checked again on every run.  New inputs go to build-fuzz/corpus-NAME/
# and crashes to build-fuzz/NAME-crash-*.  A crash found becomes a seed (or
# a tests/corrupt/ case, for the reader) once fixed: see tests/fuzz/README.md.
bin=${1:?usage: run.sh BINARY SECONDS SEEDS [TIMEOUT_S RSS_MB MALLOC_MB]}
secs=${2:-300}
seeds=${3:?usage: run.sh BINARY SECONDS SEEDS [TIMEOUT_S RSS_MB MALLOC_MB]}
# The budget: an input that runs longer than TIMEOUT_S, or allocates more
# than MALLOC_MB at once, or a process that grows past RSS_MB, is reported
# as a bug (a hostile file must not cost more than what it holds).
timeout=${4:-20}
rss=${5:-2048}
malloc=${6:-$rss}
dir=$(dirname "$bin")
name=$(basename "$bin")
mkdir -p "$dir/corpus-$name"
# UBSan findings stop the run like ASan's, instead of scrolling past.
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
"$bin" -max_total_time="$secs" -timeout="$timeout" -rss_limit_mb="$rss" \
    -malloc_limit_mb="$malloc" -max_len=16384 \
    -print_final_stats=1 -artifact_prefix="$dir/$name-" "$dir/corpus-$name" "$seeds" \
    >"$dir/$name.log" 2>&1
rc=$?
grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|ERROR|SUMMARY' "$dir/$name.log"
if [ $rc -ne 0 ]; then
    tail -n 40 "$dir/$name.log"
    echo "fuzz: $name FAILED (see $dir/$name.log and $dir/$name-crash-*)"
    exit 1
fi
echo "fuzz: $name ran ${secs}s clean"
