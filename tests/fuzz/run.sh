#!/bin/sh
# Run the reader's libFuzzer target: run.sh BINARY SECONDS.
# Seeds come from tests/fuzz/corpus/ (never written to); new inputs go to
# build-fuzz/corpus/ and crashes to build-fuzz/crash-*.  Each crash found
# becomes a tests/corrupt/ case once fixed (see tests/corrupt/README).
bin=${1:?usage: run.sh BINARY SECONDS}
secs=${2:-300}
dir=$(dirname "$bin")
mkdir -p "$dir/corpus"
# UBSan findings stop the run like ASan's, instead of scrolling past.
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
    -print_final_stats=1 -artifact_prefix="$dir/" "$dir/corpus" tests/fuzz/corpus \
    >"$dir/fuzz.log" 2>&1
rc=$?
grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|ERROR|SUMMARY' "$dir/fuzz.log"
if [ $rc -ne 0 ]; then
    tail -n 40 "$dir/fuzz.log"
    echo "fuzz: FAILED (see $dir/fuzz.log and $dir/crash-*)"
    exit 1
fi
echo "fuzz: ran ${secs}s clean"
