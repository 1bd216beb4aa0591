#!/usr/bin/env bash
# The flight recorder (issue 19): what a ring costs, and what key frames on
# demand buy.  Called by bench/run.sh in the bench data directory; prints a
# TSV:  figure  round  value
#   record-s, ring-s      crec record, and crec record --ring 8M, of
#                         tests/guests/flight_static `ring` (a loop reading
#                         /dev/urandom: about 16 bits an instruction), one
#                         after the other in each round
#   full-bytes, ring-bytes  the two files
#   rotations, rotate-s, copied-bytes   what the ring's rotations did
#   K-query-s, K-query-kf-s   200 register queries at times drawn in a
#                         range of a recording of tests/guests/flight_static
#                         `phases`, with the index's default restart points
#                         (an eighth of the key-frame interval), then after
#                         crec keyframes --every 5000 on that range; K is
#                         kf1m (key frames every 1,000,000 instructions, the
#                         default) or kf20m (every 20,000,000)
#   K-keyframes-s         that crec keyframes
set -euo pipefail
: "${CREC:?}" "${GUESTS:?}" "${QUICK:=0}"
G=$GUESTS/flight_static
n=4000000 rounds=3
[ "$QUICK" = 1 ] && n=1000000 rounds=1
now() { date +%s%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

printf 'figure\tround\tvalue\n'
for r in $(seq 1 "$rounds"); do
    t=$(now)
    "$CREC" record -o flight.full.crec -- "$G" ring "$n" 500 >/dev/null 2>&1 || [ $? = 139 ]
    printf 'record-s\t%s\t%s\n' "$r" "$(since "$t")"
    t=$(now)
    "$CREC" record --stats -o flight.ring.crec --ring 8M -- "$G" ring "$n" 500 >/dev/null \
        2>flight.ring.err || [ $? = 139 ]
    printf 'ring-s\t%s\t%s\n' "$r" "$(since "$t")"
    printf 'full-bytes\t%s\t%s\n' "$r" "$(stat -c %s flight.full.crec)"
    printf 'ring-bytes\t%s\t%s\n' "$r" "$(stat -c %s flight.ring.crec)"
    sed -n 's/^crec: the ring rotated \([0-9]*\) times in \([0-9.]*\) s, writing \([0-9]*\) bytes again$/rotations\t'"$r"'\t\1\nrotate-s\t'"$r"'\t\2\ncopied-bytes\t'"$r"'\t\3/p' flight.ring.err
done

# kf_case NAME RECORD-OPTIONS: 200 queries in a range, before and after
# crec keyframes --every 5000 on it (the index built outside the timings)
kf_case() {
    local name=$1 queries t r
    shift
    "$CREC" record -o "flight.$name.crec" "$@" -- "$G" phases 2 >/dev/null 2>&1
    queries=$(python3 -c "
import random
random.seed(19)
print(' '.join('rip@%d' % random.randrange(3000000, 4000000) for _ in range(200)))")
    rm -f "flight.$name.crec.idx" "flight.$name.crec.kf"
    "$CREC" query "flight.$name.crec" acc@1000000 >/dev/null
    for r in $(seq 1 "$rounds"); do
        t=$(now)
        # shellcheck disable=SC2086 # one argument a query
        "$CREC" query "flight.$name.crec" $queries >/dev/null
        printf '%s-query-s\t%s\t%s\n' "$name" "$r" "$(since "$t")"
    done
    t=$(now)
    "$CREC" keyframes "flight.$name.crec" --from 3000000 --to 4000000 --every 5000 >/dev/null
    printf '%s-keyframes-s\t1\t%s\n' "$name" "$(since "$t")"
    for r in $(seq 1 "$rounds"); do
        t=$(now)
        # shellcheck disable=SC2086
        "$CREC" query "flight.$name.crec" $queries >/dev/null
        printf '%s-query-kf-s\t%s\t%s\n' "$name" "$r" "$(since "$t")"
    done
}
kf_case kf1m                                   # key frames every 1,000,000 (the default)
kf_case kf20m --keyframe-interval 20000000     # ... every 20,000,000
