# crec replay --jobs N on a recording with few key frames: the jobs also
# start at the restart points of its index (FILE.idx, written by record),
# every cut is checked, and an index that lies is caught and replayed
# around, never reported as a divergence.
. "$E2E_DIR/lib.sh"

# slow_walk reads a 256 KiB table slowly: two key frames (its first and
# last instruction), restart points every 125000 instructions.
w=$TMP/walk.crec
if ! "$CREC" record -o "$w" -- "$GUESTS/slow_walk" >"$TMP/walk.out" 2>"$TMP/walk.err"; then
    fail "jobs: record slow_walk" "$(head -c 300 "$TMP/walk.err")"
    exit 0
fi
expect_eq "jobs: slow_walk has no key frame but its first and last" 2 \
    "$("$CREC" info "$w" | awk '/^key frames:/ { print $3 }')"
[ -s "$w.idx" ] && pass "jobs: record wrote slow_walk's index" ||
    fail "jobs: record wrote slow_walk's index" "no $w.idx"
cp "$w.idx" "$TMP/good.idx"

# jobs_case NAME JOBS STATUS PATTERN: replay --jobs JOBS exits STATUS, says
# it is verified, and its report of the parts matches PATTERN.
jobs_case() {
    "$CREC" replay --jobs "$2" "$w" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" = "$3" ] && grep -q 'replay verified' "$TMP/out" && grep -q "$4" "$TMP/out"; then
        pass "$1"
    else
        fail "$1" "exit $rc: $(cat "$TMP/out" "$TMP/err" | head -c 400)"
    fi
}

jobs_case "jobs: two jobs, the second from a restart point" 2 0 \
    'replayed in 2 parts (from instructions 0 and [0-9]*), 1 of them from restart points of .*, cut to equal costs as it measured them$'
jobs_case "jobs: four jobs, three from restart points" 4 0 \
    'replayed in 4 parts (from instructions 0, [0-9]*, [0-9]* and [0-9]*), 3 of them from restart points of'
# the parts verify what one replay does: the same counts
"$CREC" replay "$w" | sed 's/, [0-9.]* s, .*//' >"$TMP/one"
"$CREC" replay --jobs 3 "$w" | head -n 1 | sed 's/, [0-9.]* s, .*//' >"$TMP/three"
if cmp -s "$TMP/one" "$TMP/three"; then pass "jobs: three jobs check what one does"; else
    fail "jobs: three jobs check what one does" "$(cat "$TMP/one" "$TMP/three")"; fi
# one job never reads the index: a replay is the same without it
mv "$w.idx" "$TMP/aside.idx"
"$CREC" replay "$w" | sed 's/, [0-9.]* s, .*//' >"$TMP/noidx"
if cmp -s "$TMP/one" "$TMP/noidx"; then pass "jobs: one job is the same without the index"; else
    fail "jobs: one job is the same without the index" "$(cat "$TMP/one" "$TMP/noidx")"; fi
# no index: cut at key frames only, as before
jobs_case "jobs: no index: cut at key frames" 2 0 'replayed in 1 part cut at key frames'

# The parts are cut to equal costs as the index measured them (the host CPU
# time of recording each span): costly_start's 100000 system calls are a
# tenth of its instructions but most of its cost, so the second of two parts
# starts before a quarter of its instructions; with the costs unknown (as in
# an index of version 5), at about half of them.
c=$TMP/costly.crec
if "$CREC" record -o "$c" -- "$GUESTS/costly_start" >/dev/null 2>"$TMP/costly.err"; then
    total=$("$CREC" info "$c" | awk '/^instructions:/ { print $2 }')
    second() { sed -n 's/.*replayed in 2 parts (from instructions 0 and \([0-9]*\)).*/\1/p'; }
    "$CREC" replay --jobs 2 "$c" >"$TMP/costly.out" 2>&1
    cut=$(second <"$TMP/costly.out")
    if grep -q 'cut to equal costs as it measured them' "$TMP/costly.out" && [ -n "$cut" ] &&
        [ "$cut" -lt $((total / 4)) ]; then
        pass "jobs: cut where the costs balance, early in a costly start"
    else
        fail "jobs: cut where the costs balance, early in a costly start" \
            "$total instructions: $(cat "$TMP/costly.out")"
    fi
    if n=$("$CRECTOOLS/crec_idxmangle" "$c" nocost) && [ "$n" -gt 0 ]; then
        "$CREC" replay --jobs 2 "$c" >"$TMP/costly.out" 2>&1
        cut=$(second <"$TMP/costly.out")
        if grep -q 'replay verified' "$TMP/costly.out" && [ -n "$cut" ] &&
            [ "$cut" -gt $((total / 4)) ] && ! grep -q 'equal costs' "$TMP/costly.out"; then
            pass "jobs: costs not known, cut at equal instruction counts"
        else
            fail "jobs: costs not known, cut at equal instruction counts" \
                "$total instructions: $(cat "$TMP/costly.out")"
        fi
    else
        fail "jobs: crec_idxmangle nocost" "$n"
    fi
else
    fail "jobs: record costly_start" "$(head -c 300 "$TMP/costly.err")"
fi

# A damaged FILE.idx (a byte flipped: its checksum fails) is not used.
cp "$TMP/good.idx" "$w.idx"
size=$(wc -c <"$w.idx")
printf '\377' | dd of="$w.idx" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
jobs_case "jobs: a damaged index is not used" 2 0 'replayed in 1 part cut at key frames'

# An index that reads well but lies (seeds, registers, seeds left out): the
# parts don't hold, the replay is done again cut at key frames, verified.
for how in seed regs noseed; do
    cp "$TMP/good.idx" "$w.idx"
    if n=$("$CRECTOOLS/crec_idxmangle" "$w" "$how") && [ "$n" -gt 0 ]; then
        jobs_case "jobs: an index with wrong points ($how) is caught, the replay verified" 3 0 \
            'restart points of .* did not hold: replayed again in 1 part cut at key frames'
    else
        fail "jobs: crec_idxmangle $how" "$n"
    fi
done

# A stale index (of another recording) is not used.
cp "$TMP/good.idx" "$w.idx"
"$CREC" record -o "$TMP/other.crec" -- "$GUESTS/slow_walk" 100 >/dev/null 2>&1
cp "$TMP/good.idx" "$TMP/other.crec.idx"
w=$TMP/other.crec
jobs_case "jobs: another recording's index is not used" 2 0 'cut at key frames'
