# crec gdb (docs/GDB.md): a real gdb, in batch mode, debugs recordings of
# tests/e2e/gdb/tt.c built -O0 -g four ways (PIE and not, dynamic and
# static), forwards and backwards, and what it shows is compared with what
# the program printed and with `crec query`.  Then the command line, the
# listening address, and a client that sends the server garbage.
. "$E2E_DIR/lib.sh"

SRC=$E2E_DIR/gdb/tt.c
line_of() { grep -n "LINE:$1" "$SRC" | cut -d: -f1; }
L_WRITE=$(line_of counter_write)

# One gdb session: serve REC (--server, taking the gdb command it prints)
# or start gdb with `crec gdb` (launch), run SCRIPT, output to OUT.  Waits
# generously: the machine may be loaded.  Sets SESSION_OK.
gdb_session() {
    how=$1 rec=$2 script=$3 out=$4
    SESSION_OK=0
    if [ "$how" = launch ]; then
        timeout 900 "$CREC" gdb "$rec" -- -nx -batch -x "$script" >"$out" 2>&1 </dev/null
        rc=$?
        [ $rc = 0 ] && SESSION_OK=1 || echo "crec gdb exited $rc" >>"$out"
        return
    fi
    # files of its own: a shared one could still hold the last session's
    # lines when the wait loop first reads it
    srv=$TMP/srv-$(basename "$rec")
    "$CREC" gdb --server "$rec" >"$srv.out" 2>"$srv.err" </dev/null &
    spid=$!
    cmd=
    i=0
    while [ $i -lt 3000 ]; do # up to 5 minutes: the index is built first
        cmd=$(sed -n 2p "$srv.out")
        [ -n "$cmd" ] && break
        kill -0 $spid 2>/dev/null || break
        sleep 0.1
        i=$((i + 1))
    done
    case "$cmd" in
    "gdb -l 10000 "*"-ex 'target extended-remote 127.0.0.1:"[0-9]*) ;;
    *)
        echo "no gdb command from crec gdb --server: $(cat "$srv.out" "$srv.err")" >"$out"
        kill $spid 2>/dev/null
        wait $spid 2>/dev/null
        return
        ;;
    esac
    # the command exactly as printed, with the batch options after it
    eval "timeout 900 $cmd -nx -batch -x \"\$script\"" >"$out" 2>&1 </dev/null
    rc=$?
    i=0
    while kill -0 $spid 2>/dev/null && [ $i -lt 600 ]; do # the session's end ends the server
        sleep 0.1
        i=$((i + 1))
    done
    if kill -0 $spid 2>/dev/null; then
        kill $spid
        echo "crec gdb --server still running after gdb quit" >>"$out"
    fi
    wait $spid
    src=$?
    [ $rc = 0 ] && [ $src = 0 ] && SESSION_OK=1 ||
        echo "gdb exited $rc, crec gdb --server $src: $(cat "$srv.err")" >>"$out"
}

# field OUT TAG: the rest of the first line of OUT starting with TAG.
field() { sed -n "s/^$2 //p" "$1" | head -1; }

cat >"$TMP/tt.gdb" <<EOF
set pagination off
set confirm off
break compute if n == 4
continue
next
next
next
printf "A1 a=%d b=%d c=%d\n", a, b, c
next
next
printf "A2 a=%d\n", a
reverse-next
printf "A3 a=%d b=%d c=%d\n", a, b, c
reverse-next
reverse-next
printf "A4 a=%d b=%d\n", a, b
finish
reverse-step
python print("A5 fn=%s" % gdb.selected_frame().name())
printf "A6 a=%d n=%d\n", a, n
delete
break tt.c:$L_WRITE if i == 8
continue
printf "B1 i=%d counter=%ld\n", i, counter
condition \$bpnum i == 3
reverse-continue
printf "B2 i=%d counter=%ld\n", i, counter
delete
watch counter
continue
printf "C1 counter=%ld\n", counter
continue
printf "C2 counter=%ld\n", counter
reverse-continue
printf "C3 counter=%ld\n", counter
python print("C4 line=%d" % gdb.selected_frame().find_sal().line)
delete
break cmp
continue
monitor when
info registers rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15 rip eflags fs_base gs_base
echo E0\n
bt
echo E1\n
frame 1
info symbol \$pc
frame 0
delete
continue
printf "F0\n"
reverse-stepi
printf "F1 op=%x rax=%ld\n", *(unsigned short *)\$pc, \$rax
set \$n = 0
while !\$_caller_is("finish", 0) && \$n < 200
  reverse-stepi
  set \$n = \$n + 1
end
printf "F2 infinish=%d op=%x rax=%ld\n", \$_caller_is("finish", 0), *(unsigned char *)\$pc, \$rax
set \$n = 0
set \$after = -1
while *(unsigned short *)\$pc != 0x050f && \$n < 200
  set \$after = \$rax
  reverse-stepi
  set \$n = \$n + 1
end
printf "F3 op=%x before=%ld after=%ld\n", *(unsigned short *)\$pc, \$rax, \$after
monitor seek syscall:2
monitor when
info registers rip
monitor info recording
EOF

for v in pie nopie static static-pie; do
    case $v in
    pie) flags= how=launch ;;
    nopie) flags=-no-pie how=server ;;
    static) flags=-static how=launch ;;
    static-pie) flags=-static-pie how=server ;;
    esac
    n="gdb $v"
    prog=$TMP/tt_$v rec=$TMP/tt_$v.crec out=$TMP/gdb_$v.out
    if ! cc -O0 -g $flags -o "$prog" "$SRC" 2>"$TMP/cc.err"; then
        fail "$n: build" "$(head -c 300 "$TMP/cc.err")"
        continue
    fi
    (cd "$TMP" && "$CREC" record -o "$rec" -- "$prog" >"$TMP/tt_$v.txt" 2>"$TMP/rec.err")
    rc=$?
    if [ $rc != 9 ]; then
        fail "$n: record" "exit $rc (want 9): $(head -c 300 "$TMP/rec.err")"
        continue
    fi
    gdb_session $how "$rec" "$TMP/tt.gdb" "$out"
    if [ $SESSION_OK = 1 ]; then pass "$n: session ends cleanly ($how)"; else
        fail "$n: session ends cleanly ($how)" "$(tail -c 400 "$out")"
    fi

    # break, next, locals; reverse-next and reverse-step: what the program printed
    p1=$(sed -n 's/^compute n=4 a=\([0-9-]*\) b=\([0-9-]*\) c=\([0-9-]*\)$/a=\1 b=\2 c=\3/p' "$TMP/tt_$v.txt")
    p2=$(sed -n 's/^compute2 n=4 a=\([0-9-]*\)$/a=\1/p' "$TMP/tt_$v.txt")
    expect_eq "$n: next, print locals" "$p1" "$(field "$out" A1)"
    expect_eq "$n: next past the assignment" "$p2" "$(field "$out" A2)"
    expect_eq "$n: reverse-next undoes it" "$p1" "$(field "$out" A3)"
    expect_eq "$n: reverse-next twice more" "${p1% c=*}" "$(field "$out" A4)"
    expect_eq "$n: reverse-step into the returned call" "fn=compute" "$(field "$out" A5)"
    expect_eq "$n: locals at the end of the call" "$p2 n=4" "$(field "$out" A6)"

    # a conditional breakpoint forwards, then backwards at an earlier condition
    expect_eq "$n: conditional breakpoint forwards" "i=8 counter=28" "$(field "$out" B1)"
    expect_eq "$n: conditional breakpoint backwards" "i=3 counter=3" "$(field "$out" B2)"

    # a watchpoint forwards, then reverse-continue to the last write
    expect_eq "$n: watch forwards" "counter=6" "$(field "$out" C1)"
    expect_eq "$n: watch forwards again" "counter=10" "$(field "$out" C2)"
    expect_eq "$n: reverse-continue to the last write" "counter=6" "$(field "$out" C3)"
    expect_eq "$n: stops at the writing line" "line=$L_WRITE" "$(field "$out" C4)"
    if sed -n '/^C2 /,/^C3 /p' "$out" | tr '\n' ' ' | grep -q 'Old value = 10 New value = 6'; then
        pass "$n: old and new values going back"
    else
        fail "$n: old and new values going back" "$(sed -n '/^C2 /,/^C3 /p' "$out" | head -c 300)"
    fi

    # info registers equals crec query at the same count
    t=$(sed -n 's/^Current instruction count: \([0-9]*\) .*/\1/p' "$out" | head -1)
    regs="rax rbx rcx rdx rsi rdi rbp rsp r8 r9 r10 r11 r12 r13 r14 r15 rip eflags fs_base gs_base"
    if [ -z "$t" ]; then
        fail "$n: info registers equals crec query" "no monitor when: $(tail -c 300 "$out")"
    else
        args=
        for r in $regs; do args="$args $r@$t"; done
        "$CREC" query "$rec" $args >"$TMP/q.out" 2>&1
        if python3 - "$out" "$TMP/q.out" $regs <<'PY'; then
import re, sys
gdb, q, regs = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3:]
gdb = gdb[gdb.index("Current instruction count"):gdb.index("\nE0\n")]
want = {m.group(1): int(m.group(2), 16) for m in re.finditer(r'^(\w+)@\d+ = 0x([0-9a-f]+)', q, re.M)}
got = {m.group(1): int(m.group(2), 16) for m in re.finditer(r'^(\w+)\s+0x([0-9a-f]+)', gdb, re.M)}
want['eflags'] = want.get('eflags', -1) & 0xffffffff
bad = [r for r in regs if r not in got or r not in want or got[r] != want[r]]
if bad:
    print("differ:", " ".join("%s gdb=%s query=%s" % (r, hex(got.get(r, -1)), hex(want.get(r, -1))) for r in bad))
    sys.exit(1)
PY
            pass "$n: info registers equals crec query at $t"
        else
            fail "$n: info registers equals crec query" "$(cat "$TMP/q.out" | head -c 200)"
        fi
    fi

    # bt in a qsort callback: libc's frames and the program's
    bt=$(sed -n '/^E0$/,/^E1$/p' "$out")
    if echo "$bt" | grep -q '^#0 .*cmp ' && echo "$bt" | grep -q ' main () ' &&
        echo "$bt" | grep -Eq '(qsort|msort)'; then
        pass "$n: bt in a qsort callback"
    else
        fail "$n: bt in a qsort callback" "$(echo "$bt" | head -c 400)"
    fi
    case $v in
    pie | nopie)
        if sed -n '/^E1$/,/^F0$/p' "$out" | grep -q 'in section .text of .*libc\.so'; then
            pass "$n: the caller's frame is in libc.so"
        else
            fail "$n: the caller's frame is in libc.so" "$(sed -n '/^E1$/,/^F0$/p' "$out" | head -c 300)"
        fi
        ;;
    esac

    # from the end, reverse-stepi across the exit syscall, a return, a write syscall
    if grep -q 'No more reverse-execution history' "$out"; then
        pass "$n: the end is a stop"
    else
        fail "$n: the end is a stop" "$(sed -n '/^E1$/,/^F0$/p' "$out" | tail -c 300)"
    fi
    expect_eq "$n: reverse-stepi onto exit_group" "op=50f rax=231" "$(field "$out" F1)"
    expect_eq "$n: reverse-stepi back into a returning function" "infinish=1 op=c3 rax=9" "$(field "$out" F2)"
    expect_eq "$n: reverse-stepi across write(2)" "op=50f before=1 after=4" "$(field "$out" F3)"

    # monitor seek takes crec query's times
    qt=$("$CREC" query --json "$rec" rip@syscall:2 | sed -n 's/.*"t": \([0-9]*\),.*/\1/p')
    qrip=$("$CREC" query "$rec" rip@syscall:2 | sed -n 's/.* = 0x0*\([0-9a-f]*\) .*/\1/p')
    if grep -q "^Current instruction count: $qt " "$out" &&
        grep -Eq "^rip +0x$qrip " "$out"; then
        pass "$n: monitor seek syscall:2"
    else
        fail "$n: monitor seek syscall:2" "want $qt rip $qrip: $(grep -E '^(Current|rip)' "$out" | tail -2)"
    fi
    if grep -q "^Instructions: " "$out" && grep -q "^Recording: " "$out"; then
        pass "$n: monitor info recording"
    else
        fail "$n: monitor info recording" "$(tail -c 300 "$out")"
    fi
done

# ---- restart points every 1000 instructions (a copy of the static recording) ----
# a continue that a breakpoint or a watchpoint ends between two points
# stops there, not short of the next one as a replay that diverged
cp "$TMP/tt_static.crec" "$TMP/tt_kf.crec"
"$CREC" keyframes "$TMP/tt_kf.crec" --every 1000 >/dev/null
cat >"$TMP/kf.gdb" <<EOF
set pagination off
set confirm off
break tt.c:$L_WRITE if i == 8
continue
printf "K1 i=%d counter=%ld\n", i, counter
delete
watch counter
continue
printf "K2 counter=%ld\n", counter
reverse-continue
printf "K3 counter=%ld\n", counter
EOF
gdb_session launch "$TMP/tt_kf.crec" "$TMP/kf.gdb" "$TMP/gdb_kf.out"
expect_eq "gdb with restart points on the way: break, watch, reverse-continue" \
    "i=8 counter=28|counter=36|counter=28|1" \
    "$(field "$TMP/gdb_kf.out" K1)|$(field "$TMP/gdb_kf.out" K2)|$(field "$TMP/gdb_kf.out" K3)|$SESSION_OK"

# ---- threads: a pthread program built -O0 -g ------------------------------------
# Three workers add to a global under a mutex (tests/e2e/gdb/threads.c): gdb's
# thread list, a breakpoint hit by each thread, thread N and bt, stepping one
# thread across another's slice and back, reverse-continue across thread
# switches, a watchpoint written by every thread; compared with what the
# program printed and with crec query and crec info.
TSRC=$E2E_DIR/gdb/threads.c
tline() { grep -n "LINE:$1" "$TSRC" | cut -d: -f1; }
L_ADD=$(tline add) L_PRINT=$(tline print) L_UNLOCK=$(tline unlock) L_JOIN=$(tline join)
n="gdb threads"
TP=$TMP/threads TR=$TMP/threads.crec TO=$TMP/gdb_threads.out
if ! cc -O0 -g -pthread -o "$TP" "$TSRC" 2>"$TMP/cc.err"; then
    fail "$n: build" "$(head -c 300 "$TMP/cc.err")"
elif ! (cd "$TMP" && "$CREC" record -o "$TR" -- "$TP" >"$TMP/threads.txt" 2>"$TMP/rec.err"); then
    fail "$n: record" "$(head -c 300 "$TMP/rec.err")"
else
    "$CREC" info "$TR" >"$TMP/threads.info"
    # crec info's thread table: THREAD PARENT TID FROM TO INSTR KF BYTES END...
    tcol() { awk -v t="$1" -v c="$2" '/^threads:/ { on = 1; next } on && $1 == t && NF >= 8 { print $c; exit }' "$TMP/threads.info"; }
    # a preemption: a thread switched out where a worker first runs, which goes on later
    F= X=
    for k in 4 3 2; do
        f=$(tcol $k 4)
        x=$("$CREC" trace --from $((f - 1)) --to $((f - 1)) "$TR" | awk '{ print $2 }')
        if [ -n "$x" ] && [ "$(tcol "$x" 5)" -gt "$f" ]; then F=$f X=$x; break; fi
    done
    cat >"$TMP/threads.gdb" <<EOF
set pagination off
set confirm off
python
def tid():
    return gdb.selected_thread().ptid[1]
def when():
    s = gdb.execute("monitor when", to_string=True)
    return int(s.split(":")[1].split()[0])
def switch(n):
    for t in gdb.selected_inferior().threads():
        if t.ptid[1] == n:
            t.switch()
            return
    raise gdb.GdbError("no thread %d" % n)
def val(e):
    return int(gdb.parse_and_eval(e))
def line():
    return gdb.selected_frame().find_sal().line
end
break threads.c:$L_ADD
python
hits = []
for i in range(9):
    gdb.execute("continue", to_string=True)
    hits.append((tid(), val("id"), val("sum"), when()))
    if i == 0:
        # next and reverse-next in the thread that hit, the others running
        steps = [(tid(), line())]
        for c in ["next", "next", "reverse-next", "reverse-next"]:
            gdb.execute(c, to_string=True)
            steps.append((tid(), line()))
        print("S " + " ".join("%d:%d" % s for s in steps))
        bt = gdb.execute("bt", to_string=True)
        print("BT0 " + " ".join(l.split(" in ")[-1].split(" (")[0].split()[-1] for l in bt.splitlines() if l.startswith("#")))
    if i == 4:
        print("I1 %d cur %d: %s" % (when(), tid(), " ".join(str(t.ptid[1]) for t in sorted(gdb.selected_inferior().threads(), key=lambda t: t.ptid[1]))))
        info = gdb.execute("info threads", to_string=True)
        print("I2 " + " ".join(l.split()[3] for l in info.splitlines() if l.startswith("*")))
for h in hits:
    print("H %d %d %d %d" % h)
# the main thread at the last add: waiting to join, its registers as crec query has them
switch(1)
bt = gdb.execute("bt", to_string=True)
print("M1 " + str(any(" main () at " in l and "threads.c:$L_JOIN" in l for l in bt.splitlines())))
print("M2 %d %d %d %d" % (when(), val("\$pc"), val("\$sp"), val("\$rbp")))
back = []
for i in range(8):
    gdb.execute("reverse-continue", to_string=True)
    back.append((tid(), val("id"), val("sum"), when()))
for b in back:
    print("R %d %d %d %d" % b)
end
delete
watch total
python
ws = []
for i in range(4):
    out = gdb.execute("continue", to_string=True)
    ws.append((tid(), val("total"), when()))
for w in ws:
    print("W %d %d %d" % w)
end
reverse-continue
python print("WB %d %d %d" % (tid(), val("total"), line()))
delete
python
# one thread's stepi across another's slice, then back
if "$F":
    gdb.execute("monitor seek %d" % ($F - 2), to_string=True)
    switch($X)
    r0 = (val("\$pc"), val("\$sp"), val("\$rax"))
    fwd = []
    for i in range(4):
        gdb.execute("stepi", to_string=True)
        fwd.append((when(), tid(), val("\$pc")))
    print("X1 " + " ".join("%d:%d:%d" % f for f in fwd))
    for i in range(4):
        gdb.execute("reverse-stepi", to_string=True)
    print("X2 %d %s" % (tid(), (val("\$pc"), val("\$sp"), val("\$rax")) == r0))
end
EOF
    gdb_session launch "$TR" "$TMP/threads.gdb" "$TO"
    if [ $SESSION_OK = 1 ]; then pass "$n: session ends cleanly"; else
        fail "$n: session ends cleanly" "$(tail -c 400 "$TO")"
    fi
    # the adds gdb stopped at, in order: the program's own lines, each in its worker's thread
    expect_eq "$n: a breakpoint hit by every thread, in the recorded order" \
        "$(sed -n 's/^add id=\([0-9]*\) sum=\([0-9]*\) .*/\1 \2/p' "$TMP/threads.txt" | tr '\n' ' ')" \
        "$(awk '$1 == "H" { print $3, $4 }' "$TO" | tr '\n' ' ')"
    expect_eq "$n: each hit names its worker's thread (crec's number)" "" \
        "$(awk '$1 == "H" && $2 != $3 + 1 { print }' "$TO")"
    expect_eq "$n: reverse-continue goes back through the hits across thread switches" \
        "$(awk '$1 == "H" { print $2, $3, $4, $5 }' "$TO" | sed '$d' | tac | tr '\n' ' ')" \
        "$(awk '$1 == "R" { print $2, $3, $4, $5 }' "$TO" | tr '\n' ' ')"
    h1=$(awk '$1 == "H" { print $2; exit }' "$TO")
    expect_eq "$n: next and reverse-next stay in the thread" \
        "$h1:$L_ADD $h1:$L_PRINT $h1:$L_UNLOCK $h1:$L_PRINT $h1:$L_ADD" "$(field "$TO" S)"
    case "$(field "$TO" BT0)" in
    "worker start_thread clone3") pass "$n: bt in a worker thread" ;;
    *) fail "$n: bt in a worker thread" "$(field "$TO" BT0)" ;;
    esac
    # info threads: the threads crec info says are there at that time
    t=$(sed -n 's/^I1 \([0-9]*\) .*/\1/p' "$TO")
    want=$(awk -v t="$t" '/^threads:/ { on = 1; next }
        on && NF >= 8 && $1 ~ /^[0-9]+$/ && $4 <= t && ($5 >= t || $9 != "exit") { printf "%s ", $1 }' "$TMP/threads.info")
    expect_eq "$n: the thread list is the threads there at that time" "${want% }" \
        "$(sed -n 's/^I1 [0-9]* cur [0-9]*: //p' "$TO")"
    cur=$(sed -n 's/^I1 [0-9]* cur \([0-9]*\):.*/\1/p' "$TO")
    expect_eq "$n: info threads marks the thread that hit" "1.$cur" "$(field "$TO" I2)"
    expect_eq "$n: thread 1 and bt: main waits to join" "True" "$(field "$TO" M1)"
    set -- $(field "$TO" M2)
    q=$("$CREC" query "$TR" "1:rip@$1" "1:rsp@$1" "1:rbp@$1" | sed 's/.*= 0x\([0-9a-f]*\) .*/\1/' |
        while read -r h; do printf '%d ' "0x$h"; done)
    expect_eq "$n: another thread's registers equal crec query N:REG@T" "${q% }" "$2 $3 $4"
    # the watchpoint: each write in the thread that made it, and back to the last one
    adds=$(sed -n 's/^add id=\([0-9]*\) sum=[0-9]* total=\([0-9]*\)/\1 \2/p' "$TMP/threads.txt")
    expect_eq "$n: watch: each write stops in the thread that wrote" \
        "$(echo "$adds" | head -4 | awk '{ print $1 + 1, $2 }' | tr '\n' ' ')" \
        "$(awk '$1 == "W" { print $2, $3 }' "$TO" | tr '\n' ' ')"
    # back from after the fourth write: before it, in its thread, at its line
    set -- $(echo "$adds" | sed -n 3p) $(echo "$adds" | sed -n 4p)
    if [ "$(field "$TO" WB)" = "$(($3 + 1)) $2 $L_ADD" ] &&
        sed -n '/^W /,/^WB /p' "$TO" | tr '\n' ' ' | grep -q "Old value = $4 New value = $2 "; then
        pass "$n: reverse-continue to the last write: its thread, line, old and new values"
    else
        fail "$n: reverse-continue to the last write: its thread, line, old and new values" \
            "$(field "$TO" WB): $(sed -n '/^W /,/^WB /p' "$TO" | tail -c 300)"
    fi
    if [ -z "$F" ]; then
        fail "$n: stepi across another thread's slice" "no preemption found in $(cat "$TMP/threads.info" | head -c 300)"
    else
        # thread X runs up to F, then another: its third step is its first instruction
        # of its next slice, later than F
        set -- $(field "$TO" X1 | tr ':' ' ')
        ok=1
        for i in 1 4 7 10; do
            eval "tw=\${$i} tt=\${$((i + 1))} tp=\${$((i + 2))}"
            [ "$tt" = "$X" ] || ok=0
            qp=$("$CREC" query "$TR" "$X:rip@$tw" | sed 's/.*= 0x\([0-9a-f]*\) .*/\1/')
            [ "$(printf '%d' "0x$qp")" = "$tp" ] || ok=0
        done
        [ "$1" = $((F - 1)) ] && [ "$4" = "$F" ] && [ "$7" -gt $((F + 1)) ] || ok=0
        [ $ok = 1 ] && pass "$n: stepi of one thread across another's slice" ||
            fail "$n: stepi of one thread across another's slice" "F=$F X=$X: $(field "$TO" X1)"
        expect_eq "$n: reverse-stepi back across it" "$X True" "$(field "$TO" X2)"
    fi
fi

# ---- the command line ---------------------------------------------------------
expect_status "gdb: no file" 2 "$CREC" gdb
one_error_line "gdb: no file, one line"
expect_status "gdb: bad port" 2 "$CREC" gdb --port 99999 x.crec
one_error_line "gdb: bad port, one line"
expect_status "gdb: --server takes no gdb arguments" 2 "$CREC" gdb --server x.crec -- -batch
expect_status "gdb: a missing file" 1 "$CREC" gdb --server "$TMP/none.crec"
one_error_line "gdb: a missing file, one line"
expect_status "gdb: a gdb that is not there" 127 "$CREC" gdb --gdb "$TMP/no-gdb" "$TMP/tt_static.crec"
expect_status "gdb: --help" 0 "$CREC" gdb --help

# ---- the server: 127.0.0.1 only, --port, and garbage from a client -----------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# A file of its own: with srv.out, the loop below could read the last
# session's two lines before the new server's shell had truncated it.
"$CREC" gdb --server --port "$port" "$TMP/tt_static.crec" >"$TMP/srvport.out" 2>"$TMP/srvport.err" </dev/null &
spid=$!
i=0
while [ -z "$(sed -n 2p "$TMP/srvport.out")" ] && kill -0 $spid 2>/dev/null && [ $i -lt 3000 ]; do
    sleep 0.1
    i=$((i + 1))
done
if grep -q "127.0.0.1:$port'" "$TMP/srvport.out"; then pass "gdb: --port $port"; else
    # (say whether the server was still there and how long the loop waited)
    alive=$(kill -0 $spid 2>/dev/null && echo "running" || echo "gone")
    fail "gdb: --port $port" "server $alive after $i waits: $(cat "$TMP/srvport.out" "$TMP/srvport.err" | head -c 300)"
fi
hexport=$(printf '%04X' "$port")
if grep -q "^ *[0-9]*: 0100007F:$hexport 00000000:0000 0A" /proc/net/tcp &&
    ! grep -Eq "^ *[0-9]*: [0-9A-F]{8}:$hexport 00000000:0000 0A" /proc/net/tcp6 2>/dev/null &&
    [ "$(grep -c ":$hexport 00000000:0000 0A" /proc/net/tcp)" = 1 ]; then
    pass "gdb: listens on 127.0.0.1 only"
else
    fail "gdb: listens on 127.0.0.1 only" "$(grep ":$hexport " /proc/net/tcp | head -3)"
fi
python3 - "$port" >"$TMP/garbage.out" 2>&1 <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=300)
def frame(body):
    return b"$" + body + b"#%02x" % (sum(body) & 0xff)
def reply():
    buf = b""
    while True:
        c = s.recv(1)
        if not c:
            return None
        if c in b"+-" and not buf:
            continue
        buf += c
        if len(buf) > 3 and buf[-3:-2] == b"#":
            s.sendall(b"+")
            return buf[buf.index(b"$") + 1:-3]
s.sendall(b"\x00\xff garbage $g#00")           # noise, then a bad checksum
assert s.recv(1) == b"-", "a bad checksum is refused"
s.sendall(frame(b"q" * 200000))                # too long
r = reply(); assert r == b"E01", r
s.sendall(b"$a*\x01#8c")                       # a broken run length
r = reply(); assert r == b"E01", r
s.sendall(frame(b"m0,ffffffffffffffffffff"))   # a length that overflows
r = reply(); assert r == b"E01", r
s.sendall(frame(b"qAttached"))                 # still answering
r = reply(); assert r == b"1", r
s.sendall(frame(b"c"))                         # and gone in the middle of a continue
time.sleep(0.2)
s.close()
print("ok")
PY
expect_eq "gdb: garbage, long and broken packets get errors" "ok" "$(tail -1 "$TMP/garbage.out")"
i=0
while kill -0 $spid 2>/dev/null && [ $i -lt 3000 ]; do
    sleep 0.1
    i=$((i + 1))
done
if kill -0 $spid 2>/dev/null; then
    kill $spid
    fail "gdb: a client gone mid-continue ends the session" "still running"
else
    wait $spid
    expect_eq "gdb: a client gone mid-continue ends the session" 0 "$?"
fi
