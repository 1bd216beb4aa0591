/*
 * backtrace.c - the blocks that led to a point, and the call stack there
 * (back-tracing-execution): the last blocks before T, with loops collapsed
 * as they arrive ("block A..B repeated 1000 times"), and the shadow stack
 * of stack.c at T.  A crash's back-trace ends at the faulting instruction,
 * which never completed: it is where the recording ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

#define BT_MAX_PERIOD 8

struct bt {
    crec_backtrace *b;
    size_t last, cap;     /* keep `last` runs; room for cap */
    size_t pos;           /* blocks of the next turn of the last run seen so far */
    crec_frame *stack;    /* a copy of the stack as it is now */
    size_t n, capstack;
    int nomem;
};

static int same_block(const crec_bt_run *r, size_t i, uint64_t addr, uint32_t n)
{
    return r->addr[i] == addr && r->ninsns[i] == n;
}

/* Two runs of one block each, or whole turns, that form the same pattern? */
static void fold(struct bt *s)
{
    crec_backtrace *b = s->b;

    for (uint32_t p = 1; p <= BT_MAX_PERIOD; p++) {
        int ok = b->nruns >= 2 * (size_t)p;
        for (uint32_t i = 0; ok && i < 2 * p; i++)
            ok = b->runs[b->nruns - 2 * p + i].period == 1 && b->runs[b->nruns - 2 * p + i].reps == 1;
        for (uint32_t i = 0; ok && i < p; i++)
            ok = b->runs[b->nruns - 2 * p + i].addr[0] == b->runs[b->nruns - p + i].addr[0] &&
                 b->runs[b->nruns - 2 * p + i].ninsns[0] == b->runs[b->nruns - p + i].ninsns[0];
        if (!ok)
            continue;
        crec_bt_run r = {b->runs[b->nruns - 2 * p].t, p, 2, {0}, {0}};
        for (uint32_t i = 0; i < p; i++) {
            r.addr[i] = b->runs[b->nruns - 2 * p + i].addr[0];
            r.ninsns[i] = b->runs[b->nruns - 2 * p + i].ninsns[0];
        }
        b->nruns -= 2 * p;
        b->runs[b->nruns++] = r;
        s->pos = 0;
        return;
    }
}

static void add_single(struct bt *s, uint64_t t, uint64_t addr, uint32_t n)
{
    crec_backtrace *b = s->b;

    if (b->nruns == s->cap) { /* forget the oldest half beyond `last` */
        size_t drop = b->nruns - s->last;
        memmove(b->runs, b->runs + drop, (b->nruns - drop) * sizeof *b->runs);
        b->nruns -= drop;
    }
    b->runs[b->nruns++] = (crec_bt_run){t, 1, 1, {addr}, {n}};
    s->pos = 0;
    fold(s);
}

static int bt_block(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth, uint64_t t,
                    uint64_t addr, uint32_t n)
{
    struct bt *s = ctx;
    crec_backtrace *b = s->b;

    (void)x;
    if (depth + 1 > s->capstack) {
        size_t cap = 2 * (depth + 1);
        crec_frame *g = realloc(s->stack, cap * sizeof *g);
        if (!g) {
            s->nomem = 1;
            return 1;
        }
        s->stack = g, s->capstack = cap;
    }
    memcpy(s->stack, stack, (depth + 1) * sizeof *stack);
    s->n = depth + 1;
    if (b->nruns > 0) { /* does it go on with the loop of the last run? */
        crec_bt_run *r = &b->runs[b->nruns - 1];
        if (r->reps > 1 && same_block(r, (uint32_t)s->pos, addr, n)) {
            if (++s->pos == r->period) {
                r->reps++;
                s->pos = 0;
            }
            return 0;
        }
        if (r->reps > 1 && s->pos > 0) { /* a turn left half-way: its blocks stand alone */
            uint64_t a[BT_MAX_PERIOD], tt = t;
            uint32_t ni[BT_MAX_PERIOD];
            size_t k = s->pos;
            memcpy(a, r->addr, sizeof a);
            memcpy(ni, r->ninsns, sizeof ni);
            for (size_t i = 0; i < k; i++)
                tt -= ni[i];
            for (size_t i = 0; i < k; i++) {
                add_single(s, tt, a[i], ni[i]);
                tt += ni[i];
            }
        }
    }
    add_single(s, t, addr, n);
    return 0;
}

/*
 * The shadow stack changes at block starts, and the block at `at` is not
 * run: what the last block before it did (a call, a ret, a jump to another
 * function) is settled here, as stack.c would at the next block.  So a
 * crash on the first instruction of a function has that function on top,
 * and one just after a ret has the caller.
 */
static int settle_last(crec_recording *rec, crec_symtab *sym, struct bt *s, crec_error *err)
{
    crec_backtrace *b = s->b;
    const crec_bt_run *r;
    uint64_t last, next, t0 = crec_tell(rec), fn;
    crec_regs regs;
    int flow, rc;

    if (b->nruns == 0 || b->depth == 0)
        return CREC_OK;
    r = &b->runs[b->nruns - 1];
    flow = an_block_flow(sym, r->addr[r->period - 1], r->ninsns[r->period - 1], &last, &next);
    if ((rc = crec_seek(rec, b->at, err)) == CREC_OK)
        rc = crec_read_thread_registers(rec, b->tid, &regs, err);
    crec_seek(rec, t0, NULL);
    if (rc != CREC_OK)
        return rc;
    while (b->depth > 1 && b->stack[b->depth - 1].sp < regs.gpr[CREC_RSP])
        b->depth--; /* returned from, or unwound */
    fn = an_func_of(sym, regs.rip);
    if (!((flow == AN_FLOW_CALL && regs.rip != next) ||
          (flow == AN_FLOW_JMP && fn == regs.rip && an_func_of(sym, last) != regs.rip)))
        return CREC_OK;
    crec_frame *g = realloc(b->stack, (b->depth + 1) * sizeof *g);
    if (!g)
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    b->stack = g;
    g[b->depth] = (crec_frame){fn ? fn : regs.rip, b->at, regs.gpr[CREC_RSP],
                               flow == AN_FLOW_CALL ? next : 0, last, flow == AN_FLOW_JMP,
                               {regs.gpr[CREC_RDI], regs.gpr[CREC_RSI], regs.gpr[CREC_RDX],
                                regs.gpr[CREC_RCX], regs.gpr[CREC_R8], regs.gpr[CREC_R9]},
                               b->tid, 0};
    b->depth++;
    return CREC_OK;
}

int crec_backtrace_run(crec_recording *rec, crec_symtab *sym, uint64_t at, size_t last,
                       uint32_t tid, crec_backtrace **out, crec_error *err)
{
    struct bt s = {0};
    crec_calls_observer o = {.ctx = &s, .block = bt_block};
    uint64_t start;
    int rc;

    *out = NULL;
    if (at > crec_length(rec))
        return an_error(err, CREC_ERR_ARG, "time %llu is past the end of the recording (%llu "
                        "instructions)", (unsigned long long)at,
                        (unsigned long long)crec_length(rec));
    if (!tid)
        tid = crec_thread_at(rec, at);
    if ((rc = crec_thread_time(rec, tid, 0, &start, err)) != CREC_OK)
        return rc;
    if (start > at)
        return an_error(err, CREC_ERR_ARG, "thread %u has not started at %llu (it starts at "
                        "%llu)", tid, (unsigned long long)at, (unsigned long long)start);
    o.tid = tid;
    s.b = calloc(1, sizeof *s.b);
    s.last = last ? last : 1;
    s.cap = 2 * s.last + 2 * BT_MAX_PERIOD;
    if (!s.b || !(s.b->runs = calloc(s.cap, sizeof *s.b->runs))) {
        crec_backtrace_free(s.b);
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    }
    s.b->at = at;
    s.b->tid = tid;
    rc = crec_calls_run(rec, sym, start, at, &o, err);
    if (rc == CREC_OK && s.nomem)
        rc = an_error(err, CREC_ERR_NOMEM, "out of memory");
    if (rc != CREC_OK) {
        free(s.stack);
        crec_backtrace_free(s.b);
        return rc;
    }
    if (s.b->nruns > s.last) {
        size_t drop = s.b->nruns - s.last;
        memmove(s.b->runs, s.b->runs + drop, (s.b->nruns - drop) * sizeof *s.b->runs);
        s.b->nruns -= drop;
    }
    s.b->stack = s.stack;
    s.b->depth = s.n;
    rc = settle_last(rec, sym, &s, err);
    if (rc != CREC_OK) {
        crec_backtrace_free(s.b);
        return rc;
    }
    *out = s.b;
    return CREC_OK;
}

void crec_backtrace_free(crec_backtrace *b)
{
    if (!b)
        return;
    free(b->runs);
    free(b->stack);
    free(b);
}
