/*
 * replay.c - `crec replay`: re-execute a recording on Unicorn with no OS.
 *
 * The mirror image of recorder/record.c.  Where the recorder logged a load
 * the cache could not predict, the replayer writes the logged value into
 * memory inside the load's own hook, so the load sees it; every other load
 * finds in memory what the program itself stored there.  Syscalls are not
 * executed: their recorded results are put back into the registers, and
 * memory-map changes are rebuilt from the EVENTS stream.
 *
 * Replay checks itself at every key frame (all registers), at every
 * write-like syscall (a hash of the bytes sent out) and at the end.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "emu/emu.h"
#include "format/format.h"
#include "replayer/replayer.h"
#include "replayer/replayer_int.h"

/* ---- divergence ---------------------------------------------------------- */

/* Stop the replay and say where and how it left the recorded path. */
static void rep_diverge(struct rep_seg *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rep_diverge(struct rep_seg *s, const char *fmt, ...)
{
    va_list ap;

    if (s->diverged || s->failed)
        return;
    s->diverged = 1;
    s->div.icount = crec_emu_cpu_icount(s->cpu);
    if (s->alone) {
        s->div.tid = s->tid;
        s->div.thread_icount = rep_ticount(s);
        s->div.alone = !s->whole;
    }
    s->div.rip = crec_emu_reg_get(s->cpu, CREC_EMU_RIP);
    crec_emu_cpu_describe(s->cpu, s->div.rip, s->div.insn, sizeof s->div.insn);
    va_start(ap, fmt);
    vsnprintf(s->div.what, sizeof s->div.what, fmt, ap);
    va_end(ap);
    crec_emu_cpu_stop(s->cpu);
}

/* A bad file (or an engine error) found in the middle of a replay: an
 * error, not a divergence.  The first one is what the replay reports. */
static void rep_fail(struct rep_seg *s, const crec_error *err)
{
    if (!s->failed && !s->diverged) {
        s->failed = 1;
        s->err = *err;
    }
    if (s->cpu)
        crec_emu_cpu_stop(s->cpu);
}

/* A corrupt file found here: through crec_error_corrupt, at this line, so
 * that debug builds name it.  @return CREC_ERR_CORRUPT. */
#define rep_corrupt(s, ...)                                                                   \
    ({                                                                                        \
        crec_error e_ = {0};                                                                  \
        crec_error_corrupt(&e_, __VA_ARGS__);                                                 \
        rep_fail((s), &e_);                                                                   \
        CREC_ERR_CORRUPT;                                                                     \
    })

/* How the run ended: its error's code, or CREC_OK (also for a divergence,
 * which the caller reads from s->diverged). */
static int rep_outcome(const struct rep_seg *s)
{
    return s->failed ? (int)s->err.code : CREC_OK;
}

/* ---- what a part from a restart point holds itself -------------------- */

static void rep_trk_nomem(struct rep_seg *s)
{
    crec_error err = {0};

    crec_error_set(&err, CREC_ERR_NOMEM, "out of memory tracking a part's memory");
    rep_fail(s, &err);
}

/* The tracked page `page` of a part from a restart point; a new one when
 * `add` (NULL: none, or out of memory: the part fails). */
static struct rep_trk_page *rep_trk_find(struct rep_seg *s, uint64_t page, int add)
{
    struct rep_trk_page *p = s->trk_last;
    size_t i;

    if (p && p->page == page)
        return p;
    if (s->trk_tlb_page[page % REP_TRK_TLB] == page + 1)
        return s->trk_last = s->trk_tlb[page % REP_TRK_TLB];
    i = (size_t)((page * 0x9E3779B97F4A7C15ull) >> 24) & (s->trk_cap - 1);
    while ((p = s->trk[i]) && p->page != page)
        i = (i + 1) & (s->trk_cap - 1);
    if (!p && add) {
        if (2 * (s->trk_n + 1) > s->trk_cap) { /* twice the table, the pages placed again */
            struct rep_trk_page **old = s->trk;
            size_t n = s->trk_cap;
            if (!(s->trk = crec_calloc(2 * n, sizeof *s->trk))) {
                s->trk = old;
                rep_trk_nomem(s);
                return NULL;
            }
            s->trk_cap = 2 * n, s->trk_n = 0, s->trk_last = NULL;
            for (size_t k = 0; k < n; k++)
                if (old[k]) {
                    for (i = (size_t)((old[k]->page * 0x9E3779B97F4A7C15ull) >> 24) &
                             (s->trk_cap - 1); s->trk[i]; i = (i + 1) & (s->trk_cap - 1))
                        ;
                    s->trk[i] = old[k];
                    s->trk_n++;
                }
            crec_free(old);
            return rep_trk_find(s, page, add);
        }
        if (!(p = crec_calloc(1, sizeof *p))) {
            rep_trk_nomem(s);
            return NULL;
        }
        p->page = page;
        s->trk[i] = p;
        s->trk_n++;
    }
    if (p) {
        s->trk_last = s->trk_tlb[page % REP_TRK_TLB] = p;
        s->trk_tlb_page[page % REP_TRK_TLB] = page + 1;
    }
    return p;
}

/*
 * A part from a restart point accessed [addr, addr+len): `used` a
 * predicted load, whose bytes not yet its own hold what it was given (the
 * seeds, or memory as the part began): their values are kept; else a store
 * or bytes READS gave.  Either way the bytes are the part's own from now on.
 */
static void rep_track_slow(struct rep_seg *s, uint64_t addr, uint64_t len, int used);

static inline void rep_track(struct rep_seg *s, uint64_t addr, uint64_t len, int used)
{
    uint64_t page = addr >> 12, g = (addr & 4095) >> 3;
    struct rep_trk_page *p = s->trk_last;

    /* most accesses: inside a granule the part holds already */
    if (!p || p->page != page)
        p = s->trk_tlb_page[page % REP_TRK_TLB] == page + 1 ? s->trk_tlb[page % REP_TRK_TLB]
                                                            : NULL;
    if (p && (addr & 7) + len <= 8 && (p->full[g >> 6] >> (g & 63) & 1)) {
        s->trk_last = p;
        return;
    }
    rep_track_slow(s, addr, len, used);
}

static void rep_track_slow(struct rep_seg *s, uint64_t addr, uint64_t len, int used)
{
    while (len > 0) {
        uint64_t off = addr & 63, n = 64 - off < len ? 64 - off : len;
        uint64_t m = (n == 64 ? ~0ull : ((1ull << n) - 1)) << off, fresh;
        struct rep_trk_page *p = rep_trk_find(s, addr >> 12, 1);
        unsigned l = (unsigned)(addr >> 6 & 63);
        if (!p)
            return;
        fresh = used ? m & ~p->own[l] : 0;
        if (fresh) {
            uint8_t v[64];
            const uint8_t *host = crec_emu_hostpages_find(&s->hostpages, s->cpu, addr, n);
            if (!p->val && !(p->val = crec_malloc(4096))) {
                rep_trk_nomem(s);
                return;
            }
            if (host)
                memcpy(v, host, n);
            else
                crec_emu_mem_read(s->cpu, v, addr, n); /* the load's bytes: mapped */
            for (uint64_t b = off; b < off + n; b++)
                if (fresh >> b & 1)
                    p->val[64 * l + b] = v[b - off];
            p->used[l] |= fresh;
        }
        p->own[l] |= m;
        for (uint64_t g = off >> 3; g <= (off + n - 1) >> 3; g++) /* granules now all own */
            if ((p->own[l] >> (8 * g) & 0xff) == 0xff)
                p->full[l >> 3] |= 1ull << ((l & 7) * 8 + g);
        addr += n, len -= n;
    }
}

/* ---- the read stream ----------------------------------------------------- */

/* Read the hit count of the next READS entry (or note the stream's end). */
static int rep_next_hits(struct rep_seg *s)
{
    crec_error err; /* set on failure (zeroing it costs) */
    int rc;

    s->entry_off = crec_fmt_cursor_offset(s->reads); /* for a restart point here */
    rc = crec_fmt_read_decode_hits(s->reads, &s->hits_left, &err);
    s->entry_hits = s->hits_left;
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED) { /* TRUNCATED: a file cut
                                                                   short ends mid-entry */
        /* No more values: every load until the end was predicted. */
        s->hits_left = UINT64_MAX;
        return CREC_OK;
    }
    if (rc != CREC_OK)
        rep_fail(s, &err);
    return rc;
}

/*
 * A load that needs its recorded value: the whole granules it touched
 * (crec_fmt_read_span) are written into memory, so the load sees them.
 */
static int rep_load_value(struct rep_seg *s, uint64_t addr, unsigned size)
{
    crec_error err; /* set on failure (zeroing it costs) */
    uint8_t span[16];
    uint8_t *host;
    uint64_t start;
    unsigned len = crec_fmt_read_span(addr, size, &start);
    int rc = crec_fmt_read_decode_value(s->reads, len, span, &err);

    if (rc != CREC_OK) {
        rep_fail(s, &err);
        return -1;
    }
    host = crec_emu_hostpages_find(&s->hostpages, s->cpu, start, len);
    if (host) {
        memcpy(host, span, len);
    } else if (crec_emu_mem_write(s->cpu, start, span, len) != 0) { /* across two pages */
        rep_corrupt(s, "the recorded value of a %u-byte load at 0x%" PRIx64
                  " covers unmapped memory at 0x%" PRIx64, size, addr, start);
        return -1;
    }
    s->reads_taken++;
    if (s->trk_cap) /* every byte of the granules is READS's, not what the part was given */
        rep_track(s, start, len, 0);
    return rep_next_hits(s) == CREC_OK ? 0 : -1;
}

/* A guest load or store, to the run's watcher: qrun_rip can then say which
 * instruction it was (crec_emu_cpu_access_rip). */
static void rep_access(struct rep_seg *s, int kind, uint64_t addr, uint64_t len)
{
    s->in_access = 1;
    s->access_addr = addr;
    s->on_access(s->access_ctx, s->owner, kind, addr, len);
    s->in_access = 0;
}

/*
 * One load of `size` bytes (by the program, or by the kernel reading a
 * syscall's buffer): predicted, or given its recorded value.  The bytes
 * loaded are copied to `out` when it is not NULL.  @return -1 if it is not
 * mapped (the recorder skipped it too) or the replay must stop, else 0.
 */
static inline int rep_load(struct rep_seg *s, uint64_t addr, unsigned size, uint8_t *out)
{
    uint8_t scratch[16];

    /* A predicted load needs only to know that its bytes are mapped: most
     * lie in a page the table knows, the rest are looked up in the map. */
    if (!crec_emu_hostpages_find(&s->hostpages, s->cpu, addr, size) &&
        crec_emu_mem_read(s->cpu, scratch, addr, size) != 0)
        return -1;
    s->predicted = s->hits_left > 0;
    if (s->hits_left > 0) {
        if (s->hits_left != UINT64_MAX)
            s->hits_left--;
    } else if (rep_load_value(s, addr, size) != 0) {
        return -1;
    }
    if (out)
        crec_emu_mem_read(s->cpu, out, addr, size);
    if (s->trk_cap)
        rep_track(s, addr, size, s->predicted);
    if (s->on_access)
        rep_access(s, 'r', addr, size);
    if (s->exec) {
        if (!out && crec_emu_mem_read(s->cpu, scratch, addr, size) == 0)
            out = scratch;
        rep_exec_access(s, 'r', addr, size, out);
    }
    return 0;
}

/*
 * Installed for loads and stores alike, exactly as the recorder installs
 * its hook: Unicorn ends a translated block sooner when more hooks inflate
 * its code, and key frames sit at block starts, so both sides must cut the
 * program into the same blocks.
 */
static void rep_mem_hook(void *ctx, int kind, uint64_t addr, unsigned size, uint64_t value)
{
    struct rep_seg *s = ctx;

    if (kind == CREC_EMU_STORE) { /* memory holds it already */
        if (s->trk_cap)
            rep_track(s, addr, size, 0);
        if (s->on_access)
            rep_access(s, 'w', addr, (uint64_t)size);
        if (s->exec && size <= 8) {
            uint8_t v[8];
            for (int i = 0; i < 8; i++) /* little-endian, as the guest stores it */
                v[i] = (uint8_t)(value >> (8 * i));
            rep_exec_access(s, 'w', addr, (uint64_t)size, v);
        }
        return;
    }
    if (s->echoes && crec_emu_mem_echo(s->cpu, kind, addr, size))
        return; /* a re-report of part of the last load (non-x86-64 hosts) */
    if (size <= 16)
        rep_load(s, addr, size, NULL);
    else if (s->trk_cap) /* no cache: it reads what memory holds */
        rep_track(s, addr, size, 1);
}

/* Register state a key frame does not hold, read first since the key
 * frame: the recorder logged it as a value no cache predicted. */
static void rep_xstate(void *ctx, uint8_t *bytes, unsigned len)
{
    struct rep_seg *s = ctx;
    crec_error err = {0};
    int rc;

    if (s->diverged || s->failed)
        return;
    if (s->hits_left != 0) {
        rep_diverge(s, "the program read vector or mask register state that the recording "
                       "has no value for");
        return;
    }
    rc = crec_fmt_cursor_read(s->reads, bytes, len, &err);
    if (rc == CREC_ERR_NOTFOUND) {
        rep_diverge(s, "vector or mask register state needs a recorded value, but the read "
                       "stream has ended");
        return;
    }
    if (rc != CREC_OK) {
        rep_fail(s, &err);
        return;
    }
    s->reads_taken++;
    rep_next_hits(s);
}

static int rep_kernel_read(void *ctx, uint64_t addr, unsigned len, uint8_t *out)
{
    return rep_load(ctx, addr, len, out);
}

/* ---- the events stream --------------------------------------------------- */

/* The next event, from the one-event look-ahead if it is full. */
static int rep_next_event(struct rep_seg *s, crec_fmt_event *ev)
{
    crec_error err = {0};
    const uint8_t *body;
    size_t len;
    int kind, rc;

    s->peek_stale = 1;
    if (s->have_peek) {
        *ev = s->peek;
        s->have_peek = 0;
        s->ev_off = s->peek_off;
        return CREC_OK;
    }
    s->ev_off = crec_fmt_cursor_offset(s->events);
    rc = crec_fmt_cursor_next(s->events, &kind, &body, &len, &err);
    if (rc == CREC_OK)
        rc = crec_fmt_ev_decode(crec_fmt_reader_header(s->r)->version, kind, body, len, ev, &err);
    if (rc == CREC_ERR_TRUNCATED) /* a file cut short ends mid-record: its end */
        rc = CREC_ERR_NOTFOUND;
    if (rc == CREC_ERR_NOTFOUND)
        return rc;
    if (rc != CREC_OK)
        rep_fail(s, &err);
    return rc;
}

static void rep_unget_event(struct rep_seg *s, const crec_fmt_event *ev)
{
    s->peek = *ev;
    s->peek_off = s->ev_off;
    s->have_peek = 1;
}

/* The EVENTS offset of the next event to be read. */
static uint64_t rep_event_offset(const struct rep_seg *s)
{
    return s->have_peek ? s->peek_off : crec_fmt_cursor_offset(s->events);
}

/* ---- the memory map at a key frame ---------------------------------------- */

static int rep_collect_map(void *ctx, const struct crec_emu_mapping *m)
{
    struct rep_seg *s = ctx;
    struct crec_emu_mapping *p = crec_grow(s->maps, &s->capmaps, s->nmaps + 1, sizeof *p, 32);

    if (!p)
        return 1;
    s->maps = p;
    s->maps[s->nmaps++] = *m;
    return 0;
}

/* Forget the code hashes found right that a map change at [addr, addr+len)
 * may have made wrong. */
static void rep_code_ok_forget(struct rep_seg *s, uint64_t addr, uint64_t len)
{
    for (size_t i = 0; i < s->ncode_ok;)
        if (s->code_ok[i].start < addr + len && addr < s->code_ok[i].end)
            s->code_ok[i] = s->code_ok[--s->ncode_ok];
        else
            i++;
}

/* Do the replay's code bytes at [start, end) hash to `want`?  Code that is
 * not writable changes only with the map, so a match is kept; code that is
 * writable is hashed again at each key frame, up to REP_CODE_CHECK_MAX
 * bytes (more is not compared: a JIT's big region would cost a hash per
 * key frame).  Code not in one piece of host memory is not compared. */
static int rep_code_matches(struct rep_seg *s, uint64_t start, uint64_t end, int prot,
                            const crec_fmt_hash *want)
{
    crec_fmt_hash h;
    const void *host;

    for (size_t i = 0; i < s->ncode_ok; i++)
        if (s->code_ok[i].start == start && s->code_ok[i].end == end)
            return memcmp(&s->code_ok[i].hash, want, sizeof *want) == 0;
    if (prot & CREC_FMT_PROT_WRITE) {
        if (s->code_hashed + (end - start) > REP_CODE_CHECK_MAX)
            return 1;
        s->code_hashed += end - start;
    }
    host = crec_emu_mem_host(s->cpu, start, end - start, CREC_PROT_READ);
    if (!host)
        return 1;
    h = crec_fmt_hash_bytes(host, end - start);
    if (memcmp(&h, want, sizeof h) != 0) {
        /* Paged code (docs/FORMAT.md, PAGED): the pages the program never ran
         * are zeros here, so compare with the recording's pages and zeros. */
        const uint8_t *code;
        size_t n;
        crec_error err = {0};
        int all;
        if (crec_fmt_blob_recorded(s->r, want, 0, end - start, &all, &err) == CREC_OK && !all &&
            crec_fmt_blob_view(s->r, want, &code, &n, &err) == CREC_OK && n == end - start &&
            memcmp(code, host, n) == 0)
            h = *want;
    }
    if (!(prot & CREC_FMT_PROT_WRITE)) {
        struct rep_code_ok *p = crec_grow(s->code_ok, &s->capcode_ok, s->ncode_ok + 1,
                                          sizeof *p, 16);
        if (p) { /* no memory: hashed again next time */
            s->code_ok = p;
            s->code_ok[s->ncode_ok++] = (struct rep_code_ok){start, end, h};
        }
    }
    return memcmp(&h, want, sizeof h) == 0;
}

/* Is the listed mapping exactly what the replay has there: every byte
 * mapped with its protection, and its code?  @return NULL or what differs. */
static const char *rep_listed_differs(struct rep_seg *s, const crec_fmt_event *ev,
                                      uint64_t *mapped)
{
    uint64_t start = ev->u.mmap.addr, end = start + ev->u.mmap.len, at = start;

    for (size_t i = 0; i < s->nmaps && at < end; i++) {
        const struct crec_emu_mapping *m = &s->maps[i];
        if (m->end <= at)
            continue;
        if (m->start > at || m->prot != (int)ev->u.mmap.prot)
            return m->start > at ? "not mapped" : "mapped with another protection";
        at = m->end;
    }
    if (at < end)
        return "not mapped";
    *mapped += end - start;
    if ((ev->u.mmap.flags & CREC_FMT_EV_HAS_HASH) &&
        !rep_code_matches(s, start, end, (int)ev->u.mmap.prot, &ev->u.mmap.blob))
        return "other code";
    return NULL;
}

/*
 * Put code bytes in guest memory, a page only where it differs: a huge
 * executable mapping is mostly pages of zeros, already there in memory
 * just mapped, which writing would make the host really allocate.
 */
static int rep_write_code(struct rep_seg *s, uint64_t addr, const uint8_t *code, size_t n)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    int rc = 0;

    for (size_t off = 0; off < n;) {
        size_t k = n - off < CREC_PAGE_SIZE - (addr + off) % CREC_PAGE_SIZE
                       ? n - off
                       : CREC_PAGE_SIZE - (addr + off) % CREC_PAGE_SIZE;
        uint8_t *host = crec_emu_mem_host(s->cpu, addr + off, k, 0);
        if (!host || memcmp(host, code + off, k) != 0) {
            if (host)
                memcpy(host, code + off, k);
            else if (crec_emu_mem_write(s->cpu, addr + off, code + off, k) != 0)
                rc = -1;
            lo = addr + off < lo ? addr + off : lo;
            hi = addr + off + k;
        }
        off += k;
    }
    /* code translated from the bytes before (only those that changed) */
    if (lo < hi)
        crec_emu_cpu_flush_code(s->cpu, lo, hi - lo);
    return rc;
}

/* The code a mapping brought: copied in now, or a page at a time as it runs. */
static int rep_map_code(struct rep_seg *s, const crec_fmt_event *ev, crec_error *err)
{
    uint64_t addr = ev->u.mmap.addr, len = ev->u.mmap.len, code_len;
    const uint8_t *code;
    size_t n;
    int rc = crec_fmt_blob_size(s->r, &ev->u.mmap.blob, &code_len, err);

    if (rc == CREC_OK && code_len != len)
        rc = crec_error_corrupt(err, "code blob for 0x%" PRIx64 " holds %" PRIu64
                                " bytes, not %" PRIu64, addr, code_len, len);
    if (rc != CREC_OK)
        return rc;
    if (s->query && !(ev->u.mmap.prot & CREC_FMT_PROT_WRITE)) {
        crec_emu_cpu_flush_code(s->cpu, addr, len);
        return rep_lazy_add(s, addr, len, &ev->u.mmap.blob, err);
    }
    rc = crec_fmt_blob_view(s->r, &ev->u.mmap.blob, &code, &n, err);
    if (rc != CREC_OK)
        return rc;
    if (rep_write_code(s, addr, code, n) != 0)
        return crec_error_corrupt(err, "code for 0x%" PRIx64 " (+0x%" PRIx64 ") is not in "
                                  "mapped memory", addr, len);
    return CREC_OK;
}

static const char *mmap_op_name(uint32_t op)
{
    switch (op) {
    case CREC_FMT_MM_MAP: return "map";
    case CREC_FMT_MM_UNMAP: return "unmap";
    case CREC_FMT_MM_PROTECT: return "mprotect";
    case CREC_FMT_MM_BRK: return "brk";
    case CREC_FMT_MM_REMAP: return "mremap";
    }
    return "memory-map change";
}

/*
 * Rebuild one change of the memory map, and the code it brought.  The
 * recorder made this change, so one that can't be made again means the
 * file is wrong (or the host is out of memory): an error naming the
 * change, never a divergence.
 */
static int rep_apply_mmap(struct rep_seg *s, const crec_fmt_event *ev)
{
    crec_error err = {0};
    uint64_t addr = ev->u.mmap.addr, len = ev->u.mmap.len;
    int prot = (int)ev->u.mmap.prot, rc;

    /* lazy code the change touches is copied in first, while it is mapped */
    rc = rep_lazy_settle(s, addr, len, &err);
    if (rc == CREC_OK && ev->u.mmap.op == CREC_FMT_MM_REMAP)
        rc = rep_lazy_settle(s, ev->u.mmap.addr2, ev->u.mmap.len2, &err);
    if (rc != CREC_OK) {
        rep_fail(s, &err);
        return rc;
    }
    crec_emu_hostpages_clear(&s->hostpages);
    rep_code_ok_forget(s, addr, len);
    if (ev->u.mmap.op == CREC_FMT_MM_REMAP)
        rep_code_ok_forget(s, ev->u.mmap.addr2, ev->u.mmap.len2);
    if (ev->u.mmap.op == CREC_FMT_MM_UNMAP)
        rc = crec_emu_mem_unmap(s->cpu, addr, len, &err);
    else if (ev->u.mmap.op == CREC_FMT_MM_PROTECT)
        rc = crec_emu_mem_protect(s->cpu, addr, len, prot, &err);
    else
        rc = crec_emu_mem_map(s->cpu, addr, len, prot, &err);
    if (rc != CREC_OK) {
        char what[300];
        snprintf(what, sizeof what, "the memory map can't be rebuilt: %s%s of 0x%" PRIx64
                 " (+0x%" PRIx64 ") at EVENTS offset %" PRIu64 " of thread %u",
                 mmap_op_name(ev->u.mmap.op),
                 ev->u.mmap.flags & CREC_FMT_EV_LISTING ? " (key frame listing)" : "", addr, len,
                 s->ev_off, s->tid);
        if (rc == CREC_ERR_NOMEM) { /* the host's limit, not the file's fault */
            crec_error e;
            crec_error_set(&e, CREC_ERR_NOMEM, "%s: %s", what, err.msg);
            rep_fail(s, &e);
            return CREC_ERR_NOMEM;
        }
        return rep_corrupt(s, "%s: %s", what, err.msg);
    }
    /* a map or an unmap changes the bytes (or takes them away) */
    if (s->on_access && !(ev->u.mmap.flags & (CREC_FMT_EV_LISTING | CREC_FMT_EV_FOREIGN)) &&
        ev->u.mmap.op != CREC_FMT_MM_PROTECT) /* the thread that made it reports it */
        s->on_access(s->access_ctx, s->owner, 'k', addr, len);
    if (s->exec && !(ev->u.mmap.flags & CREC_FMT_EV_LISTING) &&
        ev->u.mmap.op != CREC_FMT_MM_PROTECT)
        rep_exec_access(s, 'k', addr, len, NULL);
    if (!(ev->u.mmap.flags & CREC_FMT_EV_HAS_HASH))
        return CREC_OK;
    rc = rep_map_code(s, ev, &err);
    if (rc != CREC_OK)
        rep_fail(s, &err);
    return rc;
}

/*
 * Skip (or, when starting, apply) the memory-map listing after key frame
 * `kf`.  When no event came between two key frames their listings follow
 * each other, so the listing ends where the next key frame's begins: each
 * listing is the whole map, and applying the later ones too would only
 * rebuild the same map again.
 */
static int rep_listing(struct rep_seg *s, size_t kf, int apply)
{
    uint64_t end = kf + 1 < s->nkf ? s->kfs[kf + 1].events_off : UINT64_MAX, listed = 0, held = 0;
    uint64_t last = 0; /* the end of the mapping listed last */
    int check = !apply && !s->query, rc = CREC_OK;
    crec_fmt_event ev;

    /* Passing a key frame, a full replay checks that it built the memory
     * map listed there: a replay that starts there builds it from the list. */
    s->nmaps = 0;
    s->code_hashed = 0;
    if (check && crec_emu_mem_foreach(s->cpu, rep_collect_map, s) != 0)
        check = 0; /* no memory to hold the map: not checked */
    for (size_t i = 0; check && i < s->nmaps; i++)
        held += s->maps[i].end - s->maps[i].start;
    while (rep_event_offset(s) < end && (rc = rep_next_event(s, &ev)) == CREC_OK) {
        const char *what;
        /* a listing is in address order: past the last key frame the file
         * holds (a file cut short), a mapping below the last one starts the
         * listing of a key frame whose record was lost; elsewhere the next
         * key frame's offset bounds the listing, and an entry out of order
         * is checked like any other, so every path sees the same */
        if (ev.kind != CREC_FMT_K_MMAP || !(ev.u.mmap.flags & CREC_FMT_EV_LISTING) ||
            (kf + 1 >= s->nkf && ev.u.mmap.addr < last)) {
            rep_unget_event(s, &ev);
            break;
        }
        last = ev.u.mmap.addr + ev.u.mmap.len;
        if (apply && rep_apply_mmap(s, &ev) != CREC_OK)
            return rep_outcome(s);
        if (check && (what = rep_listed_differs(s, &ev, &listed)) != NULL) {
            rep_diverge(s, "at the key frame at instruction %" PRIu64 ": the memory map "
                           "differs from the recorded one at 0x%" PRIx64 " (+0x%" PRIx64 "): %s",
                        s->kfs[kf].global_icount, ev.u.mmap.addr, ev.u.mmap.len, what);
            return CREC_ERR_DIVERGENCE;
        }
    }
    /* (a file cut short may end inside the listing of its last key frame) */
    if (check && listed != held && rc != CREC_ERR_NOTFOUND) {
        rep_diverge(s, "at the key frame at instruction %" PRIu64 ": the replay has %" PRIu64
                       " bytes mapped, the recording %" PRIu64, s->kfs[kf].global_icount, held,
                    listed);
        return CREC_ERR_DIVERGENCE;
    }
    if (rep_event_offset(s) >= end)
        return CREC_OK;
    return rc == CREC_ERR_NOTFOUND ? CREC_OK : rc;
}

/*
 * The next event that is not a memory-map change, applying those on the
 * way (the kernel changed the map during the syscall that follows them).
 */
static int rep_next_non_mmap(struct rep_seg *s, crec_fmt_event *ev)
{
    int rc;

    while ((rc = rep_next_event(s, ev)) == CREC_OK) {
        if (ev->kind == CREC_FMT_K_THREAD && ev->u.thread.op == CREC_FMT_TH_CREATE)
            continue; /* who the thread is: nothing the program does */
        if (ev->kind != CREC_FMT_K_MMAP)
            return CREC_OK;
        if (ev->u.mmap.flags & CREC_FMT_EV_LISTING)
            continue; /* the listing of a key frame not at a block start (the last one) */
        if (s->whole && (ev->u.mmap.flags & CREC_FMT_EV_FOREIGN))
            continue; /* made by the thread that made it, on this same memory */
        if (rep_apply_mmap(s, ev) != CREC_OK)
            return rep_outcome(s);
    }
    if (rc == CREC_ERR_NOTFOUND)
        rep_diverge(s, "the program goes on, but the recording has no more events");
    return rc;
}

static const char *event_name(int kind)
{
    switch (kind) {
    case CREC_FMT_K_SYSCALL:
        return "a syscall";
    case CREC_FMT_K_CPUID:
        return "CPUID";
    case CREC_FMT_K_RDTSC:
        return "RDTSC";
    case CREC_FMT_K_EXIT:
        return "the exit";
    case CREC_FMT_K_SIGNAL:
        return "a signal";
    case CREC_FMT_K_THREAD:
        return "a thread event";
    }
    return "an unknown event";
}

/* Set the registers a SYSCALL or SIGNAL record lists (RIP: where the
 * program goes on; from a syscall hook, crec_emu_cpu_resume_at makes up
 * for what Unicorn adds after it). */
static void rep_reg_list(struct rep_seg *s, const crec_fmt_reg_value *r, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = r[i].id;
        uint64_t v = r[i].value;
        if (id < CREC_NGPR)
            crec_emu_reg_set(s->cpu, (enum crec_emu_reg)(CREC_EMU_RAX + id), v);
        else if (id == CREC_FMT_REG_FS_BASE)
            crec_emu_reg_set(s->cpu, CREC_EMU_FS_BASE, v);
        else if (id == CREC_FMT_REG_GS_BASE)
            crec_emu_reg_set(s->cpu, CREC_EMU_GS_BASE, v);
        else if (id == CREC_FMT_REG_RFLAGS)
            crec_emu_reg_set(s->cpu, CREC_EMU_RFLAGS, v);
        else if (id == CREC_FMT_REG_RIP) /* a signal handler, rt_sigreturn */
            crec_emu_cpu_resume_at(s->cpu, v);
    }
}

/* ---- signals at an instruction boundary (version 3) ------------------------------ */

/* Read the next event ahead (a SIGNAL record is found before its block). */
static void rep_lookahead(struct rep_seg *s)
{
    crec_fmt_event ev;

    s->peek_stale = 0;
    if (!s->have_peek && rep_next_event(s, &ev) == CREC_OK) {
        rep_unget_event(s, &ev);
        s->peek_stale = 0;
    }
}

/* Is the next event a SIGNAL record at the thread's count tb, of the kind
 * (fault or not) asked for? */
static int rep_signal_next(struct rep_seg *s, uint64_t tb, int fault)
{
    if (s->peek_stale && s->version >= 3)
        rep_lookahead(s);
    return s->have_peek && s->peek.kind == CREC_FMT_K_SIGNAL && s->peek.u.sig.icount == tb &&
           !(s->peek.u.sig.flags & CREC_FMT_SIG_FAULT) == !fault;
}

/* Enter the handler as the recording did: the registers of the SIGNAL
 * record, and the frame it wrote (kernel-written memory a query must know
 * is stale in replay memory). */
static void rep_signal_apply(struct rep_seg *s)
{
    crec_fmt_event ev;

    if (rep_next_event(s, &ev) != CREC_OK)
        return;
    rep_reg_list(s, ev.u.sig.regs, ev.u.sig.nregs);
    for (uint32_t i = 0; i < ev.u.sig.nout; i++) {
        if (s->on_access)
            s->on_access(s->access_ctx, s->owner, 'k', ev.u.sig.out[i].addr,
                         ev.u.sig.out[i].len);
        if (s->exec)
            rep_exec_access(s, 'k', ev.u.sig.out[i].addr, ev.u.sig.out[i].len, NULL);
    }
    crec_emu_hostpages_clear(&s->hostpages);
}

/*
 * The CPU stopped: for a signal at a block start (s->sig_at), enter its
 * handler and @return 1 (the run goes on); for a fault the recording
 * delivered to a handler, the same; else 0.
 */
static int rep_signal_stopped(struct rep_seg *s, const struct crec_emu_stop *stop)
{
    if (s->failed || s->diverged)
        return 0;
    if (s->sig_at) {
        crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->sig_at); /* stale after a block hook */
        s->sig_at = 0;
        rep_signal_apply(s);
        return !s->failed;
    }
    if (s->fatal_at) { /* it died there: RIP where the recording left it */
        crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->fatal_at);
        s->fatal_at = 0;
        return 0;
    }
    if (stop->why == CREC_STOP_REQUESTED || !rep_signal_next(s, rep_ticount(s), 1))
        return 0;
    rep_signal_apply(s);
    return !s->failed;
}

/* A query run stopped at exactly its time: a signal the recording entered
 * a handler for at that count is part of the state there (the handler's
 * first instruction is the next one), so it is entered now. */
static void rep_signal_at_stop(struct rep_seg *s)
{
    uint64_t tb;

    if (s->failed || s->diverged || s->version < 3)
        return;
    if (s->stopped_at_block) /* RIP is stale after a stop in a block hook */
        crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->stopped_at_block);
    s->stopped_at_block = 0;
    tb = rep_ticount(s);
    if ((rep_signal_next(s, tb, 0) || rep_signal_next(s, tb, 1)) &&
        !(s->peek.u.sig.flags & CREC_FMT_SIG_FATAL))
        rep_signal_apply(s);
}

/* ---- syscalls, CPUID, RDTSC ---------------------------------------------- */

static void rep_set_regs(struct rep_seg *s, const crec_fmt_event *ev)
{
    crec_emu_reg_set(s->cpu, CREC_EMU_RAX, (uint64_t)ev->u.sys.ret);
    rep_reg_list(s, ev->u.sys.regs, ev->u.sys.nregs);
}

static void rep_check_sent(struct rep_seg *s, const crec_fmt_event *ev)
{
    uint64_t hash;
    int sent = crec_emu_sysout_walk(ev->u.sys.nr, ev->u.sys.args, ev->u.sys.ret,
                                    rep_kernel_read, s, &hash);

    if (sent != 1 || !(ev->u.sys.flags & CREC_FMT_EV_HAS_HASH))
        return;
    s->writes_checked++;
    if (hash != ev->u.sys.write_hash)
        rep_diverge(s, "syscall %" PRIu64 " (fd %" PRIu64 ") sent out other bytes than when "
                       "recorded (hash %016" PRIx64 ", recorded %016" PRIx64 ")",
                    ev->u.sys.nr, ev->u.sys.args[0], hash, ev->u.sys.write_hash);
}

/* rt_sigreturn: the vector and x87 registers come back from the frame,
 * which the syscall's walk (emu/sysout.c) has just put in memory as the
 * recording read it; the rest is in the record's register list. */
static void rep_sigreturn(struct rep_seg *s, const crec_fmt_event *ev)
{
    crec_error err = {0};
    uint64_t mask;

    if (crec_emu_sigreturn_apply(s->cpu, ev->u.sys.args[0], &mask, &err) != CREC_OK)
        rep_diverge(s, "%s", err.msg);
}

/* The kernel wrote [addr, addr+len) in this syscall (len UINT64_MAX:
 * anywhere): replay memory does not hold it, and watchers must know. */
static void rep_kernel_wrote(struct rep_seg *s, uint64_t addr, uint64_t len)
{
    if (s->on_access)
        s->on_access(s->access_ctx, s->owner, 'k', addr, len);
    if (s->exec)
        rep_exec_access(s, 'k', addr, len, NULL);
}

/* Is the next event a SIGNAL record of the process's death at the end of
 * the syscall just applied?  Then it is taken. */
static int rep_dies_after_syscall(struct rep_seg *s)
{
    crec_fmt_event ev;

    if (!rep_signal_next(s, rep_ticount(s), 0) || !(s->peek.u.sig.flags & CREC_FMT_SIG_FATAL))
        return 0;
    rep_next_event(s, &ev);
    return 1;
}

static void rep_on_syscall(void *ctx, crec_emu_cpu *cpu)
{
    struct rep_seg *s = ctx;
    uint64_t nr = crec_emu_reg_get(cpu, CREC_EMU_RAX);
    crec_fmt_event ev;

    if (rep_next_non_mmap(s, &ev) != CREC_OK)
        return;
    if (ev.kind == CREC_FMT_K_EXIT) {
        s->exit = ev;
        s->have_exit = 1;
        crec_emu_cpu_stop(cpu);
        return;
    }
    if (ev.kind == CREC_FMT_K_THREAD && ev.u.thread.op == CREC_FMT_TH_EXIT) {
        /* the thread ends in this syscall (its exit, or the process ended
         * while it waited in it): no result, registers as they are */
        s->thread_ended = 1;
        if (ev.u.thread.cleared)
            rep_kernel_wrote(s, ev.u.thread.cleared, 4);
        crec_emu_cpu_stop(cpu);
        return;
    }
    if (ev.kind != CREC_FMT_K_SYSCALL) {
        rep_diverge(s, "the program made syscall %" PRIu64 " where the recording has %s", nr,
                    event_name(ev.kind));
        return;
    }
    if (ev.u.sys.nr != nr) {
        rep_diverge(s, "the program made syscall %" PRIu64 " where the recording has syscall "
                       "%" PRIu64, nr, ev.u.sys.nr);
        return;
    }
    s->syscalls++;
    rep_check_sent(s, &ev);
    if (nr == CREC_EMU_NR_RT_SIGRETURN && !s->diverged)
        rep_sigreturn(s, &ev);
    rep_set_regs(s, &ev);
    /* a signal its end made pending kills the process there (version 3) */
    if (s->version >= 3 && rep_dies_after_syscall(s))
        crec_emu_cpu_stop(cpu);
    for (uint32_t i = 0; i < ev.u.sys.nout; i++)
        rep_kernel_wrote(s, ev.u.sys.out[i].addr, ev.u.sys.out[i].len);
    if (ev.u.sys.flags & CREC_FMT_EV_OUT_MORE)
        rep_kernel_wrote(s, 0, UINT64_MAX); /* anywhere */
    if (s->exec)
        rep_exec_syscall(s, &ev);
}

static void rep_on_cpuid(void *ctx, uint32_t leaf, uint32_t subleaf, uint32_t out[4])
{
    struct rep_seg *s = ctx;
    crec_fmt_event ev;

    memset(out, 0, 4 * sizeof out[0]);
    if (rep_next_non_mmap(s, &ev) != CREC_OK)
        return;
    if (ev.kind != CREC_FMT_K_CPUID || ev.u.cpuid.leaf != leaf ||
        ev.u.cpuid.subleaf != subleaf) {
        rep_diverge(s, "the program ran CPUID leaf 0x%x.%u where the recording has %s", leaf,
                    subleaf, event_name(ev.kind));
        return;
    }
    out[0] = ev.u.cpuid.eax;
    out[1] = ev.u.cpuid.ebx;
    out[2] = ev.u.cpuid.ecx;
    out[3] = ev.u.cpuid.edx;
}

static uint64_t rep_on_rdtsc(void *ctx, crec_emu_cpu *cpu)
{
    struct rep_seg *s = ctx;
    crec_fmt_event ev;

    (void)cpu;
    if (rep_next_non_mmap(s, &ev) != CREC_OK)
        return 0;
    if (ev.kind != CREC_FMT_K_RDTSC) {
        rep_diverge(s, "the program ran RDTSC where the recording has %s", event_name(ev.kind));
        return 0;
    }
    return ev.u.rdtsc.value;
}

/* RDRAND/RDSEED: the value recorded in an RDTSC event (docs/FORMAT.md). */
static uint64_t rep_on_rdrand(void *ctx, crec_emu_cpu *cpu, int seed)
{
    (void)seed;
    return rep_on_rdtsc(ctx, cpu);
}

/* ---- key frames ---------------------------------------------------------- */

/* Check a key frame (or a check point, `what`) at the start of the block
 * at `rip` (see rec_point). */
static void rep_verify_point(struct rep_seg *s, const crec_fmt_keyframe *kf, uint64_t rip,
                             const char *what)
{
    crec_error err = {0};
    crec_regs now;
    char diff[300];

    if (crec_emu_regs_get(s->cpu, &now, &err) != CREC_OK) {
        rep_fail(s, &err);
        return;
    }
    now.rip = rip;
    if (crec_regs_diff(&kf->regs, &now, diff, sizeof diff)) {
        if (s->version >= 2 && (s->whole || s->seq))
            rep_diverge(s, "at the %s of thread %u at its instruction %" PRIu64 " (%" PRIu64
                           " in all): %s", what, kf->tid, kf->thread_icount, kf->global_icount,
                        diff);
        else
            rep_diverge(s, "at the %s at instruction %" PRIu64 ": %s", what, kf->global_icount,
                        diff);
        return;
    }
    if (what[0] == 'k')
        s->keyframes_checked++;
    else
        s->checkpoints_checked++;
}

static void rep_verify_kf(struct rep_seg *s, const crec_fmt_keyframe *kf, uint64_t rip)
{
    rep_verify_point(s, kf, rip, "key frame");
}

/*
 * A key frame the replay passes must say where its streams stand exactly
 * as the replay finds them: a replay that starts there (--from, a job of
 * --jobs, a query) trusts those offsets, so a full replay that ignored
 * them would accept a file the others reject.
 */
static void rep_verify_kf_streams(struct rep_seg *s, const crec_fmt_keyframe *kf)
{
    uint64_t hits;

    /* A whole-program replay passes the FOREIGN copies of other threads'
     * map changes as it meets them; the key frame comes after them. */
    if (s->whole) {
        crec_fmt_event ev;
        while (rep_next_event(s, &ev) == CREC_OK) {
            if (ev.kind != CREC_FMT_K_MMAP || !(ev.u.mmap.flags & CREC_FMT_EV_FOREIGN)) {
                rep_unget_event(s, &ev);
                break;
            }
        }
    }
    hits = s->hits_left == UINT64_MAX ? kf->hits_before : s->entry_hits - s->hits_left;
    if (kf->tid != s->tid)
        rep_corrupt(s, "the key frame at instruction %" PRIu64 " is of thread %u, the replay "
                    "of thread %u", kf->global_icount, kf->tid, s->tid);
    else if (kf->reads_off != s->entry_off || kf->hits_before != hits ||
             kf->events_off != rep_event_offset(s))
        rep_corrupt(s, "the key frame at instruction %" PRIu64 " puts READS at %" PRIu64
                    " (%" PRIu64 " hits) and EVENTS at %" PRIu64 ", but they stand at %" PRIu64
                    " (%" PRIu64 " hits) and %" PRIu64, kf->global_icount, kf->reads_off,
                    kf->hits_before, kf->events_off, s->entry_off, hits, rep_event_offset(s));
}

/*
 * At the thread's last instruction count, at a block start: did it end
 * here without running on: crec stopped recording (SIGINT/SIGTERM, a
 * deadlock), or the process ended while the thread was switched out?
 * Otherwise it ends inside this block (a fault, a syscall) and must run
 * into it.
 */
static int rep_stopped_here(struct rep_seg *s)
{
    crec_fmt_event ev;

    if (rep_listing(s, s->nkf - 1, 0) != CREC_OK) /* the last key frame's own */
        return 0;
    if (rep_next_event(s, &ev) != CREC_OK)
        return 0;
    rep_unget_event(s, &ev);
    return (ev.kind == CREC_FMT_K_EXIT && (ev.u.exit.how == CREC_FMT_EXIT_STOPPED ||
                                           ev.u.exit.how == CREC_FMT_EXIT_ENDED)) ||
           (ev.kind == CREC_FMT_K_THREAD && ev.u.thread.op == CREC_FMT_TH_EXIT &&
            ev.u.thread.how == CREC_FMT_TH_ENDED);
}

/* ---- the SEQ stream: where a thread alone was cut and switched in -------- */

/* The thread's next switch entry (IN, OUT or OUT_EXACT), or none. */
static void rep_seq_next(struct rep_seg *s)
{
    crec_error err = {0};
    int rc;

    s->have_seq_next = 0;
    while (s->seq && (rc = crec_fmt_cursor_seq(s->seq, &s->seq_ctx, &s->seq_next, &err)) ==
                         CREC_OK) {
        if (s->seq_next.kind == CREC_FMT_SEQ_IN || s->seq_next.kind == CREC_FMT_SEQ_OUT ||
            s->seq_next.kind == CREC_FMT_SEQ_OUT_EXACT) {
            s->have_seq_next = 1;
            return;
        }
    }
    if (s->seq && rc != CREC_ERR_NOTFOUND && rc != CREC_ERR_TRUNCATED)
        rep_fail(s, &err);
}

/* At a switch-in: the map changes other threads made while this one was
 * switched out, which lead its events from here. */
static int rep_apply_foreign(struct rep_seg *s)
{
    crec_fmt_event ev;
    int rc;

    while ((rc = rep_next_event(s, &ev)) == CREC_OK) {
        if (ev.kind != CREC_FMT_K_MMAP || !(ev.u.mmap.flags & CREC_FMT_EV_FOREIGN)) {
            rep_unget_event(s, &ev);
            return CREC_OK;
        }
        if (rep_apply_mmap(s, &ev) != CREC_OK)
            return rep_outcome(s);
    }
    return rc == CREC_ERR_NOTFOUND ? CREC_OK : rc;
}

/*
 * A block of a thread replayed alone starts at its count `tb`: pass the
 * switch entries up to there (at a switch-in, the others' map changes are
 * applied), and when the recording switched this thread out inside the
 * block, cut it at the same instruction, as the recording did (the block
 * is entered again with the stop set: its blocks and key frames then fall
 * where the recording's did).  @return 1 if the block is entered again.
 */
static int rep_seq_block(struct rep_seg *s, uint64_t tb, uint32_t ninsns)
{
    while (s->have_seq_next && !s->failed && !s->diverged) {
        const crec_fmt_seq *e = &s->seq_next;
        if (e->icount > tb) {
            if (e->kind == CREC_FMT_SEQ_OUT_EXACT && e->icount < tb + ninsns && !s->cut_at &&
                !s->query) { /* query runs cut blocks their own way anyway */
                uint64_t t = e->icount - s->tbase + s->gbase;
                if (crec_emu_cpu_stop_inside(s->cpu, t) != 0) {
                    rep_diverge(s, "can't cut the block where thread %u was switched out, at "
                                   "its instruction %" PRIu64, s->tid, e->icount);
                    return 1;
                }
                s->cut_at = t;
                return 1;
            }
            return 0;
        }
        if (e->kind == CREC_FMT_SEQ_IN && rep_apply_foreign(s) != CREC_OK)
            return 1;
        rep_seq_next(s);
    }
    return 0;
}

/*
 * A whole-program replay: the running slice ends at CPU count stop_at, at
 * a block start or, when the recording cut the block (OUT_EXACT), inside
 * it.  @return 1 if the block must not run now.
 */
static int rep_slice_end(struct rep_seg *s, uint64_t addr, uint64_t before, uint64_t icount)
{
    const crec_fmt_slice *sl = &s->slices[s->slice];

    if (before >= s->stop_at) {
        crec_emu_cpu_stop(s->cpu);
        s->stopped_at_block = addr; /* RIP may still point into the previous block */
        return 1;
    }
    if (s->stop_at < icount && !s->cut_at) {
        if (!sl->exact_out && s->stop_at == sl->start + sl->len) {
            rep_diverge(s, "thread %u was switched out at its instruction %" PRIu64 ", which "
                           "falls inside a block", sl->tid, sl->thread_start + sl->len);
            return 1;
        }
        if (crec_emu_cpu_stop_inside(s->cpu, s->stop_at) != 0) {
            rep_diverge(s, "can't cut the block where thread %u was switched out", sl->tid);
            return 1;
        }
        s->cut_at = s->stop_at;
        return 1;
    }
    return 0;
}

/*
 * A restart point at the start of the block at addr (crec_replay_watch):
 * everything a run needs to start here but memory, as a key frame.  The
 * READS stream is taken from the start of its current entry, with the
 * hits of that entry already used as the key frame's hits_before.
 */
static void rep_offer_point(struct rep_seg *s, uint64_t addr, uint64_t before)
{
    crec_fmt_keyframe p = {0};
    crec_error err = {0};

    p.tid = s->tid;
    p.global_icount = p.thread_icount = before; /* a thread's own count */
    if (crec_emu_regs_get(s->cpu, &p.regs, &err) != CREC_OK) {
        rep_fail(s, &err);
        return;
    }
    p.regs.rip = addr; /* RIP may still point into the previous block */
    p.reads_off = s->entry_off;
    p.hits_before = s->hits_left == UINT64_MAX ? 0 : s->entry_hits - s->hits_left;
    p.events_off = rep_event_offset(s);
    s->next_point = before + s->point_every;
    s->on_point(s->access_ctx, s->owner, &p);
}

/* ---- parts cut at the index's restart points (replay --jobs) ----------- */

/* A part from the index's restart points could not be trusted: not a
 * divergence (the index may be stale or damaged); the caller replays it
 * again from key frames. */
static void rep_meet_fail(struct rep_seg *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rep_meet_fail(struct rep_seg *s, const char *fmt, ...)
{
    va_list ap;

    if (s->meet_failed || s->diverged || s->failed)
        return;
    s->meet_failed = 1;
    va_start(ap, fmt);
    vsnprintf(s->meet_what, sizeof s->meet_what, fmt, ap);
    va_end(ap);
    crec_emu_cpu_stop(s->cpu);
}

/* Track what a part from a restart point holds.  @return 0, or -1 out of
 * memory. */
static int rep_trk_open(struct rep_seg *s)
{
    s->trk_cap = 1024;
    s->trk_tlb = crec_calloc(REP_TRK_TLB, sizeof *s->trk_tlb);
    s->trk_tlb_page = crec_calloc(REP_TRK_TLB, sizeof *s->trk_tlb_page);
    if (!s->trk_tlb || !s->trk_tlb_page || !(s->trk = crec_calloc(s->trk_cap, sizeof *s->trk))) {
        s->trk_cap = 0;
        return -1;
    }
    return 0;
}

/*
 * At restart point pass[pass_at], passed by a part that started at an
 * earlier one: the seed's bytes that the part does not hold itself (it
 * has not stored them, nor had them from READS, since its start) are what
 * the program held from before that start: written from the seed.  The
 * bytes it holds stay as they are.  (index/query.c qx_continue does the
 * same for a query run, which trusts the index and writes every byte.)
 */
static void rep_pass_seed(struct rep_seg *s)
{
    const crec_replay_from *f = &s->pass[s->pass_at++];

    for (size_t i = 0; i < f->nlines; i++) {
        const struct rep_trk_page *p = rep_trk_find(s, f->lines[i] >> 6, 0);
        uint64_t give = (f->masks ? f->masks[i] : ~0ull) & ~(p ? p->own[f->lines[i] & 63] : 0);
        uint8_t cur[64];
        /* only bytes that differ: a write to code would drop its translations */
        if (give && crec_emu_mem_read(s->cpu, cur, f->lines[i] << 6, 64) == 0)
            for (unsigned b = 0; b < 64; b++)
                if (cur[b] == f->values[64 * i + b])
                    give &= ~(1ull << b);
        if (give)
            rep_write_line(s, f->lines[i], give, f->values + 64 * i);
    }
}

/* Does part s (from a restart point) hold byte addr itself? */
static int rep_trk_own(const struct rep_seg *s, uint64_t addr)
{
    size_t i = (size_t)(((addr >> 12) * 0x9E3779B97F4A7C15ull) >> 24) & (s->trk_cap - 1);

    for (; s->trk[i]; i = (i + 1) & (s->trk_cap - 1))
        if (s->trk[i]->page == addr >> 12)
            return s->trk[i]->own[addr >> 6 & 63] >> (addr & 63) & 1;
    return 0;
}

int rep_parts_meet(const struct rep_seg *segs, size_t j)
{
    const struct rep_seg *b = &segs[j];

    for (size_t i = 0; i < b->trk_cap; i++) {
        const struct rep_trk_page *p = b->trk[i];
        for (unsigned l = 0; p && p->val && l < 64; l++)
            for (unsigned k = 0; p->used[l] && k < 64; k++) {
                uint64_t addr = (p->page << 12) + 64 * l + k;
                size_t h = j - 1;
                uint8_t v;
                if (!(p->used[l] >> k & 1))
                    continue;
                /* the last part before that held it: one from a key frame
                 * holds everything the program could read of what it knew */
                while (h > 0 && segs[h].trk_cap && !rep_trk_own(&segs[h], addr))
                    h--;
                if (!segs[h].cpu || crec_emu_mem_read(segs[h].cpu, &v, addr, 1) != 0 ||
                    v != p->val[64 * l + k])
                    return 0;
            }
    }
    return 1;
}

void rep_parts_free(struct rep_seg *s)
{
    for (size_t i = 0; i < s->trk_cap; i++)
        if (s->trk[i]) {
            crec_free(s->trk[i]->val);
            crec_free(s->trk[i]);
        }
    crec_free(s->trk);
    crec_free(s->trk_tlb);
    crec_free(s->trk_tlb_page);
    s->trk = NULL, s->trk_last = NULL, s->trk_tlb = NULL, s->trk_tlb_page = NULL;
    s->trk_cap = s->trk_n = 0;
}

/*
 * A part that ends at restart point end_point, where the next part
 * starts: the run must stand exactly there, with the point's registers
 * and stream positions.  (Its memory is kept: what the next part read of
 * what it was given is compared with it once both have run,
 * rep_parts_meet.)
 */
void rep_seg_meet(struct rep_seg *s)
{
    const crec_fmt_keyframe *p = s->end_point->point;
    crec_error err = {0};
    crec_regs now;
    char diff[160];
    uint64_t hits;

    if (s->next_kf <= s->end_kf || crec_emu_cpu_icount(s->cpu) != p->thread_icount) {
        rep_meet_fail(s, "the part stopped at instruction %" PRIu64 ", not at the restart point "
                      "at %" PRIu64, crec_emu_cpu_icount(s->cpu), p->thread_icount);
        return;
    }
    if (crec_emu_regs_get(s->cpu, &now, &err) != CREC_OK) {
        rep_fail(s, &err);
        return;
    }
    now.rip = s->stopped_at_block;
    if (crec_regs_diff(&p->regs, &now, diff, sizeof diff)) {
        rep_meet_fail(s, "at the restart point at instruction %" PRIu64 ": %s",
                      p->thread_icount, diff);
        return;
    }
    hits = s->hits_left == UINT64_MAX ? p->hits_before : s->entry_hits - s->hits_left;
    if (p->tid != s->tid || p->reads_off != s->entry_off || p->hits_before != hits ||
        p->events_off != rep_event_offset(s)) {
        rep_meet_fail(s, "the restart point at instruction %" PRIu64 " puts the streams "
                      "elsewhere", p->thread_icount);
        return;
    }
}

/* A block whose code may not be there yet (lazy.c).  @return 1 if the
 * block must not run now: it is entered again once its code is in. */
static int rep_block_lazy(struct rep_seg *s, uint64_t addr)
{
    crec_error err; /* set on failure; zeroing it per block cost a fifth of a run */
    int refill;

    if (rep_lazy_block(s, addr, &refill, &err) != CREC_OK) {
        rep_fail(s, &err);
        return 1;
    }
    if (refill) {
        s->refill_at = addr;
        crec_emu_cpu_stop(s->cpu); /* before the block runs: it is entered again */
    }
    return refill;
}

/* Is key frame k the end of a part of a conditional recording, followed by
 * a gap and the next part's first key frame (k + 1)? */
static int rep_part_end(const struct rep_seg *s, size_t k)
{
    if (s->whole || k + 1 >= s->nkf)
        return 0;
    for (size_t i = 0; i < s->ngaps; i++)
        if (s->gaps[i].from == s->kfs[k].global_icount &&
            s->gaps[i].to == s->kfs[k + 1].global_icount)
            return 1;
    return 0;
}

/*
 * Over a gap: the run goes on at key frame k, the first of the next part,
 * as a run starting there would (its registers, and memory mapped as its
 * listing says: what the program did in the gap was not recorded, so the
 * map is built again and the memory's old bytes go; the part's first
 * loads of every byte are in READS).  The EVENTS cursor is left at the
 * listing, which the block hook then checks as at any key frame.
 */
static int rep_jump(struct rep_seg *s, size_t k)
{
    const crec_fmt_keyframe *kf = &s->kfs[k];
    crec_fmt_event ev = {.kind = CREC_FMT_K_MMAP};
    crec_error err = {0};
    int rc;

    s->nmaps = 0;
    if (crec_emu_mem_foreach(s->cpu, rep_collect_map, s) != 0)
        return rep_corrupt(s, "out of memory jumping over a gap");
    ev.u.mmap.op = CREC_FMT_MM_UNMAP;
    for (size_t i = 0; i < s->nmaps; i++) {
        ev.u.mmap.addr = s->maps[i].start;
        ev.u.mmap.len = s->maps[i].end - s->maps[i].start;
        if (rep_apply_mmap(s, &ev) != CREC_OK)
            return rep_outcome(s);
    }
    crec_fmt_cursor_free(s->events);
    s->events = NULL;
    s->have_peek = 0;
    rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_EVENTS, kf->tid, kf->events_off, &s->events, &err);
    if (rc == CREC_OK && (rc = rep_listing(s, k, 1)) == CREC_OK) {
        crec_fmt_cursor_free(s->events);
        s->events = NULL;
        s->have_peek = 0;
        rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_EVENTS, kf->tid, kf->events_off, &s->events,
                                  &err);
    }
    if (rc == CREC_OK)
        rc = crec_emu_regs_set(s->cpu, &kf->regs, &err);
    if (rc != CREC_OK) {
        if (!s->failed)
            rep_fail(s, &err);
        return rep_outcome(s);
    }
    s->skipped += kf->thread_icount - crec_emu_cpu_icount(s->cpu);
    crec_emu_cpu_set_icount(s->cpu, kf->thread_icount);
    crec_emu_cpu_xstate_forget(s->cpu);
    crec_emu_hostpages_clear(&s->hostpages);
    s->next_kf = k;
    return CREC_OK;
}

static void rep_on_block(void *ctx, uint64_t addr, uint32_t ninsns, uint64_t icount)
{
    struct rep_seg *s = ctx;
    uint64_t before = icount - ninsns;
    uint64_t tb = before - s->gbase + s->tbase; /* the thread's own count */
    /* what runs of the block in this visit: a run of instructions crec
     * executes itself, or an emulated RDTSC, leaves it sooner, and the
     * recorder's scheduler saw the next block start there */
    uint32_t visit = s->whole || s->seq ? crec_emu_cpu_block_insns(s->cpu) : ninsns;

    if (s->nlazy > 0 && rep_block_lazy(s, addr))
        return;
    s->blocks_seen[1][0] = s->blocks_seen[0][0], s->blocks_seen[1][1] = s->blocks_seen[0][1];
    s->blocks_seen[0][0] = addr, s->blocks_seen[0][1] = crec_emu_cpu_block_bytes(s->cpu);
    __atomic_store_n(&s->at, before, __ATOMIC_RELAXED); /* for the progress line */
    if (s->whole && rep_slice_end(s, addr, before, before + visit))
        return;
    if (s->seq && !s->whole && rep_seq_block(s, tb, visit))
        return;
    /* a signal the recording delivered at this block start: its handler,
     * or the end of the process (before the block, which runs later) */
    if (s->version >= 3 && rep_signal_next(s, tb, 0)) {
        if (s->peek.u.sig.flags & CREC_FMT_SIG_FATAL) {
            crec_fmt_event ev;
            rep_next_event(s, &ev);
            s->fatal_at = addr;
        } else {
            s->sig_at = addr;
        }
        s->stopped_at_block = addr;
        crec_emu_cpu_stop(s->cpu);
        return;
    }

    while (s->next_kf < s->nkf_blocks && s->kfs[s->next_kf].thread_icount <= tb) {
        size_t k = s->next_kf++;
        const crec_fmt_keyframe *kf = &s->kfs[k];
        s->next_point = kf->thread_icount + s->point_every;
        crec_emu_cpu_xstate_forget(s->cpu); /* as the recorder did here */
        if (s->query) { /* no checks; just pass its map listing */
            if (rep_listing(s, k, 0) != CREC_OK)
                return;
            if (s->on_keyframe)
                s->on_keyframe(s->access_ctx, s->owner, k);
            if (rep_part_end(s, k) && tb < s->until) {
                /* over the gap (outside the hook) when the run goes as far as
                 * the next part; a run to a time in the gap ends here: the
                 * program's state there is not in the recording */
                if (s->until >= s->kfs[k + 1].thread_icount)
                    s->jump_to = k + 1;
                else
                    s->stopped_at_block = addr;
                crec_emu_cpu_stop(s->cpu);
                return;
            }
            continue;
        }
        if (kf->thread_icount < tb) {
            rep_diverge(s, "the key frame at instruction %" PRIu64 " falls inside a block",
                        kf->thread_icount);
            return;
        }
        rep_verify_kf(s, kf, addr);
        if (!s->diverged && !s->failed)
            rep_verify_kf_streams(s, kf);
        if (s->diverged || s->failed)
            return;
        if (rep_listing(s, k, 0) != CREC_OK)
            return;
        if (rep_part_end(s, k) && tb < s->stop_at) { /* over the gap, outside the hook */
            s->jump_to = k + 1;
            crec_emu_cpu_stop(s->cpu);
            return;
        }
    }
    /* check points: the registers and streams, as at a key frame, but no
     * listing follows and the prediction cache was not flushed */
    while (!s->query && s->next_cp < s->ncp && s->cps[s->next_cp].thread_icount <= tb) {
        const crec_fmt_keyframe *cp = &s->cps[s->next_cp++];
        if (cp->thread_icount < tb) {
            rep_diverge(s, "the check point at instruction %" PRIu64 " falls inside a block",
                        cp->thread_icount);
            return;
        }
        rep_verify_point(s, cp, addr, "check point");
        if (!s->diverged && !s->failed)
            rep_verify_kf_streams(s, cp);
        if (s->diverged || s->failed)
            return;
    }
    /* a restart point that a part from the index passes: its seed is
     * written before the block, outside the hook */
    if (s->pass_at < s->npass && s->pass[s->pass_at].point->thread_icount <= tb) {
        if (s->pass[s->pass_at].point->thread_icount < tb) {
            rep_meet_fail(s, "the restart point at instruction %" PRIu64 " falls inside a "
                          "block", s->pass[s->pass_at].point->thread_icount);
            return;
        }
        s->seed_block = addr;
        crec_emu_cpu_stop(s->cpu);
        return;
    }
    /* no restart point once vector state a point can't hold was used */
    if (s->on_point && tb >= s->next_point && s->next_kf < s->nkf &&
        tb < s->kfs[s->next_kf].thread_icount && !crec_emu_cpu_xstate_touched(s->cpu))
        rep_offer_point(s, addr, tb);
    if (!s->whole && tb >= s->stop_at &&
        (!s->is_last || s->truncated || rep_stopped_here(s))) {
        crec_emu_cpu_stop(s->cpu);
        s->stopped_at_block = addr; /* RIP may still point into the previous block */
    } else if (s->exec) {
        rep_exec_block(s, addr, ninsns, before);
    }
}

void rep_write_line(struct rep_seg *s, uint64_t line, uint64_t mask, const uint8_t *values)
{
    /* each run of bytes of the mask at once; bytes not mapped don't matter */
    for (unsigned b = 0; b < 64;) {
        unsigned e = b;
        if (!(mask >> b & 1)) {
            b++;
            continue;
        }
        while (e < 64 && mask >> e & 1)
            e++;
        crec_emu_mem_write(s->cpu, (line << 6) + b, values + b, e - b);
        b = e;
    }
}

/* ---- one run of segments ------------------------------------------------- */

/* The gaps of a conditional recording (MARKS), which a run jumps over. */
static int rep_read_gaps(struct rep_seg *s, crec_error *err)
{
    crec_fmt_marks m;
    int rc = crec_fmt_marks_read(s->r, &m, err);

    if (rc != CREC_OK || m.ngaps == 0) {
        crec_fmt_marks_clear(&m);
        return rc;
    }
    if (!(s->gaps = crec_malloc(m.ngaps * sizeof *s->gaps))) {
        crec_fmt_marks_clear(&m);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the gaps");
    }
    for (size_t i = 0; i < m.ngaps; i++)
        s->gaps[i] = (struct rep_gap){m.gaps[i].u.gap.from, m.gaps[i].u.gap.to};
    s->ngaps = m.ngaps;
    crec_fmt_marks_clear(&m);
    return CREC_OK;
}

static int rep_seg_open(struct rep_seg *s, crec_error *err)
{
    const crec_fmt_keyframe *kf = s->start;
    struct crec_emu_cpu_hooks hooks = {
        .ctx = s,
        .syscall = rep_on_syscall,
        .cpuid = rep_on_cpuid,
        .rdtsc = rep_on_rdtsc,
        .block = rep_on_block,
        .rdrand = rep_on_rdrand,
    };
    int rc;

    rc = crec_emu_cpu_create(&s->cpu, &hooks, err);
    /* Stores need the hook even when nothing watches them: without one,
     * Unicorn cuts blocks differently from the recording (measured: a key
     * frame then falls inside a block of sha256sum). */
    if (rc == CREC_OK)
        rc = crec_emu_cpu_hook_mem(s->cpu, CREC_EMU_LOAD | CREC_EMU_STORE, rep_mem_hook, s, err);
    if (rc != CREC_OK)
        return rc;
    crec_emu_cpu_on_xstate(s->cpu, rep_xstate, s);
    s->echoes = crec_emu_mem_echoes(s->cpu);
    if (s->exec && (rc = rep_exec_open(s, err)) != CREC_OK)
        return rc;
    rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_READS, kf->tid, kf->reads_off, &s->reads, err);
    if (rc == CREC_OK) /* at the key frame's listing, even when starting at a point */
        rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_EVENTS, kf->tid,
                                  s->kfs[s->first].events_off, &s->events, err);
    if (rc != CREC_OK)
        return rc;
    s->tid = kf->tid;
    s->version = crec_fmt_reader_header(s->r)->version;
    if (!s->whole && (rc = rep_read_gaps(s, err)) != CREC_OK)
        return rc;
    if (s->alone && !s->whole) { /* where the thread was cut and switched in */
        rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_SEQ, kf->tid, s->kfs[s->first].seq_off,
                                  &s->seq, err);
        if (rc != CREC_OK)
            return rc;
        s->seq_ctx = (crec_fmt_seq_ctx){0, 0, 1};
        rep_seq_next(s);
        if (s->failed) {
            *err = s->err;
            return err->code;
        }
    }
    if (crec_emu_regs_set(s->cpu, &kf->regs, err) != CREC_OK)
        return err ? (int)err->code : CREC_ERR_EMU;
    crec_emu_cpu_set_icount(s->cpu, s->whole ? kf->global_icount : kf->thread_icount);
    s->next_kf = s->first + 1;
    s->next_cp = 0;
    while (s->next_cp < s->ncp && s->cps[s->next_cp].thread_icount <= kf->thread_icount)
        s->next_cp++;
    s->next_point = kf->thread_icount + s->point_every;
    return CREC_OK;
}

/*
 * Starting at a restart point inside the segment (crec_replay_from): after
 * the key frame's listing, the memory-map changes made before the point,
 * then the memory it restores.
 */
static int rep_seg_to_point(struct rep_seg *s)
{
    crec_replay_access_fn on_access = s->on_access;
    const struct crec_replay_exec *exec = s->exec;
    crec_fmt_event ev;
    int rc = CREC_OK;

    s->on_access = NULL; /* what happened before the point is not the run's */
    s->exec = NULL;
    while (rc == CREC_OK && rep_event_offset(s) < s->start->events_off &&
           (rc = rep_next_event(s, &ev)) == CREC_OK)
        if (ev.kind == CREC_FMT_K_MMAP && !(ev.u.mmap.flags & CREC_FMT_EV_LISTING))
            rc = rep_apply_mmap(s, &ev);
    s->on_access = on_access;
    s->exec = exec;
    if (rc != CREC_OK && !s->failed)
        rep_corrupt(s, "can't reach the restart point at instruction %" PRIu64 ": the "
                  "EVENTS stream of thread %u ends before offset %" PRIu64,
                  s->start->global_icount, s->tid, s->start->events_off);
    if (rc != CREC_OK)
        return rep_outcome(s);
    for (size_t i = 0; i < s->from_nlines; i++) /* lines no longer mapped don't matter */
        rep_write_line(s, s->from_lines[i], s->from_masks ? s->from_masks[i] : ~0ull,
                       s->from_values + 64 * i);
    return CREC_OK;
}

/* The first READS entry after a key frame may count hits of earlier segments. */
static int rep_seg_first_hits(struct rep_seg *s, crec_error *err)
{
    uint64_t before = s->start->hits_before;

    if (rep_next_hits(s) != CREC_OK) {
        *err = s->err;
        return err->code;
    }
    if (s->hits_left == UINT64_MAX)
        return CREC_OK;
    if (s->hits_left < before)
        return crec_error_corrupt(err, "key frame at instruction %" PRIu64 " carries %" PRIu64
                                       " hits, but the next read entry has only %" PRIu64,
                                  s->start->global_icount, before, s->hits_left);
    s->hits_left -= before;
    return CREC_OK;
}

/*
 * A recording that crec stopped (SIGINT, SIGTERM) ends with the key frame
 * of where the program was.  Before 2026-11-29 the recorder took its RIP
 * from Unicorn after a stop in a block hook, where it is stale: an
 * address in a block that ran before (emu/cpu.c, crec_emu_cpu_stop).  Such
 * a file is still verified: every register but RIP as recorded, and the
 * recorded RIP in one of the last two blocks begun.
 */
static int rep_stale_end_rip(const struct rep_seg *s, const crec_regs *last, const crec_regs *now)
{
    crec_regs same = *now;
    char what[300];

    if (!s->have_exit || s->exit.u.exit.how != CREC_FMT_EXIT_STOPPED)
        return 0;
    same.rip = last->rip;
    if (crec_regs_diff(last, &same, what, sizeof what))
        return 0;
    for (int i = 0; i < 2; i++)
        if (last->rip >= s->blocks_seen[i][0] &&
            last->rip - s->blocks_seen[i][0] < s->blocks_seen[i][1])
            return 1;
    return 0;
}

/* The registers now against the thread's last key frame, as its end. */
static void rep_check_last_regs(struct rep_seg *s, const crec_regs *now)
{
    const crec_fmt_keyframe *last = &s->kfs[s->nkf - 1];
    char what[300];

    if (s->alone && rep_ticount(s) != last->thread_icount) {
        rep_diverge(s, "thread %u ended after %" PRIu64 " of its instructions, the recording "
                       "after %" PRIu64, s->tid, rep_ticount(s), last->thread_icount);
        return;
    }
    if (crec_regs_diff(&last->regs, now, what, sizeof what) &&
        !rep_stale_end_rip(s, &last->regs, now)) {
        if (s->alone)
            rep_diverge(s, "at the end of thread %u: %s", s->tid, what);
        else
            rep_diverge(s, "at the end: %s", what);
        return;
    }
    s->keyframes_checked++;
}

/*
 * After the CPU stopped for good: the recording must end the same way, by
 * the EXIT event (the process ended in this thread) or, for one of several
 * threads, its THREAD exit record (it exited, or the process ended while
 * it lived).
 */
static void rep_seg_check_end(struct rep_seg *s, const struct crec_emu_stop *stop)
{
    crec_error err = {0};
    crec_fmt_event ev;
    crec_regs now;

    if (!s->have_exit && !s->thread_ended) {
        if (rep_next_non_mmap(s, &ev) != CREC_OK)
            return;
        if (ev.kind == CREC_FMT_K_THREAD && ev.u.thread.op == CREC_FMT_TH_EXIT && s->alone) {
            s->thread_ended = 1;
        } else if (ev.kind != CREC_FMT_K_EXIT) {
            if (stop->why != CREC_STOP_REQUESTED)
                rep_diverge(s, "the program stopped (%s) where the recording has %s",
                            stop->what[0] ? stop->what : "fault", event_name(ev.kind));
            else
                rep_diverge(s, "replay stopped where the recording has %s", event_name(ev.kind));
            return;
        } else {
            s->exit = ev;
            s->have_exit = 1;
        }
    }
    if (s->have_exit && s->exit.u.exit.how != CREC_FMT_EXIT_STATUS &&
        stop->why != CREC_STOP_REQUESTED && (uint64_t)stop->signo != s->exit.u.exit.value) {
        rep_diverge(s, "the program got signal %d, the recording ends with signal %" PRIu64,
                    stop->signo, s->exit.u.exit.value);
        return;
    }
    if (s->have_exit && (!s->alone || s->whole) &&
        crec_emu_cpu_icount(s->cpu) != s->exit.u.exit.global_icount) {
        rep_diverge(s, "the program ended after %" PRIu64 " instructions, the recording after %"
                       PRIu64, crec_emu_cpu_icount(s->cpu), s->exit.u.exit.global_icount);
        return;
    }
    if (crec_emu_regs_get(s->cpu, &now, &err) != CREC_OK) {
        rep_fail(s, &err);
        return;
    }
    rep_check_last_regs(s, &now);
}

/* A query run: on to exactly s->until instructions, or the recording's end. */
static int rep_seg_run_until(struct rep_seg *s)
{
    struct crec_emu_stop stop;
    crec_error err = {0};
    int rc;

    if (s->ended)
        return CREC_OK;
    s->stop_at = s->until;
    /* stopped (or started) right at a part's last key frame: going on
     * means going over the gap */
    if (s->next_kf > 0 && !s->jump_to && rep_part_end(s, s->next_kf - 1) &&
        crec_emu_cpu_icount(s->cpu) == s->kfs[s->next_kf - 1].thread_icount &&
        s->until > crec_emu_cpu_icount(s->cpu)) {
        if (s->until < s->kfs[s->next_kf].thread_icount)
            return CREC_OK; /* a time in the gap: the run stays at the part's end */
        s->jump_to = s->next_kf;
    }
    do {
        if (s->refill_at) { /* a block whose code was just copied in (lazy.c) */
            crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->refill_at);
            s->refill_at = 0;
        }
        if (s->jump_to) {
            size_t k = s->jump_to;
            s->jump_to = 0;
            if (rep_jump(s, k) != CREC_OK)
                return rep_outcome(s);
        }
        s->stopped_at_block = 0;
        rc = crec_emu_cpu_run_until(s->cpu, s->until, &s->reached, &stop, &err);
    } while (rc == CREC_OK && !s->failed && !s->diverged &&
             (s->refill_at || s->jump_to || (!s->reached && rep_signal_stopped(s, &stop))));
    if (rc == CREC_OK && s->stopped_at_block) /* a query reads RIP: set it now */
        crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->stopped_at_block);
    if (rc == CREC_OK && s->reached)
        rep_signal_at_stop(s);
    if (rc == CREC_OK)
        rc = crec_emu_cpu_error(s->cpu, &err); /* that write, if it failed */
    if (rc != CREC_OK)
        rep_fail(s, &err);
    s->ended = !s->reached; /* the program exited or faulted: nothing follows */
    return rep_outcome(s);
}

int rep_seg_resume(struct rep_seg *s, uint64_t until)
{
    if (s->failed || s->diverged)
        return rep_outcome(s);
    s->until = until;
    return rep_seg_run_until(s);
}

/* Everything before the CPU runs: the CPU, the key frame's registers and
 * memory map, the restart point's memory, the first READS entry. */
static int rep_seg_start(struct rep_seg *s);

int rep_seg_run_start(struct rep_seg *s, crec_error *err)
{
    int rc = rep_seg_start(s);

    if (rc != CREC_OK && err)
        *err = s->err;
    return rc;
}

static int rep_seg_start(struct rep_seg *s)
{
    crec_error err = {0};
    int rc = rep_seg_open(s, &err);

    if (rc != CREC_OK) {
        rep_fail(s, &err);
        return rc;
    }
    rc = rep_listing(s, s->first, 1);
    if (rc != CREC_OK && !s->failed)
        rep_corrupt(s, "the memory-map listing of the key frame at "
                    "instruction %" PRIu64 " can't be read", s->kfs[s->first].thread_icount);
    if (s->failed || s->diverged)
        return rep_outcome(s);
    if (s->start != &s->kfs[s->first] && rep_seg_to_point(s) != CREC_OK)
        return rep_outcome(s);
    if (s->failed || s->diverged)
        return rep_outcome(s);
    if (s->start != &s->kfs[s->first] && !s->query) { /* a part from the index: */
        if (rep_trk_open(s) != 0) { /* what it holds itself, tracked */
            crec_error_set(&err, CREC_ERR_NOMEM, "out of memory for the seeds of a part");
            rep_fail(s, &err);
            return rep_outcome(s);
        }
    }
    if ((rc = rep_seg_first_hits(s, &err)) != CREC_OK)
        rep_fail(s, &err);
    /* a run from the last key frame of a part goes on at the next part */
    if (!s->failed && s->start == &s->kfs[s->first] && rep_part_end(s, s->first) &&
        s->kfs[s->first].thread_icount < (s->query ? s->until : s->stop_at))
        rep_jump(s, s->first + 1);
    return rep_outcome(s);
}

/* Run the CPU until it stops for good: a cut inside a block where the
 * recording switched this thread out is not the end, the run goes on. */
static void rep_run_cpu(struct rep_seg *s, struct crec_emu_stop *stop)
{
    crec_error err = {0};

    for (;;) {
        if (s->refill_at) { /* a block whose code was just copied in (lazy.c) */
            crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->refill_at);
            s->refill_at = 0;
        }
        if (s->jump_to) {
            size_t k = s->jump_to;
            s->jump_to = 0;
            if (rep_jump(s, k) != CREC_OK)
                return;
        }
        if (s->seed_block) { /* a restart point passed: its seed, then its block */
            rep_pass_seed(s);
            crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->seed_block);
            s->seed_block = 0;
        }
        if (crec_emu_cpu_run(s->cpu, stop, &err) != CREC_OK) {
            rep_fail(s, &err);
            return;
        }
        if ((s->refill_at || s->jump_to || s->seed_block) && !s->failed && !s->diverged &&
            !s->meet_failed)
            continue;
        if (rep_signal_stopped(s, stop)) {
            s->stopped_at_block = 0;
            continue; /* in the handler now */
        }
        if (!s->cut_at || s->failed || s->diverged || stop->why != CREC_STOP_REQUESTED)
            return;
        if (crec_emu_cpu_icount(s->cpu) != s->cut_at)
            return;
        s->cut_at = 0;
        if (s->whole && crec_emu_cpu_icount(s->cpu) >= s->stop_at)
            return; /* the slice ends at the cut */
    }
}

int rep_seg_run(struct rep_seg *s)
{
    struct crec_emu_stop stop;

    if (rep_seg_start(s) != CREC_OK || s->failed || s->diverged)
        return rep_outcome(s);
    if (s->query)
        return rep_seg_run_until(s);
    rep_run_cpu(s, &stop);
    if (s->failed || s->diverged || s->meet_failed)
        return rep_outcome(s);
    if (s->points && s->pt_end != SIZE_MAX) /* it ends where the next part starts, at a */
        return rep_outcome(s);                /* restart point: rep_seg_meet */
    if (!s->is_last || s->truncated) {
        /* It must have reached and checked its last key frame. */
        if (s->next_kf <= s->end_kf)
            rep_diverge(s, "replay stopped before the key frame at instruction %" PRIu64,
                        s->kfs[s->end_kf].thread_icount);
        return CREC_OK;
    }
    rep_seg_check_end(s, &stop);
    return rep_outcome(s);
}

/* ---- the whole program: every thread in the recorded order ---------------- */

/* Exchange where the run stands in its streams with thread t's: a thread
 * switched out keeps its cursors and hit count, and gets them back. */
static void rep_swap_streams(struct rep_seg *s, struct rep_thread *t)
{
#define REP_SWAP(a, b)                                                                         \
    do {                                                                                       \
        __typeof__(a) tmp_ = (a);                                                              \
        (a) = (b);                                                                             \
        (b) = tmp_;                                                                            \
    } while (0)
    REP_SWAP(s->reads, t->reads);
    REP_SWAP(s->events, t->events);
    REP_SWAP(s->hits_left, t->hits_left);
    REP_SWAP(s->entry_off, t->entry_off);
    REP_SWAP(s->entry_hits, t->entry_hits);
    REP_SWAP(s->peek, t->peek);
    REP_SWAP(s->have_peek, t->have_peek);
    REP_SWAP(s->peek_off, t->peek_off);
    REP_SWAP(s->ev_off, t->ev_off);
    REP_SWAP(s->next_kf, t->next_kf);
    REP_SWAP(s->next_cp, t->next_cp);
#undef REP_SWAP
}

/* Keep the running thread's state while another one runs. */
static int rep_thread_save(struct rep_seg *s, struct rep_thread *t)
{
    crec_error err = {0};

    if (s->stopped_at_block) /* stopped in a block hook: RIP is stale */
        crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->stopped_at_block);
    s->stopped_at_block = 0;
    if (crec_emu_regs_get(s->cpu, &t->regs, &err) != CREC_OK) {
        rep_fail(s, &err);
        return err.code;
    }
    if (!t->xs && !(t->xs = crec_emu_xstate_new())) {
        crec_error_set(&err, CREC_ERR_NOMEM, "out of memory for thread %u's vector state", t->tid);
        rep_fail(s, &err);
        return err.code;
    }
    crec_emu_cpu_xstate_save(s->cpu, t->xs); /* the recording kept it per thread */
    rep_swap_streams(s, t); /* the run's are NULL after */
    return CREC_OK;
}

/* Give the CPU to thread t: where it stopped, or its first key frame. */
static int rep_thread_load(struct rep_seg *s, struct rep_thread *t)
{
    crec_error err = {0};
    int rc;

    s->tid = t->tid;
    s->kfs = t->kfs, s->nkf = t->nkf;
    s->cps = t->cps, s->ncp = t->ncp;
    s->first = 0, s->end_kf = t->nkf - 1;
    s->nkf_blocks = t->nkf - 1; /* its last key frame is checked at its end */
    if (t->started) {
        rep_swap_streams(s, t); /* the thread's are NULL after */
        if (crec_emu_regs_set(s->cpu, &t->regs, &err) != CREC_OK)
            rep_fail(s, &err);
        if (t->xs)
            crec_emu_cpu_xstate_load(s->cpu, t->xs);
        return rep_outcome(s);
    }
    /* it runs for the first time: from its first key frame, in the memory
     * that is there (its listing is the same map) */
    t->started = 1;
    crec_emu_cpu_xstate_forget(s->cpu); /* as at the recording's first key frame of it */
    s->start = &t->kfs[0];
    s->have_peek = 0;
    s->next_kf = 1;
    rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_READS, t->tid, t->kfs[0].reads_off, &s->reads,
                              &err);
    if (rc == CREC_OK)
        rc = crec_fmt_cursor_open(s->r, CREC_FMT_S_EVENTS, t->tid, t->kfs[0].events_off,
                                  &s->events, &err);
    if (rc == CREC_OK && crec_emu_regs_set(s->cpu, &t->kfs[0].regs, &err) != CREC_OK)
        rc = err.code;
    if (rc != CREC_OK) {
        rep_fail(s, &err);
        return rc;
    }
    if (rep_listing(s, 0, 0) != CREC_OK)
        return rep_outcome(s);
    if ((rc = rep_seg_first_hits(s, &err)) != CREC_OK)
        rep_fail(s, &err);
    /* a run from the last key frame of a part goes on at the next part */
    if (!s->failed && s->start == &s->kfs[s->first] && rep_part_end(s, s->first) &&
        s->kfs[s->first].thread_icount < (s->query ? s->until : s->stop_at))
        rep_jump(s, s->first + 1);
    return rep_outcome(s);
}

/* A thread that did not end in the run: as the recording left it. */
static void rep_thread_check_left(struct rep_seg *s, struct rep_thread *t)
{
    const crec_fmt_keyframe *last;
    char what[300];

    if (!t->started || t->ended || t->nkf == 0) /* a thread with no key frame never starts */
        return;
    last = &t->kfs[t->nkf - 1];
    if (crec_regs_diff(&last->regs, &t->regs, what, sizeof what)) {
        rep_diverge(s, "at the end, thread %u: %s", t->tid, what);
        return;
    }
    s->keyframes_checked++;
}

int rep_whole_run(struct rep_seg *s)
{
    struct crec_emu_stop stop = {0};
    struct rep_thread *cur;

    if (rep_seg_start(s) != CREC_OK || s->failed || s->diverged)
        return rep_outcome(s);
    cur = &s->threads[s->tid - 1];
    cur->started = 1;
    for (s->slice = 0; s->slice < s->nslices && !s->failed && !s->diverged; s->slice++) {
        const crec_fmt_slice *sl = &s->slices[s->slice];
        struct rep_thread *t = sl->tid >= 1 && sl->tid <= s->nthreads ? &s->threads[sl->tid - 1]
                                                                       : NULL;
        if (!t || !t->kfs || t->ended) {
            rep_corrupt(s, "the schedule runs thread %u, which has no key "
                      "frame left to run from", sl->tid);
            break;
        }
        if (t != cur) {
            if (rep_thread_save(s, cur) != CREC_OK || rep_thread_load(s, t) != CREC_OK)
                break;
            cur = t;
        }
        s->gbase = sl->start, s->tbase = sl->thread_start;
        s->stop_at = sl->start + sl->len;
        if (s->whole_until && s->whole_until < s->stop_at)
            s->stop_at = s->whole_until; /* a query run stops there, inside a block or not */
        if (s->whole_until && sl->start >= s->whole_until) {
            s->reached = sl->start == s->whole_until;
            break;
        }
        if (crec_emu_cpu_icount(s->cpu) != sl->start) {
            rep_corrupt(s, "the schedule starts thread %u at instruction %"
                      PRIu64 ", but %" PRIu64 " ran before it", sl->tid, sl->start,
                      crec_emu_cpu_icount(s->cpu));
            break;
        }
        if (sl->len == 0)
            continue;
        rep_run_cpu(s, &stop);
        if (s->whole_until && crec_emu_cpu_icount(s->cpu) == s->whole_until) {
            s->reached = 1; /* a query run got where it was going */
            rep_signal_at_stop(s);
            return rep_outcome(s);
        }
        if (s->failed || s->diverged || s->have_exit)
            break;
        if (s->thread_ended) { /* it exited in a syscall: its last key frame is here */
            crec_error err = {0};
            crec_regs now;
            s->thread_ended = 0;
            if (crec_emu_regs_get(s->cpu, &now, &err) != CREC_OK) {
                rep_fail(s, &err);
                break;
            }
            rep_check_last_regs(s, &now);
            cur->ended = 1;
            crec_emu_cpu_set_icount(s->cpu, crec_emu_cpu_icount(s->cpu)); /* forget its block */
        }
        if (crec_emu_cpu_icount(s->cpu) != s->stop_at && !cur->ended) {
            if (stop.why != CREC_STOP_REQUESTED && s->slice + 1 == s->nslices)
                break; /* the program ends with a fault: checked below */
            if (stop.why != CREC_STOP_REQUESTED)
                rep_diverge(s, "the program stopped (%s) where the recording goes on to "
                               "instruction %" PRIu64, stop.what[0] ? stop.what : "fault",
                            s->stop_at);
            else
                rep_diverge(s, "thread %u stopped at instruction %" PRIu64 " of the program, "
                               "not where the recording switched it out (%" PRIu64 ")",
                            sl->tid, crec_emu_cpu_icount(s->cpu), s->stop_at);
        }
    }
    if (s->failed || s->diverged || s->query)
        return rep_outcome(s);
    /* the thread that ran last ends the program; the others are as they were left */
    if (!cur->ended) {
        if (s->stopped_at_block)
            crec_emu_reg_set(s->cpu, CREC_EMU_RIP, s->stopped_at_block);
        rep_seg_check_end(s, &stop);
        cur->ended = 1;
    }
    for (size_t i = 0; i < s->nthreads && !s->diverged && !s->failed; i++)
        if (&s->threads[i] != cur)
            rep_thread_check_left(s, &s->threads[i]);
    return rep_outcome(s);
}

void rep_seg_close(struct rep_seg *s)
{
    /* a piece closes when it ends, and again with its session */
    crec_free(s->maps);
    crec_free(s->code_ok);
    s->maps = NULL, s->nmaps = s->capmaps = 0;
    s->code_ok = NULL, s->ncode_ok = s->capcode_ok = 0;
    crec_free(s->gaps);
    s->gaps = NULL, s->ngaps = 0;
    rep_lazy_free(s);
    crec_fmt_cursor_free(s->reads);
    crec_fmt_cursor_free(s->events);
    crec_fmt_cursor_free(s->seq);
    s->reads = s->events = s->seq = NULL;
    for (size_t i = 0; i < s->nthreads; i++) {
        crec_fmt_cursor_free(s->threads[i].reads);
        crec_fmt_cursor_free(s->threads[i].events);
        s->threads[i].reads = s->threads[i].events = NULL;
        crec_emu_xstate_free(s->threads[i].xs);
        s->threads[i].xs = NULL;
        if (s->owns_whole) {
            crec_free((void *)s->threads[i].kfs);
            crec_free((void *)s->threads[i].cps);
        }
    }
    if (s->owns_whole) {
        crec_free(s->threads);
        crec_free((void *)s->slices);
        s->threads = NULL;
        s->nthreads = 0;
    }
    crec_emu_cpu_free(s->cpu);
    s->cpu = NULL;
}
