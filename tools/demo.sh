#!/bin/sh
# make demo: build the sample program, run it natively and under crec, and
# show that the two runs agree.
set -e
: "${CREC:=build/crec}"
mkdir -p build/demo
prog=build/demo/primes
cc -O1 -g -static -o "$prog" traces-sample/src/primes.c

step() { printf '\n==> %s\n' "$*"; }

step "Native run of the sample program (traces-sample/src/primes.c):"
echo "    \$ $prog 200000"
native=$("$prog" 200000)
echo "    $native"

step "The same program under crec's software CPU (crec run --stats):"
echo "    \$ $CREC run --stats -- $prog 200000"
emu=$("$CREC" run --stats -- "$prog" 200000 2>build/demo/stats.txt)
echo "    $emu"
sed 's/^/    /' build/demo/stats.txt

step "Result:"
if [ "$native" = "$emu" ]; then
    echo "    The emulated run printed exactly what the native run printed."
else
    echo "    MISMATCH: native and emulated output differ." >&2
    exit 1
fi
echo
echo "Next: 'crec --help' lists every command."
