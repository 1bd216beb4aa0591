# crec query / crec when (docs/QUERY.md): an independent oracle guest that
# prints its stores, cross-checks against a sequential replay (the oracle
# guest, ls and sqlite3), and bad queries.
. "$E2E_DIR/lib.sh"

rec=$TMP/oracle.crec
"$CREC" record -o "$rec" --keyframe-interval 20000 --snapshot-interval 4 -- \
    "$GUESTS/oracle" >"$TMP/oracle.out" 2>"$TMP/rec.err"
expect_eq "query: oracle recorded" 0 "$?"

# oracle_array[3]: the address it printed, and its sequence of values
addr=$(awk '$1 == "STORE" && $2 == 3 { print $3; exit }' "$TMP/oracle.out")
python3 -c 'import sys
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) == 4 and f[0] == "STORE" and f[1] == "3": print("0x%016x" % int(f[3]))' \
    "$TMP/oracle.out" >"$TMP/want"
"$CREC" when "$rec" "$addr" >"$TMP/when" 2>"$TMP/when.err"
expect_eq "when: exits 0" 0 "$?"
awk 'NR > 1 { print $2 }' "$TMP/when" >"$TMP/got"
if cmp -s "$TMP/want" "$TMP/got"; then
    pass "when: lists exactly the stored sequence"
else
    fail "when: lists exactly the stored sequence" "want $(tr '\n' ' ' <"$TMP/want") got $(tr '\n' ' ' <"$TMP/got")"
fi
if awk 'NR > 1 && $4 != "48" && $0 !~ /mov/ { bad = 1 } END { exit bad }' "$TMP/when"; then
    pass "when: names the storing instruction"
else
    fail "when: names the storing instruction" "$(head -c 300 "$TMP/when")"
fi
expect_eq "when: initial value is zero" "0 0x0000000000000000 initial" "$(head -1 "$TMP/when")"

# queries at random times between the stores: the value of the last store
# at or before T (the value is new at T, the time `when` printed)
awk 'NR > 1 { print $1, $2 }' "$TMP/when" >"$TMP/times"
end=$("$CREC" query "$rec" rip@end >/dev/null && "$CREC" info "$rec" | awk '/^instructions:/ { print $2 }')
python3 - "$TMP/times" "$end" >"$TMP/probes" <<'PY'
import random, sys
rows = [l.split() for l in open(sys.argv[1])]
end = int(sys.argv[2])
random.seed(7)
times = [int(r[0]) for r in rows]
vals = [r[1] for r in rows]
bounds = times + [end + 1]
for i in range(len(times)):
    lo, hi = bounds[i], bounds[i + 1] - 1
    for t in sorted({lo, hi, random.randint(lo, hi), random.randint(lo, hi)}):
        print(t, vals[i])
    if i == 0:
        print(times[0] - 1, "0x0000000000000000")
PY
ok=1 args=
while read t v; do args="$args $addr@$t"; done <"$TMP/probes"
"$CREC" query "$rec" $args >"$TMP/q" 2>"$TMP/q.err" || ok=0
awk '{ print $3 }' "$TMP/q" >"$TMP/qv"
awk '{ print $2 }' "$TMP/probes" >"$TMP/qw"
if [ $ok = 1 ] && cmp -s "$TMP/qv" "$TMP/qw"; then
    pass "query: $(wc -l <"$TMP/probes") random times between stores give the stored value"
else
    fail "query: random times between stores give the stored value" "$(paste "$TMP/probes" "$TMP/qv" | head -5) $(cat "$TMP/q.err")"
fi
if [ -s "$rec.idx" ]; then pass "query: index saved beside the recording"; else fail "query: index saved beside the recording" "no $rec.idx"; fi

# symbols, registers, formats, JSON
sym=$("$CREC" query "$rec" oracle_array+24@end | awk '{ print $3 }')
expect_eq "query: symbol+offset" "$(tail -1 "$TMP/want")" "$sym"
expect_status "query: registers and time forms" 0 "$CREC" query "$rec" rip@0 rax@syscall:1 \
    xmm0@50% fs_base@1:1000 rflags@end
if grep -q '^rip@0 = 0x0000' "$TMP/out" && grep -q '(register)' "$TMP/out"; then
    pass "query: register answers"
else
    fail "query: register answers" "$(head -c 300 "$TMP/out")"
fi
expect_status "query: rip just before syscall 1 is a syscall" 0 "$CREC" query "$rec" rip@syscall:1
r=$(awk '{ print $3 }' "$TMP/out")
"$CREC" query --format bytes "$rec" "$r:2@syscall:1" >"$TMP/out" 2>&1
expect_eq "query: code bytes there are 0f 05" "$r:2@syscall:1 = 0f 05 (code)" "$(cat "$TMP/out")"
expect_status "query: --json" 0 "$CREC" query --json --format dec "$rec" "$addr@end" rip@end
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d)==2 and d[0]["path"] in ("index","index+replay","snapshot")' "$TMP/out" 2>/dev/null; then
    pass "query: --json is valid"
else
    fail "query: --json is valid" "$(head -c 300 "$TMP/out")"
fi

# A failing query ends the JSON array with its error: the output stays JSON.
"$CREC" query --json "$rec" rip@end 0x10@end rip@0 >"$TMP/out" 2>"$TMP/err"
expect_eq "query: --json with a failing query exits 1" 1 "$?"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d)==2 and "value" in d[0] and "never mapped" in d[1]["error"]' "$TMP/out" 2>/dev/null &&
    [ "$(wc -l <"$TMP/err")" = 1 ]; then
    pass "query: --json stays valid when a query fails"
else
    fail "query: --json stays valid when a query fails" "$(head -c 300 "$TMP/out") $(cat "$TMP/err")"
fi

# Queries out of time order in one call answer as each does alone, in the
# order given; options may follow the file and the queries.
one=""
for q in rsp@60% "$addr@end" rip@10% rax@60% "$addr@1000" rip@60%; do
    one="$one$("$CREC" query "$rec" "$q" --format dec)
"
done
"$CREC" query "$rec" rsp@60% "$addr@end" rip@10% rax@60% "$addr@1000" rip@60% --format dec >"$TMP/out" 2>&1
expect_eq "query: several queries in one call, in the order given" "$one" "$(cat "$TMP/out")
"
expect_status "when: options after the address" 0 "$CREC" when "$rec" "$addr" --size 8 --format dec
expect_status "when: a bad --format is a usage error" 2 "$CREC" when --format words "$rec" "$addr"

# The index agrees with one sequential replay from instruction 0: random
# addresses (stack, heap, globals, kernel-written buffers, untouched pages)
# at random times, on the oracle and on ls and sqlite3 (key frames every
# 100000 instructions, so that there are many segments to search).
xcheck() { # NAME FILE N SEED REGIONS: the regions that must have queries
    "$CRECTOOLS/crec_xcheck" "$2" "$3" "$4" >"$TMP/xc.out" 2>"$TMP/xc.err"
    rc=$?
    sum=$(tail -1 "$TMP/xc.out")
    if [ $rc = 0 ] && echo "$sum" | grep -q "^xcheck: $3 queries, $3 equal" &&
        echo "$sum" | awk -v want="$5" '{ for (i = 1; i <= NF; i++) if (index(" " want " ", " " $i " ") && $(i + 1) + 0 == 0) bad = 1 } END { exit bad }'; then
        pass "query: $1: $3 random queries equal a sequential replay"
    else
        fail "query: $1: $3 random queries equal a sequential replay" "exit $rc: $(head -c 400 "$TMP/xc.out") $(head -c 200 "$TMP/xc.err")"
    fi
}
xcheck oracle "$rec" 40 5 "stack globals"
"$CREC" record -o "$TMP/ls.crec" --keyframe-interval 100000 --snapshot-interval 4 -- \
    /bin/ls -la /usr/bin >/dev/null 2>"$TMP/rec.err"
expect_eq "query: ls recorded" 0 "$?"
xcheck "ls -la /usr/bin" "$TMP/ls.crec" 300 11 "stack heap globals kernel"
"$CREC" record -o "$TMP/sq.crec" --keyframe-interval 100000 --snapshot-interval 4 -- \
    sqlite3 :memory: 'create table t(x); insert into t values(1),(2); select sum(x) from t;' \
    >/dev/null 2>"$TMP/rec.err"
expect_eq "query: sqlite3 recorded" 0 "$?"
xcheck sqlite3 "$TMP/sq.crec" 300 13 "stack heap globals kernel"

# The defaults of format 4: key frames only where they cost little (ls's
# segments are long), check points, and the index gathered while
# recording, written beside the file: its spans start at restart points
# with the memory they need (their seed).  Then the same recording's index
# built afresh by replay, on two host threads.  (25 queries each: a query
# here replays a long span, about a quarter of a second, six under ASan.)
"$CREC" record -o "$TMP/lsd.crec" -- /bin/ls -la /usr/bin >/dev/null 2>"$TMP/rec.err"
expect_eq "query: ls recorded with the defaults" 0 "$?"
if [ -s "$TMP/lsd.crec.idx" ]; then
    pass "record: writes FILE.idx beside the recording"
else
    fail "record: writes FILE.idx beside the recording" "$(ls -la "$TMP" | head -c 300)"
fi
xcheck "ls, the index record wrote" "$TMP/lsd.crec" 25 17 "stack heap globals kernel"
"$CREC" index --jobs 2 "$TMP/lsd.crec" >"$TMP/ix.out" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "^$TMP/lsd.crec.idx: [0-9]* bytes, .* of the recording, built in" "$TMP/ix.out"; then
    pass "index --jobs 2: builds FILE.idx afresh and says how big"
else
    fail "index --jobs 2: builds FILE.idx afresh and says how big" "exit $rc: $(head -c 300 "$TMP/ix.out")"
fi
xcheck "ls, the index crec index built" "$TMP/lsd.crec" 25 19 "stack heap globals kernel"

# The values the spans' stores left (docs/QUERY.md, "Answering"): with
# spans of 200000 instructions and no snapshot after the first, most
# answers after the span holding T come from them, with no replay: from
# the index record kept, then from one built by replay.
"$CREC" record -o "$TMP/lsv.crec" --keyframe-interval 200000 --snapshot-interval 1000 -- \
    /bin/ls -la /usr/bin >/dev/null 2>"$TMP/rec.err"
expect_eq "query: ls recorded with long spans and one snapshot" 0 "$?"
xcheck "ls, values the recorder kept" "$TMP/lsv.crec" 150 23 "stack heap globals kernel index-values"
"$CREC" index "$TMP/lsv.crec" >/dev/null 2>&1
xcheck "ls, values crec index kept" "$TMP/lsv.crec" 150 29 "stack heap globals kernel index-values"
# an index of version 4 (no values) is a cache of another crec: built anew, silently
printf '\004' | dd of="$TMP/lsv.crec.idx" bs=1 seek=8 conv=notrunc 2>/dev/null
"$CREC" query "$TMP/lsv.crec" 0x7fffffffe000@end >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc = 0 ] && [ ! -s "$TMP/err" ] && [ "$(od -An -tu1 -j8 -N1 "$TMP/lsv.crec.idx" | tr -d ' ')" = 6 ]; then
    pass "query: an index of version 4 is built anew as version 6, with no note"
else
    fail "query: an index of version 4 is built anew as version 6, with no note" "exit $rc: $(head -c 300 "$TMP/err")"
fi
printf 'not an index' >"$TMP/sq.crec.idx"
"$CREC" index "$TMP/sq.crec" >"$TMP/ix.out" 2>&1
expect_eq "index: replaces a damaged FILE.idx without a word" "0 0" \
    "$? $(grep -c 'note' "$TMP/ix.out")"
xcheck "sqlite3, the index crec index rebuilt" "$TMP/sq.crec" 50 23 "stack heap globals"
expect_status "index: --jobs 17 is a usage error" 2 "$CREC" index --jobs 17 "$TMP/lsd.crec"
expect_status "index: two files are a usage error" 2 "$CREC" index "$TMP/lsd.crec" "$TMP/sq.crec"
expect_status "index: a missing file is an error" 1 "$CREC" index "$TMP/no-such.crec"
expect_status "index: --jobs 0 is a usage error" 2 "$CREC" index --jobs 0 "$TMP/lsd.crec"

# What the recorder can't gather falls back to the first query's index:
# a process tree (each forked recorder writes its own streams), and a
# recording written to a pipe.
"$CREC" record -o "$TMP/tree.crec" -- /bin/sh -c '/bin/echo a; /bin/echo b' >/dev/null 2>"$TMP/rec.err"
expect_eq "record: a process tree" 0 "$?"
if [ ! -e "$TMP/tree.crec.idx" ] && [ ! -e "$TMP/tree.crec.p1.idx" ]; then
    pass "record: a process tree writes no index (the first query builds each process's)"
else
    fail "record: a process tree writes no index (the first query builds each process's)" \
        "$(ls "$TMP" | grep tree)"
fi
pid=$("$CREC" info "$TMP/tree.crec" | awk '$NF == "b" && $1 ~ /^[0-9]+$/ { print $2; exit }')
"$CREC" query --pid "$pid" "$TMP/tree.crec" 'rsp@end' 'rsp@50%' >"$TMP/q.out" 2>&1
expect_eq "query: a process of the tree, its index built by the query" "0 2" \
    "$? $(grep -c '^rsp@' "$TMP/q.out")"
"$CREC" index --pid "$pid" --jobs 2 "$TMP/tree.crec" >"$TMP/ix.out" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "(pid $pid): index of [0-9]* bytes" "$TMP/ix.out" &&
    ls "$TMP"/tree.crec.p*.idx >/dev/null 2>&1; then
    pass "index --pid: builds that process's FILE.pN.idx"
else
    fail "index --pid: builds that process's FILE.pN.idx" "exit $rc: $(head -c 300 "$TMP/ix.out")"
fi
"$CREC" query --pid "$pid" "$TMP/tree.crec" 'rsp@end' >"$TMP/q.out" 2>&1
expect_eq "index --pid: that process's queries answer" "0 1" "$? $(grep -c '^rsp@' "$TMP/q.out")"
expect_status "index: several processes and no --pid is an error" 1 "$CREC" index "$TMP/tree.crec"
"$CREC" record -o - -- /bin/echo piped 2>/dev/null >"$TMP/piped.crec"
sp=$("$CREC" query "$TMP/piped.crec" rsp@end 2>/dev/null | awk '{ print $3 }')
if [ -s "$TMP/piped.crec" ] && [ ! -e "$TMP/piped.crec.idx" ] &&
    "$CREC" query "$TMP/piped.crec" "$sp:8@50%" >/dev/null 2>&1 && [ -s "$TMP/piped.crec.idx" ]; then
    pass "record -o -: no index at record time; the first query builds it"
else
    fail "record -o -: no index at record time; the first query builds it" "$(ls -la "$TMP" | grep piped)"
fi

# A file cut short answers up to where its replay ends (the last key frame
# whose data reached the file), as the whole file does there.
size=$(wc -c <"$TMP/ls.crec")
for cut in 1 700 20000; do
    head -c $((size - cut)) "$TMP/ls.crec" >"$TMP/cut.crec"
    n=$("$CREC" replay "$TMP/cut.crec" 2>/dev/null | sed -n 's/.*(from 0 to \([0-9]*\)).*/\1/p')
    a=$("$CREC" query "$TMP/cut.crec" rip@end rsp@end 2>&1 | sed 's/@end/@T/')
    b=$("$CREC" query "$TMP/ls.crec" "rip@$n" "rsp@$n" 2>&1 | sed "s/@$n/@T/")
    if [ -n "$n" ] && [ "$a" = "$b" ] &&
        "$CREC" query "$TMP/cut.crec" 0x7fffffffe000@end >/dev/null 2>"$TMP/err"; then
        pass "query: a file cut $cut bytes short ends where its replay does ($n)"
    else
        fail "query: a file cut $cut bytes short ends where its replay does" "n=$n a=$a b=$b $(cat "$TMP/err")"
    fi
done

# Code on the last page of a mapping, before a page that is not executable,
# runs in a query run (code is copied in a group of pages at a time).
"$CREC" record -o "$TMP/lp.crec" --keyframe-interval 100000 -- "$GUESTS/lastpage" \
    >"$TMP/lp.out" 2>"$TMP/rec.err"
expect_eq "query: lastpage recorded" "0 300000" "$? $(cat "$TMP/lp.out")"
expect_status "query: code on a mapping's last page runs in a query run" 0 \
    "$CREC" query "$TMP/lp.crec" rax@50% 0x7fffffffe000@50% rip@70%
a=$("$CREC" query "$TMP/lp.crec" rax@50% 2>&1)
b=$("$CREC" query --no-index "$TMP/lp.crec" rax@50% 2>&1)
expect_eq "query: ... and gives what a replay from 0 gives" "$b" "$a"

# A second query reuses the index; its answer is the same.
a1=$("$CREC" query "$TMP/ls.crec" rsp@33% rip@syscall:20 2>&1)
a2=$("$CREC" query "$TMP/ls.crec" rsp@33% rip@syscall:20 2>&1)
expect_eq "query: the same answer twice" "$a1" "$a2"

# Progress while the index is built goes to a terminal only.
rm -f "$TMP/sq.crec.idx"
"$CREC" query "$TMP/sq.crec" 0x7fffffffe000@end >"$TMP/out" 2>"$TMP/err"
if [ ! -s "$TMP/err" ] && [ -s "$TMP/sq.crec.idx" ]; then
    pass "query: no progress output when stderr is not a terminal"
else
    fail "query: no progress output when stderr is not a terminal" "$(head -c 300 "$TMP/err")"
fi
rm -f "$TMP/sq.crec.idx"
script -qec "$CREC query $TMP/sq.crec 0x7fffffffe000@end" /dev/null >"$TMP/tty" 2>&1
if grep -q "building the index" "$TMP/tty" && grep -q "0x7fffffffe000@end = " "$TMP/tty"; then
    pass "query: progress on a terminal while the index is built"
else
    fail "query: progress on a terminal while the index is built" "$(head -c 300 "$TMP/tty")"
fi

# a stale index is rebuilt
printf 'CRECIDX\0garbage' >"$rec.idx"
expect_status "query: a corrupt index is rebuilt" 0 "$CREC" query "$rec" "$addr@end"

# bad queries: one line on stderr, exit 1
bad_query() {
    "$CREC" query "$rec" "$2" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q "$3" "$TMP/err"; then
        pass "query: $1"
    else
        fail "query: $1" "exit $rc: $(cat "$TMP/err")"
    fi
}
bad_query "never-mapped address" 0x10@end "never mapped"
bad_query "time past the end" "rip@99999999999" "past the end"
bad_query "bad register name" "rbq@5" "neither a register nor a symbol"
bad_query "malformed expression" "0x12zz@5" "malformed"
bad_query "malformed time" "rip@12abc" "malformed"
bad_query "no @" "rip" "malformed"
bad_query "syscall past the last" "rip@syscall:99999" "syscalls"
