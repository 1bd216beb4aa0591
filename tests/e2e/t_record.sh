# crec record and crec replay on real programs: the recording run prints
# what the native run prints, and the replay, with the program and its
# inputs deleted, is verified.
. "$E2E_DIR/lib.sh"

DATA=$TMP/data
mkdir -p "$DATA"
seq 1 200000 >"$DATA/numbers.txt" # about 1.3 MB
awk 'BEGIN { s = 7; for (i = 0; i < 5000; i++) { s = (s * 1103515245 + 12345) % 2147483648; print s } }' \
    >"$DATA/lines.txt"
printf 'alpha\nbeta\ngamma\n' >"$DATA/small.txt"

# rr_case NAME PROG 'ARGS' [STDIN]: PROG (a path, or a name looked up in
# PATH) is copied into the case's own directory, recorded from there with
# ARGS (a shell string run in the case's data directory), compared with the
# native run, then deleted with the data before the replay.
rr_case() {
    name=$1 prog=$2 args=$3 input=${4:-/dev/null}
    d=$TMP/case-$name
    mkdir -p "$d/bin" "$d/data"
    cp "$(which "$prog" || echo "$prog")" "$d/bin/prog"
    cp -r "$DATA/." "$d/data/"
    cp "$input" "$d/stdin"
    if [ -n "${RR_EXPECTED:-}" ]; then
        # the output an earlier native run gave (a CPU this one may not be)
        cp "$RR_EXPECTED" "$d/native.out"
        nrc=0
    else
        (cd "$d/data" && sh -c "\"$d/bin/prog\" $args" <"$d/stdin") >"$d/native.out" 2>/dev/null
        nrc=$?
    fi
    (cd "$d/data" && sh -c "\"$CREC\" record -o \"$d/rec.crec\" -- \"$d/bin/prog\" $args" \
        <"$d/stdin") >"$d/rec.out" 2>"$d/rec.err"
    rrc=$?
    if [ "$nrc" != "$rrc" ] || ! cmp -s "$d/native.out" "$d/rec.out"; then
        fail "record $name" "native exit $nrc, recorded exit $rrc, stdout $(cmp "$d/native.out" "$d/rec.out" 2>&1 | head -c 200); $(head -c 300 "$d/rec.err")"
        return
    fi
    pass "record $name"
    rm -rf "$d/bin" "$d/data" "$d/stdin"
    if "$CREC" replay "$d/rec.crec" >"$d/replay.out" 2>"$d/replay.err"; then
        pass "replay $name"
    else
        fail "replay $name" "$(head -c 400 "$d/replay.err")"
    fi
}

rr_case true true ''
rr_case echo echo 'hello'
rr_case cat cat 'small.txt'
rr_case ls ls '-la /usr/bin'
rr_case sha256sum sha256sum 'numbers.txt'
rr_case sort sort 'lines.txt'
rr_case busybox busybox "sh -c 'for i in 1 2 3; do echo \$i; done'"
rr_case lua lua5.4 "-e 'local s=0 for i=1,1e5 do s=s+i end print(s)'"
rr_case sqlite3 sqlite3 "':memory:' 'create table t(x); insert into t values(1),(2); select sum(x) from t;'"
rr_case static-guest "$GUESTS/hello_static" ''
rr_case dynamic-guest "$GUESTS/hello_dyn" ''
rr_case memory-syscalls "$GUESTS/memops_static" ''
rr_case loads-across-remaps "$GUESTS/remap_static" ''
rr_case gzip-c gzip '-c small.txt'
# instructions crec executes itself, and their vector state across key frames
rr_case vec-native "$GUESTS/vec_native" ''
rr_case vec-v2 "$GUESTS/vec_v2" ''
# avx_ops' forms need AVX-512: its output on such a CPU is kept beside it
# (t_run.sh checks that file against this CPU when it has AVX-512).
RR_EXPECTED=$E2E_DIR/../guests/avx_ops.quick.expected
rr_case avx-ops "$GUESTS/avx_ops" 'quick'
RR_EXPECTED=
rr_case avx-fault "$GUESTS/avx_fault" 'unmapped'
# a 1 TiB reservation; AddressSanitizer's shadow; waits; /proc/self
rr_case reserve "$GUESTS/reserve" ''
export ASAN_OPTIONS=detect_leaks=0 # LeakSanitizer needs ptrace (docs/EMU.md)
rr_case asan "$GUESTS/hello_asan" ''
unset ASAN_OPTIONS
rr_case timed-waits "$GUESTS/timed_waits" ''
rr_case procself "$GUESTS/procself" 'x'
rr_case asyncio /usr/bin/python3 "-c 'import asyncio
async def main():
    await asyncio.sleep(0.05)
    return 42
print(asyncio.run(main()))'"
if [ -f "$TMP/case-reserve/rec.crec" ] && [ "$(wc -c <"$TMP/case-reserve/rec.crec")" -lt 4000000 ]; then
    pass "record reserve: the untouched terabyte is not in the recording"
else fail "record reserve: the untouched terabyte is not in the recording" "$(ls -l "$TMP/case-reserve")"; fi
gzip -c "$DATA/small.txt" >"$TMP/small.gz"
rr_case gzip-dc gzip '-dc' "$TMP/small.gz"

rr_case sleep sleep '0.2'
rr_case closed-stdout echo "hi >&-"

# The stack is as big as `ulimit -s` says when recording; the replay needs
# no limit of its own.
d=$TMP/deep-stack
mkdir -p "$d"
native=$(ulimit -s 65536 && "$GUESTS/deep_stack" 2>/dev/null; echo "exit $?")
recorded=$(ulimit -s 65536 && "$CREC" record -o "$d/r.crec" -- "$GUESTS/deep_stack" 2>/dev/null; echo "exit $?")
expect_eq "record deep recursion with ulimit -s 65536 as natively" "$native" "$recorded"
expect_status "replay deep recursion with ulimit -s 65536" 0 "$CREC" replay "$d/r.crec"

# RDRAND's values are recorded: the replay gets them back (its writes are checked).
d=$TMP/rdrand
mkdir -p "$d"
if "$CREC" record -o "$d/r.crec" -- "$GUESTS/rdrand" show >"$d/out" 2>"$d/err" &&
    [ "$(wc -l <"$d/out")" = 9 ]; then
    pass "record rdrand"
    expect_status "replay rdrand" 0 "$CREC" replay "$d/r.crec"
else
    fail "record rdrand" "$(cat "$d/out" "$d/err" | head -c 300)"
fi
d=$TMP/case-avx-ops
if [ -f "$d/rec.crec" ]; then
    expect_status "replay --jobs 2 avx-ops (vector state from key frames)" 0 \
        "$CREC" replay --jobs 2 "$d/rec.crec"
fi

# The analysis commands see the instructions crec executes itself: the
# profile counts every instruction once, a trace shows each of them.
d=$TMP/case-vec-native
if [ -f "$d/rec.crec" ]; then
    n=$("$CREC" info "$d/rec.crec" | awk '/^instructions:/ { print $2 }')
    p=$("$CREC" profile "$d/rec.crec" 2>&1 | awk '/^total:/ { print $2 }')
    expect_eq "profile of vec-native counts its $n instructions once" "$n" "$p"
    nv=$("$CREC" trace "$d/rec.crec" 2>/dev/null | grep -c ' v[a-z0-9]* .*[xyz]mm')
    if [ "${nv:-0}" -gt 1000 ]; then
        pass "trace of vec-native shows the vector instructions ($nv)"
    else fail "trace of vec-native shows the vector instructions" "$nv"; fi
fi

# Parallel replay and replay from a key frame give the same verdict.
d=$TMP/case-sort
if [ -f "$d/rec.crec" ]; then
    expect_status "replay --jobs 2 sort" 0 "$CREC" replay --jobs 2 "$d/rec.crec"
    expect_status "replay --from sort" 0 "$CREC" replay --from 3000000 "$d/rec.crec"
    expect_status "replay --from past the end" 1 "$CREC" replay --from 999999999999 "$d/rec.crec"
    one_error_line "replay --from past the end is one error line"
else
    fail "replay --jobs 2 and --from sort" "the recording of sort is missing"
fi

# A file, a pipe and the clock: replayed on another day, in another
# directory, the program prints exactly what it printed when recorded.
d=$TMP/clock
mkdir -p "$d/rec" "$d/elsewhere"
echo "from the file" >"$d/rec/input.txt"
cp "$GUESTS/clock_pipe_file" "$d/rec/prog"
(cd "$d/rec" && echo "from the pipe" | "$CREC" record -o ../clock.crec -- ./prog input.txt) \
    >"$d/recorded.out" 2>"$d/err"
rm -rf "$d/rec"
if grep -q "^pipe: from the pipe" "$d/recorded.out" && grep -q "^file: from the file" "$d/recorded.out"; then
    pass "record file, pipe and clock"
else
    fail "record file, pipe and clock" "$(cat "$d/recorded.out" "$d/err" | head -c 300)"
fi
(cd "$d/elsewhere" && ASAN_OPTIONS=verify_asan_link_order=0 TZ=Asia/Tokyo faketime '2031-02-03 04:05:06' "$CREC" replay ../clock.crec) \
    >"$d/replay.out" 2>"$d/replay.err"
expect_eq "replay file, pipe and clock on another day elsewhere" 0 "$?"

# A changed value in the read stream (checksums fixed up) is a divergence:
# exit 3, naming the register that ended up with the changed value.
d=$TMP/tamper
mkdir -p "$d"
printf 'AAAAAAAA' >"$d/value.bin"
"$CREC" record --keyframe-interval 1 -o "$d/good.crec" -- "$GUESTS/read_value" "$d/value.bin" \
    >"$d/out" 2>"$d/err"
"$CRECTOOLS/crec_tamper" "$d/good.crec" "$d/bad.crec" 4141414141414141 2>"$d/tamper.err"
expect_status "replay of the untouched recording is verified" 0 "$CREC" replay "$d/good.crec"
expect_status "replay of a changed read value diverges (exit 3)" 3 "$CREC" replay "$d/bad.crec"
one_error_line "divergence is one error line"
if grep -q "diverged at instruction" "$TMP/err" && grep -Eq "is 0x(41)*40, recorded 0x(41)+$" "$TMP/err"; then
    pass "divergence names the instruction and the changed value"
else
    fail "divergence names the instruction and the changed value" "$(cat "$TMP/err")"
fi

# A crash ends a complete recording at the faulting instruction.
d=$TMP/crash
mkdir -p "$d"
expect_status "record of a crashing program exits 139" 139 \
    "$CREC" record -o "$d/segv.crec" -- "$GUESTS/segv"
expect_status "the crash recording is complete" 0 "$CREC" info "$d/segv.crec"
if grep -q "killed by signal 11" "$TMP/out"; then pass "info names the fatal signal"; else
    fail "info names the fatal signal" "$(head -c 300 "$TMP/out")"; fi
expect_status "the crash recording replays verified" 0 "$CREC" replay "$d/segv.crec"

# SIGINT and SIGTERM end the recording cleanly where the program was.
for sig in INT:2 TERM:15; do
    num=${sig#*:} sig=${sig%:*}
    timeout --preserve-status -s $sig 2 "$CREC" record --keyframe-interval 2000000 \
        -o "$d/stopped-$sig.crec" -- \
        lua5.4 -e 'local s=0 for i=1,1e10 do s=s+i end print(s)' >/dev/null 2>"$d/stopped.err"
    expect_eq "record stopped by SIG$sig exits 128+signal" \
        "$((128 + num))" "$?"
    expect_status "record stopped by SIG$sig leaves a complete file" 0 \
        "$CREC" info "$d/stopped-$sig.crec"
    if grep -q "recording stopped by signal" "$TMP/out" && ! grep -q truncated "$TMP/out"; then
        pass "info says the recording was stopped by SIG$sig"
    else
        fail "info says the recording was stopped by SIG$sig" "$(head -c 300 "$TMP/out")"
    fi
    expect_status "record stopped by SIG$sig replays verified" 0 \
        "$CREC" replay "$d/stopped-$sig.crec"
    # the last key frame is where the program was, RIP too: a part that
    # starts at a key frame ends there (it was stale, the start of a block
    # before, which a replay from the start met as stale)
    expect_status "record stopped by SIG$sig replays verified in parts" 0 \
        "$CREC" replay --jobs 2 "$d/stopped-$sig.crec"
    if grep -q "replayed in 2 parts" "$TMP/out"; then pass "... in 2 parts"; else
        fail "... in 2 parts" "$(head -c 300 "$TMP/out")"; fi
done
# A stopped recording made before that holds the stale RIP: still verified
# (replay.c, rep_stale_end_rip), but for a RIP in no block that ran last,
# or at the end of a program that was not stopped.
nk=$("$CREC" info "$d/stopped-INT.crec" | awk '/^key frames:/ { print $3 }')
"$CRECTOOLS/crec_refield" "$d/stopped-INT.crec" "$d/stale.crec" KEYFRAMES 1 $((nk - 1)) 7 add 1
expect_status "a stopped recording whose last RIP lies in the last blocks still verifies" 0 \
    "$CREC" replay "$d/stale.crec"
"$CRECTOOLS/crec_refield" "$d/stopped-INT.crec" "$d/stale.crec" KEYFRAMES 1 $((nk - 1)) 7 \
    add 0x10000
expect_status "a stopped recording whose last RIP is elsewhere diverges" 3 \
    "$CREC" replay "$d/stale.crec"
nk=$("$CREC" info "$d/segv.crec" | awk '/^key frames:/ { print $3 }')
"$CRECTOOLS/crec_refield" "$d/segv.crec" "$d/stale.crec" KEYFRAMES 1 $((nk - 1)) 7 add 1
expect_status "a recording that was not stopped, its last RIP off by one, diverges" 3 \
    "$CREC" replay "$d/stale.crec"

# SIGKILL gives crec no chance to finish the file: what was recorded up to
# about a second before the kill must still be there, and replay verified.
# (6 s: the replay to its last key frame must outlast the progress line's
# first second below, on a loaded machine too.)
timeout --preserve-status -s KILL 6 "$CREC" record -o "$d/killed.crec" -- \
    lua5.4 -e 'local s=0 for i=1,1e10 do s=s+i end print(s)' >/dev/null 2>&1
expect_eq "record killed by SIGKILL dies of it" 137 "$?"
expect_status "a killed recording opens" 0 "$CREC" info "$d/killed.crec"
kfs=$(awk '/^key frames:/ { print $3 }' "$TMP/out")
if grep -q "^truncated: *yes" "$TMP/out" && [ "${kfs:-0}" -ge 2 ]; then
    pass "info says the killed recording is truncated, with its key frames"
else
    fail "info says the killed recording is truncated, with its key frames" "$(head -c 400 "$TMP/out")"
fi
expect_status "a killed recording replays verified up to its last key frame" 0 \
    "$CREC" replay "$d/killed.crec"
if [ "$(wc -l <"$TMP/out")" = 1 ] &&
    grep -q "replay verified up to where the recording was cut short" "$TMP/out"; then
    pass "replay of a killed recording says, in one line, that it verified up to the cut"
else
    fail "replay of a killed recording says, in one line, that it verified up to the cut" \
        "$(head -c 400 "$TMP/out")"
fi
expect_eq "replay with stderr not a terminal shows no progress line" "" "$(cat "$TMP/err")"

# On a terminal (script(1) gives it one), a replay that runs for more than
# a second shows how far it has got, and erases that line when done.
if command -v script >/dev/null 2>&1; then
    script -qec "\"$CREC\" replay \"$d/killed.crec\"" /dev/null >"$TMP/tty" 2>&1
    if grep -q "crec replay: [0-9]* of [0-9]* instructions ([0-9]*%)" "$TMP/tty" &&
        grep -q "$(printf '\r\033')\[K$d/killed.crec: replay verified up to" "$TMP/tty"; then
        pass "replay on a terminal shows a progress line and erases it"
    else
        fail "replay on a terminal shows a progress line and erases it" \
            "$(head -c 400 "$TMP/tty" | od -c | head -n 8)"
    fi
else
    fail "replay on a terminal shows a progress line and erases it" "script(1) is missing"
fi

# A recording that lost only its directory still holds the whole run: a
# full replay.  Cut deeper, it is verified up to the last key frame whose
# data all reached the file, and the replay says so.
sample=$E2E_DIR/../../traces-sample/hello.crec
size=$(wc -c <"$sample")
head -c $((size - 1)) "$sample" >"$d/nodir.crec"
expect_status "a recording without its directory replays" 0 "$CREC" replay "$d/nodir.crec"
if grep -q "replay verified: " "$TMP/out"; then pass "... verified to its end"
else fail "... verified to its end" "$(head -c 300 "$TMP/out")"; fi
# Cut into its last chunks, hello.crec loses its only READS chunk: no
# segment is left to verify, and replay says so instead of "verified".
head -c $((size - 500)) "$sample" >"$d/cut.crec"
expect_status "a recording cut before its first complete segment is not verified" 1 \
    "$CREC" replay "$d/cut.crec"
if grep -q "cut short before its first complete segment: nothing to verify" "$TMP/err"; then
    pass "... and replay says there is nothing to verify"
else
    fail "... and replay says there is nothing to verify" "$(head -c 300 "$TMP/out" "$TMP/err")"
fi

# RDTSC and CPUID answers come from the recording.
expect_status "record rdtsc" 0 "$CREC" record -o "$d/rdtsc.crec" -- "$GUESTS/rdtsc"
expect_status "replay rdtsc" 0 "$CREC" replay "$d/rdtsc.crec"
expect_status "record cpuid" 0 "$CREC" record -o "$d/cpuid.crec" -- "$GUESTS/cpuid"
expect_status "replay cpuid" 0 "$CREC" replay "$d/cpuid.crec"

# --stats says what was recorded, even when the program closed its stderr.
expect_status "record --stats" 0 "$CREC" record --stats -o "$d/echo.crec" -- /bin/echo hi
if grep -q "^crec: recorded [0-9]* instructions" "$TMP/err"; then pass "record --stats prints a summary"
else fail "record --stats prints a summary" "$(head -c 300 "$TMP/err")"; fi

# -o - streams the recording into a pipe; the program's output goes to stderr.
"$CREC" record -o - -- /bin/echo piped 2>"$d/piped.err" | "$CREC" info - >"$d/piped.info"
expect_eq "record -o - | info - reads the whole recording" "exit:          status 0" \
    "$(grep '^exit:' "$d/piped.info")"
expect_eq "record -o - sends the program's output to stderr" "piped" "$(cat "$d/piped.err")"
"$CREC" record -o - -- /bin/echo piped 2>/dev/null >"$d/piped.crec"
expect_status "a recording written to a pipe replays verified" 0 "$CREC" replay "$d/piped.crec"

# Bad input: one clear line and a non-zero status.
expect_status "replay of a missing file exits 1" 1 "$CREC" replay "$TMP/nope.crec"
one_error_line "replay of a missing file is one error line"
printf 'not a recording' >"$TMP/junk.crec"
expect_status "replay of junk exits 1" 1 "$CREC" replay "$TMP/junk.crec"
expect_status "record of a missing program exits 127" 127 "$CREC" record -o "$TMP/x.crec" -- /no/such/prog
