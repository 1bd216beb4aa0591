/*
 * test_recorder.c - unit tests of the recorder's prediction cache.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/common.h"
#include "recorder/recorder_int.h"

static crec_pcache *new_cache(unsigned log2)
{
    crec_pcache *pc = NULL;
    crec_error err = {0};
    cr_assert_eq(crec_pcache_create(&pc, log2, &err), CREC_OK, "%s", err.msg);
    return pc;
}

static int read_u64(crec_pcache *pc, uint64_t addr, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    return crec_pcache_read(pc, addr, b, 8);
}

static void write_u64(crec_pcache *pc, uint64_t addr, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    crec_pcache_write(pc, addr, b, 8);
}

Test(pcache, first_read_misses_then_repeats_hit)
{
    crec_pcache *pc = new_cache(10);
    cr_expect_eq(read_u64(pc, 0x1000, 77), 0);
    cr_expect_eq(read_u64(pc, 0x1000, 77), 1);
    cr_expect_eq(read_u64(pc, 0x1000, 77), 1);
    crec_pcache_free(pc);
}

Test(pcache, read_after_write_hits)
{
    crec_pcache *pc = new_cache(10);
    write_u64(pc, 0x2000, 90);
    cr_expect_eq(read_u64(pc, 0x2000, 90), 1);
    crec_pcache_free(pc);
}

Test(pcache, outside_change_misses)
{
    /* The kernel changed the value behind the guest's back. */
    crec_pcache *pc = new_cache(10);
    write_u64(pc, 0x2000, 90);
    cr_expect_eq(read_u64(pc, 0x2000, 91), 0);
    cr_expect_eq(read_u64(pc, 0x2000, 91), 1);
    crec_pcache_free(pc);
}

Test(pcache, partial_knowledge_misses)
{
    crec_pcache *pc = new_cache(10);
    uint8_t one = 5;
    crec_pcache_write(pc, 0x3000, &one, 1);
    cr_expect_eq(crec_pcache_read(pc, 0x3000, &one, 1), 1);
    cr_expect_eq(read_u64(pc, 0x3000, 5), 0, "7 unknown bytes cannot be predicted");
    cr_expect_eq(read_u64(pc, 0x3000, 5), 1);
    crec_pcache_free(pc);
}

Test(pcache, unaligned_access_spans_two_granules)
{
    crec_pcache *pc = new_cache(10);
    write_u64(pc, 0x4000, 0x1111111111111111ull);
    write_u64(pc, 0x4008, 0x2222222222222222ull);
    cr_expect_eq(read_u64(pc, 0x4004, 0x2222222211111111ull), 1);
    cr_expect_eq(read_u64(pc, 0x4004, 0x2222222211111112ull), 0);
    crec_pcache_free(pc);
}

Test(pcache, page_straddling_access)
{
    crec_pcache *pc = new_cache(10);
    uint8_t b[16];
    memset(b, 0xab, sizeof b);
    crec_pcache_write(pc, 0x4ff8, b, 16);
    cr_expect_eq(crec_pcache_read(pc, 0x4ffc, b, 8), 1);
    crec_pcache_free(pc);
}

Test(pcache, sse_width_access)
{
    crec_pcache *pc = new_cache(10);
    uint8_t b[16];
    for (int i = 0; i < 16; i++)
        b[i] = (uint8_t)i;
    cr_expect_eq(crec_pcache_read(pc, 0x5000, b, 16), 0);
    cr_expect_eq(crec_pcache_read(pc, 0x5000, b, 16), 1);
    b[15] ^= 1;
    cr_expect_eq(crec_pcache_read(pc, 0x5000, b, 16), 0);
    crec_pcache_free(pc);
}

Test(pcache, store_of_a_number_is_the_same_as_its_bytes)
{
    /* Unicorn's store hook gives the value as a number, little-endian. */
    crec_pcache *pc = new_cache(10);
    uint8_t b[4] = {0x44, 0x33, 0x22, 0x11};
    crec_pcache_store(pc, 0x7006, 0x11223344, 4); /* bytes 6-7 and 8-9: two granules */
    cr_expect_eq(crec_pcache_read(pc, 0x7006, b, 4), 1);
    cr_expect_eq(crec_pcache_read(pc, 0x7007, b + 1, 2), 1);
    b[3] = 0x12;
    cr_expect_eq(crec_pcache_read(pc, 0x7006, b, 4), 0);
    crec_pcache_free(pc);
}

Test(pcache, store_ignores_bits_above_its_size)
{
    crec_pcache *pc = new_cache(10);
    uint8_t b[2] = {0xcd, 0xab};
    crec_pcache_store(pc, 0x7100, 0xffffffffffffabcdull, 2);
    cr_expect_eq(crec_pcache_read(pc, 0x7100, b, 2), 1);
    cr_expect_eq(read_u64(pc, 0x7100, 0xabcd), 0, "bytes 2-7 were never stored");
    crec_pcache_free(pc);
}

Test(pcache, partial_store_keeps_the_other_bytes)
{
    crec_pcache *pc = new_cache(10);
    uint8_t one = 0x5a;
    write_u64(pc, 0x7200, 0x0807060504030201ull);
    crec_pcache_write(pc, 0x7203, &one, 1);
    cr_expect_eq(read_u64(pc, 0x7200, 0x080706055a030201ull), 1);
    crec_pcache_free(pc);
}

Test(pcache, forget_drops_a_range)
{
    crec_pcache *pc = new_cache(10);
    write_u64(pc, 0x8000, 1);
    write_u64(pc, 0x8008, 2);
    crec_pcache_forget(pc, 0x8008, 8);
    cr_expect_eq(read_u64(pc, 0x8000, 1), 1);
    cr_expect_eq(read_u64(pc, 0x8008, 2), 0);
    crec_pcache_free(pc);
}

Test(pcache, addresses_beyond_user_space_never_hit)
{
    /* No user-space address is this high; such a granule is never cached,
     * so it can't be mistaken for another. */
    crec_pcache *pc = new_cache(10);
    uint64_t far = 0xfff0000000001000ull;
    write_u64(pc, far, 3);
    cr_expect_eq(read_u64(pc, far, 3), 0);
    cr_expect_eq(read_u64(pc, far, 3), 0);
    cr_expect_eq(read_u64(pc, far & ((1ull << 59) - 1), 3), 0, "not an alias of the far one");
    crec_pcache_free(pc);
}

Test(pcache, flush_forgets_everything)
{
    crec_pcache *pc = new_cache(10);
    write_u64(pc, 0x6000, 1);
    crec_pcache_flush(pc);
    cr_expect_eq(read_u64(pc, 0x6000, 1), 0);
    crec_pcache_free(pc);
}

Test(pcache, a_full_cache_gives_up_a_page)
{
    /* A cache of one page: a second page takes its place. */
    crec_pcache *pc = new_cache(9);
    write_u64(pc, 0x10000, 1);
    write_u64(pc, 0x11000, 2);
    cr_expect_eq(crec_pcache_pages(pc), 1);
    cr_expect_eq(read_u64(pc, 0x10000, 1), 0);
    cr_expect_eq(read_u64(pc, 0x10000, 1), 1);
    cr_expect_eq(read_u64(pc, 0x11000, 2), 0);
    crec_pcache_free(pc);
}

Test(pcache, many_pages_stay_known)
{
    /* No two pages evict each other while the cache has room. */
    crec_pcache *pc = new_cache(16);
    int hits = 0;
    for (uint64_t i = 0; i < 100; i++)
        write_u64(pc, 0x10000 + 0x100000 * i, i);
    for (uint64_t i = 0; i < 100; i++)
        hits += read_u64(pc, 0x10000 + 0x100000 * i, i);
    cr_expect_eq(hits, 100);
    crec_pcache_free(pc);
}

Test(pcache, reuse_is_counted_until_a_flush)
{
    crec_pcache *pc = new_cache(16);
    write_u64(pc, 0x6000, 1);
    write_u64(pc, 0x6008, 2);
    write_u64(pc, 0x9000, 3);
    cr_expect_eq(read_u64(pc, 0x6000, 1), 1);
    cr_expect_eq(read_u64(pc, 0x6000, 1), 1);
    cr_expect_eq(read_u64(pc, 0x6008, 3), 0, "changed: not predicted");
    cr_expect_eq(read_u64(pc, 0x9000, 3), 1);
    cr_expect(crec_pcache_reused_over(pc, 1), "two granules reused, over 1");
    cr_expect(!crec_pcache_reused_over(pc, 2), "two granules reused, not over 2");
    crec_pcache_flush(pc);
    cr_expect(!crec_pcache_reused_over(pc, 0), "none reused since the flush");
    cr_expect_eq(read_u64(pc, 0x6000, 1), 0);
    cr_expect_eq(read_u64(pc, 0x6000, 1), 1);
    cr_expect(crec_pcache_reused_over(pc, 0));
    cr_expect(!crec_pcache_reused_over(pc, 1));
    crec_pcache_free(pc);
}

Test(pcache, rejects_bad_size)
{
    crec_pcache *pc = NULL;
    crec_error err = {0};
    cr_expect_eq(crec_pcache_create(&pc, 40, &err), CREC_ERR_ARG);
    cr_expect_null(pc);
    cr_expect(strstr(err.msg, "2^40") != NULL, "message names the size: %s", err.msg);
}

Test(pcache, allocation_failure_is_reported)
{
    crec_pcache *pc = NULL;
    crec_error err = {0};
    crec_alloc_fail_after(1);
    int rc = crec_pcache_create(&pc, 8, &err);
    crec_alloc_fail_after(0);
    cr_expect_eq(rc, CREC_ERR_NOMEM);
    cr_expect_null(pc);
}

Test(pcache, no_memory_for_a_page_only_predicts_less)
{
    /* A page the cache can't get is simply not known: its loads miss
     * (and are logged), never hit wrongly. */
    crec_pcache *pc = new_cache(16);
    for (unsigned long n = 1; n <= 3; n++) {
        crec_alloc_fail_after(n);
        write_u64(pc, 0x20000 * n, n);
        cr_expect_eq(read_u64(pc, 0x20000 * n, n + 1), 0);
        crec_alloc_fail_after(0);
    }
    cr_expect_eq(read_u64(pc, 0x20000, 1), 0);
    crec_pcache_free(pc);
}
