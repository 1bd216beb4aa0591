#!/bin/sh
# Signals delivered to the guest's handlers (docs/EMU.md, "Signals"): the
# output equals the native run's, and the recording replays verified, also
# from key frames inside handlers and in pieces (--jobs).
. "$E2E_DIR/lib.sh"

# rr NAME CMD [record options]: record CMD (output and status as native),
# then replay it whole and with --jobs 2.
rr() {
    name=$1 cmd=$2
    shift 2
    (cd "$TMP" && sh -c "$cmd") >"$TMP/$name.native" 2>/dev/null
    nrc=$?
    (cd "$TMP" && sh -c "timeout 300 \"$CREC\" record $* -o \"$TMP/$name.crec\" -- $cmd") \
        >"$TMP/$name.out" 2>"$TMP/$name.err"
    rrc=$?
    if [ "$nrc" != "$rrc" ] || ! cmp -s "$TMP/$name.native" "$TMP/$name.out"; then
        fail "signals: record $name" "native exit $nrc, recorded $rrc; $(head -c 300 "$TMP/$name.err")"
        return
    fi
    pass "signals: record $name"
    if "$CREC" replay "$TMP/$name.crec" >"$TMP/$name.replay" 2>&1 &&
        grep -q 'replay verified' "$TMP/$name.replay"; then
        pass "signals: replay $name"
    else
        fail "signals: replay $name" "$(head -c 400 "$TMP/$name.replay")"
    fi
    if "$CREC" replay -j 2 "$TMP/$name.crec" >"$TMP/$name.jobs" 2>&1 &&
        grep -q 'replay verified' "$TMP/$name.jobs"; then
        pass "signals: replay $name --jobs 2"
    else
        fail "signals: replay $name --jobs 2" "$(head -c 400 "$TMP/$name.jobs")"
    fi
}

# raise/kill with SA_SIGINFO, blocked then unblocked, SA_RESETHAND,
# SA_NODEFER, sigaltstack, the FPU state across a handler, a handler that
# edits its ucontext
same_as_native "signals: handlers under crec run" "@ $GUESTS/sig_handlers"
if [ ! -s "$TMP/emu.err" ]; then pass "signals: handlers, nothing on stderr"; else
    fail "signals: handlers, nothing on stderr" "$(head -c 300 "$TMP/emu.err")"; fi
rr handlers "$GUESTS/sig_handlers"
# key frames every 500 instructions: some inside handlers, between the
# entry and rt_sigreturn
rr handlers_kf "$GUESTS/sig_handlers" --keyframe-interval 500 --snapshot-interval 4

# synchronous signals: SIGSEGV handlers that longjmp out or fix the page
# and return, SIGFPE and SIGILL handlers that skip the instruction
same_as_native "signals: fault handlers under crec run" "@ $GUESTS/sig_faults"
# recorded: each handler entered at its faulting instruction (a SIGNAL
# record), and replayed there; also from key frames inside the handlers
rr faults "$GUESTS/sig_faults"
rr faults_kf "$GUESTS/sig_faults" --keyframe-interval 300

# python3's own handlers (a C handler that sets a flag, run by the interpreter)
PY='import signal,os; signal.signal(signal.SIGUSR1, lambda s,f: print("got", s)); os.kill(os.getpid(), signal.SIGUSR1); print("after")'
same_as_native "signals: python3 signal.signal and os.kill" "@ /usr/bin/python3 -c '$PY'"
rr python "/usr/bin/python3 -c '$PY'"

# asynchronous signals: alarm(1) and a periodic setitimer around loops that
# make no syscall (crec run delivers them at a block start) ...
same_as_native "signals: alarm and setitimer around a loop (crec run)" "@ $GUESTS/sig_alarm"
# ... and so does a recording: the SIGNAL record says at which instruction
# of which thread, and the replay enters the handler there
rr alarm "$GUESTS/sig_alarm"
# a timer's signal to a loop that makes syscalls: delivered at one, recorded
same_as_native "signals: setitimer around a loop of syscalls (crec run)" "@ $GUESTS/sig_timer_syscalls"
rr timer_syscalls "$GUESTS/sig_timer_syscalls"

# pthread_kill to another thread and to itself, with a handler
same_as_native "signals: pthread_kill to a thread with a handler (crec run)" "@ $GUESTS/sig_threads"
rr threads "$GUESTS/sig_threads"

# A handler that resets its signal to SIG_DFL and raises it again (GNU sort
# on SIGPIPE) dies of it when rt_sigreturn unblocks it, as natively: exit
# 141 and no "write failed"; recorded too (a SIGNAL record of the death at
# the end of rt_sigreturn), and the replay ends there.
seq 1 40000 >"$TMP/many.txt"
(sort -r "$TMP/many.txt"; echo "exit $?" >"$TMP/sort-native.rc") 2>"$TMP/sort-native.err" | head -1 >/dev/null
("$CREC" run -- sort -r "$TMP/many.txt"; echo "exit $?" >"$TMP/sort-crec.rc") 2>"$TMP/sort-crec.err" | head -1 >/dev/null
if [ "$(cat "$TMP/sort-crec.rc")" = "$(cat "$TMP/sort-native.rc")" ] &&
    ! grep -q "write failed" "$TMP/sort-crec.err"; then
    pass "signals: a handler that raises its signal again dies of it at rt_sigreturn (crec run)"
else
    fail "signals: a handler that raises its signal again dies of it at rt_sigreturn (crec run)" \
        "native $(cat "$TMP/sort-native.rc"), crec $(cat "$TMP/sort-crec.rc"): $(head -c 200 "$TMP/sort-crec.err")"
fi
seq 1 40000 >"$TMP/some.txt"
("$CREC" record -o "$TMP/sort.crec" -- sort -r "$TMP/some.txt"; echo "exit $?" >"$TMP/sort-rec.rc") \
    2>"$TMP/sort-rec.err" | head -1 >/dev/null
if [ "$(cat "$TMP/sort-rec.rc")" = "exit 141" ] && ! grep -q "write failed" "$TMP/sort-rec.err" &&
    "$CREC" replay "$TMP/sort.crec" 2>&1 | grep -q 'replay verified'; then
    pass "signals: ... recorded, and the replay ends at rt_sigreturn as recorded"
else
    fail "signals: ... recorded, and the replay ends at rt_sigreturn as recorded" \
        "$(cat "$TMP/sort-rec.rc"): $(head -c 200 "$TMP/sort-rec.err")"
fi

# issue 15's guests: a SIGSEGV handler that longjmps and prints "recovered",
# raise(SIGUSR1) to SA_SIGINFO (si_signo, si_code), SIGPIPE/EPIPE (ignored,
# a handler, the default: exit 141)
same_as_native "signals: recovered, SA_SIGINFO, SIGPIPE/EPIPE (crec run)" "@ $GUESTS/sig_recover"
rr recover "$GUESTS/sig_recover"
if grep -q '^recovered$' "$TMP/recover.out" && grep -q '^si_signo 10 si_code -6$' "$TMP/recover.out"; then
    pass "signals: ... prints recovered, si_signo 10 si_code -6"
else
    fail "signals: ... prints recovered, si_signo 10 si_code -6" "$(cat "$TMP/recover.out")"
fi
# between processes: SIGUSR1 to a child that computes (delivered at an
# instruction, recorded in the child's part), SIGCHLD in sigsuspend,
# SIGTERM and SIGKILL to children (each child's part ends with it)
same_as_native "signals: between processes (crec run)" "@ $GUESTS/sig_procs"
rr procs "$GUESTS/sig_procs"
if "$CREC" info "$TMP/procs.crec" | grep -q 'SIGTERM' && "$CREC" info "$TMP/procs.crec" | grep -q 'SIGKILL'; then
    pass "signals: ... info shows the children killed by SIGTERM and SIGKILL"
else
    fail "signals: ... info shows the children killed" "$("$CREC" info "$TMP/procs.crec" | head -20)"
fi
# blocking syscalls: pause and nanosleep ended by a handler (EINTR), read
# with and without SA_RESTART, sigtimedwait
same_as_native "signals: EINTR, SA_RESTART, pause, sigtimedwait (crec run)" "@ $GUESTS/sig_eintr"
rr eintr "$GUESTS/sig_eintr"

# signals sent to crec record itself: SIGUSR1 asks crec for a dump (the
# program does not see it); SIGTERM stops the recording (exit 143, the
# file complete); with --forward-signals both go to the program (its
# handlers: "usr1", exit 3)
term_test() {
    name=$1 want=$2
    shift 2
    rm -f "$TMP/$name.out"
    "$CREC" record "$@" -o "$TMP/$name.crec" -- "$GUESTS/sig_wait_term" >"$TMP/$name.out" \
        2>"$TMP/$name.err" &
    p=$!
    for i in $(seq 100); do grep -q ready "$TMP/$name.out" 2>/dev/null && break; sleep 0.1; done
    kill -USR1 $p
    for i in $(seq 100); do grep -q usr1 "$TMP/$name.out" 2>/dev/null && break; sleep 0.1; done
    kill -TERM $p
    wait $p
    rc=$?
    usr1=no
    grep -q usr1 "$TMP/$name.out" && usr1=yes
    if [ "$rc" = "$want" ] && [ "$usr1" = "$want_usr1" ] &&
        "$CREC" replay "$TMP/$name.crec" 2>&1 | grep -q 'replay verified'; then
        pass "signals: SIGUSR1 then SIGTERM to crec record $* (exit $want)"
    else
        fail "signals: SIGUSR1 then SIGTERM to crec record $*" \
            "exit $rc, want $want, usr1 $usr1 (want $want_usr1): $(cat "$TMP/$name.out" "$TMP/$name.err" | head -c 300)"
    fi
}
want_usr1=no term_test stop 143
grep -q 'recording stopped by SIGTERM' "$TMP/stop.err" && ! grep -q term "$TMP/stop.out" &&
    pass "signals: ... by default SIGTERM stops the recording" ||
    fail "signals: ... by default SIGTERM stops the recording" "$(cat "$TMP/stop.err")"
want_usr1=yes term_test forward 3 --forward-signals
grep -q '^term$' "$TMP/forward.out" && pass "signals: ... --forward-signals: the program's handler ran" ||
    fail "signals: ... --forward-signals: the program's handler ran" "$(cat "$TMP/forward.out")"
