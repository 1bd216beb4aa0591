#!/bin/sh
# traces-sample/make.sh - rebuild the sample recordings and their answers.
#
#   sh traces-sample/make.sh            record every .crec not yet here, then
#                                       the answers
#   sh traces-sample/make.sh --answers  only rewrite answers.txt (after adding
#                                       a "$ crec ..." line to it)
#
# Run from the top of the work tree on x86-64, after `make`.  CREC names the
# crec to use (default build/crec).  The recordings are FROZEN: every later
# crec must read them (README.md), so a file that is here is never made
# again; a new format version adds its own samples (v2-*.crec) beside them.
#
# Each recording is made exactly by the command printed below: the guest
# is built from src/ into build/traces-sample/, and recorded from that
# folder with an empty environment (env -i), so the file holds no variable
# of the machine that made it and `crec info` shows a short command line.
set -e
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CREC=${CREC:-build/crec}
case "$CREC" in /*) ;; *) CREC=$ROOT/$CREC ;; esac
OUT=$ROOT/traces-sample
W=$ROOT/build/traces-sample

if [ "$1" != "--answers" ]; then
    mkdir -p "$W"
    cc -O1 -static -o "$W/hello" traces-sample/src/hello.c
    cc -O1 -o "$W/readfile" traces-sample/src/readfile.c
    # segv: static with musl (Debian's musl-tools), so the file is a few KB
    command -v musl-gcc >/dev/null ||
        { echo "make.sh: needs musl-gcc: apt-get install musl-tools" >&2; exit 1; }
    musl-gcc -O1 -static -o "$W/segv" traces-sample/src/segv.c
    musl-gcc -O1 -static -o "$W/threads" traces-sample/src/threads.c
    musl-gcc -O1 -static -o "$W/ring" traces-sample/src/ring.c
    musl-gcc -O1 -static -o "$W/parts" traces-sample/src/parts.c
    musl-gcc -O1 -static -o "$W/procs" traces-sample/src/procs.c
    musl-gcc -O1 -static -o "$W/primes" traces-sample/src/primes.c
    cp traces-sample/src/input.txt "$W/input.txt"

    # rec NAME 'RECORD OPTIONS' PROG ARGS...: record one sample, unless it
    # is here already (frozen).
    rec() {
        name=$1 opts=$2
        shift 2
        if [ -e "$OUT/$name.crec" ]; then
            echo "= $name.crec is here (frozen): kept"
            return
        fi
        echo "+ (cd build/traces-sample && env -i PATH=/usr/bin:/bin crec record" \
            "$opts -o $name.crec -- $*)"
        # shellcheck disable=SC2086 # the options are words
        (cd "$W" && env -i PATH=/usr/bin:/bin "$CREC" record $opts -o "$name.crec" -- "$@") ||
            true
        cp "$W/$name.crec" "$OUT/$name.crec"
    }
    # format version 1 (crec 0.1.0)
    rec hello "--keyframe-interval 5000" ./hello sample
    rec readfile "--keyframe-interval 20000" ./readfile input.txt
    rec segv "--keyframe-interval 200" ./segv
    # format version 2: three threads, switched every 1000 instructions
    rec v2-threads "--slice 1000 --keyframe-interval 1000" ./threads
    # format version 3: a ring that dropped the start of a run that
    # crashed, and a recording in parts
    rec v3-ring "--ring 64K --keyframe-interval 2000" ./ring
    rec v3-parts "--start-at work --stop-at rest --keyframe-interval 2000" ./parts
    # format version 3: three processes (a fork, an execve), a pipe between
    # them, a signal from one to the other and a fault's handler
    rec v3-procs "--keyframe-interval 20000" ./procs
    # format version 4: check points, key frames placed by cost
    rec v4-primes "--checkpoint-interval 80000" ./primes
    # format version 5: code stored a page at a time (ld.so and libc.so
    # loaded, a tenth of their pages run)
    rec v5-readfile "--checkpoint-interval 20000" ./readfile input.txt
fi

CREC=$CREC ANSWERS_WRITE=1 sh tests/e2e/t_samples.sh
