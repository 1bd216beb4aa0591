/*
 * qrun.c - query runs: one replay from a key frame to an exact instruction
 * count, reporting every memory access, for the index and the query engine
 * (index/, docs/QUERY.md).  No key-frame or end checks: a query run may cut
 * blocks differently (crec_emu_cpu_run_until adds a code hook).
 */
#include <inttypes.h>

#include "common/common.h"
#include "replayer/replayer_int.h"

struct crec_replay_qrun {
    struct rep_seg s;
};

int crec_replay_load_keyframes(crec_fmt_reader *r, crec_fmt_keyframe **out, size_t *n,
                               crec_error *err)
{
    return rep_load_keyframes(r, out, n, err);
}

/* A failed or diverged run as an error.  @return CREC_OK if it is neither. */
static int qrun_error(const crec_replay_qrun *q, crec_error *err)
{
    const struct rep_seg *s = &q->s;

    if (s->failed) {
        if (err)
            *err = s->err;
        return s->err.code;
    }
    if (s->diverged)
        return crec_error_set(err, CREC_ERR_DIVERGENCE, "replay diverged at instruction %" PRIu64
                              ": %s", s->div.icount, s->div.what);
    return CREC_OK;
}

int crec_replay_query(crec_fmt_reader *r, const crec_fmt_keyframe *kfs, size_t nkf,
                      size_t first, const crec_replay_from *from, uint64_t until,
                      const crec_replay_watch *w, crec_replay_qrun **out, crec_error *err)
{
    const crec_fmt_keyframe *start = from && from->point ? from->point : &kfs[first];
    crec_replay_qrun *q;
    struct rep_seg *s;

    *out = NULL;
    if (first >= nkf || until < start->thread_icount || start->thread_icount <
        kfs[first].thread_icount || (first + 1 < nkf && start->thread_icount >
        kfs[first + 1].thread_icount) || start->events_off < kfs[first].events_off)
        return crec_error_set(err, CREC_ERR_ARG, "bad query run: key frame %zu, from %" PRIu64
                              ", until %" PRIu64, first, start->thread_icount, until);
    q = crec_calloc(1, sizeof *q);
    if (!q)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory starting a query run");
    s = &q->s;
    s->owner = q;
    s->r = r;
    s->kfs = kfs;
    s->nkf = nkf;
    s->nkf_blocks = nkf;
    s->first = first;
    s->end_kf = nkf - 1;
    s->stop_at = until;
    s->until = until;
    s->query = 1;
    s->alone = rep_threads(r) > 1; /* one thread of several: its own time */
    s->start = start;
    if (from && from->point) {
        s->from_lines = from->lines;
        s->from_values = from->values;
        s->from_masks = from->masks;
        s->from_nlines = from->nlines;
    }
    if (w) {
        s->on_access = w->access;
        s->on_keyframe = w->keyframe;
        s->access_ctx = w->ctx;
        s->on_point = w->point_every ? w->point : NULL;
        s->point_every = w->point_every;
        s->exec = w->exec;
    }
    rep_seg_run(s);
    int rc = qrun_error(q, err);
    if (rc != CREC_OK) {
        crec_replay_qrun_free(q);
        return rc;
    }
    *out = q;
    return CREC_OK;
}

int crec_replay_whole_query(crec_fmt_reader *r, const crec_fmt_keyframe *kfs, size_t nkf,
                            uint64_t until, const crec_replay_watch *w, crec_replay_qrun **out,
                            crec_error *err)
{
    crec_replay_qrun *q;
    struct rep_seg *s;
    int rc;

    *out = NULL;
    if (nkf == 0 || until > kfs[nkf - 1].global_icount)
        return crec_error_set(err, CREC_ERR_ARG, "bad whole-program query run: until %" PRIu64,
                              until);
    q = crec_calloc(1, sizeof *q);
    if (!q)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    s = &q->s;
    s->owner = q;
    rc = rep_whole_open(s, r, kfs, nkf, NULL, 0, err);
    if (rc != CREC_OK) {
        crec_replay_qrun_free(q);
        return rc;
    }
    s->query = 1;
    s->whole_until = until ? until : UINT64_MAX;
    if (w) {
        s->on_access = w->access;
        s->access_ctx = w->ctx;
    }
    if (until == 0) { /* nothing runs: the state at the start */
        crec_error e2 = {0};
        s->whole_until = 0;
        if (rep_seg_run_start(s, &e2) != CREC_OK) {
            *err = e2;
            crec_replay_qrun_free(q);
            return e2.code;
        }
    } else {
        rep_whole_run(s);
    }
    rc = qrun_error(q, err);
    if (rc != CREC_OK) {
        crec_replay_qrun_free(q);
        return rc;
    }
    *out = q;
    return CREC_OK;
}

uint64_t crec_replay_qrun_own(const crec_replay_qrun *q, uint64_t icount)
{
    return icount - q->s.gbase + q->s.tbase;
}

int crec_replay_qrun_continue(crec_replay_qrun *q, uint64_t until, crec_error *err)
{
    uint64_t now = crec_emu_cpu_icount(q->s.cpu);

    if (until < now)
        return crec_error_set(err, CREC_ERR_ARG, "a query run at instruction %" PRIu64
                              " can't go back to %" PRIu64, now, until);
    rep_seg_resume(&q->s, until);
    return qrun_error(q, err);
}

uint64_t crec_replay_qrun_icount(const crec_replay_qrun *q)
{
    return crec_emu_cpu_icount(q->s.cpu);
}

uint64_t crec_replay_qrun_rip(crec_replay_qrun *q)
{
    uint64_t rip = crec_emu_reg_get(q->s.cpu, CREC_EMU_RIP);

    if (q->s.in_access) /* RIP is stale inside an atomic instruction */
        return crec_emu_cpu_access_rip(q->s.cpu, rip, q->s.access_addr);
    return rip;
}

uint64_t crec_replay_qrun_icount_at(crec_replay_qrun *q, uint64_t rip)
{
    return crec_emu_cpu_icount_at(q->s.cpu, rip);
}

void crec_replay_qrun_describe(crec_replay_qrun *q, uint64_t addr, char *buf, size_t size)
{
    crec_emu_cpu_describe(q->s.cpu, addr, buf, size);
}

int crec_replay_qrun_read(crec_replay_qrun *q, void *dst, uint64_t addr, uint64_t len)
{
    return crec_emu_mem_read(q->s.cpu, dst, addr, len);
}

int crec_replay_qrun_regs(crec_replay_qrun *q, crec_regs *r, crec_error *err)
{
    int rc = crec_emu_regs_get(q->s.cpu, r, err);

    if (rc == CREC_OK && q->s.rip_fix) /* Unicorn's RIP is stale in this callback */
        r->rip = q->s.rip_fix;
    return rc;
}

void crec_replay_qrun_free(crec_replay_qrun *q)
{
    if (!q)
        return;
    rep_seg_close(&q->s);
    crec_free(q);
}
