# Threads (issue 14): programs of several threads run as they do natively,
# record, replay whole and each thread alone, answer queries across
# threads; races show up with --chaos and in `crec races`; a deadlock ends
# the run with a complete recording.
. "$E2E_DIR/lib.sh"

PY=/usr/bin/python3

# rr NAME 'CMD ARGS' [RECORD OPTIONS]: the recording prints what the native
# run prints, exits the same way (within 300 s: a hang fails), and replays
# verified whole and each thread alone (-j 2).  RR_SAME_OUTPUT=0: the
# output may differ from the native run's (a racy program).
rr() {
    name=$1 cmd=$2
    shift 2
    (cd "$TMP" && sh -c "$cmd") >"$TMP/$name.native" 2>/dev/null
    nrc=$?
    (cd "$TMP" && sh -c "timeout 300 \"$CREC\" record $* -o \"$TMP/$name.crec\" -- $cmd") \
        >"$TMP/$name.out" 2>"$TMP/$name.err"
    rrc=$?
    if [ "$nrc" != "$rrc" ] ||
        { [ "${RR_SAME_OUTPUT:-1}" = 1 ] && ! cmp -s "$TMP/$name.native" "$TMP/$name.out"; }; then
        fail "threads: record $name" "native exit $nrc, recorded $rrc; $(head -c 300 "$TMP/$name.err")"
        return
    fi
    pass "threads: record $name"
    if "$CREC" replay "$TMP/$name.crec" >"$TMP/$name.replay" 2>&1 &&
        grep -q 'threads, in the recorded order' "$TMP/$name.replay"; then
        pass "threads: replay $name, the whole program"
    else
        fail "threads: replay $name, the whole program" "$(head -c 400 "$TMP/$name.replay")"
    fi
    if "$CREC" replay -j 2 "$TMP/$name.crec" >"$TMP/$name.alone" 2>&1 &&
        grep -q 'threads, each alone' "$TMP/$name.alone"; then
        pass "threads: replay $name, each thread alone"
    else
        fail "threads: replay $name, each thread alone" "$(head -c 400 "$TMP/$name.alone")"
    fi
}

# 4 threads x 100000 increments of a mutex counter and an atomic counter
rr counter "$GUESTS/threads_counter 4 100000"
# ymm8's upper half is each thread's own across switches (and a thread
# alone replays with its own)
rr avx "$GUESTS/threads_avx"
# a block whose visit ends after an instruction crec executes itself
rr vex "$GUESTS/threads_vex" --slice 1000
rr vex_chaos "$GUESTS/threads_vex" --chaos 1
n=$("$CREC" info "$TMP/counter.crec" | sed -n 's/^threads: *//p')
expect_eq "threads: info counts the threads" 5 "$n"
lines=$("$CREC" info "$TMP/counter.crec" | grep -cE '^ +[0-9]+ +(-|[0-9]+) +[0-9]+ ')
expect_eq "threads: info lists each thread" 5 "$lines"
ok=1
for t in 1 2 3 4 5; do
    "$CREC" replay --thread $t "$TMP/counter.crec" >"$TMP/one.out" 2>&1 || ok=0
done
expect_eq "threads: each thread's streams verified alone (--thread)" 1 $ok
"$CREC" info --json "$TMP/counter.crec" | grep -q '"thread_list"' &&
    pass "threads: info --json lists the threads" || fail "threads: info --json lists the threads" "no thread_list"

rr join100 "$GUESTS/threads_join 100"
rr condvar "$GUESTS/threads_condvar 5000"
rr misc "$GUESTS/threads_misc"
cat >"$TMP/pythr.py" <<'EOF'
import threading
lock = threading.Lock()
out = []
def work(n):
    for i in range(500):
        with lock:
            out.append((n, i))
ts = [threading.Thread(target=work, args=(n,)) for n in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print(len(out), sum(i for _, i in out))
EOF
rr python "$PY $TMP/pythr.py"

# a pipe between two threads: the writer fills it while the reader is
# switched out, and waits for it as a blocked thread (not on the host)
cat >"$TMP/pipe.c" <<'EOF'
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static int fds[2];
static void *reader(void *arg)
{
    char buf[1000];
    long total = 0, n;
    (void)arg;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        total += n;
    return (void *)total;
}
int main(void)
{
    pthread_t t;
    char chunk[4096];
    void *got;
    memset(chunk, 'x', sizeof chunk);
    if (pipe(fds) != 0)
        return 1;
    pthread_create(&t, NULL, reader, NULL);
    for (int i = 0; i < 200; i++)
        if (write(fds[1], chunk, sizeof chunk) != (long)sizeof chunk)
            return 1;
    close(fds[1]);
    pthread_join(t, &got);
    printf("read %ld bytes\n", (long)got);
    return 0;
}
EOF
cc -o "$TMP/pipe" "$TMP/pipe.c"
rr pipe "./pipe"

# poll, epoll_wait, epoll_pwait2 and select wait as blocked threads: another thread makes
# the fds ready (or, for select, the timeout passes and clears the set)
cat >"$TMP/poll.c" <<'EOF'
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <unistd.h>
static int p1[2], p2[2], p3[2];
static void *waiter(void *arg)
{
    struct pollfd pf = {p1[0], POLLIN, 0};
    char c;
    int r = poll(&pf, 1, -1);                 /* woken by main's write */
    read(p1[0], &c, 1);
    int ep = epoll_create1(0);
    struct epoll_event ev = {EPOLLIN, {0}}, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, p2[0], &ev);
    int r2 = epoll_wait(ep, &out, 1, -1);     /* woken by main's second write */
    read(p2[0], &c, 1);
    int r4 = epoll_pwait2(ep, &out, 1, NULL, NULL); /* woken by main's third write */
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(p3[0], &rs);
    struct timeval tv = {0, 50000};
    int r3 = select(p3[0] + 1, &rs, NULL, NULL, &tv); /* times out: nothing written */
    printf("poll %d revents %d, epoll %d, epoll_pwait2 %d, select %d isset %d\n", r,
           pf.revents, r2, r4, r3, FD_ISSET(p3[0], &rs));
    return arg;
}
int main(void)
{
    pthread_t t;
    volatile long spin = 0;
    pipe(p1), pipe(p2), pipe(p3);
    pthread_create(&t, NULL, waiter, NULL);
    for (long i = 0; i < 1000000; i++)
        spin += i;
    write(p1[1], "x", 1);
    for (long i = 0; i < 1000000; i++)
        spin += i;
    write(p2[1], "y", 1);
    for (long i = 0; i < 1000000; i++)
        spin += i;
    write(p2[1], "z", 1);
    pthread_join(t, NULL);
    return 0;
}
EOF
cc -o "$TMP/poll" "$TMP/poll.c" -lpthread
rr poll "./poll"

# zstd's worker threads (-T2: 5 threads), when zstd is there
if command -v zstd >/dev/null; then
    seq 1 100000 >"$TMP/seq.txt"
    rr zstd "zstd -T2 -q -c seq.txt"
fi

# a timed wait takes its time, also with no other thread to run meanwhile
# (measured by the guest: the host may be busy starting python)
t=$("$CREC" run -- $PY -c 'import threading, time
t = time.monotonic(); threading.Event().wait(0.2); print(int((time.monotonic() - t) * 1000))')
if [ -n "$t" ] && [ "$t" -ge 200 ] && [ "$t" -lt 1500 ]; then
    pass "threads: Event().wait(0.2) waits 0.2 s ($t ms)"
else
    fail "threads: Event().wait(0.2) waits 0.2 s" "'$t' ms"
fi

# the CPUs the program is shown
expect_eq "threads: nproc with --cpus 3" 3 "$("$CREC" run --cpus 3 -- nproc)"
expect_eq "threads: nproc by default" 1 "$("$CREC" run -- nproc)"

# a deadlock: the run ends with the message and exit 124, the recording is complete
"$CREC" record -o "$TMP/dl.crec" -- "$GUESTS/threads_deadlock" >/dev/null 2>"$TMP/dl.err"
rc=$?
if [ "$rc" = 124 ] && grep -q 'deadlock: every thread is blocked; thread 1 .* waits on the futex' "$TMP/dl.err" &&
    [ "$(wc -l <"$TMP/dl.err")" = 1 ]; then
    pass "threads: deadlock ends the run (124, one line naming each thread)"
else
    fail "threads: deadlock ends the run" "exit $rc: $(head -c 300 "$TMP/dl.err")"
fi
expect_status "threads: a deadlocked recording replays" 0 "$CREC" replay "$TMP/dl.crec"
expect_status "threads: ... and each thread alone" 0 "$CREC" replay -j 2 "$TMP/dl.crec"

# fork-like clones in a recording stay "not supported yet", in one line
# (crec run runs them: t_procs.sh)
cat >"$TMP/spawn.c" <<'EOF'
#include <spawn.h>
#include <stdio.h>
int main(void) { pid_t p; char *a[] = {"/bin/true", 0}; printf("%d\n", posix_spawn(&p, "/bin/true", 0, 0, a, 0)); return 0; }
EOF
cc -o "$TMP/spawn" "$TMP/spawn.c"
"$CREC" record -o "$TMP/spawn.crec" -- "$TMP/spawn" >"$TMP/spawn.out" 2>"$TMP/spawn.err"
if [ "$(cat "$TMP/spawn.out")" = 0 ] && [ ! -s "$TMP/spawn.err" ] &&
    "$CREC" replay "$TMP/spawn.crec" 2>&1 | grep -q 'replay verified (3 processes'; then
    pass "threads: posix_spawn's vfork clone in a recording: recorded, each process replayed"
else
    fail "threads: posix_spawn's vfork clone in a recording" "$(head -c 300 "$TMP/spawn.err")"
fi

# glibc's helper threads: a SIGEV_THREAD timer (a helper thread in
# rt_sigtimedwait starts a thread per expiry), sigwaitinfo and sigtimedwait
cat >"$TMP/timer.c" <<'EOF'
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static volatile int fired;
static void cb(union sigval v) { fired += v.sival_int; }
int main(void) {
    timer_t t; struct sigevent se = {0};
    se.sigev_notify = SIGEV_THREAD; se.sigev_notify_function = cb;
    se.sigev_value.sival_int = 1;
    int r = timer_create(CLOCK_MONOTONIC, &se, &t);
    struct itimerspec its = {{0, 20000000}, {0, 20000000}};
    timer_settime(t, 0, &its, NULL);
    while (fired < 5)
        usleep(1000);
    timer_delete(t);
    sigset_t s; sigemptyset(&s); sigaddset(&s, SIGUSR1);
    sigprocmask(SIG_BLOCK, &s, NULL);
    kill(getpid(), SIGUSR1);
    siginfo_t si; int sig = sigwaitinfo(&s, &si);
    struct timespec z = {0, 50000000};
    int again = sigtimedwait(&s, &si, &z);
    printf("timer_create %d, fired %d, sigwaitinfo %d code %d, then %d\n", r, fired >= 5, sig,
           si.si_code, again);
    return 0;
}
EOF
cc -o "$TMP/timer" "$TMP/timer.c"
rr timer "./timer"
n=$("$CREC" info "$TMP/timer.crec" | sed -n 's/^threads: *//p')
if [ "${n:-0}" -ge 7 ]; then pass "threads: the timer's helper and callback threads ($n threads)"; else
    fail "threads: the timer's helper and callback threads" "$n threads"; fi

# a thread's tampered READS: the whole replay and that thread alone diverge,
# another thread alone still verifies
pat=$("$CRECTOOLS/crec_dump" "$TMP/counter.crec" READS 3 2000 8 2>/dev/null)
if [ -n "$pat" ] && "$CRECTOOLS/crec_tamper" "$TMP/counter.crec" "$TMP/tampered.crec" "$pat" 3; then
    expect_status "threads: a tampered thread: the whole replay diverges" 3 "$CREC" replay "$TMP/tampered.crec"
    expect_status "threads: ... that thread alone diverges" 3 "$CREC" replay --thread 3 "$TMP/tampered.crec"
    grep -q 'in thread 3 (verified alone)' "$TMP/err" &&
        pass "threads: ... and the message names it" || fail "threads: ... and the message names it" "$(cat "$TMP/err")"
    expect_status "threads: ... another thread alone verifies" 0 "$CREC" replay --thread 2 "$TMP/tampered.crec"
else
    fail "threads: tamper with a thread's READS" "no pattern ($pat)"
fi

# races: the racy program's globals; --all-values inside the window.  The
# syscalls order threads too (a thread's start-up syscalls come after what
# ran before them), so the two threads must overlap: short slices.
# (its native output is the race's: on a loaded machine updates get lost)
RR_SAME_OUTPUT=0 rr racy "$GUESTS/threads_racy 20000" --slice 10000
"$CREC" races "$TMP/racy.crec" >"$TMP/races.out" 2>&1
if grep -q ' racy_counter (8 bytes)' "$TMP/races.out" && grep -q ' last_writer (8 bytes)' "$TMP/races.out"; then
    pass "threads: crec races names the racy globals"
else
    fail "threads: crec races names the racy globals" "$(head -c 400 "$TMP/races.out")"
fi
# (3,000 iterations a thread: races indexes every access, and a mutex and
# atomics show no race at any count)
"$CREC" record -o "$TMP/counter3k.crec" -- "$GUESTS/threads_counter" 4 3000 >/dev/null 2>&1
"$CREC" races "$TMP/counter3k.crec" >"$TMP/races2.out" 2>&1
expect_eq "threads: a mutex and atomics: no race" "0 races" "$(tail -1 "$TMP/races2.out")"
# a time in the window: after thread 3's first store to last_writer
w=$(sed -n 's/^ *thread [0-9]* at \([0-9]*\) .*store.*/\1/p' "$TMP/races.out" | tail -1)
"$CREC" query --all-values "$TMP/racy.crec" "last_writer@$((w + 1))" >"$TMP/all.out" 2>&1
if grep -q 'undetermined, 2 values' "$TMP/all.out" && [ "$(grep -c '^  0x' "$TMP/all.out")" = 2 ]; then
    pass "threads: --all-values in the race window: both values, undetermined"
else
    fail "threads: --all-values in the race window" "$(head -c 400 "$TMP/all.out")"
fi
"$CREC" query --all-values "$TMP/racy.crec" "racy_counter@end" >"$TMP/all2.out" 2>&1
grep -q 'determined: no order' "$TMP/all2.out" && pass "threads: --all-values at the end: determined" ||
    fail "threads: --all-values at the end" "$(cat "$TMP/all2.out")"

# --chaos: 10 seeds give at least two final values, and every one replays
vals=$TMP/chaos.vals
: >"$vals"
ok=1
for seed in 1 2 3 4 5 6 7 8 9 10; do
    "$CREC" record --chaos $seed -o "$TMP/chaos.crec" -- "$GUESTS/threads_racy" 8000 >>"$vals" 2>/dev/null || ok=0
    "$CREC" replay -q "$TMP/chaos.crec" || ok=0
    "$CREC" replay -q -j 2 "$TMP/chaos.crec" || ok=0
done
expect_eq "threads: --chaos: 10 seeds record and replay verified (whole and alone)" 1 $ok
nv=$(sort -u "$vals" | wc -l)
if [ "$nv" -ge 2 ]; then pass "threads: --chaos: $nv different final values of the racy counter"; else
    fail "threads: --chaos: different final values" "$(sort -u "$vals")"; fi
"$CREC" info "$TMP/chaos.crec" | grep -q 'chaos seed 10' && pass "threads: the chaos seed is in the recording" ||
    fail "threads: the chaos seed is in the recording" "$("$CREC" info "$TMP/chaos.crec" | grep schedule)"

# The execution API on a --chaos recording whose threads were switched
# inside blocks (between a load and a store of the racy counter): every
# instruction once in its thread (the counts crec info gives), the
# instructions around such a switch equal to query, and a profile whose
# self counts sum to the total.
"$CREC" record --chaos 3 -o "$TMP/chx.crec" -- "$GUESTS/threads_racy" 200000 >/dev/null 2>&1
"$CREC" info "$TMP/chx.crec" >"$TMP/chx.info"
want=$(awk '/^threads:/ { on = 1; next } on && NF >= 8 && $1 ~ /^[0-9]+$/ { print $1, $6 }' "$TMP/chx.info")
"$CREC" trace "$TMP/chx.crec" >"$TMP/chx.trace"
expect_eq "threads: trace of a --chaos recording: each thread's instructions once" "$want" \
    "$(awk '{ n[$2]++ } END { for (t in n) print t, n[t] }' "$TMP/chx.trace" | sort -n)"
# a switch after an instruction that does not end a block
f=$(awk '{ if (pt != "" && $2 != pt && prev !~ /  (j[a-z]+|call|ret|syscall)/) { print $1; exit } pt = $2; prev = $0 }' "$TMP/chx.trace")
if [ -z "$f" ]; then
    fail "threads: trace across a switch inside a block equals query" "no such switch"
else
    "$CREC" trace --from $((f - 2)) --to $((f + 2)) "$TMP/chx.crec" | awk '{ print $3 }' >"$TMP/csw"
    q=""
    for i in 0 1 2 3 4; do q="$q rip@$((f - 2 + i))"; done
    "$CREC" query "$TMP/chx.crec" $q | sed 's/.*= *//; s/ .*//; s/^0x0*/0x/' >"$TMP/csw.q"
    diff "$TMP/csw" "$TMP/csw.q" >/dev/null && pass "threads: trace across a switch inside a block equals query" ||
        fail "threads: trace across a switch inside a block equals query" "$(paste "$TMP/csw" "$TMP/csw.q" | tr '\n' ' ')"
fi
expect_eq "threads: profile of a --chaos recording: self sums to the total" \
    "$(sed -n 's/^instructions: *//p' "$TMP/chx.info")" \
    "$("$CREC" profile "$TMP/chx.crec" | awk 'NR > 2 { s += $2 } END { print s }')"

# queries across threads
out=$("$CREC" query "$TMP/counter.crec" "2:rip@end" "rax@2:1000" "rip@2:0" 2>&1)
echo "$out" | grep -q '^2:rip@end = 0x' && echo "$out" | grep -q '^rax@2:1000 = 0x' &&
    pass "threads: TID:REG and TID:STEP" || fail "threads: TID:REG and TID:STEP" "$out"
expect_status "threads: no thread 9" 1 "$CREC" query "$TMP/counter.crec" "9:rip@end"
grep -q 'no thread 9 (the recording has 5 threads' "$TMP/err" && pass "threads: ... named" ||
    fail "threads: ... named" "$(cat "$TMP/err")"
"$CREC" when "$TMP/racy.crec" last_writer >"$TMP/when.out" 2>&1
grep -q 'thread 2$' "$TMP/when.out" && grep -q 'thread 3$' "$TMP/when.out" &&
    pass "threads: when names the thread that wrote" || fail "threads: when names the thread that wrote" "$(head -5 "$TMP/when.out")"
"$CREC" record --keyframe-interval 50000 -o "$TMP/xc.crec" -- "$GUESTS/threads_condvar" 2000 >/dev/null 2>&1
"$CRECTOOLS/crec_xcheck" "$TMP/xc.crec" 40 7 >"$TMP/xc.out" 2>&1 &&
    pass "threads: queries across threads equal a whole-program replay ($(tail -1 "$TMP/xc.out" | cut -c1-40))" ||
    fail "threads: queries across threads equal a whole-program replay" "$(tail -3 "$TMP/xc.out")"
