/*
 * query.c - the query engine behind crec_open/crec_read_memory/... (the
 * public API in include/crec.h; docs/QUERY.md explains the method).
 *
 * The value of byte X at time T:
 *   1. X in a code mapping: the code bytes;
 *   2. the latest segment at or before T that the index says touches X is
 *      replayed (to T, or to its end), watching X: if the guest loaded or
 *      stored X there, replay memory holds X's value; if the kernel (a
 *      syscall, a new mapping) wrote X last, replay memory does not, and
 *      only a snapshot taken after that write and at or before T knows it;
 *      if the segment did not touch X itself (lines are 64 bytes), go on
 *      to the previous touching segment;
 *   3. when no segment touched X, the newest snapshot at or before T that
 *      holds X's page (a snapshot holds every page written since the one
 *      before, so its content is X's at the snapshot and still at T);
 *   4. otherwise "unknown" (??): never a guessed value.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unicorn/unicorn.h>

#include "common/common.h"
#include "emu/emu.h"
#include "index/index.h"
#include "index/index_int.h"
#include "replayer/replayer.h"

#define PAGE 4096ull

/* ---- opening ------------------------------------------------------------- */

static int cmp_snap(const void *a, const void *b)
{
    const struct qx_snap_page *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->icount < y->icount ? -1 : x->icount > y->icount;
}

static int cmp_range(const void *a, const void *b)
{
    const struct qx_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int load_snapshots(crec_recording *rec, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, cap = 0;
    int kind, rc;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_SNAPSHOTS, 0, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_snapshot s = {0};
        if (kind != CREC_FMT_K_SNAPSHOT) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the SNAPSHOTS stream", kind);
            break;
        }
        if ((rc = crec_fmt_snap_decode(body, blen, &s, err)) != CREC_OK)
            break;
        for (size_t i = 0; i < s.npages; i++) {
            if (rec->nsnap == cap) {
                cap = cap ? 2 * cap : 1024;
                struct qx_snap_page *p = crec_realloc(rec->snap, cap * sizeof *p);
                if (!p) {
                    crec_fmt_snapshot_clear(&s);
                    crec_fmt_cursor_free(c);
                    return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
                }
                rec->snap = p;
            }
            rec->snap[rec->nsnap].addr = s.pages[i].addr;
            rec->snap[rec->nsnap].icount = s.global_icount;
            rec->snap[rec->nsnap].blob = s.pages[i].blob;
            rec->nsnap++;
        }
        crec_fmt_snapshot_clear(&s);
    }
    crec_fmt_cursor_free(c);
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = CREC_OK;
    if (rec->nsnap)
        qsort(rec->snap, rec->nsnap, sizeof *rec->snap, cmp_snap);
    return rc;
}

static int load_code(crec_recording *rec, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, cap = 0;
    int kind, rc;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_CODE, 0, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_code cd;
        if (kind != CREC_FMT_K_CODE) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the CODE stream", kind);
            break;
        }
        if ((rc = crec_fmt_code_decode(body, blen, &cd, err)) != CREC_OK)
            break;
        if (rec->ncode == cap) {
            cap = cap ? 2 * cap : 16;
            struct qx_code *p = crec_realloc(rec->code, cap * sizeof *p);
            if (!p) {
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
                break;
            }
            rec->code = p;
        }
        rec->code[rec->ncode].addr = cd.addr;
        rec->code[rec->ncode].len = cd.len;
        rec->code[rec->ncode].blob = cd.blob;
        rec->code[rec->ncode].bytes = NULL;
        rec->ncode++;
    }
    crec_fmt_cursor_free(c);
    return rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED ? CREC_OK : rc;
}

static int add_range(crec_recording *rec, uint64_t a, uint64_t len, size_t *cap)
{
    if (len == 0)
        return 0;
    if (rec->nmapped == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        struct qx_range *p = crec_realloc(rec->mapped, *cap * sizeof *p);
        if (!p)
            return -1;
        rec->mapped = p;
    }
    rec->mapped[rec->nmapped].start = a;
    rec->mapped[rec->nmapped].end = a + len;
    rec->nmapped++;
    return 0;
}

/* Scan the events: every range ever mapped, and when each syscall ran. */
static int load_events(crec_recording *rec, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, mcap = 0, scap = 0;
    int kind, rc;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_EVENTS, rec->kfs[0].tid, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_event ev;
        if (kind != CREC_FMT_K_SYSCALL && kind != CREC_FMT_K_MMAP)
            continue;
        if ((rc = crec_fmt_ev_decode(kind, body, blen, &ev, err)) != CREC_OK)
            break;
        if (kind == CREC_FMT_K_MMAP && ev.u.mmap.op != CREC_FMT_MM_UNMAP) {
            int bad = add_range(rec, ev.u.mmap.addr, ev.u.mmap.len, &mcap);
            if (ev.u.mmap.op == CREC_FMT_MM_REMAP)
                bad |= add_range(rec, ev.u.mmap.addr2, ev.u.mmap.len2, &mcap);
            if (bad) {
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
                break;
            }
        } else if (kind == CREC_FMT_K_SYSCALL) {
            if (rec->nsyscalls == scap) {
                scap = scap ? 2 * scap : 256;
                uint64_t *p = crec_realloc(rec->syscalls, scap * sizeof *p);
                if (!p) {
                    rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
                    break;
                }
                rec->syscalls = p;
            }
            rec->syscalls[rec->nsyscalls++] = ev.u.sys.icount;
        }
    }
    crec_fmt_cursor_free(c);
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = CREC_OK;
    if (rc == CREC_OK && rec->nmapped) { /* sort and merge */
        size_t k = 0;
        qsort(rec->mapped, rec->nmapped, sizeof *rec->mapped, cmp_range);
        for (size_t i = 1; i < rec->nmapped; i++) {
            if (rec->mapped[i].start <= rec->mapped[k].end) {
                if (rec->mapped[i].end > rec->mapped[k].end)
                    rec->mapped[k].end = rec->mapped[i].end;
            } else {
                rec->mapped[++k] = rec->mapped[i];
            }
        }
        rec->nmapped = k + 1;
    }
    return rc;
}

int crec_open(const char *path, unsigned flags, crec_recording **out, crec_error *err)
{
    crec_recording *rec;
    int rc;

    *out = NULL;
    rec = crec_calloc(1, sizeof *rec);
    if (!rec)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    rec->flags = flags;
    rec->path = crec_malloc(strlen(path) + 1);
    if (!rec->path) {
        crec_free(rec);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    }
    strcpy(rec->path, path);
    rc = crec_fmt_reader_open(path, &rec->r, err);
    if (rc == CREC_OK)
        rc = crec_replay_load_keyframes(rec->r, &rec->kfs, &rec->nkf, err);
    if (rc == CREC_OK) {
        rec->end = rec->kfs[rec->nkf - 1].global_icount;
        rc = load_snapshots(rec, err);
    }
    if (rc == CREC_OK)
        rc = load_code(rec, err);
    if (rc == CREC_OK)
        rc = load_events(rec, err);
    if (rc != CREC_OK) {
        crec_close(rec);
        return rc;
    }
    *out = rec;
    return CREC_OK;
}

void crec_close(crec_recording *rec)
{
    if (!rec)
        return;
    crec_idx_free(rec->ix);
    for (size_t i = 0; i < rec->ncode; i++)
        crec_free(rec->code[i].bytes);
    crec_free(rec->code);
    crec_free(rec->snap);
    crec_free(rec->mapped);
    crec_free(rec->syscalls);
    crec_free(rec->kfs);
    crec_fmt_reader_free(rec->r);
    crec_free(rec->path);
    crec_free(rec);
}

uint64_t crec_length(const crec_recording *rec)
{
    return rec->end;
}

int crec_seek(crec_recording *rec, uint64_t t, crec_error *err)
{
    if (t > rec->end)
        return crec_error_set(err, CREC_ERR_ARG, "time %" PRIu64 " is past the end of the "
                              "recording (%" PRIu64 " instructions)", t, rec->end);
    rec->t = t;
    return CREC_OK;
}

uint64_t crec_tell(const crec_recording *rec)
{
    return rec->t;
}

int crec_step(crec_recording *rec, int64_t n, crec_error *err)
{
    if (n < 0 && (uint64_t)(-(n + 1)) + 1 > rec->t)
        return crec_error_set(err, CREC_ERR_ARG, "can't step back %" PRId64 " instructions "
                              "from %" PRIu64, -n, rec->t);
    return crec_seek(rec, rec->t + (uint64_t)n, err);
}

static int ensure_index(crec_recording *rec, crec_error *err)
{
    if (rec->ix)
        return CREC_OK;
    return crec_idx_load_or_build(rec->path, rec->kfs, rec->nkf, &rec->ix, &rec->index_built,
                                  err);
}

int crec_index_info(crec_recording *rec, uint64_t *index_bytes, uint64_t *trace_bytes,
                    int *built, crec_error *err)
{
    char ipath[4096];
    struct stat st;
    int rc = ensure_index(rec, err);

    if (rc != CREC_OK)
        return rc;
    snprintf(ipath, sizeof ipath, "%s.idx", rec->path);
    *index_bytes = stat(ipath, &st) == 0 ? (uint64_t)st.st_size : 0;
    *trace_bytes = stat(rec->path, &st) == 0 ? (uint64_t)st.st_size : 0;
    *built = rec->index_built;
    return CREC_OK;
}

/* ---- helpers ------------------------------------------------------------- */

/* The segment holding time t: the last key frame at or before it. */
static size_t seg_of(const crec_recording *rec, uint64_t t)
{
    size_t a = 0, b = rec->nkf - 1; /* segments are 0 .. nkf-2 */

    if (b == 0)
        return 0;
    b--; /* last segment */
    while (a < b) {
        size_t m = a + (b - a + 1) / 2;
        if (rec->kfs[m].global_icount <= t)
            a = m;
        else
            b = m - 1;
    }
    return a;
}

/* The newest snapshot page of `page` at or before t, or NULL. */
static const struct qx_snap_page *snap_find(const crec_recording *rec, uint64_t page, uint64_t t)
{
    size_t a = 0, b = rec->nsnap;
    const struct qx_snap_page *best = NULL;

    while (a < b) { /* first entry > (page, t) */
        size_t m = a + (b - a) / 2;
        const struct qx_snap_page *p = &rec->snap[m];
        if (p->addr < page || (p->addr == page && p->icount <= t))
            a = m + 1;
        else
            b = m;
    }
    if (a > 0 && rec->snap[a - 1].addr == page)
        best = &rec->snap[a - 1];
    return best;
}

static int snap_byte(crec_recording *rec, const struct qx_snap_page *p, uint64_t addr,
                     uint8_t *out, crec_error *err)
{
    uint8_t *data;
    size_t len;
    int rc = crec_fmt_blob_get(rec->r, &p->blob, &data, &len, err);

    if (rc != CREC_OK)
        return rc;
    if (addr - p->addr >= len) {
        crec_free(data);
        return crec_error_corrupt(err, "snapshot page at 0x%" PRIx64 " holds %zu bytes",
                                  p->addr, len);
    }
    *out = data[addr - p->addr];
    crec_free(data);
    return CREC_OK;
}

static int ever_mapped(const crec_recording *rec, uint64_t addr, size_t len)
{
    for (size_t i = 0; i < rec->nmapped; i++)
        if (rec->mapped[i].start < addr + len && addr < rec->mapped[i].end)
            return 1;
    for (size_t i = 0; i < rec->nsnap; i++)
        if (rec->snap[i].addr < addr + len && addr < rec->snap[i].addr + PAGE)
            return 1;
    return 0;
}

/* Per-byte state of the bytes a query run watches. */
struct track {
    uint64_t addr;
    size_t len;
    uint8_t *st;   /* 0 no access, 'r' loaded, 'w' stored, 'k' kernel wrote */
    uint64_t *kt;  /* 'k': when */
};

static void track_access(void *ctx, crec_emu_cpu *cpu, int kind, uint64_t a, uint64_t l)
{
    struct track *t = ctx;
    uint64_t lo, hi;

    if (a >= t->addr + t->len || (l != UINT64_MAX && a + l <= t->addr))
        return;
    lo = a > t->addr ? a - t->addr : 0;
    hi = l == UINT64_MAX || a + l > t->addr + t->len ? t->len : a + l - t->addr;
    for (uint64_t i = lo; i < hi; i++) {
        t->st[i] = (uint8_t)kind;
        if (kind == 'k')
            t->kt[i] = crec_emu_cpu_icount(cpu);
    }
}

static int run_to(crec_recording *rec, size_t first, uint64_t until, crec_replay_access_fn fn,
                  void *ctx, crec_replay_qrun **q, crec_error *err)
{
    int rc = crec_replay_query(rec->r, rec->kfs, rec->nkf, first, until, fn, ctx, q, err);

    if (rc == CREC_OK && crec_emu_cpu_icount(crec_replay_qrun_cpu(*q)) != until) {
        rc = crec_error_set(err, CREC_ERR_DIVERGENCE, "replay stopped at instruction %" PRIu64
                            ", not %" PRIu64, crec_emu_cpu_icount(crec_replay_qrun_cpu(*q)),
                            until);
        crec_replay_qrun_free(*q);
        *q = NULL;
    }
    return rc;
}

static int code_bytes(crec_recording *rec, uint64_t addr, size_t len, uint8_t *buf,
                      crec_error *err)
{
    for (size_t i = 0; i < rec->ncode; i++) {
        struct qx_code *c = &rec->code[i];
        if (addr < c->addr || addr + len > c->addr + c->len)
            continue;
        if (!c->bytes) {
            size_t blen;
            int rc = crec_fmt_blob_get(rec->r, &c->blob, &c->bytes, &blen, err);
            if (rc != CREC_OK)
                return rc;
            if (blen != c->len) {
                crec_free(c->bytes);
                c->bytes = NULL;
                return crec_error_corrupt(err, "code blob of 0x%" PRIx64 " has %zu bytes",
                                          c->addr, blen);
            }
        }
        memcpy(buf, c->bytes + (addr - c->addr), len);
        return 1;
    }
    return 0;
}

/* Settle the bytes a run saw; count those still open in *open. */
static int settle(crec_recording *rec, struct track *tr, crec_emu_cpu *cpu, uint64_t t,
                  uint8_t *buf, uint8_t *known, uint8_t *done, int *nsrc, crec_error *err)
{
    for (size_t i = 0; i < tr->len; i++) {
        uint64_t a = tr->addr + i;
        if (done[i] || !tr->st[i])
            continue;
        done[i] = 1;
        if (tr->st[i] == 'k') {
            const struct qx_snap_page *p = snap_find(rec, a & ~(PAGE - 1), t);
            if (p && p->icount >= tr->kt[i]) {
                int rc = snap_byte(rec, p, a, &buf[i], err);
                if (rc != CREC_OK)
                    return rc;
                known[i] = 1;
                nsrc[CREC_SRC_SNAPSHOT]++;
            } else {
                nsrc[CREC_SRC_UNKNOWN]++;
            }
        } else if (crec_emu_mem_read(cpu, &buf[i], a, 1) == 0) {
            known[i] = 1;
            nsrc[CREC_SRC_REPLAY]++;
        } else {
            nsrc[CREC_SRC_UNKNOWN]++;
        }
    }
    return CREC_OK;
}

static int read_at(crec_recording *rec, uint64_t t, uint64_t addr, size_t len, uint8_t *buf,
                   uint8_t *known, int *source, crec_error *err)
{
    int nsrc[4] = {0}, rc = CREC_OK, best = 0;
    struct track tr = {addr, len, NULL, NULL};
    uint8_t *done = NULL;
    crec_replay_qrun *q = NULL;

    memset(buf, 0, len);
    memset(known, 0, len);
    if (len == 0 || addr + len < addr)
        return crec_error_set(err, CREC_ERR_ARG, "bad range");
    if (t > rec->end)
        return crec_error_set(err, CREC_ERR_ARG, "time %" PRIu64 " is past the end of the "
                              "recording (%" PRIu64 " instructions)", t, rec->end);
    rc = code_bytes(rec, addr, len, buf, err);
    if (rc < 0 || rc > 1)
        return rc;
    if (rc == 1) {
        memset(known, 1, len);
        *source = CREC_SRC_CODE;
        return CREC_OK;
    }
    if (!ever_mapped(rec, addr, len))
        return crec_error_set(err, CREC_ERR_ARG, "address 0x%" PRIx64 " was never mapped",
                              addr);
    tr.st = crec_calloc(len, 1);
    tr.kt = crec_calloc(len, sizeof *tr.kt);
    done = crec_calloc(len, 1);
    if (!tr.st || !tr.kt || !done) {
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (rec->flags & CREC_OPEN_NO_INDEX) {
        rc = run_to(rec, 0, t, track_access, &tr, &q, err);
        if (rc == CREC_OK)
            rc = settle(rec, &tr, crec_replay_qrun_cpu(q), t, buf, known, done, nsrc, err);
        crec_replay_qrun_free(q);
    } else if ((rc = ensure_index(rec, err)) == CREC_OK && rec->nkf > 1) {
        size_t open = len;
        for (size_t c = seg_of(rec, t) + 1; c-- > 0 && open > 0 && rc == CREC_OK;) {
            uint64_t seg_end = rec->kfs[c + 1].global_icount;
            uint64_t stop = t < seg_end ? t : seg_end;
            int snap_ok = 1;
            if (!crec_idx_touches(rec->ix, c, addr, len, 0))
                continue;
            /* every open byte is in a snapshot taken after this segment */
            for (size_t i = 0; i < len && snap_ok; i++) {
                const struct qx_snap_page *p;
                if (done[i])
                    continue;
                p = snap_find(rec, (addr + i) & ~(PAGE - 1), t);
                snap_ok = p && p->icount >= seg_end;
            }
            if (snap_ok)
                break;
            memset(tr.st, 0, len);
            rc = run_to(rec, c, stop, track_access, &tr, &q, err);
            if (rc == CREC_OK)
                rc = settle(rec, &tr, crec_replay_qrun_cpu(q), t, buf, known, done, nsrc, err);
            crec_replay_qrun_free(q);
            q = NULL;
            open = 0;
            for (size_t i = 0; i < len; i++)
                open += !done[i];
        }
    }
    /* bytes no segment touched: the newest snapshot at or before t */
    for (size_t i = 0; i < len && rc == CREC_OK; i++) {
        const struct qx_snap_page *p;
        if (done[i])
            continue;
        p = snap_find(rec, (addr + i) & ~(PAGE - 1), t);
        if (p) {
            rc = snap_byte(rec, p, addr + i, &buf[i], err);
            known[i] = 1;
            nsrc[CREC_SRC_SNAPSHOT]++;
        } else {
            nsrc[CREC_SRC_UNKNOWN]++;
        }
    }
    for (int s = 1; s < 4; s++)
        if (nsrc[s] > nsrc[best])
            best = s;
    *source = best;
out:
    crec_free(tr.st);
    crec_free(tr.kt);
    crec_free(done);
    return rc;
}

int crec_read_memory(crec_recording *rec, uint64_t addr, size_t len, uint8_t *buf,
                     uint8_t *known, int *source, crec_error *err)
{
    uint8_t *k = known ? known : crec_malloc(len ? len : 1);
    int src, rc;

    if (!k)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    rc = read_at(rec, rec->t, addr, len, buf, k, &src, err);
    if (source)
        *source = src;
    if (!known)
        crec_free(k);
    return rc;
}

int crec_read_registers(crec_recording *rec, crec_regs *regs, crec_error *err)
{
    crec_replay_qrun *q = NULL;
    size_t s = seg_of(rec, rec->t);
    int rc;

    for (size_t i = 0; i < rec->nkf; i++)
        if (rec->kfs[i].global_icount == rec->t) {
            *regs = rec->kfs[i].regs;
            return CREC_OK;
        }
    rc = run_to(rec, s, rec->t, NULL, NULL, &q, err);
    if (rc == CREC_OK && crec_emu_regs_get(crec_replay_qrun_cpu(q), regs) != CREC_OK)
        rc = crec_error_set(err, CREC_ERR_EMU, "can't read the registers");
    crec_replay_qrun_free(q);
    return rc;
}

int crec_syscall_time(crec_recording *rec, uint64_t n, uint64_t *t, crec_error *err)
{
    if (n < 1 || n > rec->nsyscalls)
        return crec_error_set(err, CREC_ERR_ARG, "the recording has %zu syscalls, not %" PRIu64,
                              rec->nsyscalls, n);
    /* a SYSCALL record's icount counts the syscall instruction itself */
    *t = rec->syscalls[n - 1] ? rec->syscalls[n - 1] - 1 : 0;
    return CREC_OK;
}

int crec_lookup_symbol(crec_recording *rec, const char *name, uint64_t *addr, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, nlen = strlen(name);
    int kind, rc, found = 0;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_SYMBOLS, 0, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while (!found && (rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_symbol s;
        if (kind != CREC_FMT_K_SYMBOL || crec_fmt_sym_decode(body, blen, &s, NULL) != CREC_OK)
            continue;
        if (s.name_len != nlen || memcmp(s.name, name, nlen) != 0)
            continue;
        for (size_t i = 0; i < rec->ncode; i++)
            if (memcmp(&rec->code[i].blob, &s.blob, sizeof s.blob) == 0) {
                *addr = rec->code[i].addr + s.addr;
                found = 1;
                break;
            }
    }
    crec_fmt_cursor_free(c);
    if (found)
        return CREC_OK;
    if (rc != CREC_OK && rc != CREC_ERR_NOTFOUND && rc != CREC_ERR_TRUNCATED)
        return rc;
    return crec_error_set(err, CREC_ERR_NOTFOUND, "no symbol '%s' in the recording", name);
}

/* ---- watching a range ---------------------------------------------------- */

struct watch {
    crec_recording *rec;
    uint64_t addr;
    size_t len;
    uint8_t cur[64], curk[64];
    int have_store;            /* a store to the range is pending */
    uint64_t st_t, st_rip;
    uint8_t st_mask[64];
    char st_insn[160];
    int have_kernel;           /* a kernel write is pending its value */
    uint64_t k_t;
    int (*fn)(void *ctx, const crec_change *c);
    void *ctx;
    int stopped;
};

static void watch_emit(struct watch *w, uint64_t t, uint64_t rip, const char *insn)
{
    crec_change c = {.t = t, .rip = rip, .value = w->cur, .known = w->curk, .len = w->len};

    snprintf(c.insn, sizeof c.insn, "%s", insn);
    if (!w->stopped && w->fn(w->ctx, &c))
        w->stopped = 1;
}

static void watch_flush(struct watch *w, crec_emu_cpu *cpu)
{
    if (w->have_store) {
        int changed = 0;
        w->have_store = 0;
        for (size_t i = 0; i < w->len; i++) {
            uint8_t b;
            if (!w->st_mask[i] || crec_emu_mem_read(cpu, &b, w->addr + i, 1) != 0)
                continue;
            if (!w->curk[i] || w->cur[i] != b)
                changed = 1;
            w->cur[i] = b, w->curk[i] = 1;
        }
        if (changed)
            watch_emit(w, w->st_t, w->st_rip, w->st_insn);
    }
}

static void watch_kernel_emit(struct watch *w)
{
    if (w->have_kernel) {
        w->have_kernel = 0;
        watch_emit(w, w->k_t, 0, "(the kernel: a syscall or a new mapping)");
    }
}

static void watch_access(void *ctx, crec_emu_cpu *cpu, int kind, uint64_t a, uint64_t l)
{
    struct watch *w = ctx;
    uint64_t lo, hi;

    watch_flush(w, cpu);
    if (a >= w->addr + w->len || (l != UINT64_MAX && a + l <= w->addr))
        return;
    lo = a > w->addr ? a - w->addr : 0;
    hi = l == UINT64_MAX || a + l > w->addr + w->len ? w->len : a + l - w->addr;
    if (kind == 'k') {
        watch_kernel_emit(w);
        for (uint64_t i = lo; i < hi; i++)
            w->curk[i] = 0;
        w->have_kernel = 1;
        w->k_t = crec_emu_cpu_icount(cpu);
        return;
    }
    if (kind == 'r') {
        for (uint64_t i = lo; i < hi; i++)
            if (!w->curk[i] && crec_emu_mem_read(cpu, &w->cur[i], w->addr + i, 1) == 0)
                w->curk[i] = 1;
        watch_kernel_emit(w);
        return;
    }
    watch_kernel_emit(w);
    uint64_t rip = crec_emu_reg_get(cpu, UC_X86_REG_RIP);
    w->have_store = 1;
    w->st_rip = rip;
    w->st_t = crec_emu_cpu_icount_at(cpu, rip) + 1;
    crec_emu_cpu_describe(cpu, rip, w->st_insn, sizeof w->st_insn);
    memset(w->st_mask, 0, sizeof w->st_mask);
    for (uint64_t i = lo; i < hi; i++)
        w->st_mask[i] = 1;
}

int crec_watch(crec_recording *rec, uint64_t addr, size_t len,
               int (*fn)(void *ctx, const crec_change *c), void *ctx, crec_error *err)
{
    struct watch w;
    int src, rc;

    if (len < 1 || len > 64)
        return crec_error_set(err, CREC_ERR_ARG, "watch 1 to 64 bytes, not %zu", len);
    memset(&w, 0, sizeof w);
    w.rec = rec, w.addr = addr, w.len = len, w.fn = fn, w.ctx = ctx;
    rc = read_at(rec, 0, addr, len, w.cur, w.curk, &src, err);
    if (rc != CREC_OK)
        return rc;
    watch_emit(&w, 0, 0, "(initial)");
    if (src == CREC_SRC_CODE) /* code is not watched */
        return CREC_OK;
    if ((rc = ensure_index(rec, err)) != CREC_OK)
        return rc;
    for (size_t c = 0; c + 1 < rec->nkf && !w.stopped; c++) {
        crec_replay_qrun *q = NULL;
        if (!crec_idx_touches(rec->ix, c, addr, len, 1))
            continue;
        rc = run_to(rec, c, rec->kfs[c + 1].global_icount, watch_access, &w, &q, err);
        if (rc == CREC_OK) {
            watch_flush(&w, crec_replay_qrun_cpu(q));
            watch_kernel_emit(&w);
        }
        crec_replay_qrun_free(q);
        if (rc != CREC_OK)
            return rc;
    }
    return CREC_OK;
}
