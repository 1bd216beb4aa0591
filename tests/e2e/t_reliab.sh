# Reliability (issue 13): nothing lost, no silent wrong answer, bounded
# cost on hostile files.  Each check is named after the item it covers.
. "$E2E_DIR/lib.sh"

SAMPLES=$(cd "$E2E_DIR/../../traces-sample" && pwd)
cp "$SAMPLES/hello.crec" "$TMP/hello.crec"

# ---- crec query FIFO: the recording is read once, never opened again ------
mkfifo "$TMP/fifo"
(cat "$TMP/hello.crec" >"$TMP/fifo" &)
out=$(timeout 30 "$CREC" query "$TMP/fifo" rax@end environ@end 2>&1)
expect_eq "query FIFO: answers, no hang" "rax@end = 0x00000000000000e7 (register)
environ@end = 0x00007fffffffee70 (index)" "$out"
(cat "$TMP/hello.crec" >"$TMP/fifo" &)
expect_status "query FIFO: replay --jobs 2 of a FIFO" 0 timeout 30 "$CREC" replay -q --jobs 2 "$TMP/fifo"
out=$(cat "$TMP/hello.crec" | timeout 30 "$CREC" query - environ@end 2>&1)
expect_eq "query FIFO: a pipe on standard input" "environ@end = 0x00007fffffffee70 (index)" "$out"
out=$(timeout 30 "$CREC" query - environ@end <"$TMP/hello.crec" 2>&1)
expect_eq "query FIFO: a file on standard input" "environ@end = 0x00007fffffffee70 (index)" "$out"
expect_status "query FIFO: /dev/zero is refused, no hang" 1 timeout 30 "$CREC" query /dev/zero rax@end
one_error_line "query FIFO: /dev/zero is one error line"

# ---- the index temp file follows no planted symlink -------------------------
d=$TMP/idxsym
mkdir -p "$d"
cp "$TMP/hello.crec" "$d/h.crec"
echo "precious" >"$d/victim"
# exec keeps the shell's pid: the name the old code used is planted exactly
sh -c 'ln -s "$1/victim" "$1/h.crec.idx.tmp$$"; exec "$2" query "$1/h.crec" environ@end' \
    sh "$d" "$CREC" >"$TMP/out" 2>"$TMP/err"
expect_eq "index temp file: the query answers" "environ@end = 0x00007fffffffee70 (index)" "$(cat "$TMP/out")"
expect_eq "index temp file: a planted symlink's target is untouched" "precious" "$(cat "$d/victim")"
if [ -f "$d/h.crec.idx" ] && [ ! -L "$d/h.crec.idx" ]; then
    pass "index temp file: the index is saved as a file of its own"
else
    fail "index temp file: the index is saved as a file of its own" "$(ls -l "$d")"
fi
n=$(ls "$d" | grep -c 'idx\.tmp[^0-9]' || true)
expect_eq "index temp file: no temp file left behind" 0 "$n"
# a FIFO planted as the index itself is not read (it would block)
rm -f "$d/h.crec.idx"
mkfifo "$d/h.crec.idx"
expect_status "index temp file: a FIFO planted as FILE.idx does not hang a query" 0 \
    timeout 30 "$CREC" query "$d/h.crec" environ@end

# ---- a closed or full output ------------------------------------------------
# The program's stdout is not crec's output file: it gets SIGPIPE as natively
# (exit 141), and the recording completes.
(seq 1 1000000; echo $? >"$TMP/st.native") | head -1 >/dev/null
("$CREC" record -o "$TMP/pipe.crec" -- seq 1 1000000 2>"$TMP/err"; echo $? >"$TMP/st") |
    head -1 >/dev/null
expect_eq "closed output: record | head exits as natively" "$(cat "$TMP/st.native")" "$(cat "$TMP/st")"
expect_eq "closed output: the program is killed by SIGPIPE" "killed by signal 13" \
    "$("$CREC" info "$TMP/pipe.crec" | sed -n 's/^exit: *//p')"
"$CREC" replay "$TMP/pipe.crec" >"$TMP/out" 2>"$TMP/err"
if [ $? = 0 ] && ! grep -q "cut short" "$TMP/out" && ! grep -q " 0 instructions" "$TMP/out"; then
    pass "closed output: the recording is complete and replays"
else
    fail "closed output: the recording is complete and replays" "$(cat "$TMP/out" "$TMP/err")"
fi
# A program that ignores SIGPIPE sees EPIPE instead, as natively.
(trap '' PIPE; "$CREC" run -- seq 1 1000000 2>"$TMP/err"; echo $? >"$TMP/st") | head -1 >/dev/null
if [ "$(cat "$TMP/st")" = 1 ] && grep -q "Broken pipe" "$TMP/err"; then
    pass "closed output: an ignored SIGPIPE gives the program EPIPE"
else
    fail "closed output: an ignored SIGPIPE gives the program EPIPE" "exit $(cat "$TMP/st"): $(head -c 300 "$TMP/err")"
fi

# The recording itself can't be written: crec stops the program and says why
# in one line, and the file is readable up to its last complete chunk.
# (an empty environment keeps the header, the file's first chunk, well under 1000 bytes)
("$CREC" record --env-clear -o - -- seq 1 3000000 2>"$TMP/err"; echo $? >"$TMP/st") |
    head -c 1000 >"$TMP/part.crec"
expect_eq "closed output: -o - into head -c 1000 stops with exit 125" 125 "$(cat "$TMP/st")"
one_error_line "closed output: -o - into head -c 1000 says why in one line"
if grep -q "Broken pipe" "$TMP/err"; then pass "closed output: -o - names the broken pipe"; else
    fail "closed output: -o - names the broken pipe" "$(cat "$TMP/err")"; fi
expect_status "closed output: the first 1000 bytes are read as a recording cut short" 0 \
    "$CREC" info "$TMP/part.crec"
expect_status "closed output: -o /dev/full stops with exit 125" 125 timeout 60 \
    "$CREC" record -o /dev/full -- seq 1 10
one_error_line "closed output: -o /dev/full says why in one line"
for lim in 300 600; do # 512-byte blocks: the whole file is about 470 KB
    (ulimit -f $lim; exec "$CREC" record -o "$TMP/fsize.crec" -- seq 1 3000000 >/dev/null 2>"$TMP/err")
    expect_eq "closed output: ulimit -f $lim stops the recording with exit 125" 125 "$?"
    one_error_line "closed output: ulimit -f $lim says why in one line"
    expect_status "closed output: ulimit -f $lim leaves a readable file" 0 "$CREC" info "$TMP/fsize.crec"
done

# ---- a recording with nothing to verify is not "verified" -----------------
expect_status "nothing to verify: a file cut before its first segment" 1 "$CREC" replay "$TMP/part.crec"
one_error_line "nothing to verify: one error line"
if grep -q "nothing to verify" "$TMP/err"; then pass "nothing to verify: says so"; else
    fail "nothing to verify: says so" "$(cat "$TMP/err")"; fi

# ---- every kill point leaves a readable file ---------------------------------
# SIGKILL at random points (a small key frame interval makes chunks of
# KEYFRAMES fill, and be cut, often; by default key frames and snapshots
# are placed by cost, and seq, whose working set is small, gets them every
# few million instructions where sort gets none for billions, while its
# writes fill chunks of EVENTS); then info, replay and query agree on where
# the recording ends, whose replay needs every blob the file names up to
# there (a code mapping's, a snapshot's pages).
seq 1 1500000 >"$TMP/lines.txt"
seed=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
echo "# kill points: seed $seed"
delays=$(awk -v s="$seed" 'BEGIN { srand(s); for (i = 0; i < 12; i++) printf "%.2f ", 0.05 + rand() * 2.5 }')
i=0
for d in $delays; do
    i=$((i + 1))
    k=$TMP/kill$i.crec
    case $((i % 3)) in
    0) kfi=5000 prog="sort $TMP/lines.txt" how="every 5000" ;;
    1) kfi=200000 prog="sort $TMP/lines.txt" how="every 200000" ;;
    # the default, key frames and snapshots by cost: a second later, past
    # the recorder's first write of what it holds after the first key frame
    *) kfi= prog="seq 1 100000000" how="by cost" d=$(awk -v d="$d" 'BEGIN { print d + 1 }') ;;
    esac
    "$CREC" record ${kfi:+--keyframe-interval $kfi} -o "$k" -- $prog >/dev/null 2>&1 &
    pid=$!
    sleep "$d"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    name="kill points: SIGKILL of ${prog%% *} after ${d}s (key frames $how)"
    n=$("$CREC" info "$k" 2>"$TMP/err" | awk '/^instructions:/ { print $2 }')
    if [ -z "$n" ]; then fail "$name: info reads it" "$(cat "$TMP/err")"; continue; fi
    "$CREC" replay "$k" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$n" = 0 ]; then
        if [ $rc = 1 ] && grep -q "nothing to verify" "$TMP/err"; then
            pass "$name: cut before its first segment, and replay says so"
        else
            fail "$name: cut before its first segment, and replay says so" "exit $rc: $(cat "$TMP/out" "$TMP/err")"
        fi
        continue
    fi
    to=$(sed -n 's/.*from 0 to \([0-9]*\).*/\1/p' "$TMP/out")
    if [ $rc = 0 ] && [ "$to" = "$n" ]; then
        pass "$name: replay verifies it to instruction $n, as info says"
    else
        fail "$name: replay verifies it to instruction $n, as info says" "exit $rc: $(cat "$TMP/out" "$TMP/err" | head -c 300)"
    fi
    a=$("$CREC" query "$k" rip@end rsp@end 2>&1 | sed 's/@end/@T/')
    b=$("$CREC" query "$k" rip@$n rsp@$n 2>&1 | sed "s/@$n/@T/")
    if [ -n "$a" ] && [ "$a" = "$b" ] && ! "$CREC" query "$k" rip@$((n + 1)) >/dev/null 2>&1; then
        pass "$name: query ends at instruction $n too"
    else
        fail "$name: query ends at instruction $n too" "$a / $b"
    fi
done

# ---- the writer writes nothing the reader refuses ---------------------------
"$CREC" record -o "$TMP/args.crec" -- /bin/true $(seq 1 70000) >/dev/null 2>"$TMP/err"
expect_eq "argv limit: 70,000 arguments record" 0 "$?"
expect_status "argv limit: info reads 70,000 arguments" 0 "$CREC" info "$TMP/args.crec"
expect_status "argv limit: replay verifies 70,000 arguments" 0 "$CREC" replay -q "$TMP/args.crec"
# (python builds the environment: env(1) sets each variable with a search of
# those before it, 74 s for 66,000 on its own)
/usr/bin/python3 -c 'import os, sys
os.execve(sys.argv[1], sys.argv[1:], {"V%d" % i: "x" for i in range(1, 66001)})' \
    "$CREC" record -o "$TMP/env.crec" -- /bin/true >/dev/null 2>"$TMP/err"
expect_eq "argv limit: 66,000 environment variables record" 0 "$?"
expect_status "argv limit: replay verifies 66,000 environment variables" 0 "$CREC" replay -q "$TMP/env.crec"
"$CREC" record -o "$TMP/zero.crec" -- "$GUESTS/first_insn_bare" >/dev/null 2>&1
expect_status "nothing to verify: a recording of 0 instructions" 1 "$CREC" replay "$TMP/zero.crec"
one_error_line "nothing to verify: 0 instructions is one error line"

# ---- privileged instructions get SIGSEGV, as on Linux ----------------------
for insn in cli sti rdmsr wrmsr invd wbinvd swapgs clts in out ins hlt movcr; do
    same_as_native "privileged instructions: $insn gets SIGSEGV" "@ $GUESTS/privileged $insn"
    "$CREC" record -o "$TMP/priv.crec" -- "$GUESTS/privileged" $insn >/dev/null 2>&1
    expect_status "privileged instructions: $insn replays" 0 "$CREC" replay -q "$TMP/priv.crec"
done

# ---- instructions Unicorn's translator aborts on get SIGILL, as on Linux -----
for insn in lcall ljmp lcallq lockcmp lockcmpq lockcmps lockbt lockbts lockbtr lockbtc lockbtsi lockmov; do
    same_as_native "untranslatable: $insn gets SIGILL" "@ $GUESTS/untranslatable $insn"
done
for insn in lcall lockcmps lockbtsi; do
    same_as_native "untranslatable: $insn, a handler steps over it" "@ $GUESTS/untranslatable $insn skip"
    "$CREC" record -o "$TMP/untr.crec" -- "$GUESTS/untranslatable" $insn skip >/dev/null 2>&1
    expect_status "untranslatable: $insn with a handler replays" 0 "$CREC" replay -q "$TMP/untr.crec"
done
"$CREC" record -o "$TMP/untr.crec" -- "$GUESTS/untranslatable" ljmp >/dev/null 2>"$TMP/err"
expect_eq "untranslatable: ljmp records, the guest killed by SIGILL" 132 "$?"
expect_status "untranslatable: ljmp's recording replays" 0 "$CREC" replay -q "$TMP/untr.crec"

# ---- partial buffers: Linux transfers what fits ------------------------------
same_as_native "partial buffers: read and write transfer what fits before a hole" "@ $GUESTS/partial_buf"
"$CREC" record -o "$TMP/partial.crec" -- "$GUESTS/partial_buf" >/dev/null 2>&1
expect_status "partial buffers: replays" 0 "$CREC" replay -q "$TMP/partial.crec"

# ---- self-modifying code: any start point sees the code of its time ----------
"$CREC" record --keyframe-interval 5000 -o "$TMP/smc.crec" -- "$GUESTS/smc_static" >"$TMP/smc.out" 2>&1
expect_eq "self-modifying code: recorded as natively" "$("$GUESTS/smc_static")" "$(cat "$TMP/smc.out")"
n=$("$CREC" info "$TMP/smc.crec" | awk '/^instructions:/ { print $2 }')
bad=
for f in $(seq 5000 5000 "$n"); do
    "$CREC" replay -q --from $f "$TMP/smc.crec" >/dev/null 2>"$TMP/err" || bad="$bad $f"
done
expect_eq "self-modifying code: replay --from every key frame verifies" "" "$bad"
marker=$(awk '{ print $2 }' "$TMP/smc.out")
bad=
for t in 46466 $((n / 3)) $((n / 2)) $((n - 100)); do
    a=$("$CREC" query "$TMP/smc.crec" "$marker@$t" 2>&1 | awk '{ print $3 }')
    b=$("$CREC" query --no-index "$TMP/smc.crec" "$marker@$t" 2>&1 | awk '{ print $3 }')
    [ -n "$a" ] && [ "$a" = "$b" ] || bad="$bad $t:$a/$b"
done
expect_eq "self-modifying code: the index answers as a replay from 0" "" "$bad"
"$CRECTOOLS/crec_xcheck" "$TMP/smc.crec" 200 5 >"$TMP/out" 2>&1
rc=$?
expect_eq "self-modifying code: crec_xcheck finds the index and a sequential replay agree" \
    "0" "$rc$(grep -v '^xcheck:' "$TMP/out" | head -3)"

# ---- --json is JSON, whatever bytes a string holds ----------------------------
bad=$(printf 'a\377b\303(c\355\240\200d\360\237\230\200e')
"$CREC" record -o "$TMP/argv.crec" -- /bin/echo "$bad" >/dev/null 2>&1
"$CREC" info --json "$TMP/argv.crec" >"$TMP/info.json" 2>"$TMP/err"
if python3 -c 'import json, sys; d = json.load(open(sys.argv[1], encoding="utf-8", errors="strict")); assert "\U0001f600" in d["argv"][1], d["argv"]' "$TMP/info.json" 2>"$TMP/err"; then
    pass "--json: info --json of an argv that is not UTF-8 is JSON"
else
    fail "--json: info --json of an argv that is not UTF-8 is JSON" "$(head -c 300 "$TMP/err")"
fi
"$CREC" query --json "$TMP/hello.crec" "x${bad}@0" >"$TMP/q.json" 2>/dev/null
if python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))' "$TMP/q.json" 2>"$TMP/err"; then
    pass "--json: a query string that is not UTF-8 gives JSON"
else
    fail "--json: a query string that is not UTF-8 gives JSON" "$(head -c 300 "$TMP/err") $(od -c "$TMP/q.json" | head -5)"
fi

# ---- every path checks the same things ------------------------------------------
# readfile.crec with one byte changed and its checksums made right: a key
# frame's READS offset (KEYFRAMES byte 1554), a mapping of the first map
# listing (EVENTS byte 25).  One job, two jobs, --from and a query all refuse it.
cp "$SAMPLES/readfile.crec" "$TMP/readfile.crec"
for m in "KEYFRAMES 1554" "EVENTS 25" "EVENTS 55"; do
    set -- $m
    "$CRECTOOLS/crec_mutate" "$TMP/readfile.crec" "$TMP/mut.crec" $1 $2 1
    r1=$("$CREC" replay "$TMP/mut.crec" >/dev/null 2>&1; echo $?)
    r2=$("$CREC" replay --jobs 2 "$TMP/mut.crec" >/dev/null 2>&1; echo $?)
    r3=$("$CREC" replay --from 20000 "$TMP/mut.crec" >/dev/null 2>&1; echo $?)
    if [ "$r1" != 0 ] && [ "$r2" != 0 ] && [ "$r3" != 0 ]; then
        pass "every path checks the same: $1 byte $2 is refused by one job, two jobs and --from"
    else
        fail "every path checks the same: $1 byte $2 is refused by one job, two jobs and --from" "exits $r1 $r2 $r3"
    fi
done

# A key frame's listing entry turned from a mapping into an unmapping (found
# by fuzz_fields): one job used to verify it, since the mapping it names is
# there, while --from, which builds memory from the listing, unmapped the
# code.  Every path refuses it, naming the operation.
"$CRECTOOLS/crec_refield" "$SAMPLES/segv.crec" "$TMP/listop.crec" EVENTS 0x13 11 0 set 2
for how in "" "--jobs 2" "--from 499"; do
    expect_status "a listing entry that unmaps: replay $how refuses it" 1 "$CREC" replay $how "$TMP/listop.crec"
    if grep -q "mmap operation 2 in a key frame's listing" "$TMP/err"; then
        pass "a listing entry that unmaps: replay $how names the operation"
    else fail "a listing entry that unmaps: replay $how names the operation" "$(head -c 300 "$TMP/err")"; fi
done

# ---- corruption that replay did not see ------------------------------------------
python3 - "$TMP/hello.crec" "$TMP/badsym.crec" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
off = 16
while d[off:off + 4] == b'CRCK':
    clen = struct.unpack('<I', d[off + 24:off + 28])[0]
    if d[off + 4] == 9:  # SYMBOLS
        d[off + 40 + clen // 2] ^= 0x55
        break
    off += 40 + clen
open(sys.argv[2], 'wb').write(d)
PY
expect_status "damaged SYMBOLS: replay refuses it" 1 "$CREC" replay "$TMP/badsym.crec"
if grep -q "checksum mismatch in stream SYMBOLS" "$TMP/err"; then pass "damaged SYMBOLS: replay names the checksum"; else
    fail "damaged SYMBOLS: replay names the checksum" "$(cat "$TMP/err")"; fi
expect_status "damaged SYMBOLS: query main@end fails" 1 "$CREC" query "$TMP/badsym.crec" main@end
if grep -q "checksum mismatch in stream SYMBOLS" "$TMP/err"; then pass "damaged SYMBOLS: query names the real cause"; else
    fail "damaged SYMBOLS: query names the real cause" "$(cat "$TMP/err")"; fi

# ---- a bad index is rebuilt, and the query says so ---------------------------------
cp "$TMP/hello.crec" "$TMP/badidx.crec"
printf 'CRECIDX\0garbage' >"$TMP/badidx.crec.idx"
out=$("$CREC" query "$TMP/badidx.crec" environ@end 2>"$TMP/err")
expect_eq "bad index: the query answers" "environ@end = 0x00007fffffffee70 (index)" "$out"
if grep -q "note: .*badidx.crec.idx.*rebuilt" "$TMP/err"; then pass "bad index: the query says it was rebuilt"; else
    fail "bad index: the query says it was rebuilt" "$(cat "$TMP/err")"; fi
"$CREC" query "$TMP/badidx.crec" environ@end >/dev/null 2>"$TMP/err"
expect_eq "bad index: the rebuilt index is used next time, silently" "" "$(cat "$TMP/err")"

# ---- big executable mappings record in pieces, with bounded memory ------------
maxrss() { # maxrss COMMAND...: run it, print its peak memory in MiB
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$@"
}
mb=$(maxrss "$CREC" record -o "$TMP/bigexec.crec" -- "$GUESTS/bigexec" 768)
expect_eq "big executable mappings: 768 MiB of RWX code records" "42 42 42" \
    "$("$CREC" run -- "$GUESTS/bigexec" 768 2>&1)"
if [ "$mb" -lt 400 ]; then pass "big executable mappings: recording takes ${mb} MiB, not the mapping's size"; else
    fail "big executable mappings: recording takes ${mb} MiB, not the mapping's size" "$mb MiB"; fi
expect_status "big executable mappings: replay verifies" 0 "$CREC" replay -q "$TMP/bigexec.crec"
mb=$(maxrss "$CREC" replay "$TMP/bigexec.crec")
if [ "$mb" -lt 400 ]; then pass "big executable mappings: replay takes ${mb} MiB"; else
    fail "big executable mappings: replay takes ${mb} MiB" "$mb MiB"; fi

# ---- --force: the program or a file that is not a recording is not overwritten --
d=$TMP/force
mkdir -p "$d"
cp /bin/true "$d/prog"
(cd "$d" && "$CREC" record -o ./prog -- ./prog) >/dev/null 2>"$TMP/err"
expect_eq "--force: recording over the program itself is refused" 2 "$?"
if cmp -s /bin/true "$d/prog"; then pass "--force: the program is intact"; else fail "--force: the program is intact" "changed"; fi
one_error_line "--force: one line says why"
echo "my notes" >"$d/notes.txt"
expect_status "--force: a file that is not a recording is not overwritten" 2 \
    "$CREC" record -o "$d/notes.txt" -- /bin/true
expect_eq "--force: ... and is intact" "my notes" "$(cat "$d/notes.txt")"
expect_status "--force: with --force it is" 0 "$CREC" record --force -o "$d/notes.txt" -- /bin/true
expect_status "--force: a recording is recorded again without it" 0 \
    "$CREC" record -o "$d/notes.txt" -- /bin/true
expect_status "--force: an empty file is written" 0 sh -c ": >\"$d/empty\"; \"$CREC\" record -o \"$d/empty\" -- /bin/true"
expect_status "--force: a device is written, not replaced" 0 "$CREC" record -o /dev/null -- /bin/true

# ---- --env-clear and -e: the environment a recording holds ----------------------
"$CREC" record --env-clear -e A=1 -e B=2 -e A=3 -o "$TMP/env.crec" -- /usr/bin/env \
    >"$TMP/out" 2>"$TMP/err"
expect_eq "--env-clear: the program sees exactly the chosen environment" "A=3
B=2" "$(cat "$TMP/out")"
expect_eq "--env-clear: the recording holds only it" "environment:   2 variables" \
    "$("$CREC" info "$TMP/env.crec" | grep '^environment:')"
SECRET_TOKEN=hunter2 "$CREC" record -e SECRET_TOKEN=x -o "$TMP/env2.crec" -- /bin/true >/dev/null 2>&1
if "$CREC" info --json "$TMP/env2.crec" | grep -q hunter2; then
    fail "-e: a variable set with -e replaces crec's own" "hunter2 recorded"
else
    pass "-e: a variable set with -e replaces crec's own"
fi
expect_status "-e: NAME without a value is a usage error" 2 "$CREC" record -e NAME -o "$TMP/x.crec" -- /bin/true

# ---- bounded cost on hostile files ---------------------------------------------------
# A memory-map record's length set to 64 TiB, every checksum right: refused
# by name, at once, by replay and by a query that reads the events.
"$CRECTOOLS/crec_refield" "$TMP/readfile.crec" "$TMP/huge.crec" EVENTS 0x13 3 2 set 0x400000000000
expect_status "hostile lengths: a 64 TiB mapping is refused by replay" 1 timeout 20 "$CREC" replay "$TMP/huge.crec"
if grep -q "outside the address space" "$TMP/err"; then pass "hostile lengths: ... naming the address space"; else
    fail "hostile lengths: ... naming the address space" "$(cat "$TMP/err")"; fi
expect_status "hostile lengths: ... and by a query" 1 timeout 20 "$CREC" query "$TMP/huge.crec" 0x555555554000@end
one_error_line "hostile lengths: the query says so in one line"
