#!/bin/sh
# Build one guest program for the end-to-end tests: SRC OUT.
# A file whose name ends in _static.c is linked statically, the rest
# dynamically (PIE, the Debian default), so both loaders are exercised.
# One ending in _bare.c has no C library at all: its own _start.
# A .cpp file is C++, built with g++.  Guests are always built plainly,
# never with the sanitizers: they run inside the emulator, not as part of
# crec.
set -e
src=$1 out=$2
case "$src" in
*_static.c) extra=-static ;;
*_bare.c) extra="-static -nostdlib -fno-stack-protector" ;;
*) extra= ;;
esac
case "$src" in
*.cpp) exec g++ -O1 -g -pthread $extra -o "$out" "$src" ;;
esac
cc -O1 -g -pthread $extra -o "$out" "$src"
