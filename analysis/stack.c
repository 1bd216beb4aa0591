/*
 * stack.c - the shadow call stack (crec_calls_run), shared by calls,
 * profile, backtrace and find's "leave FUNC".
 *
 * It is driven by blocks only: what the last instruction of the previous
 * block was (an_block_flow) and RSP at the start of the next one say what
 * happened between them.
 *   - call: the next block is the callee; a frame is pushed with RSP at its
 *     entry (pointing at the return address).
 *   - any block: every frame whose entry RSP is below the current RSP is
 *     gone.  After a ret RSP is the entry RSP + 8, so that pops the frame
 *     that returned; after a longjmp or a C++ unwind RSP jumps up past
 *     several frames, and they all go (lossless-call-profiling: "pop
 *     every frame whose saved stack pointer is below the current one").
 *   - jmp to the start of another function: a tail call.  It gets a frame
 *     of its own with the same RSP as its caller's, so the ret that ends it
 *     pops both.
 *   - a call to an address where no symbol starts (a PLT entry) gets a
 *     frame that is announced only once its first block is done: if that
 *     block jumps to a function's start, the frame takes that function.
 *     The stub's own instructions count as its caller's.
 *   - a signal handler entered at the end of a syscall (the block after a
 *     syscall is not the one after it, and the syscall was not
 *     rt_sigreturn): a frame flagged `signal`.  The frames below it belong
 *     to the interrupted code, whose stack may lie anywhere relative to the
 *     handler's (sigaltstack): popping stops once a signal frame is popped,
 *     and rt_sigreturn pops down to the innermost one.
 * Each thread has its own stack; the run interleaves them in the recorded
 * order.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

struct an_stack {
    uint32_t tid;
    crec_frame *f;
    int *announced;
    size_t n, cap;
    int have_prev;      /* the previous block of this thread: */
    int prev_flow;
    uint64_t prev_last, prev_next, prev_t;
    uint64_t prev_sys;  /* ... the syscall that ended it (AN_FLOW_SYSCALL), */
    uint64_t prev_arg0; /* ... and its first argument */
};

/* Linux x86-64's rt_sigreturn: the end of a signal handler. */
#define NR_RT_SIGRETURN 15

struct an_calls {
    crec_symtab *sym;
    const crec_calls_observer *obs;
    struct an_stack *threads;
    size_t nthreads;
    int stop;
    crec_error err;
    int failed;
};

static struct an_stack *thread_stack(struct an_calls *c, uint32_t tid)
{
    struct an_stack *grown;

    for (size_t i = 0; i < c->nthreads; i++)
        if (c->threads[i].tid == tid)
            return &c->threads[i];
    grown = realloc(c->threads, (c->nthreads + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    c->threads = grown;
    memset(&grown[c->nthreads], 0, sizeof *grown);
    grown[c->nthreads].tid = tid;
    return &grown[c->nthreads++];
}

static int push(struct an_stack *st, const crec_frame *f, int announced)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 64;
        crec_frame *nf = realloc(st->f, cap * sizeof *nf);
        int *na;
        if (!nf)
            return -1;
        st->f = nf;
        na = realloc(st->announced, cap * sizeof *na);
        if (!na)
            return -1;
        st->announced = na;
        st->cap = cap;
    }
    st->f[st->n] = *f;
    st->announced[st->n] = announced;
    st->n++;
    return 0;
}

/* The announced frame nearest the top (the one whose instructions run). */
static size_t top_announced(const struct an_stack *st)
{
    size_t i = st->n - 1;

    while (i > 0 && !st->announced[i])
        i--;
    return i;
}

static void announce(struct an_calls *c, crec_exec *x, struct an_stack *st, size_t i)
{
    st->announced[i] = 1;
    if (c->obs->enter && !c->stop && c->obs->enter(c->obs->ctx, x, st->f, i))
        c->stop = 1;
}

/* The top frame leaves.  @return 1 if it was a signal handler's. */
static int leave(struct an_calls *c, crec_exec *x, struct an_stack *st, uint64_t t, int how,
                 uint64_t rv)
{
    size_t i = st->n - 1;

    if (st->announced[i] && c->obs->leave && !c->stop &&
        c->obs->leave(c->obs->ctx, x, st->f, i, t, how, rv))
        c->stop = 1;
    st->n--;
    return st->f[i].signal;
}

/* Frames RSP is above are gone, up to the first signal handler's frame
 * (below it lies interrupted code, on another stack perhaps). */
static void pop_passed(struct an_calls *c, crec_exec *x, struct an_stack *st, uint64_t t,
                       uint64_t sp, int how, uint64_t rv)
{
    while (st->n > 0 && st->f[st->n - 1].sp < sp)
        if (leave(c, x, st, t, how, rv))
            break;
}

static void fill_args(crec_exec *x, crec_frame *f)
{
    static const int regs[6] = {CREC_RDI, CREC_RSI, CREC_RDX, CREC_RCX, CREC_R8, CREC_R9};

    for (int i = 0; i < 6; i++)
        f->args[i] = crec_exec_reg(x, regs[i]);
}

static int new_root(struct an_calls *c, crec_exec *x, struct an_stack *st, uint64_t t,
                    uint64_t addr, uint64_t sp)
{
    crec_frame f = {0};
    uint64_t fn = an_func_of(c->sym, addr);

    f.fn = fn ? fn : addr;
    f.t = t;
    f.sp = sp;
    f.tid = st->tid;
    fill_args(x, &f);
    if (push(st, &f, 0) != 0)
        return -1;
    announce(c, x, st, st->n - 1);
    return 0;
}

static int on_block(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t addr,
                    uint32_t ninsns)
{
    struct an_calls *c = ctx;
    struct an_stack *st;
    uint64_t sp = crec_exec_reg(x, CREC_RSP);
    size_t top;

    if (c->obs->tid && tid != c->obs->tid)
        return 0;
    if (!(st = thread_stack(c, tid))) {
        c->failed = an_error(&c->err, CREC_ERR_NOMEM, "out of memory for the call stack");
        return 1;
    }
    if (st->have_prev) {
        int flow = st->prev_flow;
        uint64_t rv = crec_exec_reg(x, CREC_RAX);
        /* a pending stub that jumps to a function's start becomes it */
        if (st->n > 0 && !st->announced[st->n - 1]) {
            if (flow == AN_FLOW_JMP && an_is_function_start(c->sym, addr))
                st->f[st->n - 1].fn = addr;
            announce(c, x, st, st->n - 1);
            if (flow == AN_FLOW_JMP)
                flow = AN_FLOW_OTHER; /* that jump was the stub's, not a tail call */
        }
        if (flow == AN_FLOW_SYSCALL && addr != st->prev_next && st->prev_sys != NR_RT_SIGRETURN) {
            /* the kernel entered a signal handler at the syscall's end */
            crec_frame f = {addr, t, sp, 0, st->prev_last, 0, {0}, tid, 1};
            fill_args(x, &f);
            if (push(st, &f, 0) != 0)
                goto nomem;
            if (an_is_function_start(c->sym, addr))
                announce(c, x, st, st->n - 1);
            goto pushed;
        }
        if (flow == AN_FLOW_SYSCALL && st->prev_sys == NR_RT_SIGRETURN) {
            /* back to the interrupted code: the handler whose frame it
             * returns from is gone, if its ret did not pop it already (its
             * argument is the ucontext, just above the handler's return
             * address) */
            size_t k = st->n;
            while (k > 0 && !(st->f[k - 1].signal && st->f[k - 1].sp + 8 == st->prev_arg0))
                k--;
            while (k > 0 && st->n >= k)
                leave(c, x, st, t, CREC_LEAVE_RET, rv);
        }
        pop_passed(c, x, st, t, sp, flow == AN_FLOW_RET ? CREC_LEAVE_RET : CREC_LEAVE_UNWOUND, rv);
        if (flow == AN_FLOW_CALL && addr != st->prev_next) {
            crec_frame f = {addr, t, sp, st->prev_next, st->prev_last, 0, {0}, tid, 0};
            int known = an_is_function_start(c->sym, addr);
            fill_args(x, &f);
            if (push(st, &f, 0) != 0)
                goto nomem;
            if (known)
                announce(c, x, st, st->n - 1);
        } else if (flow == AN_FLOW_JMP && st->n > 0 && an_is_function_start(c->sym, addr) &&
                   addr != st->f[st->n - 1].fn) {
            if (an_func_of(c->sym, st->prev_last) != addr) { /* into another function: a tail call */
                crec_frame f = {addr, t, sp, 0, st->prev_last, 1, {0}, tid, 0};
                fill_args(x, &f);
                if (push(st, &f, 1) != 0)
                    goto nomem;
                st->announced[st->n - 1] = 0;
                announce(c, x, st, st->n - 1);
            }
        }
    }
pushed:
    if (st->n == 0 && new_root(c, x, st, t, addr, sp) != 0)
        goto nomem;
    st->prev_flow = an_block_flow(c->sym, addr, ninsns, &st->prev_last, &st->prev_next);
    st->prev_t = t;
    st->have_prev = 1;
    top = top_announced(st);
    if (c->obs->block && !c->stop && c->obs->block(c->obs->ctx, x, st->f, top, t, addr, ninsns))
        c->stop = 1;
    return c->stop;
nomem:
    c->failed = an_error(&c->err, CREC_ERR_NOMEM, "out of memory for the call stack");
    return 1;
}

static int on_syscall(void *ctx, crec_exec *x, const crec_syscall_info *si)
{
    struct an_calls *c = ctx;
    struct an_stack *st;

    if (c->obs->tid && si->tid != c->obs->tid)
        return 0;
    st = thread_stack(c, si->tid);
    if (!st) {
        c->failed = an_error(&c->err, CREC_ERR_NOMEM, "out of memory for the call stack");
        return 1;
    }
    st->prev_sys = si->nr; /* the next block says whether it entered a handler */
    st->prev_arg0 = si->args[0];
    if (st->n == 0 || !c->obs->syscall)
        return 0;
    if (c->obs->syscall(c->obs->ctx, x, st->f, top_announced(st), si))
        c->stop = 1;
    return c->stop;
}

int crec_calls_run(crec_recording *rec, crec_symtab *sym, uint64_t from, uint64_t to,
                   const crec_calls_observer *obs, crec_error *err)
{
    struct an_calls c = {sym, obs, NULL, 0, 0, {0}, 0};
    crec_observer o = {.ctx = &c, .tid = obs->tid, .block = on_block, .syscall = on_syscall};
    uint64_t stopped = to;
    int rc = crec_exec_run(rec, from, to, &o, &stopped, err);

    if (rc == CREC_OK && c.failed) {
        if (err)
            *err = c.err;
        rc = c.failed;
    }
    /* the frames still open end with the run */
    for (size_t i = 0; rc == CREC_OK && i < c.nthreads; i++) {
        struct an_stack *st = &c.threads[i];
        while (st->n > 0 && !c.stop) {
            size_t k = st->n - 1;
            if (st->announced[k] && obs->leave &&
                obs->leave(obs->ctx, NULL, st->f, k, stopped, CREC_LEAVE_END, 0))
                c.stop = 1;
            st->n--;
        }
    }
    for (size_t i = 0; i < c.nthreads; i++) {
        free(c.threads[i].f);
        free(c.threads[i].announced);
    }
    free(c.threads);
    return rc;
}
