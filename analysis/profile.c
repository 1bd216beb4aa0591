/*
 * profile.c - an exact profile by instruction count (lossless-call-
 * profiling): every block's instructions go to the function on top of the
 * shadow call stack (stack.c), every call and return is seen, so the
 * counts are exact, not sampled.  The profile is a calling-context tree
 * (a node per distinct call path) from which the function table, folded
 * stacks and callgrind's format are read; speedscope's evented format
 * needs every enter and leave, kept when asked for.
 *
 * A syscall instruction is moved from its caller's self count to a child
 * "[syscall:NAME]", so that time spent asking the kernel shows apart.
 * Inclusive counts per function count recursion once: only a call with no
 * call of the same function above it in its path adds to it (per-call
 * figures count each call).
 *
 * Threads.  Each thread has its own stack (stack.c) and its own clock: the
 * instructions it ran in the range, which is what a call's inclusive count
 * is measured in (the other threads run in between).  Their paths share
 * one tree (merged, as valgrind and perf show threads by default), or, with
 * CREC_PROFILE_THREADS, each thread's hang from a frame "[thread N]" of
 * its own: a root frame in folded stacks, a function in callgrind's format
 * and in the table, whose inclusive count is the thread's instructions.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

struct an_fn {
    crec_profile_fn pub;
    uint64_t key;          /* entry address; a syscall's number | 1 << 63; a thread's | 1 << 62 */
    uint64_t sum;          /* inclusive of every call, for the mean */
    size_t next;           /* hash chain */
};

struct an_node {
    size_t fn, parent;
    size_t first_child, next_sibling; /* SIZE_MAX: none */
    uint64_t self, calls, incl;
    int outer;             /* no node above it (in its thread) is of the same function */
};

struct an_event {
    uint64_t at;
    uint32_t frame;
    uint32_t thread;       /* index in threads */
    int open;
};

/* What the profile keeps per thread while the run goes. */
struct an_thread {
    uint32_t tid;
    size_t root;           /* the node its paths hang from (0: the tree's root) */
    size_t *path;          /* the node of each depth of its stack */
    uint64_t *opened;      /* ... and the thread's clock when that call began */
    size_t cappath;
    uint64_t clock;        /* its instructions in the range so far */
    uint64_t blk_t, blk_clock; /* its last block: its time, and the clock before it */
    uint64_t last_at;      /* its last event's time */
};

struct crec_profile {
    crec_symtab *sym;
    struct an_fn *fns;
    size_t nfns, capfns;
    size_t *buckets;       /* hash of fns by key, SIZE_MAX: empty */
    size_t nbuckets;
    struct an_node *nodes; /* nodes[0] is the tree's root (no function) */
    size_t nnodes, capnodes;
    struct an_thread *threads;
    size_t nthreads;
    size_t cur;            /* the thread last looked up */
    uint64_t total;
    unsigned flags;        /* CREC_PROFILE_* */
    struct an_event *ev;
    size_t nev, capev;
    uint64_t first_t;
    int nomem;
    crec_profile_fn *flat; /* the function table, once the run is over */
};

#define FN_NONE SIZE_MAX
#define KEY_SYSCALL (1ull << 63)
#define KEY_THREAD (1ull << 62)

/* The function of key (named `name`, or by its symbol when NULL). */
static size_t fn_get(crec_profile *p, uint64_t key, const char *name)
{
    size_t b = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 40) % p->nbuckets;
    char sname[256];
    struct an_fn *f;

    for (size_t i = p->buckets[b]; i != FN_NONE; i = p->fns[i].next)
        if (p->fns[i].key == key)
            return i;
    if (p->nfns == p->capfns) {
        size_t cap = p->capfns ? 2 * p->capfns : 256;
        struct an_fn *n = realloc(p->fns, cap * sizeof *n);
        if (!n)
            return FN_NONE;
        p->fns = n, p->capfns = cap;
    }
    if (!name) {
        crec_symtab_name(p->sym, key, sname, sizeof sname);
        name = sname;
    }
    f = &p->fns[p->nfns];
    memset(f, 0, sizeof *f);
    f->pub.name = strdup(name);
    if (!f->pub.name)
        return FN_NONE;
    f->pub.addr = key & (KEY_SYSCALL | KEY_THREAD) ? 0 : key;
    f->pub.min = UINT64_MAX;
    f->key = key;
    f->next = p->buckets[b];
    p->buckets[b] = p->nfns;
    return p->nfns++;
}

static size_t node_child(crec_profile *p, size_t parent, size_t fn)
{
    struct an_node *n;

    for (size_t c = p->nodes[parent].first_child; c != FN_NONE; c = p->nodes[c].next_sibling)
        if (p->nodes[c].fn == fn)
            return c;
    if (p->nnodes == p->capnodes) {
        size_t cap = p->capnodes ? 2 * p->capnodes : 1024;
        struct an_node *nn = realloc(p->nodes, cap * sizeof *nn);
        if (!nn)
            return FN_NONE;
        p->nodes = nn, p->capnodes = cap;
    }
    n = &p->nodes[p->nnodes];
    memset(n, 0, sizeof *n);
    n->fn = fn, n->parent = parent;
    n->first_child = FN_NONE;
    n->next_sibling = p->nodes[parent].first_child;
    n->outer = 1; /* once per call path, not per call: deep recursion costs its depth once */
    for (size_t a = parent; a != 0 && n->outer; a = p->nodes[a].parent)
        n->outer = p->nodes[a].fn != fn;
    p->nodes[parent].first_child = p->nnodes;
    return p->nnodes++;
}

/* The thread tid, its root frame made on first sight.  NULL: no memory. */
static struct an_thread *thread_of(crec_profile *p, uint32_t tid)
{
    struct an_thread *th;
    char name[32];

    if (p->cur < p->nthreads && p->threads[p->cur].tid == tid)
        return &p->threads[p->cur];
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid)
            return &p->threads[p->cur = i];
    th = realloc(p->threads, (p->nthreads + 1) * sizeof *th);
    if (!th)
        return NULL;
    p->threads = th;
    th = &th[p->nthreads];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    th->blk_t = UINT64_MAX; /* no block yet */
    if (p->flags & CREC_PROFILE_THREADS) {
        size_t fn, node;
        snprintf(name, sizeof name, "[thread %" PRIu32 "]", tid);
        if ((fn = fn_get(p, KEY_THREAD | tid, name)) == FN_NONE ||
            (node = node_child(p, 0, fn)) == FN_NONE)
            return NULL;
        p->nodes[node].calls++;
        p->fns[fn].pub.calls++;
        th->root = node;
    }
    p->cur = p->nthreads;
    return &p->threads[p->nthreads++];
}

static int event(crec_profile *p, struct an_thread *th, size_t fn, int open)
{
    uint64_t at = p->first_t + th->clock;

    if (!(p->flags & CREC_PROFILE_SPEEDSCOPE))
        return 0;
    /* a stub's call begins before its block, which may have made a syscall
     * already told: events of a thread never go back */
    if (at < th->last_at)
        at = th->last_at;
    th->last_at = at;
    if (p->nev == p->capev) {
        size_t cap = p->capev ? 2 * p->capev : 4096;
        struct an_event *n = realloc(p->ev, cap * sizeof *n);
        if (!n)
            return -1;
        p->ev = n, p->capev = cap;
    }
    p->ev[p->nev++] = (struct an_event){at, (uint32_t)fn, (uint32_t)(th - p->threads), open};
    return 0;
}

static int set_path(struct an_thread *th, size_t depth, size_t node)
{
    if (depth >= th->cappath) {
        size_t cap = depth * 2 + 64;
        size_t *n = realloc(th->path, cap * sizeof *n);
        uint64_t *o;
        if (!n)
            return -1;
        th->path = n;
        if (!(o = realloc(th->opened, cap * sizeof *o)))
            return -1;
        th->opened = o, th->cappath = cap;
    }
    th->path[depth] = node;
    th->opened[depth] = th->clock;
    return 0;
}

/* A call begins, its thread's clock then `opened`: one more call of the
 * function and of its node. */
static int open_call(crec_profile *p, struct an_thread *th, size_t depth, size_t fn,
                     uint64_t opened)
{
    size_t parent = depth == 0 ? th->root : th->path[depth - 1];
    size_t node = node_child(p, parent, fn);
    uint64_t now = th->clock;

    th->clock = opened;
    if (node == FN_NONE || set_path(th, depth, node) != 0 || event(p, th, fn, 1) != 0)
        return -1;
    th->clock = now;
    p->nodes[node].calls++;
    p->fns[fn].pub.calls++;
    return 0;
}

/* A function's figures for one call that took incl instructions. */
static void count_call(struct an_fn *f, uint64_t incl, int outer)
{
    f->sum += incl;
    f->pub.min = incl < f->pub.min ? incl : f->pub.min;
    f->pub.max = incl > f->pub.max ? incl : f->pub.max;
    if (outer)
        f->pub.inclusive += incl;
}

static int close_call(crec_profile *p, struct an_thread *th, size_t depth)
{
    struct an_node *n = &p->nodes[th->path[depth]];
    uint64_t incl = th->clock - th->opened[depth];

    n->incl += incl;
    count_call(&p->fns[n->fn], incl, n->outer);
    return event(p, th, n->fn, 0);
}

static int pr_enter(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth)
{
    crec_profile *p = ctx;
    struct an_thread *th = thread_of(p, stack[depth].tid);
    size_t fn = fn_get(p, stack[depth].fn, NULL);

    (void)x;
    /* a stub's frame is announced after the stub's block (stack.c), whose
     * instructions its caller's self count has: the call began before it */
    if (!th || fn == FN_NONE ||
        open_call(p, th, depth, fn, stack[depth].t == th->blk_t ? th->blk_clock : th->clock)) {
        p->nomem = 1;
        return 1;
    }
    return 0;
}

static int pr_leave(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth, uint64_t t,
                    int how, uint64_t rv)
{
    crec_profile *p = ctx;
    struct an_thread *th = thread_of(p, stack[depth].tid);

    (void)x, (void)t, (void)how, (void)rv;
    if (!th || close_call(p, th, depth) != 0) {
        p->nomem = 1;
        return 1;
    }
    return 0;
}

static int pr_block(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth, uint64_t t,
                    uint64_t addr, uint32_t n)
{
    crec_profile *p = ctx;
    struct an_thread *th = thread_of(p, stack[depth].tid);
    size_t node;

    (void)x, (void)addr;
    if (!th) {
        p->nomem = 1;
        return 1;
    }
    node = th->path[depth];
    p->nodes[node].self += n;
    p->fns[p->nodes[node].fn].pub.self += n;
    p->total += n;
    th->blk_t = t;
    th->blk_clock = th->clock;
    th->clock += n;
    return 0;
}

static int pr_syscall(void *ctx, crec_exec *x, const crec_frame *stack, size_t depth,
                      const crec_syscall_info *si)
{
    crec_profile *p = ctx;
    struct an_thread *th = thread_of(p, si->tid);
    char name[64];
    size_t caller, fn;

    (void)x, (void)stack;
    snprintf(name, sizeof name, "[syscall:%s]", crec_syscall_name(si->nr));
    fn = fn_get(p, si->nr | KEY_SYSCALL, name);
    if (!th || fn == FN_NONE) {
        p->nomem = 1;
        return 1;
    }
    /* the syscall instruction, already counted as its caller's, is the
     * syscall's: a call of one instruction */
    caller = th->path[depth];
    if (open_call(p, th, depth + 1, fn, th->clock - 1) != 0 ||
        close_call(p, th, depth + 1) != 0) {
        p->nomem = 1;
        return 1;
    }
    p->nodes[caller].self--;
    p->fns[p->nodes[caller].fn].pub.self--;
    p->nodes[th->path[depth + 1]].self++;
    p->fns[fn].pub.self++;
    return 0;
}

int crec_profile_run(crec_recording *rec, crec_symtab *sym, uint64_t from, uint64_t to,
                     uint32_t tid, unsigned flags, crec_profile **out, crec_error *err)
{
    crec_calls_observer obs = {.tid = tid, .enter = pr_enter, .leave = pr_leave,
                               .block = pr_block, .syscall = pr_syscall};
    crec_profile *p = calloc(1, sizeof *p);
    int rc;

    *out = NULL;
    if (!p)
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    p->sym = sym;
    p->flags = flags;
    p->nbuckets = 4096;
    p->buckets = malloc(p->nbuckets * sizeof *p->buckets);
    p->nodes = calloc(1024, sizeof *p->nodes);
    if (!p->buckets || !p->nodes) {
        crec_profile_free(p);
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    }
    memset(p->buckets, 0xff, p->nbuckets * sizeof *p->buckets);
    p->capnodes = 1024;
    p->nnodes = 1;
    p->nodes[0].first_child = p->nodes[0].next_sibling = FN_NONE;
    p->nodes[0].fn = FN_NONE;
    p->first_t = from;
    obs.ctx = p;
    rc = crec_calls_run(rec, sym, from, to, &obs, err);
    if (rc == CREC_OK && p->nomem)
        rc = an_error(err, CREC_ERR_NOMEM, "out of memory for the profile");
    if (rc != CREC_OK) {
        crec_profile_free(p);
        return rc;
    }
    for (size_t i = 0; i < p->nthreads; i++) { /* a thread's frame spans all it ran */
        struct an_node *n = &p->nodes[p->threads[i].root];
        if (p->threads[i].root == 0)
            continue;
        n->incl += p->threads[i].clock;
        count_call(&p->fns[n->fn], p->threads[i].clock, 1);
    }
    p->flat = malloc((p->nfns ? p->nfns : 1) * sizeof *p->flat);
    if (!p->flat) {
        crec_profile_free(p);
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < p->nfns; i++) {
        struct an_fn *f = &p->fns[i];
        f->pub.mean = f->pub.calls ? (double)f->sum / (double)f->pub.calls : 0;
        if (!f->pub.calls)
            f->pub.min = 0;
        p->flat[i] = f->pub;
    }
    *out = p;
    return CREC_OK;
}

size_t crec_profile_functions(const crec_profile *p, const crec_profile_fn **fns,
                              uint64_t *total)
{
    *fns = p->flat;
    if (total)
        *total = p->total;
    return p->nfns;
}

void crec_profile_free(crec_profile *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nfns; i++)
        free((char *)p->fns[i].pub.name);
    free(p->fns);
    free(p->buckets);
    free(p->nodes);
    for (size_t i = 0; i < p->nthreads; i++) {
        free(p->threads[i].path);
        free(p->threads[i].opened);
    }
    free(p->threads);
    free(p->ev);
    free(p->flat);
    free(p);
}

/* ---- output ------------------------------------------------------------------ */

static int io_result(FILE *out, crec_error *err)
{
    if (fflush(out) != 0 || ferror(out))
        return an_error(err, CREC_ERR_IO, "can't write the profile");
    return CREC_OK;
}

/* Folded stacks: each node with self instructions, its path root first. */
int crec_profile_write_folded(const crec_profile *p, FILE *out, crec_error *err)
{
    size_t *chain = malloc((p->nnodes ? p->nnodes : 1) * sizeof *chain);

    if (!chain)
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    for (size_t i = 1; i < p->nnodes; i++) {
        size_t n = 0;
        if (p->nodes[i].self == 0)
            continue;
        for (size_t k = i; k != 0; k = p->nodes[k].parent)
            chain[n++] = k;
        while (n-- > 0)
            fprintf(out, "%s%s", p->fns[p->nodes[chain[n]].fn].pub.name, n ? ";" : "");
        fprintf(out, " %" PRIu64 "\n", p->nodes[i].self);
        if (ferror(out))
            break;
    }
    free(chain);
    return io_result(out, err);
}

/* A name as callgrind takes it: one line. */
static void cg_name(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\n' ? ' ' : *s, out);
}

/*
 * callgrind: per function its self cost, then one calls= line per callee
 * with the inclusive cost of those calls (summed over the nodes of the
 * tree where the pair meets).
 */
int crec_profile_write_callgrind(const crec_profile *p, FILE *out, crec_error *err)
{
    struct pair { size_t callee; uint64_t calls, incl; } *pairs = NULL;
    uint64_t *self = calloc(p->nfns ? p->nfns : 1, sizeof *self);
    int rc = CREC_OK;

    if (!self)
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    for (size_t i = 1; i < p->nnodes; i++)
        self[p->nodes[i].fn] += p->nodes[i].self;
    fprintf(out, "# callgrind format\nversion: 1\ncreator: crec %s\npositions: line\n"
                 "events: Ir\nsummary: %" PRIu64 "\n\n", CREC_VERSION_STRING, p->total);
    for (size_t f = 0; f < p->nfns && rc == CREC_OK; f++) {
        size_t npairs = 0;
        crec_place pl = {0};
        if (p->fns[f].pub.addr)
            crec_symtab_place(p->sym, p->fns[f].pub.addr, &pl);
        fprintf(out, "ob=");
        cg_name(out, pl.module ? pl.module : "???");
        fprintf(out, "\nfl=");
        cg_name(out, pl.file ? pl.file : "???");
        fprintf(out, "\nfn=");
        cg_name(out, p->fns[f].pub.name);
        fprintf(out, "\n0 %" PRIu64 "\n", self[f]);
        for (size_t i = 1; i < p->nnodes; i++) {
            if (p->nodes[i].fn != f)
                continue;
            for (size_t c = p->nodes[i].first_child; c != FN_NONE; c = p->nodes[c].next_sibling) {
                size_t k = 0;
                while (k < npairs && pairs[k].callee != p->nodes[c].fn)
                    k++;
                if (k == npairs) {
                    struct pair *g = realloc(pairs, (npairs + 1) * sizeof *g);
                    if (!g) {
                        rc = an_error(err, CREC_ERR_NOMEM, "out of memory");
                        break;
                    }
                    pairs = g;
                    pairs[npairs++] = (struct pair){p->nodes[c].fn, 0, 0};
                }
                pairs[k].calls += p->nodes[c].calls;
                pairs[k].incl += p->nodes[c].incl;
            }
        }
        for (size_t k = 0; k < npairs; k++) {
            crec_place cl = {0};
            if (p->fns[pairs[k].callee].pub.addr)
                crec_symtab_place(p->sym, p->fns[pairs[k].callee].pub.addr, &cl);
            fprintf(out, "cob=");
            cg_name(out, cl.module ? cl.module : "???");
            fprintf(out, "\ncfi=");
            cg_name(out, cl.file ? cl.file : "???");
            fprintf(out, "\ncfn=");
            cg_name(out, p->fns[pairs[k].callee].pub.name);
            fprintf(out, "\ncalls=%" PRIu64 " 0\n0 %" PRIu64 "\n", pairs[k].calls, pairs[k].incl);
        }
        fputc('\n', out);
    }
    free(pairs);
    free(self);
    return rc == CREC_OK ? io_result(out, err) : rc;
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

/* speedscope's file format: an evented profile per thread, instructions
 * (the thread's own, from the start of the range) as the unit. */
int crec_profile_write_speedscope(const crec_profile *p, FILE *out, crec_error *err)
{
    fprintf(out, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
                 "\"exporter\":\"crec %s\",\"name\":\"crec profile\",\"activeProfileIndex\":0,"
                 "\"shared\":{\"frames\":[", CREC_VERSION_STRING);
    for (size_t i = 0; i < p->nfns; i++) {
        fprintf(out, "%s{\"name\":", i ? "," : "");
        json_string(out, p->fns[i].pub.name);
        fputc('}', out);
    }
    fprintf(out, "]},\"profiles\":[");
    for (size_t k = 0; k < p->nthreads && !ferror(out); k++) {
        int first = 1;
        fprintf(out, "%s{\"type\":\"evented\",\"name\":\"thread %" PRIu32 "\","
                     "\"unit\":\"none\",\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64
                     ",\"events\":[", k ? "," : "", p->threads[k].tid, p->first_t,
                p->first_t + p->threads[k].clock);
        for (size_t i = 0; i < p->nev && !ferror(out); i++) {
            if (p->ev[i].thread != k)
                continue;
            fprintf(out, "%s{\"type\":\"%c\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64 "}",
                    first ? "" : ",", p->ev[i].open ? 'O' : 'C', p->ev[i].frame, p->ev[i].at);
            first = 0;
        }
        fprintf(out, "]}");
    }
    fprintf(out, "]}\n");
    return io_result(out, err);
}
