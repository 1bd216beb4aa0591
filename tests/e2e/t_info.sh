# crec info on sample recordings, good, truncated and corrupt.  The samples
# are the hex dumps of tests/corrupt/ (made by tests/tools/sample.h); each
# names the error it must give ("# expect: ...").
. "$E2E_DIR/lib.sh"
ROOT=$(cd "$E2E_DIR/../.." && pwd)

# hex2bin DUMP OUT: the bytes of a tests/corrupt/ dump.
hex2bin() {
    grep -v '^#' "$1" | sed 's/^[0-9a-f]*://' | tr -d ' \n' >"$TMP/hex"
    if command -v xxd >/dev/null 2>&1; then
        xxd -r -p "$TMP/hex" >"$2"
    else
        python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(open(sys.argv[1]).read()))' \
            "$TMP/hex" >"$2"
    fi
}

good=$TMP/good.crec
hex2bin "$ROOT/tests/corrupt/good.hex" "$good"

expect_status "info: sample exits 0" 0 "$CREC" info "$good"
if grep -q '^instructions: *123456789$' "$TMP/out" && grep -q '^threads: *1$' "$TMP/out" &&
    grep -q '^bits/instr:' "$TMP/out"; then
    pass "info: sample shows threads, instructions, bits/instr"
else
    fail "info: sample shows threads, instructions, bits/instr" "$(head -c 300 "$TMP/out")"
fi
expect_status "info: --json exits 0" 0 "$CREC" info --json "$good"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["instructions"]==123456789 and d["truncated"] is False' "$TMP/out" 2>/dev/null; then
    pass "info: --json is valid JSON with the same figures"
else
    fail "info: --json is valid JSON with the same figures" "$(head -c 300 "$TMP/out")"
fi
cat "$good" | "$CREC" info - >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_eq "info: reads a pipe (FILE -)" "0 instructions:  123456789" \
    "$rc $(grep '^instructions' "$TMP/out")"
expect_status "info: --help exits 0" 0 "$CREC" info --help
expect_status "info: bad option exits 2" 2 "$CREC" info --bogus "$good"
one_error_line "info: bad option is one error line"
expect_status "info: no FILE exits 2" 2 "$CREC" info
expect_status "info: missing file exits 1" 1 "$CREC" info "$TMP/nonexistent.crec"
one_error_line "info: missing file is one error line"

# Every dump gives its expected outcome.  (lib.sh helpers use $name and
# $want, hence dn and dwant here.)
for dump in "$ROOT"/tests/corrupt/*.hex; do
    dn=$(basename "$dump" .hex)
    dwant=$(sed -n 's/^# expect: //p' "$dump")
    hex2bin "$dump" "$TMP/$dn.crec"
    case $dwant in
    ok | truncated)
        expect_status "info: corrupt/$dn exits 0" 0 "$CREC" info "$TMP/$dn.crec"
        if [ "$dwant" = truncated ]; then
            if grep -q '^truncated: *yes' "$TMP/out"; then pass "info: corrupt/$dn says truncated"
            else fail "info: corrupt/$dn says truncated" "$(tail -n 2 "$TMP/out")"; fi
        fi
        ;;
    *)
        expect_status "info: corrupt/$dn exits 1" 1 "$CREC" info "$TMP/$dn.crec"
        if [ "$(wc -l <"$TMP/err")" = 1 ] && grep -qF "crec: $TMP/$dn.crec: " "$TMP/err" &&
            grep -qF "$dwant" "$TMP/err"; then
            pass "info: corrupt/$dn names the problem"
        else
            fail "info: corrupt/$dn names the problem" "want '$dwant', got: $(head -c 300 "$TMP/err")"
        fi
        ;;
    esac
done

# A subset of truncations and byte flips through the real command (the unit
# tests do every offset in-process): exit 0, or 1 with one error line.
size=$(wc -c <"$good")
bad=0 n=0
off=0
while [ "$off" -lt "$size" ]; do
    head -c "$off" "$good" >"$TMP/cut.crec"
    cp "$good" "$TMP/flip.crec"
    printf '\377' | dd of="$TMP/flip.crec" bs=1 seek="$off" conv=notrunc 2>/dev/null
    for f in cut flip; do
        "$CREC" info "$TMP/$f.crec" >/dev/null 2>"$TMP/err"
        rc=$?
        n=$((n + 1))
        if [ $rc = 0 ] && [ ! -s "$TMP/err" ]; then continue; fi
        if [ $rc = 1 ] && [ "$(wc -l <"$TMP/err")" = 1 ]; then continue; fi
        bad=$((bad + 1))
        echo "  $f at $off: exit $rc: $(head -c 200 "$TMP/err")"
    done
    off=$((off + 37))
done
expect_eq "info: $n cut or flipped files each exit 0 or one error line" 0 "$bad"
