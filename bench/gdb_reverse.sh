#!/usr/bin/env bash
# crec gdb on a long recording: how long gdb takes to move in time.
# Records tests/guests/gdb_loop (110,000,000 iterations: about 1.1e9
# instructions; QUICK: a tenth), builds its index outside the timings, then
# drives gdb in batch mode against `crec gdb`, timing each command with
# gdb's python (time.time() around gdb.execute).  Called by bench/run.sh in
# the bench data directory; prints a TSV:
#   session  command  seconds  from  to
# (from, to: the instruction count before and after).  Sessions:
#   cold-*  the first motion of a fresh session, from the end: nothing
#           learnt yet about where gdb's own breakpoints run;
#   warm    after one continue from the start to the end.
set -euo pipefail
: "${CREC:?}" "${GUESTS:?}" "${QUICK:=0}"
n=110000000
[ "$QUICK" = 1 ] && n=11000000
"$CREC" record -o gdbloop.crec -- "$GUESTS/gdb_loop" "$n" >/dev/null 2>gdbloop.rec.err
"$CREC" query gdbloop.crec rare@end >/dev/null # the index, outside the timings

prelude='set pagination off
set confirm off
python
import time
def when():
    return gdb.execute("monitor when", to_string=True).split()[3]
def timed(session, cmd):
    a = when()
    t0 = time.time()
    gdb.execute(cmd)
    dt = time.time() - t0
    print("TIME\t%s\t%s\t%.3f\t%s\t%s" % (session, cmd, dt, a, when()))
end'

session() { # NAME GDB-COMMANDS...
    local name=$1
    shift
    { echo "$prelude"; printf '%s\n' "$@"; } >"gdbrev.$name.gdb"
    "$CREC" gdb gdbloop.crec -- -nx -batch -x "gdbrev.$name.gdb" >"gdbrev.$name.out" 2>&1 </dev/null
    grep '^TIME' "gdbrev.$name.out" | cut -f 2- || {
        echo "bench: gdb session $name printed no timing: $(tail -c 300 "gdbrev.$name.out")" >&2
        return 1
    }
}

printf 'session\tcommand\tseconds\tfrom\tto\n'
session cold-step 'monitor seek end' 'python timed("cold-step", "reverse-stepi")' \
    'python timed("cold-step", "reverse-stepi")' 'python timed("cold-step", "stepi")'
session cold-watch 'monitor seek end' 'watch rare' 'python timed("cold-watch", "reverse-continue")'
session cold-break-near 'monitor seek end' 'break tick' 'python timed("cold-break-near", "reverse-continue")'
session cold-break-far 'monitor seek end' 'break middle' 'python timed("cold-break-far", "reverse-continue")'
session warm 'python timed("warm", "continue")' \
    'python timed("warm", "reverse-stepi")' \
    'watch rare' 'python timed("warm", "reverse-continue")' 'delete' 'monitor seek end' \
    'break tick' 'python timed("warm", "reverse-continue")' \
    'python timed("warm", "reverse-continue")' 'delete' 'monitor seek end' \
    'break middle' 'python timed("warm", "reverse-continue")'

# crec find on the same recording, against a linear replay of it (what a
# search without the index costs at least): the store that makes `rare`
# n/2 half way, forwards from 0 and backwards from the end (the index leads
# both to the one span that writes it), and the entry of middle() (a hook
# on one address, replaying up to there).
now() { date +%s.%N; }
find_row() { # LABEL FROM CRECFIND-ARGS...: the row, to = the time found
    local label=$1 from=$2 t0 out
    shift 2
    t0=$(now)
    out=$("$CREC" "$@") || { echo "bench: crec $* failed" >&2; return 1; }
    printf 'find\t%s\t%.3f\t%s\t%s\n' "$label" "$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')" "$from" "${out%% *}"
}
end=$("$CREC" info gdbloop.crec | sed -n 's/^instructions: *//p')
find_row "crec find '*(u64*)rare == $((n / 2))'" 0 find gdbloop.crec "*(u64*)rare == $((n / 2))"
find_row "crec find --backward '*(u64*)rare == $((n / 2))'" "$end" \
    find --backward gdbloop.crec "*(u64*)rare == $((n / 2))"
find_row "crec find 'enter middle'" 0 find gdbloop.crec 'enter middle'
t0=$(now)
"$CREC" replay -q gdbloop.crec >/dev/null 2>&1 || { echo "bench: crec replay failed" >&2; exit 1; }
printf 'find\t%s\t%.3f\t%s\t%s\n' "crec replay (linear)" "$(awk -v a="$t0" -v b="$(now)" 'BEGIN { print b - a }')" 0 "$end"
