#!/bin/sh
# Build one guest program for the end-to-end tests: SRC OUT.
# A file whose name ends in _static.c is linked statically, the rest
# dynamically (PIE, the Debian default), so both loaders are exercised.
# One ending in _bare.c has no C library at all: its own _start.
# _native.c is built with -O3 -march=native (this machine's every vector
# extension), _v2.c with -O2 -march=x86-64-v2, _asan.c with AddressSanitizer
# (the program is the test; crec itself is never a guest).  A .cpp file is
# C++, built with g++.  Guests are otherwise built plainly, never with
# `make SANITIZE=1`'s sanitizers: they run inside the emulator, not as part
# of crec.
set -e
src=$1 out=$2
case "$src" in
*_static.c) extra=-static ;;
*_bare.c) extra="-static -nostdlib -fno-stack-protector" ;;
*_native.c) extra='-O3 -march=native' ;;
*_v2.c) extra='-O2 -march=x86-64-v2' ;;
*_asan.c) extra='-fsanitize=address' ;;
*) extra= ;;
esac
case "$src" in
*.cpp) exec g++ -O1 -g -pthread $extra -o "$out" "$src" ;;
esac
cc -O1 -g -pthread $extra -o "$out" "$src" -lm
