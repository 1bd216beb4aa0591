# Benchmark workloads, sourced by bench/run.sh.  Each workload is a line
#   NAME<TAB>COMMAND
# COMMAND runs in the bench data directory; "@ " marks where the program
# starts, and is replaced by nothing (native), "qemu-x86_64 " or
# "$CREC run --stats -- " (and so on) for each mode.
# Sizes aim at about 2 s under `crec run` (QUICK=1: about 0.3 s), so that
# one round of the six modes of every workload takes about a minute.
# Programs are named by absolute path: qemu-x86_64 does not search PATH,
# and python3 on PATH may be a shell shim (crec does not emulate execve).

# bench_text BYTES FILE: English-like text, the same bytes on every machine:
# lines of words drawn by a fixed linear congruential generator.
bench_text() {
    [ -f "$2" ] && return
    awk -v bytes="$1" 'BEGIN { s = 7
        nw = split("the of and to in is that for it as was with be by on not he " \
            "this are or his from at which but have an they you were her she there " \
            "been one all we their has would when if so no will time people year way " \
            "day man thing woman life child world school state family student group " \
            "country problem hand part place case week company system program " \
            "question work government number night point home water room mother " \
            "area money story fact month lot right study book eye job word business " \
            "issue side kind head house service friend father power hour game line " \
            "end member law car city community name", w, " ")
        for (n = 0; n < bytes; n += length(line)) {
            line = ""
            for (j = 0; j < 12; j++) {
                s = (s * 1103515245 + 12345) % 2147483648
                line = line w[int(s / 65536) % nw + 1] " "
            }
            line = line (s % 100000) "\n"
            printf "%s", substr(line, 1, bytes - n)
        } }' >"$2"
}

# bench_repeats BYTES FILE: text with long-range repeats, for a compressor
# with a large window: a block of bench_text, BYTES / 4 long, four times
# over, each copy with a different thirteenth of its lines upper-cased, so
# that the copies match at a distance of BYTES / 4 with some differences.
bench_repeats() {
    [ -f "$2" ] && return
    bench_text "$(($1 / 4))" "$2.block"
    awk '{ l[NR] = $0 } END { for (k = 0; k < 4; k++) for (i = 1; i <= NR; i++)
        print (i % 13 == k ? toupper(l[i]) : l[i]) }' "$2.block" >"$2"
    rm -f "$2.block"
}

bench_inputs() {
    if [ "$QUICK" = 1 ]; then
        n_sha=1000000 n_sort=5000 n_gzip=100000 n_lua='7 1' n_sql=1000 n_py=1000 n_kern=100000
        n_thr=20000
        n_avx=150 n_vex=200000
        n_zstd=400000 n_hash=100000 n_chase='100000 1000003'
    else
        n_sha=8000000 n_sort=25000 n_gzip=1000000 n_lua='7 4' n_sql=5000 n_py=10000 n_kern=500000
        n_thr=100000
        n_avx=1500 n_vex=2000000
        n_zstd=2400000 n_hash=500000 n_chase='600000 6000011'
    fi
    bench_text "$n_sha" "sha.in.$n_sha"
    bench_text "$n_gzip" "gzip.in.$n_gzip"
    bench_repeats "$n_zstd" "zstd.in.$n_zstd"
    [ -f "sort.in.$n_sort" ] ||
        awk -v n="$n_sort" 'BEGIN { s = 42; for (i = 0; i < n; i++) {
            s = (s * 1103515245 + 12345) % 2147483648; print s } }' >"sort.in.$n_sort"
    cp "$BENCH_SRC/fannkuch.lua" "$BENCH_SRC/wordcount.py" .
    cat >"sql.in.$n_sql" <<SQL
create table a(id integer primary key, v integer);
create table b(id integer primary key, a_id integer, w integer);
with recursive c(x) as (select 1 union all select x + 1 from c where x < $n_sql)
insert into a select x, x * 7 % 1000 from c;
with recursive c(x) as (select 1 union all select x + 1 from c where x < $n_sql)
insert into b select x, x % ($n_sql / 10) + 1, x * 13 % 97 from c;
select count(*), sum(a.v * b.w) from a join b on a.id = b.a_id;
SQL
}

bench_workloads() {
    printf 'sha256sum\t@ %s sha.in.%s\n' "$(command -v sha256sum)" "$n_sha"
    printf 'sort\t@ %s sort.in.%s\n' "$(command -v sort)" "$n_sort"
    printf 'gzip\t@ %s -6 -c gzip.in.%s\n' "$(command -v gzip)" "$n_gzip"
    printf 'lua-fannkuch\t@ %s fannkuch.lua %s\n' "$(command -v lua5.4)" "$n_lua"
    printf 'sqlite3\t@ %s :memory: -init /dev/null < sql.in.%s\n' "$(command -v sqlite3)" "$n_sql"
    printf 'python3\t@ /usr/bin/python3 -B wordcount.py %s\n' "$n_py"
    printf 'memkernel\t@ %s %s\n' "$GUESTS/bench_memkernel" "$n_kern"
    # 4 threads, a mutex and an atomic counter: crec-replay is the whole
    # program in the recorded order, crec-replay-j2 each thread alone on 2
    # host threads
    printf 'threads\t@ %s 4 %s\n' "$GUESTS/threads_counter" "$n_thr"
    # instructions crec executes itself (docs/EMU.md): an AVX2 kernel, and
    # a loop with one VEX instruction an iteration against its SSE twin
    printf 'avx2\t@ %s %s avx2\n' "$GUESTS/bench_avx2" "$n_avx"
    printf 'vex1\t@ %s %s vex1\n' "$GUESTS/bench_avx2" "$n_vex"
    printf 'sse1\t@ %s %s sse1\n' "$GUESTS/bench_avx2" "$n_vex"
    # working sets larger than crec's prediction cache (2^16 granules of
    # 8 bytes, 512 KiB; issue 20): a compressor with a 128 MiB window and
    # long-distance matching (its hash tables and the whole input), an
    # open-addressing hash table of 16 MiB, a random cycle of 9.6 MB of
    # nodes (QUICK: 4 MiB and 1.6 MB)
    printf 'zstd-long\t@ %s -3 --long=27 -c zstd.in.%s\n' "$(command -v zstd)" "$n_zstd"
    printf 'hash\t@ %s %s\n' "$GUESTS/bench_hash" "$n_hash"
    printf 'chase\t@ %s %s\n' "$GUESTS/bench_chase" "$n_chase"
}
