/*
 * window.c - a stretch of time around where gdb looks, known in full after
 * one run: the registers before every instruction of it, and every write
 * its instructions made.  gdb's `next`, `step` and their reverse forms are
 * single steps, each followed by reads of the registers and of the stack:
 * through the query API each read is a replay from the restart point
 * before it (tens of milliseconds).  A window costs about one such replay
 * and then answers every step inside it.
 *
 * Memory at a time t of the window is the memory at its start (read
 * through the query API, a 64-byte line at a time, when first asked for)
 * with the writes of the instructions before t laid over it.  A line the
 * kernel wrote inside the window (a syscall's buffer, a new mapping) is not
 * answered from the window: the caller asks the query API at t itself.
 */
#include <stdlib.h>
#include <string.h>

#include "gdb/gdb_int.h"

/* Instructions a window holds: most of them on the side gdb is going. */
#define WIN_AHEAD 192
#define WIN_BEHIND 64
#define WIN_LINES 64

struct wwrite {
    uint64_t t;       /* the instruction that made it */
    uint64_t addr;
    uint32_t len;     /* KERNEL writes: any length, value unknown */
    int kernel;
    uint8_t value[16];
};

struct wline {
    uint64_t addr;    /* line address; valid when state != 0 */
    int state;        /* 0 empty, 1 read, 2 never mapped */
    uint8_t b[64], k[64];
};

struct gdb_window {
    uint64_t lo, hi;  /* registers known for t in [lo, hi]; hi < lo: empty */
    crec_regs *regs;  /* regs[t - lo]: of the thread that runs the instruction at t */
    uint32_t *tids;   /* ... that thread */
    struct wwrite *w; /* in time order */
    size_t nw, capw;
    int wild;         /* a write we could not keep: memory is not answered */
    struct wline lines[WIN_LINES]; /* memory at lo */
};

gdb_window *gdb_window_new(void)
{
    gdb_window *w = calloc(1, sizeof *w);

    if (!w)
        return NULL;
    w->regs = calloc(WIN_AHEAD + WIN_BEHIND + 1, sizeof *w->regs);
    w->tids = calloc(WIN_AHEAD + WIN_BEHIND + 1, sizeof *w->tids);
    if (!w->regs || !w->tids) {
        gdb_window_free(w);
        return NULL;
    }
    w->hi = 0;
    w->lo = 1; /* empty */
    return w;
}

void gdb_window_free(gdb_window *w)
{
    if (!w)
        return;
    free(w->regs);
    free(w->tids);
    free(w->w);
    free(w);
}

struct fill {
    gdb_window *w;
    int failed;
};

static int fill_insn(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct fill *f = ctx;
    crec_error err = {0};

    (void)rip;
    if (t < f->w->lo || t > f->w->hi)
        return 0;
    f->w->tids[t - f->w->lo] = tid;
    if (crec_exec_regs(x, &f->w->regs[t - f->w->lo], &err) != CREC_OK) {
        f->failed = 1;
        return 1;
    }
    return 0;
}

static int fill_access(void *ctx, crec_exec *x, const crec_access *a)
{
    struct fill *f = ctx;
    gdb_window *w = f->w;
    struct wwrite *e;

    (void)x;
    if (a->kind == CREC_ACCESS_READ)
        return 0;
    if (w->nw == w->capw) {
        size_t cap = w->capw ? 2 * w->capw : 256;
        struct wwrite *n = realloc(w->w, cap * sizeof *n);
        if (!n) {
            w->wild = 1;
            return 0;
        }
        w->w = n;
        w->capw = cap;
    }
    e = &w->w[w->nw++];
    e->t = a->t;
    e->addr = a->addr;
    e->kernel = a->kind == CREC_ACCESS_KERNEL || !a->value || a->len > 16;
    e->len = a->len > UINT32_MAX ? UINT32_MAX : (uint32_t)a->len;
    if (a->kind == CREC_ACCESS_KERNEL && a->len == UINT64_MAX)
        w->wild = 1; /* the kernel wrote somewhere: memory comes from queries */
    if (!e->kernel)
        memcpy(e->value, a->value, a->len);
    return 0;
}

/* Fill the window around t, leaning backward (dir < 0) or forward. */
static int window_fill(gdb_window *w, crec_recording *rec, uint64_t t, int dir, crec_error *err)
{
    uint64_t end = crec_length(rec), before = dir < 0 ? WIN_AHEAD : WIN_BEHIND;
    uint64_t after = dir < 0 ? WIN_BEHIND : WIN_AHEAD;
    crec_observer obs = {0};
    struct fill f = {w, 0};
    int rc;

    if (t >= end)
        return -1; /* no instruction runs at the end: the query API answers */
    w->lo = t > before ? t - before : 0;
    w->hi = end - 1 - t > after ? t + after : end - 1;
    w->nw = 0;
    w->wild = 0;
    for (size_t i = 0; i < WIN_LINES; i++)
        w->lines[i].state = 0;
    obs.ctx = &f;
    obs.insn = fill_insn; /* every instruction: a code hook, but only for this stretch */
    obs.access = fill_access;
    obs.flags = CREC_EXEC_READS_MEMORY;
    rc = crec_exec_run(rec, w->lo, w->hi + 1, &obs, NULL, err);
    if (rc != CREC_OK || f.failed) {
        w->lo = 1, w->hi = 0;
        return -1;
    }
    return 0;
}

int gdb_window_regs(gdb_window *w, crec_recording *rec, uint64_t t, uint32_t tid, int dir,
                    crec_regs *r, crec_error *err)
{
    if (!w)
        return -1;
    if ((t < w->lo || t > w->hi) && window_fill(w, rec, t, dir, err) != 0)
        return -1;
    /* a thread's registers at t are those before its next instruction:
     * nothing of it runs in between */
    for (uint64_t k = t - w->lo; k <= w->hi - w->lo; k++)
        if (w->tids[k] == tid) {
            *r = w->regs[k];
            return 0;
        }
    return -1; /* it does not run again in the window: ask the query API */
}

/* The line holding addr, at the window's start. */
static struct wline *line_at_lo(gdb_window *w, crec_recording *rec, uint64_t addr)
{
    uint64_t base = addr & ~63ull;
    struct wline *l = &w->lines[(base >> 6) % WIN_LINES];
    crec_error err = {0};
    int src;

    if (l->state && l->addr == base)
        return l;
    l->addr = base;
    l->state = 0;
    if (crec_seek(rec, w->lo, &err) != CREC_OK)
        return NULL;
    if (crec_read_memory(rec, base, 64, l->b, l->k, &src, &err) != CREC_OK) {
        if (err.code != CREC_ERR_ARG)
            return NULL;
        memset(l->k, 0, 64);
        l->state = 2;
        return l;
    }
    l->state = 1;
    return l;
}

int gdb_window_line(gdb_window *w, crec_recording *rec, uint64_t t, uint64_t addr, uint8_t *b,
                    uint8_t *k)
{
    uint64_t base = addr & ~63ull;
    struct wline *l;

    if (!w || w->wild || t < w->lo || t > w->hi)
        return -1;
    for (size_t i = 0; i < w->nw && w->w[i].t < t; i++)
        if (w->w[i].kernel && w->w[i].addr < base + 64 && w->w[i].addr + w->w[i].len > base)
            return -1; /* the kernel wrote it: only a query knows */
    l = line_at_lo(w, rec, base);
    if (!l)
        return -1;
    memcpy(b, l->b, 64);
    memcpy(k, l->k, 64);
    for (size_t i = 0; i < w->nw && w->w[i].t < t; i++) {
        const struct wwrite *e = &w->w[i];
        for (uint32_t j = 0; j < e->len; j++)
            if (e->addr + j >= base && e->addr + j < base + 64) {
                b[e->addr + j - base] = e->value[j];
                k[e->addr + j - base] = 1;
            }
    }
    return 0;
}

