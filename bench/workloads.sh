# Benchmark workloads, sourced by bench/run.sh.  Each workload is a line
#   NAME<TAB>COMMAND
# COMMAND runs in the bench data directory; "@ " marks where the program
# starts, and is replaced by nothing (native), "qemu-x86_64 " or
# "$CREC run -- " (and later record/replay) for each mode.
# Sizes aim at 1-10 s under emulation; QUICK=1 uses much smaller inputs.

bench_inputs() {
    # Deterministic inputs: the same bytes on every machine.
    if [ "$QUICK" = 1 ]; then n_sha=2000000 n_sort=20000 n_lua=7 n_sql=2000 n_kern=200000
    else n_sha=20000000 n_sort=50000 n_lua=9 n_sql=20000 n_kern=2000000; fi
    [ -f sha.in.$n_sha ] || head -c "$n_sha" /dev/zero | tr '\0' 'x' >sha.in.$n_sha
    [ -f sort.in.$n_sort ] ||
        awk -v n="$n_sort" 'BEGIN { s = 42; for (i = 0; i < n; i++) {
            s = (s * 1103515245 + 12345) % 2147483648; print s } }' >sort.in.$n_sort
    cp "$BENCH_SRC/fannkuch.lua" .
    cat >sql.in <<SQL
create table a(id integer primary key, v integer);
create table b(id integer primary key, a_id integer, w integer);
with recursive c(x) as (select 1 union all select x + 1 from c where x < $n_sql)
insert into a select x, x * 7 % 1000 from c;
with recursive c(x) as (select 1 union all select x + 1 from c where x < $n_sql)
insert into b select x, x % ($n_sql / 10) + 1, x * 13 % 97 from c;
select count(*), sum(a.v * b.w) from a join b on a.id = b.a_id;
SQL
}

# Programs are named by absolute path: qemu-x86_64 does not search PATH.
bench_workloads() {
    printf 'sha256sum\t@ %s sha.in.%s\n' "$(command -v sha256sum)" "$n_sha"
    printf 'sort\t@ %s sort.in.%s\n' "$(command -v sort)" "$n_sort"
    printf 'lua-fannkuch\t@ %s fannkuch.lua %s\n' "$(command -v lua5.4)" "$n_lua"
    printf 'sqlite3\t@ %s :memory: -init /dev/null < sql.in\n' "$(command -v sqlite3)"
    printf 'memkernel\t@ %s %s\n' "$GUESTS/bench_memkernel" "$n_kern"
}
