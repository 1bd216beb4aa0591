/*
 * find.c - `crec find`: the next or previous time at which a condition
 * holds (conditional-tracing's triggers).
 *
 * Each kind of condition takes the cheapest way through the recording:
 *   - syscall: the list of syscalls, no replay at all;
 *   - enter FUNC, exec ADDR: a replay with a bounded hook on one address
 *     (free elsewhere); backwards, one restart interval at a time, newest
 *     first, stopping at the first that has a hit;
 *   - leave FUNC: the shadow call stack (stack.c);
 *   - an expression that reads one fixed address and no register: it can
 *     only change where that address is written, so crec_watch replays just
 *     the spans the index says store to it;
 *   - any other expression: evaluated before every instruction.
 * An expression is found where it becomes true: true at t, false at t-1.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

enum { C_ENTER, C_LEAVE, C_EXEC, C_SYSCALL, C_EXPR };

struct crec_cond {
    int kind;
    uint64_t addr;       /* C_ENTER, C_LEAVE, C_EXEC */
    uint64_t nr;         /* C_SYSCALL */
    crec_expr *e;        /* C_EXPR */
    crec_range mem;      /* ... its one fixed address, if is_mem */
    int is_mem;
    crec_symtab *sym;
};

static int word(const char *text, const char *w, const char **rest)
{
    size_t n = strlen(w);

    if (strncmp(text, w, n) != 0 || (text[n] != ' ' && text[n] != '\t'))
        return 0;
    for (*rest = text + n; **rest == ' ' || **rest == '\t'; (*rest)++)
        ;
    return 1;
}

int crec_cond_parse(crec_symtab *sym, const char *text, crec_cond **out, crec_error *err)
{
    crec_cond *c = calloc(1, sizeof *c);
    const char *rest;
    int rc = CREC_OK;

    *out = NULL;
    if (!c)
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    c->sym = sym;
    while (*text == ' ')
        text++;
    if (word(text, "enter", &rest) || word(text, "exec", &rest) || word(text, "leave", &rest)) {
        c->kind = text[1] == 'n' ? C_ENTER : text[1] == 'x' ? C_EXEC : C_LEAVE;
        rc = crec_symtab_resolve(sym, rest, &c->addr, err);
    } else if (word(text, "syscall", &rest)) {
        char *end;
        c->kind = C_SYSCALL;
        c->nr = strtoull(rest, &end, 0);
        if (end == rest || *end) {
            uint64_t nr;
            for (nr = 0; nr < 1024 && strcmp(crec_syscall_name(nr), rest) != 0; nr++)
                ;
            if (nr == 1024)
                rc = an_error(err, CREC_ERR_ARG, "no syscall named '%s'", rest);
            c->nr = nr;
        }
    } else {
        c->kind = C_EXPR;
        rc = crec_expr_parse(sym, text, &c->e, err);
        if (rc == CREC_OK)
            c->is_mem = crec_expr_memory(c->e, &c->mem);
    }
    if (rc != CREC_OK) {
        crec_cond_free(c);
        return rc;
    }
    *out = c;
    return CREC_OK;
}

void crec_cond_free(crec_cond *c)
{
    if (c) {
        crec_expr_free(c->e);
        free(c);
    }
}

/* Hits are gathered in time order, then given out nearest first. */
struct hits {
    uint64_t *t;
    uint32_t *tid;
    size_t n, cap;
    int nomem;
};

static void hit(struct hits *h, uint64_t t, uint32_t tid)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        uint64_t *nt = realloc(h->t, cap * sizeof *nt);
        uint32_t *ni;
        if (!nt) {
            h->nomem = 1;
            return;
        }
        h->t = nt;
        if (!(ni = realloc(h->tid, cap * sizeof *ni))) {
            h->nomem = 1;
            return;
        }
        h->tid = ni;
        h->cap = cap;
    }
    h->t[h->n] = t;
    h->tid[h->n++] = tid;
}

/* An expression's value before, in one thread (or in the program). */
struct edge_state {
    uint32_t tid;
    int have_prev, prev;
};

struct finder {
    const crec_cond *c;
    uint32_t tid;        /* only this thread (0: any) */
    struct hits h;
    uint64_t lo, hi;     /* hits must lie in [lo, hi] */
    int first_only;      /* stop at the first hit */
    int per_thread;      /* the expression reads registers: each thread has its value */
    struct edge_state *edges;
    size_t nedges;
    crec_error err;
    int failed;
};

/* ---- events -------------------------------------------------------------- */

static int on_addr(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct finder *f = ctx;

    (void)x, (void)rip;
    if (t < f->lo || t > f->hi)
        return 0;
    hit(&f->h, t, tid);
    return f->first_only;
}

static int on_leave(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth, uint64_t t,
                    int how, uint64_t rv)
{
    struct finder *f = ctx;

    (void)x, (void)rv;
    if (how == CREC_LEAVE_END || stack[depth].fn != f->c->addr || t < f->lo || t > f->hi)
        return 0;
    hit(&f->h, t, stack[depth].tid);
    return f->first_only;
}

static int on_sys(void *ctx, const crec_syscall_info *s)
{
    struct finder *f = ctx;

    if (s->nr == f->c->nr && s->t >= f->lo && s->t <= f->hi && (!f->tid || s->tid == f->tid))
        hit(&f->h, s->t, s->tid);
    return f->first_only && f->h.n > 0;
}

/* ---- expressions ------------------------------------------------------------- */

/* The value before of the expression in thread tid (per_thread), else in
 * the program.  NULL: no memory. */
static struct edge_state *edge_of(struct finder *f, uint32_t tid)
{
    struct edge_state *e;

    if (!f->per_thread)
        tid = 0;
    for (size_t i = 0; i < f->nedges; i++)
        if (f->edges[i].tid == tid)
            return &f->edges[i];
    if (!(e = realloc(f->edges, (f->nedges + 1) * sizeof *e)))
        return NULL;
    f->edges = e;
    e = &e[f->nedges++];
    memset(e, 0, sizeof *e);
    e->tid = tid;
    return e;
}

static void edges_forget(struct finder *f)
{
    for (size_t i = 0; i < f->nedges; i++)
        f->edges[i].have_prev = 0;
}

static void edge(struct finder *f, int now, uint64_t t, uint32_t tid)
{
    struct edge_state *e = edge_of(f, tid);

    if (!e) {
        f->h.nomem = 1;
        return;
    }
    if (e->have_prev && !e->prev && now && t >= f->lo && t <= f->hi &&
        (!f->tid || tid == f->tid))
        hit(&f->h, t, tid);
    e->prev = now;
    e->have_prev = 1;
}

static int on_insn_expr(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct finder *f = ctx;
    uint64_t v;
    int known;

    (void)rip;
    if (crec_expr_eval(f->c->e, x, &v, &known, &f->err) != CREC_OK) {
        if (f->err.code == CREC_ERR_ARG) { /* an address never mapped: false */
            edge(f, 0, t, tid);
            return 0;
        }
        f->failed = f->err.code;
        return 1;
    }
    edge(f, known && v, t, tid);
    return f->first_only && f->h.n > 0;
}

/* A value crec_watch gave, as the memory an expression reads. */
struct watched {
    const crec_change *ch;
    uint64_t addr;
};

static uint64_t no_reg(void *ctx, int id)
{
    (void)ctx, (void)id;
    return 0;
}

static int read_watched(void *ctx, uint64_t addr, size_t len, uint8_t *buf, uint8_t *known,
                        crec_error *err)
{
    const struct watched *w = ctx;

    (void)err;
    for (size_t i = 0; i < len; i++) {
        uint64_t off = addr + i - w->addr;
        buf[i] = off < w->ch->len ? w->ch->value[off] : 0;
        known[i] = off < w->ch->len ? w->ch->known[off] : 0;
    }
    return CREC_OK;
}

static int on_change(void *ctx, const crec_change *ch)
{
    struct finder *f = ctx;
    struct watched w = {ch, f->c->mem.addr};
    struct an_source src = {&w, no_reg, read_watched, &f->err};
    uint64_t v;
    int known;

    if (an_expr_value(f->c->e, &src, &v, &known) != CREC_OK) {
        f->failed = f->err.code ? (int)f->err.code : CREC_ERR_ARG;
        return 1;
    }
    if (ch->t > f->hi && f->nedges && f->edges[0].have_prev)
        return 1; /* past the range: done */
    edge(f, known && v, ch->t, ch->tid ? ch->tid : 1);
    return f->first_only && f->h.n > 0;
}

/* ---- the search --------------------------------------------------------------- */

/* Forward runs [from, to) once; backward, restart interval by interval. */
static int search(crec_recording *rec, struct finder *f, const crec_observer *o, uint64_t from,
                  int backward, crec_error *err)
{
    uint64_t end = crec_length(rec);
    int rc;

    if (!backward)
        return crec_exec_run(rec, from, end, o, NULL, err);
    if (!f->first_only) /* every hit before `from`: one run from the start */
        return crec_exec_run(rec, 0, from + 1 <= end ? from + 1 : end, o, NULL, err);
    f->first_only = 0; /* the last hit of an interval is the one wanted */
    for (uint64_t to = from; to > 0 && f->h.n == 0;) {
        uint64_t start = crec_restart_before(rec, to - 1);
        edges_forget(f);
        /* one instruction past, so that an edge at `to` itself is seen */
        rc = crec_exec_run(rec, start, to + 1 <= end ? to + 1 : end, o, NULL, err);
        if (rc != CREC_OK || f->failed)
            return rc;
        to = start;
    }
    return CREC_OK;
}

int crec_find(crec_recording *rec, const crec_cond *c, uint64_t from, int backward, int all,
              uint32_t tid, int (*fn)(void *ctx, uint64_t t, uint32_t tid), void *ctx,
              crec_error *err)
{
    struct finder f = {0};
    crec_observer o = {.ctx = &f, .tid = tid};
    crec_calls_observer co = {.ctx = &f, .tid = tid, .leave = on_leave};
    uint64_t end = crec_length(rec);
    int rc = CREC_OK;

    if (from > end)
        return an_error(err, CREC_ERR_ARG, "--from %llu is past the end of the recording "
                        "(%llu instructions)", (unsigned long long)from, (unsigned long long)end);
    f.c = c;
    f.tid = tid;
    f.per_thread = c->kind == C_EXPR && crec_expr_uses_registers(c->e);
    f.lo = backward ? 0 : from + 1;
    f.hi = backward ? (from ? from - 1 : 0) : end;
    f.first_only = !all;
    if (backward && from == 0)
        return CREC_OK;
    switch (c->kind) {
    case C_SYSCALL:
        f.first_only = !all && !backward;
        if (!backward) /* the syscall at t is found from any time before it */
            f.lo = from;
        rc = crec_syscalls(rec, on_sys, &f, err);
        break;
    case C_ENTER:
    case C_EXEC:
        o.insn = on_addr;
        o.addrs = &c->addr;
        o.n_addrs = 1;
        if (!backward)
            f.lo = from;
        rc = search(rec, &f, &o, from, backward, err);
        break;
    case C_LEAVE:
        f.first_only = !all && !backward;
        rc = crec_calls_run(rec, c->sym, 0, backward ? from : end, &co, err);
        break;
    case C_EXPR:
        if (c->is_mem) {
            f.first_only = !all && !backward;
            rc = crec_watch(rec, c->mem.addr, (size_t)c->mem.len, on_change, &f, err);
        } else {
            o.insn = on_insn_expr;
            o.flags = CREC_EXEC_READS_MEMORY;
            rc = search(rec, &f, &o, from, backward, err);
        }
        break;
    }
    if (rc == CREC_OK && f.failed) {
        if (err)
            *err = f.err;
        rc = f.failed;
    }
    if (rc == CREC_OK && f.h.nomem)
        rc = an_error(err, CREC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; rc == CREC_OK && i < f.h.n && (all || i == 0); i++) {
        size_t k = backward ? f.h.n - 1 - i : i;
        if (fn(ctx, f.h.t[k], f.h.tid[k]))
            break;
    }
    free(f.h.t);
    free(f.h.tid);
    free(f.edges);
    return rc;
}
