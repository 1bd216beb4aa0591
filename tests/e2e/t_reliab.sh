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
environ@end = 0x00007fffffffee70 (index+replay)" "$out"
(cat "$TMP/hello.crec" >"$TMP/fifo" &)
expect_status "query FIFO: replay --jobs 2 of a FIFO" 0 timeout 30 "$CREC" replay -q --jobs 2 "$TMP/fifo"
out=$(cat "$TMP/hello.crec" | timeout 30 "$CREC" query - environ@end 2>&1)
expect_eq "query FIFO: a pipe on standard input" "environ@end = 0x00007fffffffee70 (index+replay)" "$out"
out=$(timeout 30 "$CREC" query - environ@end <"$TMP/hello.crec" 2>&1)
expect_eq "query FIFO: a file on standard input" "environ@end = 0x00007fffffffee70 (index+replay)" "$out"
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
expect_eq "index temp file: the query answers" "environ@end = 0x00007fffffffee70 (index+replay)" "$(cat "$TMP/out")"
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
