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
