#!/bin/sh
# make demo: build the sample program, record it under crec, describe the
# recording, replay it with no OS to show that the replay is exact, and ask
# the recording what a variable held in the middle of the run.
set -e
: "${CREC:=build/crec}"
mkdir -p build/demo
prog=build/demo/primes
rec=build/demo/primes.crec
cc -O1 -g -static -o "$prog" traces-sample/src/primes.c
rm -f "$rec.idx"

step() { printf '\n==> %s\n' "$*"; }

step "1. Run the sample program natively (traces-sample/src/primes.c):"
echo "    \$ $prog 200000"
native=$("$prog" 200000)
echo "    $native"

step "2. Record it: the program runs on crec's software CPU and crec writes down"
echo "   only what a second run could not work out for itself."
echo "    \$ $CREC record --stats -o $rec -- $prog 200000"
recorded=$("$CREC" record --stats -o "$rec" -- "$prog" 200000 2>build/demo/record.txt)
echo "    $recorded"
sed 's/^/    /' build/demo/record.txt
[ "$native" = "$recorded" ] || { echo "MISMATCH: recorded output differs" >&2; exit 1; }

step "3. What the recording holds:"
echo "    \$ $CREC info $rec"
"$CREC" info "$rec" | grep -E '^(command|instructions|key frames|snapshots|exit|total|bits/instr)' |
    sed 's/^/    /'

step "4. Replay it: no OS, no file of the program; crec re-executes every"
echo "   instruction and checks the registers at every key frame and the bytes"
echo "   of every write against the recording."
echo "    \$ $CREC replay $rec"
"$CREC" replay "$rec" | sed 's/^/    /'

step "5. Travel in time: the global counter primes_found at a quarter, half and"
echo "   the end of the run, and where the program was halfway (the first query"
echo "   builds the index $rec.idx; later ones reuse it)."
echo "    \$ $CREC query $rec primes_found@25% primes_found@50% primes_found@end rip@50%"
"$CREC" query --format dec "$rec" primes_found@25% primes_found@50% primes_found@end |
    sed 's/^/    /'
"$CREC" query "$rec" rip@50% | sed 's/^/    /'

echo
echo "The recording and the replay agree.  Next: 'crec --help' lists every command;"
echo "docs/USAGE.md is the user guide."
