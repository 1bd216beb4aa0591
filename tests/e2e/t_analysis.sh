# Analysis from replay: trace, calls, profile, backtrace, syscalls, find,
# printf and crec info on a crash, on the guests made for them (fib_static,
# calltree_static, cxxthrow, crash3_static, printcalls_static).
. "$E2E_DIR/lib.sh"

rec() { # rec NAME: record guest NAME into $TMP/NAME.crec, its stdout in $TMP/NAME.out
    (cd "$TMP" && "$CREC" record -o "$1.crec" -- "$GUESTS/$1" >"$1.out" 2>"$1.err")
}

for g in fib_static calltree_static cxxthrow crash3_static printcalls_static; do rec $g; done

# ---- --help and bad input --------------------------------------------------------
for v in trace calls profile backtrace syscalls find printf; do
    expect_status "$v --help" 0 "$CREC" $v --help
    grep -q "^usage: crec $v" "$TMP/out" || fail "$v --help" "no usage line"
    expect_status "$v: no FILE is a usage error" 2 "$CREC" $v
done
expect_status "calls: unknown function fails" 1 "$CREC" calls "$TMP/fib_static.crec" no_such_fn
one_error_line "calls: unknown function is one line"
expect_status "find: bad expression fails" 1 "$CREC" find "$TMP/fib_static.crec" '*(u32*) =='
one_error_line "find: bad expression is one line"
expect_status "printf: too few arguments fails" 1 "$CREC" printf "$TMP/fib_static.crec" fib '%d %d' rdi
one_error_line "printf: too few arguments is one line"
expect_status "printf: too few arguments, a format of escapes, fails" 1 "$CREC" printf "$TMP/fib_static.crec" fib 'n=%d\n\t'
one_error_line "printf: ... still one line, its escapes shown as written"
expect_status "trace: --from after --to fails" 1 "$CREC" trace --from 10 --to 5 "$TMP/fib_static.crec"
expect_status "profile: missing file fails" 1 "$CREC" profile "$TMP/none.crec"
one_error_line "profile: missing file is one line"

# ---- profile: fib(20) -------------------------------------------------------------
F=$TMP/fib_static.crec
total=$("$CREC" info "$F" | sed -n 's/^instructions: *//p')
"$CREC" profile "$F" >"$TMP/prof" 2>"$TMP/err"
expect_eq "profile: fib(20) is 21891 calls of fib" 21891 \
    "$(awk '$NF == "fib" { print $1 }' "$TMP/prof")"
expect_eq "profile: the total is the recording's" "$total" \
    "$(sed -n 's/^total: \([0-9]*\) instructions.*/\1/p' "$TMP/prof")"
expect_eq "profile: self instructions sum to the total" "$total" \
    "$(awk 'NR > 2 { s += $2 } END { print s }' "$TMP/prof")"
"$CREC" profile --folded "$F" >"$TMP/folded"
expect_eq "profile --folded: counts sum to the total" "$total" \
    "$(awk '{ s += $NF } END { print s }' "$TMP/folded")"
grep -q '^_start;__libc_start_main;__libc_start_call_main;main;fib;fib;fib ' "$TMP/folded" &&
    pass "profile --folded: stacks root first" || fail "profile --folded: stacks root first" \
    "$(head -3 "$TMP/folded")"
"$CREC" profile --callgrind -o "$TMP/callgrind.out" "$F"
if callgrind_annotate "$TMP/callgrind.out" >"$TMP/cga" 2>"$TMP/cga.err"; then
    cg_total=$(grep 'PROGRAM TOTALS' "$TMP/cga" | awk '{ gsub(",", "", $1); print $1 }')
    expect_eq "callgrind_annotate: same total" "$total" "$cg_total"
    cg_fib=$(grep ' fib$\|:fib$\|:fib \[' "$TMP/cga" | head -1 | awk '{ gsub(",", "", $1); print $1 }')
    expect_eq "callgrind_annotate: same self count for fib" \
        "$(awk '$NF == "fib" { print $2 }' "$TMP/prof")" "$cg_fib"
else
    fail "callgrind_annotate reads --callgrind" "$(head -c 300 "$TMP/cga.err")"
fi
"$CREC" profile --speedscope -o "$TMP/ss.json" "$F"
if python3 -m json.tool "$TMP/ss.json" >/dev/null 2>"$TMP/err" &&
    python3 - "$TMP/ss.json" <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
p = d["profiles"][0]
ev, frames = p["events"], d["shared"]["frames"]
stack, last = [], -1
for e in ev:
    assert e["at"] >= last; last = e["at"]
    if e["type"] == "O": stack.append(e["frame"])
    else: assert stack.pop() == e["frame"]
assert not stack
assert sum(1 for e in ev if e["type"] == "O" and frames[e["frame"]]["name"] == "fib") == 21891
EOF
    pass "profile --speedscope: valid JSON, nested events, 21891 opens of fib"
else
    fail "profile --speedscope: valid JSON, nested events, 21891 opens of fib" "$(head -c 300 "$TMP/err")"
fi
"$CREC" profile --sort calls "$F" | sed -n 3p | grep -q ' fib$' &&
    pass "profile --sort calls: fib first" || fail "profile --sort calls: fib first" ""

# ---- the call tree: tail call, longjmp, C++ exception ------------------------------
"$CREC" calls --tree --args 1 "$TMP/calltree_static.crec" >"$TMP/tree"
sed -n '/ main(/,/} main =/p' "$TMP/tree" | sed 's/^[0-9]* 1 //; s/\([a-z_]\)([^)]*)/\1/' |
    grep -E '^ *(} )?(main|twice|leaf|jumper|deep|longjmp|__longjmp)( |$)' |
    awk 'NR == 1 { match($0, /^ */); n = RLENGTH - 2 } { print substr($0, n + 1) }' >"$TMP/tree.main"
cat >"$TMP/tree.want" <<'EOF'
  main
    twice
      leaf (tail call)
      } leaf = 13
    } twice = 13
    jumper
      deep
        deep
          deep
            deep
              longjmp
                __longjmp
                } __longjmp = (unwound)
              } longjmp = (unwound)
            } deep = (unwound)
          } deep = (unwound)
        } deep = (unwound)
      } deep = (unwound)
    } jumper = 7
EOF
sed '/} main =/d' "$TMP/tree.main" >"$TMP/tree.got"
if diff "$TMP/tree.want" "$TMP/tree.got" >"$TMP/diff"; then
    pass "calls --tree: the tail call and the longjmp as the source implies"
else
    fail "calls --tree: the tail call and the longjmp as the source implies" "$(head -c 600 "$TMP/diff")"
fi
"$CREC" profile "$TMP/calltree_static.crec" >"$TMP/prof2"
expect_eq "profile: deep is called 4 times, leaf once (tail call)" "4 1" \
    "$(awk '$NF == "deep" { d = $1 } $NF == "leaf" { l = $1 } END { print d, l }' "$TMP/prof2")"
"$CREC" calls --args 1 "$TMP/cxxthrow.crec" _Z7throweri >"$TMP/throw"
expect_eq "calls: the thrower frames are unwound by the exception" \
    "4 (unwound)" "$(grep -c '= (unwound)$' "$TMP/throw") $(sed -n '1s/.* = //p' "$TMP/throw")"
"$CREC" calls "$TMP/cxxthrow.crec" _Z7catcherv >"$TMP/catch"
expect_eq "calls: the catcher returns what it printed" "$(cat "$TMP/cxxthrow.out")" \
    "$(sed 's/.* = //' "$TMP/catch")"
"$CREC" profile "$TMP/cxxthrow.crec" >"$TMP/prof3"
expect_eq "profile (C++): self sums to the total" \
    "$("$CREC" info "$TMP/cxxthrow.crec" | sed -n 's/^instructions: *//p')" \
    "$(awk 'NR > 2 { s += $2 } END { print s }' "$TMP/prof3")"

# ---- a crash three calls deep -------------------------------------------------------
C=$TMP/crash3_static.crec
"$CREC" info "$C" >"$TMP/info"
grep -q '^crash: *SIGSEGV at instruction [0-9]*, 0x[0-9a-f]* inner: mov eax, dword ptr \[rdi\]$' "$TMP/info" &&
    grep -q 'faulting address 0x0$' "$TMP/info" && grep -q "crec backtrace" "$TMP/info" &&
    pass "info: a crash names the signal, instruction and address, suggests backtrace" ||
    fail "info: a crash names the signal, instruction and address, suggests backtrace" "$(grep -A2 crash "$TMP/info")"
"$CREC" backtrace "$C" >"$TMP/bt"
last=$(sed -n '/^Call stack/q; /./p' "$TMP/bt" | tail -1)
case "$last" in
*"inner tests/guests/crash3_static.c:10  mov eax, dword ptr [rdi]   <- SIGSEGV, address 0x0")
    pass "backtrace: the faulting instruction last, with its source line" ;;
*) fail "backtrace: the faulting instruction last, with its source line" "$last" ;;
esac
expect_eq "backtrace: the call stack shows inner, middle, outer, main" "inner middle outer main" \
    "$(sed -n '/^Call stack/,$p' "$TMP/bt" | sed -n 's/^#[0-3]  0x[0-9a-f]* in \([a-z]*\) .*/\1/p' | tr '\n' ' ' | sed 's/ $//')"
"$CREC" backtrace --at 1000 --last 4 "$TMP/fib_static.crec" >"$TMP/bt2" &&
    grep -q '^Call stack at 1000:' "$TMP/bt2" && pass "backtrace --at T" ||
    fail "backtrace --at T" "$(head -c 300 "$TMP/bt2")"
"$CREC" backtrace --at 200000 --last 3 "$TMP/fib_static.crec" >"$TMP/bt3"
grep -q 'repeated [0-9]* times' "$TMP/bt3" || grep -q '^#[0-9]*  .* in fib ' "$TMP/bt3" &&
    pass "backtrace: inside fib's recursion" || fail "backtrace: inside fib's recursion" "$(head -c 300 "$TMP/bt3")"

# the analysis commands' numbers are read as every other number crec takes:
# no sign, no space, nothing after the digits, within their range
bad_number() {
    expect_status "analysis: $1 $2 '$3' is a usage error" 2 "$CREC" "$1" "$2" "$3" "$TMP/fib_static.crec"
    grep -q "^crec $1: bad $2 '$3' (" "$TMP/err" && pass "analysis: ... naming $2 and its range" ||
        fail "analysis: $1 $2 '$3' names $2 and its range" "$(cat "$TMP/err")"
}
bad_number calls --args 7
bad_number calls --args -1
bad_number calls --args 3x
bad_number backtrace --last 0
bad_number backtrace --thread 0
bad_number backtrace --thread 99999999999
bad_number backtrace --thread ' 1'

# ---- trace ---------------------------------------------------------------------------
T=150000
"$CREC" trace --from $T --to $((T + 5)) "$F" | awk '{ print $3 }' >"$TMP/trace.rip"
q=""
for i in 0 1 2 3 4 5; do q="$q rip@$((T + i))"; done
"$CREC" query "$F" $q | sed 's/.*= *//; s/ .*//; s/^0x0*/0x/' >"$TMP/query.rip"
if [ "$(wc -l <"$TMP/trace.rip")" = 6 ] && diff "$TMP/trace.rip" "$TMP/query.rip" >/dev/null; then
    pass "trace --from T --to T+5: the six instructions query gives"
else
    fail "trace --from T --to T+5: the six instructions query gives" \
        "$(paste "$TMP/trace.rip" "$TMP/query.rip" | head -6 | tr '\n' ' ')"
fi
"$CREC" trace --from $T --to $((T + 50)) --mem --regs "$F" >"$TMP/tm"
grep -q '^    [rw] 0x[0-9a-f]* [0-9]* [0-9a-f]*$' "$TMP/tm" && grep -q '^    regs: ' "$TMP/tm" &&
    pass "trace --mem --regs" || fail "trace --mem --regs" "$(head -c 300 "$TMP/tm")"
"$CREC" trace --format tenet --from $T --to $((T + 50)) "$F" >"$TMP/tenet"
if [ "$(wc -l <"$TMP/tenet")" = 51 ] && ! grep -qv '^rip=0x[0-9a-f]*\(,[a-z0-9_]*=0x[0-9a-f]*\(:[0-9a-f]*\)\?\)*$' "$TMP/tenet" &&
    head -1 "$TMP/tenet" | grep -q ',rax=.*,r15=' && grep -q ',m[rw]=0x[0-9a-f]*:[0-9a-f]*' "$TMP/tenet"; then
    pass "trace --format tenet"
else
    fail "trace --format tenet" "$(head -c 300 "$TMP/tenet")"
fi
"$CREC" trace --only fib --from 100000 --to 100300 "$F" | awk '{ print $4 }' | sed 's/+.*//' | sort -u >"$TMP/only"
expect_eq "trace --only fib" "fib" "$(cat "$TMP/only")"
start=$(date +%s)
timeout 20 sh -c "'$CREC' trace '$F' | head -2 >'$TMP/head'" 2>"$TMP/err"
rc=$?
took=$(( $(date +%s) - start ))
if [ $rc = 0 ] && [ "$(wc -l <"$TMP/head")" = 2 ] && [ ! -s "$TMP/err" ] && [ $took -lt 10 ]; then
    pass "trace | head returns at once, quietly"
else
    fail "trace | head returns at once, quietly" "rc $rc, ${took}s, $(head -c 200 "$TMP/err")"
fi

# ---- calls, printf, find, syscalls on printcalls ---------------------------------------
P=$TMP/printcalls_static.crec
"$CREC" calls --args 3 "$P" add3 | sed 's/^1 [0-9]* [0-9]* //' >"$TMP/calls"
grep '^add3' "$TMP/printcalls_static.out" >"$TMP/calls.want"
diff "$TMP/calls.want" "$TMP/calls" >/dev/null && pass "calls: arguments and results as the program printed" ||
    fail "calls: arguments and results as the program printed" "$(head -3 "$TMP/calls")"
"$CREC" printf "$P" report 'i=%d name=%s\n' edi '(char*)rsi' >"$TMP/pf"
grep '^i=' "$TMP/printcalls_static.out" >"$TMP/pf.want"
diff "$TMP/pf.want" "$TMP/pf" >/dev/null && pass "printf: the program's own printf output" ||
    fail "printf: the program's own printf output" "$(head -3 "$TMP/pf")"
"$CREC" printf --time "$P" add3 'a=%ld b=%#lx c=%+5d\n' rdi rsi edx >"$TMP/pf2"
expect_eq "printf --time, flags and width" "a=2 b=0xc8 c=   -6" "$(sed -n '3s/^[0-9]* 1: //p' "$TMP/pf2")"
# counter becomes 5 at one store: crec when says where
when5=$("$CREC" when --size 4 --format dec "$P" counter | awk '$2 == 5 { print $1 }')
expect_eq "find: forward to the store that makes counter 5" "$when5 1" \
    "$("$CREC" find "$P" '*(u32*)counter == 5')"
expect_eq "find --backward: the same store" "$when5 1" \
    "$("$CREC" find --backward "$P" '*(u32*)counter == 5')"
expect_eq "find --backward --from before it: nothing" "1" \
    "$("$CREC" find --backward --from $((when5 - 1)) "$P" '*(u32*)counter == 5' >/dev/null 2>&1; echo $?)"
expect_eq "find: a register expression" "$when5 1" \
    "$("$CREC" find --from $((when5 - 200)) "$P" '*(u32*)counter == 5 && rip != 0')"
expect_eq "find enter add3 --all: six calls" 6 "$("$CREC" find --all "$P" 'enter add3' | wc -l)"
first=$("$CREC" calls "$P" add3 | head -1 | awk '{ print $2 }')
expect_eq "find enter: the time calls gives" "$first 1" "$("$CREC" find "$P" 'enter add3')"
third=$("$CREC" calls "$P" add3 | sed -n 3p | awk '{ print $2 }')
expect_eq "find enter --backward" "$third 1" \
    "$("$CREC" find --backward --from $((third + 1)) "$P" 'enter add3')"
expect_eq "find leave add3" "$("$CREC" calls "$P" add3 | head -1 | awk '{ print $3 }') 1" \
    "$("$CREC" find "$P" 'leave add3')"
# with restart points every 1000 instructions (a copy): a search that ends
# between two points stops there, not short of the next one as a replay
# that diverged (as on bench/gdb_reverse.sh's long loop, points rare there)
PK=$TMP/pkf.crec
cp "$P" "$PK"
"$CREC" keyframes "$PK" --every 1000 >/dev/null
expect_eq "find with restart points on the way: enter, leave, --all, a register expression" \
    "$first 1|$("$CREC" calls "$P" add3 | head -1 | awk '{ print $3 }') 1|6|$when5 1" \
    "$("$CREC" find "$PK" 'enter add3' 2>&1)|$("$CREC" find "$PK" 'leave add3' 2>&1)|$("$CREC" find --all "$PK" 'enter add3' 2>&1 | wc -l)|$("$CREC" find "$PK" '*(u32*)counter == 5 && rip != 0' 2>&1)"
expect_eq "syscalls: the write of what the program printed" \
    "1 $(wc -c <"$TMP/printcalls_static.out" | tr -d ' ')" \
    "$("$CREC" syscalls "$P" | grep -c ' write(1, ') $("$CREC" syscalls "$P" | sed -n 's/.* write(1, .*) = //p')"
sys1=$("$CREC" syscalls "$P" | grep ' write(1, ' | head -1 | awk '{ print $1 }')
expect_eq "find syscall write: the first write" "$sys1 1" "$("$CREC" find "$P" 'syscall write')"
"$CREC" syscalls "$P" | grep -q '^[0-9]* 1 write(1, 0x[0-9a-f]*, [0-9]*) = [0-9]*$' &&
    pass "syscalls: strace-style lines" || fail "syscalls: strace-style lines" "$("$CREC" syscalls "$P" | tail -2)"

# ---- with the program's file deleted ---------------------------------------------------
mkdir "$TMP/gone"
cp "$GUESTS/crash3_static" "$GUESTS/printcalls_static" "$TMP/gone/"
(cd "$TMP/gone" && "$CREC" record -o c.crec -- ./crash3_static >/dev/null 2>&1;
 "$CREC" record -o p.crec -- ./printcalls_static >p.out 2>&1)
rm "$TMP/gone/crash3_static" "$TMP/gone/printcalls_static"
"$CREC" backtrace "$TMP/gone/c.crec" >"$TMP/gbt" 2>"$TMP/err"
if grep -q 'inner  mov eax, dword ptr \[rdi\]   <- SIGSEGV' "$TMP/gbt" && ! grep -q '\.c:' "$TMP/gbt" &&
    [ "$(sed -n '/^Call stack/,$p' "$TMP/gbt" | sed -n 's/^#[0-2]  0x[0-9a-f]* in \([a-z]*\) .*/\1/p' | tr '\n' ' ')" = "inner middle outer " ]; then
    pass "deleted program: backtrace without source lines"
else
    fail "deleted program: backtrace without source lines" "$(tail -c 400 "$TMP/gbt") $(cat "$TMP/err")"
fi
"$CREC" printf "$TMP/gone/p.crec" report 'i=%d name=%s\n' edi '(char*)rsi' >"$TMP/gpf"
grep '^i=' "$TMP/gone/p.out" | diff - "$TMP/gpf" >/dev/null && pass "deleted program: printf" ||
    fail "deleted program: printf" "$(head -2 "$TMP/gpf")"
"$CREC" profile "$TMP/gone/p.crec" | awk '$NF == "add3" { print $1 }' | grep -qx 6 &&
    pass "deleted program: profile" || fail "deleted program: profile" ""
"$CREC" trace --from 1000 --to 1010 "$TMP/gone/p.crec" >"$TMP/gtr"
[ "$(wc -l <"$TMP/gtr")" = 11 ] && ! grep -q '\.c:' "$TMP/gtr" && pass "deleted program: trace" ||
    fail "deleted program: trace" "$(head -2 "$TMP/gtr")"
expect_eq "deleted program: find and calls" "6 6" \
    "$("$CREC" find --all "$TMP/gone/p.crec" 'enter add3' | wc -l) $("$CREC" calls "$TMP/gone/p.crec" add3 | wc -l)"

# ---- several threads --------------------------------------------------------------------
# threads_counter: 3 workers take a mutex 2000 times each; threads_crash: a worker
# faults three calls deep; sig_threads: a handler entered in two threads.
(cd "$TMP" && "$CREC" record -o tc.crec -- "$GUESTS/threads_counter" 3 2000 >tc.out 2>&1;
 "$CREC" record -o tcr.crec -- "$GUESTS/threads_crash" >tcr.out 2>&1;
 "$CREC" record -o st.crec -- "$GUESTS/sig_threads" >st.out 2>&1)
TC=$TMP/tc.crec
"$CREC" info "$TC" >"$TMP/tc.info"
# from crec info's thread table: "THREAD PARENT TID FROM TO INSTR KF BYTES END..."
thread_col() { awk -v t="$1" -v c="$2" '/^threads:/ { on = 1; next } on && $1 == t && NF >= 8 { print $c; exit }' "$TMP/tc.info"; }
instrs() { for t in 1 2 3 4; do thread_col $t 6; done | tr '\n' ' ' | sed 's/ $//'; }
expect_eq "threads: four threads recorded" "4" "$(sed -n 's/^threads: *//p' "$TMP/tc.info")"
"$CREC" trace "$TC" | awk '{ n[$2]++ } END { for (t in n) print t, n[t] }' | sort >"$TMP/tc.per"
expect_eq "trace: every instruction of every thread, with its thread" \
    "1 $(thread_col 1 6) 2 $(thread_col 2 6) 3 $(thread_col 3 6) 4 $(thread_col 4 6)" \
    "$(tr '\n' ' ' <"$TMP/tc.per" | sed 's/ $//')"
expect_eq "trace --thread 3: that thread's instructions only" "3 $(thread_col 3 6)" \
    "$("$CREC" trace --thread 3 "$TC" | awk '{ n[$2]++ } END { for (t in n) print t, n[t] }')"
S=$(thread_col 3 4)
"$CREC" trace --from $((S - 3)) --to $((S + 2)) "$TC" | awk '{ print $2, $3 }' >"$TMP/tsw"
q=""
for i in 0 1 2 3 4 5; do q="$q rip@$((S - 3 + i))"; done
"$CREC" query "$TC" $q | sed 's/.*= *//; s/ .*//; s/^0x0*/0x/' >"$TMP/tsw.q"
if [ "$(awk '{ print $2 }' "$TMP/tsw")" = "$(cat "$TMP/tsw.q")" ] &&
    [ "$(awk '{ print ($1 == 3) }' "$TMP/tsw" | tr -d '\n')" = 000111 ]; then
    pass "trace across a thread switch: the instructions query gives, the thread that ran"
else
    fail "trace across a thread switch: the instructions query gives, the thread that ran" \
        "$(tr '\n' ' ' <"$TMP/tsw") / $(tr '\n' ' ' <"$TMP/tsw.q")"
fi
# thread 4 first runs when thread 3 is switched out after a call: that call's
# change is thread 3's rsp after it
S4=$(thread_col 4 4)
rsp=$("$CREC" query "$TC" "3:rsp@$S4" | sed 's/.*= *//; s/ .*//; s/^0x0*/0x/')
expect_eq "trace --regs across a thread switch: the changes of the thread switched out" \
    "$((S4 - 1)) 3 call;    regs: rsp=$rsp" \
    "$("$CREC" trace --regs --from $((S4 - 1)) --to $((S4 - 1)) "$TC" | sed 's/^\([0-9]* [0-9]*\) .*  \(call\) .*/\1 \2/' | tr '\n' ';' | sed 's/;$//')"
expect_status "trace --format tenet wants a thread" 1 "$CREC" trace --format tenet "$TC"
one_error_line "trace --format tenet wants a thread: one line"
expect_status "trace --thread 9: no such thread" 1 "$CREC" trace --thread 9 "$TC"
one_error_line "trace --thread 9: one line"
S2=$(thread_col 2 4)
"$CREC" trace --format tenet --thread 2 --from "$S2" --to $((S2 + 20)) "$TC" >"$TMP/tenet2"
[ "$(wc -l <"$TMP/tenet2")" = 21 ] && ! grep -qv '^rip=0x' "$TMP/tenet2" &&
    pass "trace --format tenet --thread N" || fail "trace --format tenet --thread N" "$(head -2 "$TMP/tenet2")"

total=$(sed -n 's/^instructions: *//p' "$TMP/tc.info")
"$CREC" profile "$TC" >"$TMP/tprof"
expect_eq "profile (threads): self sums to the total" "$total" \
    "$(awk 'NR > 2 { s += $2 } END { print s }' "$TMP/tprof")"
expect_eq "profile (threads): a root frame per thread, its instructions inclusive" "$(instrs)" \
    "$(for t in 1 2 3 4; do awk -v n="$t]" '$(NF-1) == "[thread" && $NF == n { print $4 }' "$TMP/tprof"; done | tr '\n' ' ' | sed 's/ $//')"
expect_eq "profile (threads): work called 3 times" "3" "$(awk '$NF == "work" { print $1 }' "$TMP/tprof")"
expect_eq "calls: each worker takes the mutex 2000 times" "2000 2 2000 3 2000 4" \
    "$("$CREC" calls "$TC" pthread_mutex_lock | awk '$1 > 1 { print $1 }' | sort | uniq -c | awk '{ print $1, $2 }' | tr '\n' ' ' | sed 's/ $//')"
"$CREC" profile --folded "$TC" >"$TMP/tfold"
expect_eq "profile --folded (threads): each thread's stacks under its root, summing to its instructions" \
    "$(instrs)" \
    "$(for t in 1 2 3 4; do grep "^\[thread $t\];" "$TMP/tfold" | awk '{ s += $NF } END { print s }'; done | tr '\n' ' ' | sed 's/ $//')"
"$CREC" profile --folded --merge-threads "$TC" >"$TMP/tfoldm"
if ! grep -q '^\[thread' "$TMP/tfoldm" && [ "$(awk '{ s += $NF } END { print s }' "$TMP/tfoldm")" = "$total" ] &&
    [ "$(grep -c ';work;pthread_mutex_lock ' "$TMP/tfoldm")" = 1 ]; then
    pass "profile --folded --merge-threads: the threads' stacks merged"
else
    fail "profile --folded --merge-threads: the threads' stacks merged" "$(grep ';work;pthread_mutex_lock ' "$TMP/tfoldm")"
fi
"$CREC" profile --callgrind -o "$TMP/tcg.out" "$TC"
if callgrind_annotate "$TMP/tcg.out" >"$TMP/tcga" 2>"$TMP/tcga.err"; then
    expect_eq "callgrind_annotate (threads): same total" "$total" \
        "$(grep 'PROGRAM TOTALS' "$TMP/tcga" | awk '{ gsub(",", "", $1); print $1 }')"
else
    fail "callgrind_annotate reads --callgrind (threads)" "$(head -c 300 "$TMP/tcga.err")"
fi
expect_eq "profile --thread 3: that thread's instructions" "$(thread_col 3 6)" \
    "$("$CREC" profile --thread 3 "$TC" | sed -n 's/^total: \([0-9]*\) instructions.*/\1/p')"
"$CREC" profile --speedscope -o "$TMP/tss.json" "$TC"
cat >"$TMP/ss.py" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ps = d["profiles"]
assert [p["name"] for p in ps] == ["thread 1", "thread 2", "thread 3", "thread 4"], [p["name"] for p in ps]
for p, n in zip(ps, sys.argv[2:]):
    assert p["endValue"] - p["startValue"] == int(n)
    stack, last = [], -1
    for e in p["events"]:
        assert e["at"] >= last; last = e["at"]
        if e["type"] == "O": stack.append(e["frame"])
        else: assert stack.pop() == e["frame"]
    assert not stack
EOF
if python3 "$TMP/ss.py" "$TMP/tss.json" $(instrs) 2>"$TMP/err"; then
    pass "profile --speedscope (threads): a nested evented profile per thread"
else
    fail "profile --speedscope (threads): a nested evented profile per thread" "$(tail -c 300 "$TMP/err")"
fi

"$CREC" calls --args 0 "$TC" work >"$TMP/twork"
expect_eq "calls: each thread's call of work, with its thread" "2 3 4" \
    "$(awk '{ print $1 }' "$TMP/twork" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "find enter work --all: the times and threads calls gives" \
    "$(awk '{ print $2, $1 }' "$TMP/twork")" "$("$CREC" find --all "$TC" 'enter work')"
expect_eq "find --thread 4 enter work" "$(awk '$1 == 4 { print $2, $1 }' "$TMP/twork")" \
    "$("$CREC" find --thread 4 "$TC" 'enter work')"
expect_eq "find leave work --all: the ends calls gives" \
    "$(awk '{ print $3, $1 }' "$TMP/twork" | sort -n)" "$("$CREC" find --all "$TC" 'leave work' | sort -n)"
w3000=$("$CREC" when --size 8 --format dec "$TC" counter | awk '$2 == 3000 { print $1, $NF }')
expect_eq "find: a store across threads, with the thread that made it (as crec when)" "$w3000" \
    "$("$CREC" find "$TC" '*(u64*)counter == 3000')"
expect_eq "find --backward: the same store" "$w3000" \
    "$("$CREC" find --backward "$TC" '*(u64*)counter == 3000')"
"$CREC" printf --time "$TC" work 'work in its thread\n' >"$TMP/tpf"
expect_eq "printf --time: the thread of each hit" \
    "$(awk '{ print $2 " " $1 ": work in its thread" }' "$TMP/twork")" "$(cat "$TMP/tpf")"
"$CREC" syscalls "$TC" >"$TMP/tsys"
expect_eq "syscalls: every thread's" "1 2 3 4" \
    "$(awk '{ print $2 }' "$TMP/tsys" | sort -u | tr '\n' ' ' | sed 's/ $//')"
awk '$2 != 1 { print $1, $2 }' "$TMP/tsys" | while read -r t tid; do
    line=$("$CREC" trace --from "$t" --to "$t" "$TC")
    case "$line" in "$t $tid "*"  syscall") ;; *) echo "$t $tid: $line" ;; esac
done >"$TMP/tsysbad"
[ ! -s "$TMP/tsysbad" ] && pass "syscalls: each one's time and thread are a syscall of that thread" ||
    fail "syscalls: each one's time and thread are a syscall of that thread" "$(head -2 "$TMP/tsysbad")"

CR=$TMP/tcr.crec
"$CREC" info "$CR" | grep -q '^crash: *SIGSEGV at instruction [0-9]* in thread 2, 0x[0-9a-f]* inner: ' &&
    pass "info: a crash names its thread" || fail "info: a crash names its thread" "$("$CREC" info "$CR" | grep crash)"
"$CREC" backtrace "$CR" >"$TMP/tbt"
last=$(sed -n '/^Call stack/q; /./p' "$TMP/tbt" | tail -1)
case "$(head -1 "$TMP/tbt") | $last" in
"Thread 2: "*"| "*"inner tests/guests/threads_crash.c:13  mov eax, dword ptr [rdi]   <- SIGSEGV, address 0x0")
    pass "backtrace (threads): the faulting thread's blocks, the faulting instruction last" ;;
*) fail "backtrace (threads): the faulting thread's blocks, the faulting instruction last" \
       "$(head -1 "$TMP/tbt") | $last" ;;
esac
expect_eq "backtrace (threads): the faulting thread's stack" "inner middle outer work" \
    "$(sed -n '/^Call stack of thread 2/,$p' "$TMP/tbt" | sed -n 's/^#[0-3]  0x[0-9a-f]* in \([a-z]*\) .*/\1/p' | tr '\n' ' ' | sed 's/ $//')"
"$CREC" backtrace --thread 1 "$CR" >"$TMP/tbt1"
grep -q '^Call stack of thread 1 at ' "$TMP/tbt1" && grep -q '^#[0-9]*  0x[0-9a-f]* in main ' "$TMP/tbt1" &&
    pass "backtrace --thread 1: the main thread, waiting in main" ||
    fail "backtrace --thread 1: the main thread, waiting in main" "$(sed -n '/^Call stack/,$p' "$TMP/tbt1" | head -8)"

ST=$TMP/st.crec
"$CREC" calls --tree "$ST" >"$TMP/sttree"
expect_eq "calls --tree: the handler in each thread it ran in, as a signal frame" "1 1 3 2" \
    "$(grep ' h(10, .*) (signal 10)$' "$TMP/sttree" | awk '{ print $2 }' | sort | uniq -c | awk '{ print $1, $2 }' | tr '\n' ' ' | sed 's/ $//')"
# a handler's frame ends at its return, at its own depth
bad=$(awk '/ h\(10, .*\(signal 10\)$/ { match($0, /^[0-9]* [0-9]* */); d[$2] = RLENGTH; want[$2] = 1; next }
           want[$2] && / } h = / { match($0, /^[0-9]* [0-9]* */); if (RLENGTH != d[$2]) print "bad", $0; want[$2] = 0 }' "$TMP/sttree")
[ -z "$bad" ] && pass "calls --tree: a handler returns at its own depth" ||
    fail "calls --tree: a handler returns at its own depth" "$bad"
expect_eq "profile: the handler's four runs" "4" "$("$CREC" profile "$ST" | awk '$NF == "h" { print $1 }')"
