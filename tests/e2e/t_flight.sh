# The flight recorder (issue 19): a ring that keeps the end of a run, a
# crash at its end, dumps on demand, a replay that verifies a stream as it
# arrives, --max-size, recording that starts and stops on triggers, key
# frames on demand.
. "$E2E_DIR/lib.sh"

G=$GUESTS/flight_static
cd "$TMP" || exit 1

# ---- --ring: the file stays within its bound; the crash at the end ---------
"$CREC" record -o ring.crec --ring 2M -- "$G" ring 2000000 500 >ring.out 2>ring.err
expect_eq "ring: the program's crash is its status" 139 $?
size=$(stat -c %s ring.crec)
# the bound plus one segment (a sixteenth of it)
if [ "$size" -le $((2097152 + 131072)) ]; then pass "ring: the file stays within 2M plus a segment"
else fail "ring: the file stays within 2M plus a segment" "$size bytes"; fi
"$CREC" record -o full.crec -- "$G" ring 2000000 500 >/dev/null 2>&1
full=$(stat -c %s full.crec)
if [ "$full" -gt $((4 * size)) ]; then pass "ring: the whole run would take far more"
else fail "ring: the whole run would take far more" "full $full, ring $size"; fi
grep -q "ring.crec keeps instructions [0-9]* to [0-9]* of the run (ring of 2097152 bytes" ring.err &&
    pass "ring: record says what it kept" || fail "ring: record says what it kept" "$(cat ring.err)"
"$CREC" info ring.crec >info.out 2>&1
grep -q '^recorded:      instructions [1-9][0-9]* to [0-9]* (a ring of 2097152 bytes; it dropped [1-9][0-9]* segments' info.out &&
    pass "ring: info shows the kept range and what was dropped" ||
    fail "ring: info shows the kept range and what was dropped" "$(grep -E 'recorded|instr' info.out)"
grep -q '^crash:         SIGSEGV at instruction [0-9]*, 0x[0-9a-f]* crash+0x[0-9a-f]*: mov' info.out &&
    grep -q 'faulting address 0x80' info.out &&
    pass "ring: info names the signal, the instruction and the faulting address" ||
    fail "ring: info names the signal, the instruction and the faulting address" "$(grep -A2 crash info.out)"
from=$(sed -n 's/^recorded:      instructions \([0-9]*\) to \([0-9]*\).*/\1/p' info.out)
end=$(sed -n 's/^recorded:      instructions \([0-9]*\) to \([0-9]*\).*/\2/p' info.out)
expect_status "ring: the remainder replays verified" 0 "$CREC" replay ring.crec
grep -q "replay verified: [0-9]* instructions replayed (from $from to $end)" "$TMP/out" &&
    pass "ring: the replay starts at the first key frame kept" ||
    fail "ring: the replay starts at the first key frame kept" "$(cat "$TMP/out")"
expect_status "ring: a replay of it on two jobs" 0 "$CREC" replay -j 2 ring.crec
expect_status "ring: a query at 0 fails" 1 "$CREC" query ring.crec rip@0
expect_eq "ring: a query at 0 says the time was dropped" \
    "crec: rip@0: time 0 was dropped: the ring keeps $from to $end" "$(cat "$TMP/err")"
out=$("$CREC" query ring.crec rip@end counter@$((end - 100)) 2>&1)
case "$out" in
"rip@end = 0x"*"(register)
counter@$((end - 100)) = 0x"*) pass "ring: queries near the crash are answered" ;;
*) fail "ring: queries near the crash are answered" "$out" ;;
esac
"$CREC" backtrace ring.crec >bt.out 2>&1
grep -q "crash+0x[0-9a-f]* .* mov qword ptr \[rdi\], rax   <- SIGSEGV, address 0x80" bt.out &&
    grep -q '#0  0x[0-9a-f]* in crash (crash+0x' bt.out && grep -q '#1  .* in main (main+' bt.out &&
    pass "ring: backtrace shows the crash and the stack" ||
    fail "ring: backtrace shows the crash and the stack" "$(tail -5 bt.out)"
first=$("$CREC" when ring.crec counter 2>&1 | head -1)
case "$first" in "$from 0x"*" initial") pass "ring: when starts at the first time kept" ;;
*) fail "ring: when starts at the first time kept" "$first" ;; esac
"$CREC" profile ring.crec >prof.out 2>&1 && grep -q "total: $((end - from)) instructions" prof.out &&
    pass "ring: profile covers what was kept" || fail "ring: profile covers what was kept" "$(head -3 prof.out)"

# ---- SIGKILL of a ring recorder leaves a readable ring ----------------------
for t in 0.7 1.6; do
    "$CREC" record -o kill.crec --ring 1M -- "$G" ring 40000000 500 >/dev/null 2>&1 &
    pid=$!
    sleep "$t"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    expect_status "ring: killed after ${t}s, it replays up to its last key frame" 0 \
        "$CREC" replay kill.crec
    grep -q "replay verified up to where the recording was cut short" "$TMP/out" &&
        pass "ring: killed after ${t}s, the replay says it was cut short" ||
        fail "ring: killed after ${t}s, the replay says it was cut short" "$(cat "$TMP/out")"
    s=$(stat -c %s kill.crec)
    if [ "$s" -le $((1048576 + 65536)) ]; then pass "ring: killed after ${t}s, within its bound"
    else fail "ring: killed after ${t}s, within its bound" "$s bytes"; fi
done

# ---- dumps: SIGUSR1, crec dump PID -----------------------------------------
# (the program must outlive both requests on any machine: `slow` runs for
# 2.4 s of wall time whatever the CPU's speed)
"$CREC" record -o d.crec --dump-to 'dump-%d.crec' -- "$G" slow 8 >/dev/null 2>d.err &
pid=$!
sleep 1
kill -USR1 "$pid"
sleep 0.5
"$CREC" dump "$pid" 2>dump.err
expect_eq "dump: crec dump PID asks" 0 $?
wait "$pid"
grep -q "^crec: dump 1 written to dump-1.crec: the run from instruction 0 to [1-9]" d.err &&
    pass "dump: SIGUSR1 writes the first dump" || fail "dump: SIGUSR1 writes the first dump" "$(cat d.err)"
grep -q "^crec: dump 2 written to dump-2.crec" d.err &&
    pass "dump: crec dump PID writes the second" || fail "dump: crec dump PID writes the second" "$(cat d.err)"
for n in 1 2; do
    expect_status "dump: dump $n replays verified" 0 "$CREC" replay "dump-$n.crec"
    "$CREC" info "dump-$n.crec" | grep -q "^ended:         at instruction [0-9]*: a dump, taken while the program ran on (dump $n)" &&
        pass "dump: info says dump $n was taken while the program ran on" ||
        fail "dump: info says dump $n was taken while the program ran on" "$("$CREC" info "dump-$n.crec" 2>&1 | grep -E 'ended|exit')"
done
expect_status "dump: the recording itself is whole" 0 "$CREC" replay d.crec
expect_status "dump: a process that is no recorder is refused" 1 "$CREC" dump $$
one_error_line "dump: ... in one line"
"$CREC" record -o rd.crec --ring 2M -- "$G" ring 12000000 1000 >/dev/null 2>rd.err &
pid=$!
sleep 1.5
kill -USR1 "$pid"
wait "$pid"
expect_status "dump: a dump of a ring replays verified" 0 "$CREC" replay rd.dump1.crec
"$CREC" info rd.dump1.crec | grep -q "^recorded:      instructions [1-9]" &&
    pass "dump: a dump of a ring starts where the ring did" ||
    fail "dump: a dump of a ring starts where the ring did" "$("$CREC" info rd.dump1.crec | grep recorded)"

# ---- a stream verified as it arrives ----------------------------------------
# The program writes a line every 0.3 s for 3 s: the replay reports parts
# verified before the recorder is done.
("$CREC" record -o - -- "$G" slow 10 2>slow.prog; date +%s.%N >rec.done) |
    "$CREC" replay - 2>live.err >live.out
rc=$?
expect_eq "live: the stream replays verified" 0 "$rc"
grep -q "^-: replay verified: [0-9]* instructions replayed (from 0 to [0-9]*)" live.out &&
    pass "live: the whole stream is verified at its end" || fail "live: the whole stream is verified at its end" "$(cat live.out)"
n=$(grep -c "the recording goes on" live.err)
if [ "$n" -ge 2 ]; then pass "live: parts are verified while the program runs"
else fail "live: parts are verified while the program runs" "$n progress lines: $(cat live.err)"; fi
# the same over a FIFO, and through a reader that takes the bytes slowly:
# the recorder waits (back pressure), nothing is lost
mkfifo fifo
"$CREC" replay fifo >fifo.out 2>fifo.err &
rpid=$!
"$CREC" record -o - -- "$G" ring 400000 500 2>/dev/null |
    python3 -c '
import sys, time
i, o = sys.stdin.buffer, open("fifo", "wb")
while True:
    b = i.read(16384)
    if not b:
        break
    o.write(b)
    o.flush()
    time.sleep(0.01)
'
wait "$rpid"
expect_eq "live: a FIFO through a slow reader replays verified" 0 $?
grep -q "replay verified" fifo.out && pass "live: nothing was lost on the way" ||
    fail "live: nothing was lost on the way" "$(cat fifo.out fifo.err)"
# (a recorder flushes its streams at most once a second: a stream of some
# seconds, mostly the run's data: some 6e8 instructions)
"$CREC" record -o - -- "$G" ring 40000000 3000 2>/dev/null >stream.crec
expect_eq "live: info reads a stream" "instructions:" "$(cat stream.crec | "$CREC" info - | grep -o '^instructions:')"
cut=$(($(stat -c %s stream.crec) * 2 / 3))
expect_status "live: a stream cut short replays up to its last key frame" 0 \
    sh -c "head -c $cut stream.crec | '$CREC' replay -"
grep -q "cut short" "$TMP/out" && pass "live: ... and says so" || fail "live: ... and says so" "$(cat "$TMP/out")"

# ---- --max-size ----------------------------------------------------------------
"$CREC" record -o m.crec --max-size 1M -- "$G" ring 3000000 500 >/dev/null 2>m.err
expect_eq "max-size stop: crec exits 128+SIGXFSZ" 153 $?
s=$(stat -c %s m.crec)
if [ "$s" -le 1048576 ]; then pass "max-size stop: the file is within 1M"
else fail "max-size stop: the file is within 1M" "$s bytes"; fi
expect_status "max-size stop: it replays verified" 0 "$CREC" replay m.crec
grep -q "the recording reached --max-size at instruction [0-9]*: the program was stopped there" m.err &&
    pass "max-size stop: the program was stopped, it says" || fail "max-size stop: the program was stopped, it says" "$(cat m.err)"
"$CREC" record -o mc.crec --max-size 1M --on-full continue -- "$G" ring 3000000 500 >mc.out 2>mc.err
expect_eq "max-size continue: the program runs to its own end" 139 $?
grep -q "^late " mc.out && pass "max-size continue: ... and prints all it prints" || fail "max-size continue: ... and prints all it prints" "$(cat mc.out)"
expect_status "max-size continue: the file replays verified" 0 "$CREC" replay mc.crec
"$CREC" info mc.crec | grep -q "^ended:         at instruction [0-9]*: the file reached --max-size" &&
    pass "max-size continue: info says where and why it ended" ||
    fail "max-size continue: info says where and why it ended" "$("$CREC" info mc.crec | grep -E 'ended|exit')"

# ---- --start-at, --stop-at -------------------------------------------------------
"$CREC" record -o all.crec -- "$G" phases 3 >all.out 2>&1
"$CREC" record -o parts.crec --start-at work --stop-at rest -- "$G" phases 3 >parts.out 2>parts.err
expect_eq "parts: the program runs as it would" 0 $?
expect_eq "parts: its output is whole" 3 "$(grep -c '^round' parts.out)"
a=$(stat -c %s all.crec) p=$(stat -c %s parts.crec)
if [ "$p" -lt $((a / 3)) ]; then pass "parts: far smaller than the whole run ($p of $a bytes)"
else fail "parts: far smaller than the whole run" "$p of $a bytes"; fi
expect_status "parts: they replay verified" 0 "$CREC" replay parts.crec
expect_status "parts: each thread alone, two jobs" 0 "$CREC" replay -j 2 parts.crec
"$CREC" info parts.crec >pinfo.out
grep -q "^recorded:      instructions [0-9]* to [0-9]*, in 3 parts" pinfo.out &&
    [ "$(grep -c ' (from --stop-at to --start-at)' pinfo.out)" = 2 ] &&
    grep -q "^not recorded:  0 to [0-9]* (before --start-at)" pinfo.out &&
    pass "parts: info lists the gaps" || fail "parts: info lists the gaps" "$(cat pinfo.out)"
grep -q "^ended:         at instruction [0-9]*: at --stop-at; the program ran on, unrecorded, and exited with status 0 at instruction" pinfo.out &&
    pass "parts: info says how the program ended after the recording" ||
    fail "parts: info says how the program ended after the recording" "$(grep -E 'ended|exit' pinfo.out)"
# the second part: the same answers as the whole recording at the same
# place (times differ outside the parts: the program runs there without the
# memory hooks, whose blocks count rep instructions otherwise)
g1=$(sed -n 's/^               \([0-9]*\) to [0-9]* (from --stop-at.*/\1/p' pinfo.out | head -1)
g2=$(sed -n 's/^               [0-9]* to \([0-9]*\) (from --stop-at to --start-at)/\1/p' pinfo.out | head -1)
w2=$("$CREC" calls all.crec work | sed -n '2s/^1 \([0-9]*\) .*/\1/p')
ok=1
for d in 5000 150000 777 12345; do
    for what in acc acc+64 rip rax; do
        a=$("$CREC" query all.crec "$what@$((w2 + d))" 2>&1 | sed 's/.* = //; s/ (.*//')
        b=$("$CREC" query parts.crec "$what@$((g2 + d))" 2>&1 | sed 's/.* = //; s/ (.*//')
        [ "$a" = "$b" ] || { ok=0; fail "parts: $what at part 2 + $d" "whole $a, part $b"; }
    done
done
[ "$ok" = 1 ] && pass "parts: queries inside a part answer as for the whole run"
expect_status "parts: a query in a gap fails" 1 "$CREC" query parts.crec "rip@$((g1 + 10))"
grep -q "^crec: rip@$((g1 + 10)): time $((g1 + 10)) was not recorded: the program ran unrecorded from $g1 to $g2 (from --stop-at to --start-at); the recording holds " "$TMP/err" &&
    pass "parts: ... naming the gap" || fail "parts: ... naming the gap" "$(cat "$TMP/err")"
"$CREC" trace parts.crec --from $((g1 - 2)) --to $((g2 + 2)) >tr.out 2>&1
expect_eq "parts: a trace goes on over the gap" "$((g1 - 2)) $((g1 - 1)) $g2 $((g2 + 1)) $((g2 + 2))" "$(cut -d' ' -f1 tr.out | tr '\n' ' ' | sed 's/ $//')"
expect_eq "parts: calls of work in every part" 3 "$("$CREC" calls parts.crec work | wc -l)"
line=$("$CREC" when parts.crec acc 2>&1 | grep "^$g2 ")
case "$line" in
"$g2 0x"*" - (not recorded: the program ran unrecorded before this part)")
    pass "parts: when gives the value a part starts with, after a gap" ;;
*) fail "parts: when gives the value a part starts with, after a gap" "$line" ;;
esac
n=$("$CREC" when parts.crec acc 2>&1 | awk -v a="$g1" -v b="$g2" '$1 > a && $1 < b' | wc -l)
expect_eq "parts: when reports no change inside a gap" 0 "$n"
"$CREC" record -o never.crec --start-at no_such_function -- "$G" phases 1 >/dev/null 2>never.err
expect_eq "parts: a trigger that never comes: the program runs" 0 $?
"$CREC" info never.crec | grep -q "no --start-at trigger came: nothing was recorded" &&
    pass "parts: ... info says nothing was recorded" || fail "parts: ... info says nothing was recorded" "$("$CREC" info never.crec 2>&1 | tail -3)"
expect_status "parts: ... and replay refuses it" 1 "$CREC" replay never.crec
one_error_line "parts: ... in one line"
"$CREC" record -o icount.crec --start-at 5000000 --stop-at syscall:write -- "$G" phases 2 >/dev/null 2>&1
expect_status "parts: an instruction count and syscall:write" 0 "$CREC" replay icount.crec
"$CREC" info icount.crec | grep -q "^not recorded:  0 to 500[0-9]* (before --start-at)" &&
    pass "parts: ... start at the instruction count" || fail "parts: ... start at the instruction count" "$("$CREC" info icount.crec | grep -E 'recorded|ended')"

# ---- a ring or --start-at recording of a program that starts a thread -------
"$CREC" record -o thr.crec --ring 2M -- "$G" thread 200000 >thr.out 2>thr.err
expect_eq "threads: the program runs to its end" "0 counter 200007" "$? $(tail -1 thr.out)"
grep -q "the program started a second thread (a ring or --start-at recording holds one): the recording ended at instruction" thr.err &&
    pass "threads: the recording ends there, it says" || fail "threads: the recording ends there, it says" "$(cat thr.err)"
expect_status "threads: what it holds replays verified" 0 "$CREC" replay thr.crec

# ---- key frames on demand ----------------------------------------------------------
"$CREC" record -o kf.crec -- "$G" phases 2 >/dev/null 2>&1
q="acc@3000000 acc+8@3100000 rip@3123456 rax@3999999"
before=$("$CREC" query kf.crec $q 2>&1)
expect_status "keyframes: made for a range" 0 "$CREC" keyframes kf.crec --from 3000000 --to 4000000 --every 5000
grep -q "^kf.crec: [1-9][0-9]* key frames from 3000000 to 4000000 (every 5000 instructions" "$TMP/out" &&
    pass "keyframes: ... and says how many" || fail "keyframes: ... and says how many" "$(cat "$TMP/out")"
[ -f kf.crec.kf ] && pass "keyframes: the request is kept beside the recording" ||
    fail "keyframes: the request is kept beside the recording" "$(ls)"
expect_eq "keyframes: the same answers" "$before" "$("$CREC" query kf.crec $q 2>&1)"
rm -f kf.crec.idx
expect_eq "keyframes: the same answers from an index built again" "$before" "$("$CREC" query kf.crec $q 2>&1)"
expect_status "keyframes: every under 1000 is refused" 2 "$CREC" keyframes kf.crec --every 10
expect_status "keyframes: a range past the end is refused" 1 "$CREC" keyframes kf.crec --from 999999999999 --every 5000
one_error_line "keyframes: ... in one line"

# ---- one process: a fork or an execve ends these recordings -------------------------
# --ring, --start-at, --stop-at and --max-size record one process: the
# recording ends at a fork (at the parent's next block) or an execve, with
# one line; the file is complete and replays; the program runs on
one_process() {
    name=$1 what=$2
    shift 2
    rm -f "$name.crec"
    timeout 300 "$CREC" record "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" = 0 ] && grep -q "^a$" "$TMP/out" && grep -q "^b$" "$TMP/out" &&
        grep -q "records one process; sh $what" "$TMP/err" &&
        timeout 300 "$CREC" info "$name.crec" 2>&1 | grep -q "forked or called execve" &&
        timeout 300 "$CREC" replay "$name.crec" 2>&1 | grep -q "replay verified"; then
        pass "one process: $* ends at the $what, replays, the program runs on"
    else
        fail "one process: $*" "exit $rc: $(cat "$TMP/out" "$TMP/err" | head -c 400)"
    fi
}
one_process rfork forked --ring 1M -o rfork.crec -- sh -c 'echo a; /bin/true; echo b'
one_process mfork forked --max-size 50M -o mfork.crec -- sh -c 'echo a; /bin/true; echo b'
one_process sexec "called execve" --stop-at syscall:nanosleep -o sexec.crec -- \
    sh -c 'echo a; exec sh -c "echo b"'
# a --start-at that never came: the fork ends it in its gap, nothing recorded
rm -f gfork.crec
timeout 300 "$CREC" record --start-at syscall:nanosleep -o gfork.crec -- sh -c 'echo a; /bin/true; echo b' \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" = 0 ] && grep -q "^b$" "$TMP/out" && grep -q "records one process; sh forked" "$TMP/err" &&
    pass "one process: --start-at in its gap at a fork: ends there, the program runs on" ||
    fail "one process: --start-at in its gap at a fork" "exit $rc: $(cat "$TMP/out" "$TMP/err" | head -c 400)"
# a dump is refused once the program has forked (its processes share the file)
rm -f dfork.crec dfork.dump1.crec
timeout 300 "$CREC" record -o dfork.crec -- sh -c '/bin/true; sleep 2; echo b' >"$TMP/out" 2>"$TMP/err" &
p=$!
sleep 1
pkill -USR1 -P $p # crec, the child of timeout
wait $p
rc=$?
[ "$rc" = 0 ] && grep -q "no dump: a dump holds one process" "$TMP/err" && [ ! -e dfork.dump1.crec ] &&
    timeout 300 "$CREC" replay dfork.crec 2>&1 | grep -q "replay verified" &&
    pass "one process: a dump after a fork is refused in one line; the recording goes on" ||
    fail "one process: a dump after a fork is refused" "exit $rc: $(cat "$TMP/out" "$TMP/err" | head -c 400)"

# ---- usage -------------------------------------------------------------------------
expect_status "usage: --ring to a pipe" 2 "$CREC" record --ring 8M -o - -- /bin/true
expect_status "usage: --ring and --max-size" 2 "$CREC" record --ring 8M --max-size 8M -- /bin/true
expect_status "usage: --on-full without --max-size" 2 "$CREC" record --on-full continue -- /bin/true
expect_status "usage: a bad size" 2 "$CREC" record --ring 8X -- /bin/true
expect_status "usage: a bad --on-full" 2 "$CREC" record --max-size 8M --on-full later -- /bin/true
expect_status "usage: a bad syscall name" 2 "$CREC" record --start-at syscall:nope -- /bin/true
expect_status "usage: --dump-to with another %" 2 "$CREC" record --dump-to 'x%s%d' -- /bin/true
expect_status "usage: a ring too small" 125 "$CREC" record --ring 1K -o small.crec -- /bin/true
one_error_line "usage: ... in one line"
