# The seams between modules (issue 12) and numbers as the user types them
# (issue 13): errors that always carry a message, header values honoured or
# refused, the user's own words (rec, replay --query, replay query), one
# number parser (no octal, overflow is an error).
. "$E2E_DIR/lib.sh"

rec=$TMP/oracle.crec
"$CREC" rec -o "$rec" --keyframe-interval 10 -- "$GUESTS/oracle" >/dev/null 2>"$TMP/rec.err"
expect_eq "rec: 'crec rec' records as 'crec record' does" 0 "$?"
expect_status "rec: the recording replays" 0 "$CREC" replay -q "$rec"

# ---- the user's own words ---------------------------------------------------
"$CREC" query "$rec" rip@100 oracle_array@end >"$TMP/q" 2>&1
"$CREC" replay "$rec" --query rip@100 oracle_array@end >"$TMP/rq" 2>&1
expect_eq "replay FILE --query WHAT@WHEN ... answers as query does" "$(cat "$TMP/q")" "$(cat "$TMP/rq")"
"$CREC" replay query "$rec" rip@100 oracle_array@end >"$TMP/rqq" 2>&1
expect_eq "replay query FILE WHAT@WHEN answers as query does" "$(cat "$TMP/q")" "$(cat "$TMP/rqq")"
"$CREC" replay --json "$rec" --query rip@100 >"$TMP/rj" 2>&1
expect_eq "replay --query takes query's --json" "$("$CREC" query --json "$rec" rip@100)" "$(cat "$TMP/rj")"
expect_status "replay: --from with --query is a usage error" 2 "$CREC" replay --from 5 "$rec" --query rip@1
one_error_line "replay: --from with --query is one error line"
expect_status "replay: --json without --query is a usage error" 2 "$CREC" replay --json "$rec"

# ---- numbers: decimal means decimal, 0x means hex, no octal -------------------
expect_eq "numbers: rip@010 is rip@10" "$("$CREC" query "$rec" rip@10 | cut -d' ' -f3)" \
    "$("$CREC" query "$rec" rip@010 | cut -d' ' -f3)"
if [ "$("$CREC" query "$rec" rip@010 | cut -d' ' -f3)" != "$("$CREC" query "$rec" rip@8 | cut -d' ' -f3)" ]; then
    pass "numbers: rip@010 is not rip@8 (octal)"
else
    fail "numbers: rip@010 is not rip@8 (octal)" "the same rip"
fi
"$CREC" query "$rec" 010@0 >/dev/null 2>"$TMP/err"
if grep -q '0xa was never mapped' "$TMP/err"; then pass "numbers: address 010 is ten"
else fail "numbers: address 010 is ten" "$(cat "$TMP/err")"; fi
n=$("$CREC" query --size 010 --format bytes "$rec" oracle_array@end | awk '{ print NF - 3 }')
expect_eq "numbers: --size 010 is ten bytes" 10 "$n"
n=$("$CREC" when --size 010 --format bytes "$rec" oracle_array | head -1 | awk '{ print NF - 2 }')
expect_eq "numbers: when --size 010 is ten bytes" 10 "$n"
"$CREC" record -o "$TMP/k.crec" --keyframe-interval 010 -- "$GUESTS/hello_static" >/dev/null 2>&1
expect_eq "numbers: --keyframe-interval 010 is ten" "(every 10 instructions)" \
    "$("$CREC" info "$TMP/k.crec" | awk '/^key frames:/ { print $4, $5, $6 }')"
from_of() { "$CREC" replay --from "$1" "$rec" | sed 's/.*(from \([0-9]*\) to.*/\1/'; }
expect_eq "numbers: --from 0100 is --from 100" "$(from_of 100)" "$(from_of 0100)"
if [ "$(from_of 0100)" != "$(from_of 64)" ]; then pass "numbers: --from 0100 is not --from 64 (octal)"
else fail "numbers: --from 0100 is not --from 64 (octal)" "both from $(from_of 64)"; fi
expect_eq "numbers: 0x is hex" "$("$CREC" query "$rec" rip@16 | cut -d' ' -f3)" \
    "$("$CREC" query "$rec" rip@0x10 | cut -d' ' -f3)"

# ---- numbers: overflow is an error, never a wrapped value --------------------
expect_status "overflow: counter+0xffffffffffffffff@end is an error" 1 \
    "$CREC" query "$rec" oracle_array+0xffffffffffffffff@end
one_error_line "overflow: counter+0xffffffffffffffff@end is one error line"
if grep -q 'outside the address space' "$TMP/err"; then pass "overflow: the error says why"
else fail "overflow: the error says why" "$(cat "$TMP/err")"; fi
expect_status "overflow: symbol-OFF below 0 is an error" 1 \
    "$CREC" query "$rec" oracle_array-0xffffffffffffff00@end
expect_status "overflow: a time over 2^64-1 is an error" 1 \
    "$CREC" query "$rec" rip@99999999999999999999
if grep -q 'over 2^64-1' "$TMP/err"; then pass "overflow: a time over 2^64-1 is named"
else fail "overflow: a time over 2^64-1 is named" "$(cat "$TMP/err")"; fi
expect_status "overflow: an address range past 2^64 is an error" 1 \
    "$CREC" query "$rec" 0xfffffffffffffff0:32@end
expect_status "overflow: --size over 2^64-1 is a usage error" 2 \
    "$CREC" query --size 99999999999999999999 "$rec" oracle_array@end
expect_status "overflow: --keyframe-interval over 2^64-1 is a usage error" 2 \
    "$CREC" record --keyframe-interval 18446744073709551616 -- /bin/true
expect_status "overflow: --from over 2^64-1 is a usage error" 2 \
    "$CREC" replay --from 0x10000000000000000 "$rec"

# ---- WHEN+N / WHEN-N -------------------------------------------------------------
a=$("$CREC" query "$rec" rip@syscall:1 | cut -d' ' -f3)
b=$("$CREC" query "$rec" rip@syscall:1+1 | cut -d' ' -f3)
expect_eq "when: syscall:1+1 is just after the syscall instruction" \
    "$(printf '0x%016x' $((a + 2)))" "$b"
expect_eq "when: end-0 is end" "$("$CREC" query "$rec" rip@end)" \
    "$("$CREC" query "$rec" rip@end-0 | sed 's/end-0/end/')"
expect_status "when: 5-6 is before the start" 1 "$CREC" query "$rec" rip@5-6
expect_status "when: end+1 is past the end" 1 "$CREC" query "$rec" rip@end+1

# ---- an impossible memory map in a file whose checksums are valid -------------
bad=$TMP/badmap.crec
"$CRECTOOLS/crec_tamper" "$rec" "$bad" --listing-len 1
expect_eq "badmap: crafted" 0 "$?"
for cmd in "replay $bad" "query $bad oracle_array@100" "query --no-index $bad oracle_array@99" \
           "when $bad oracle_array" "replay $bad --query oracle_array@50"; do
    # shellcheck disable=SC2086
    expect_status "badmap: crec $cmd fails" 1 "$CREC" $cmd
    if grep -q "memory map can't be rebuilt: map (key frame listing) of 0x[0-9a-f]* (+0x[0-9a-f]*1)" "$TMP/err" &&
       [ "$(wc -l <"$TMP/err")" = 1 ]; then
        pass "badmap: crec $cmd names the mapping in one line"
    else
        fail "badmap: crec $cmd names the mapping in one line" "$(cat "$TMP/err")"
    fi
done
"$CREC" query --json "$bad" oracle_array@100 >"$TMP/json" 2>/dev/null
if python3 -c 'import json, sys
e = json.load(open(sys.argv[1]))[-1]["error"]
sys.exit(0 if "memory map" in e else 1)' "$TMP/json"; then
    pass "badmap: query --json gives a specific error"
else
    fail "badmap: query --json gives a specific error" "$(cat "$TMP/json")"
fi

# ---- header values honoured or refused, one field at a time -------------------
for fv in "page_size=65536 page size 65536 4096" "cache_granule=64 cache granule 64 8" \
          "cache_entries=1000 cache entries 1000 16777216" "arch=3 guest architecture 3 x86-64" \
          "host_order=9 host byte order 9 little"; do
    set -- $fv
    field=$1
    shift
    want_got=$(echo "$*" | awk '{ print $(NF-1) }')
    want_ok=$(echo "$*" | awk '{ print $NF }')
    name=$(echo "$*" | awk '{ $NF = ""; $(NF-1) = ""; sub(/ +$/, ""); print }')
    out=$TMP/hdr.crec
    "$CRECTOOLS/crec_tamper" "$rec" "$out" --header "$field" 2>"$TMP/err" ||
        fail "header $field: crafted" "$(cat "$TMP/err")"
    for cmd in replay info query; do
        if [ $cmd = query ]; then set -- query "$out" rip@1; else set -- $cmd "$out"; fi
        "$CREC" "$@" >/dev/null 2>"$TMP/err"
        rc=$?
        if [ $rc = 1 ] && grep -q "$name $want_got is not supported; this crec reads.*$want_ok" "$TMP/err"; then
            pass "header $field: $cmd refuses it, naming both values"
        else
            fail "header $field: $cmd refuses it, naming both values" "exit $rc: $(cat "$TMP/err")"
        fi
    done
done
# Format 4: an interval of 0 means "placed where it costs little" (earlier
# formats refuse it: tests/test_format.c).
for field in keyframe_interval snapshot_interval; do
    out=$TMP/hdr0.crec
    "$CRECTOOLS/crec_tamper" "$rec" "$out" --header "$field=0" 2>"$TMP/err" ||
        fail "header $field=0: crafted" "$(cat "$TMP/err")"
    if "$CREC" replay "$out" >/dev/null 2>"$TMP/err" &&
        "$CREC" info "$out" 2>&1 | grep -q "where they cost little"; then
        pass "header $field=0 (format 4): replayed, and info says they are placed by cost"
    else
        fail "header $field=0 (format 4): replayed, and info says they are placed by cost" \
            "$(cat "$TMP/err")"
    fi
done
