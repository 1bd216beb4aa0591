/*
 * program.c - what a recording says about the program besides its run:
 * the executable mappings (modules), the function symbols at their
 * run-time addresses, the program's path and initial auxv, the syscalls
 * and how the run ended (include/crec.h).  Read from the CODE, SYMBOLS
 * and EVENTS streams on first need; nothing here replays.
 */
#include <capstone/capstone.h>
#include <fcntl.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"

#define STT_NOTYPE_ 0
#define STT_FUNC_ 2
#define STT_GNU_IFUNC_ 10
#define AT_ENTRY_ 9

void qx_program_free(crec_recording *rec)
{
    for (size_t i = 0; i < rec->nsyms; i++)
        crec_free(rec->syms[i].name);
    crec_free(rec->syms);
    crec_free(rec->modules);
    crec_free(rec->program_path);
    rec->syms = NULL, rec->nsyms = 0, rec->modules = NULL, rec->program_path = NULL;
    rec->program_loaded = 0;
}

/* Is the file at m->path the one that was mapped: the bytes at its offset
 * (the first 64 KiB of the mapping) equal the recorded code? */
static int still_on_disk(crec_recording *rec, size_t i)
{
    const struct qx_code *c = &rec->code[i];
    size_t n = c->len < 65536 ? (size_t)c->len : 65536, got = 0;
    uint8_t *want, *have;
    int fd, found = 0, same = 0, compared = 0;

    if (!c->path[0] || (fd = open(c->path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    want = crec_malloc(n ? n : 1);
    have = crec_malloc(n ? n : 1);
    if (want && have) {
        while (got < n) {
            ssize_t r = pread(fd, have + got, n - got, (off_t)(c->file_off + got));
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        /* page by page: of paged code only the pages the program ran are
         * recorded, and one of them at least must be there to compare */
        same = got == n;
        for (size_t off = 0; off < n && same; off += CREC_PAGE_SIZE) {
            size_t k = n - off < CREC_PAGE_SIZE ? n - off : CREC_PAGE_SIZE;
            if (qx_code_bytes(rec, c->addr + off, k, want + off, &found, NULL) != CREC_OK)
                same = 0;
            else if (found)
                same = memcmp(want + off, have + off, k) == 0, compared = 1;
        }
        same = same && compared;
    }
    crec_free(want);
    crec_free(have);
    close(fd);
    return same;
}

/* Prefer, at one address: a function, a name without a leading '_', the shorter name. */
static int better(const struct qx_sym *a, const struct qx_sym *b)
{
    if ((a->type == STT_NOTYPE_) != (b->type == STT_NOTYPE_))
        return b->type == STT_NOTYPE_;
    if ((a->name[0] == '_') != (b->name[0] == '_'))
        return b->name[0] == '_';
    return strlen(a->name) < strlen(b->name);
}

static int cmp_sym(const void *x, const void *y)
{
    const struct qx_sym *a = x, *b = y;

    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return better(a, b) ? -1 : better(b, a);
}

static int add_sym(crec_recording *rec, size_t *cap, const crec_fmt_symbol *s, size_t code)
{
    struct qx_sym *grown = crec_grow(rec->syms, cap, rec->nsyms + 1, sizeof *grown, 1024);
    struct qx_sym *q;

    if (!grown)
        return -1;
    rec->syms = grown;
    q = &rec->syms[rec->nsyms];
    q->name = crec_malloc(s->name_len + 1);
    if (!q->name)
        return -1;
    memcpy(q->name, s->name, s->name_len);
    q->name[s->name_len] = 0;
    q->addr = rec->code[code].addr + s->addr;
    q->size = s->size;
    q->type = s->type;
    q->code = code;
    rec->nsyms++;
    return 0;
}

static int load_symbols(crec_recording *rec, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen, cap = 0, kept = 0;
    int kind, rc;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_SYMBOLS, 0, 0, &c, err);
    if (rc == CREC_ERR_NOTFOUND)
        return CREC_OK; /* a recording without symbols */
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_symbol s;
        if (kind != CREC_FMT_K_SYMBOL) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the SYMBOLS stream", kind);
            break;
        }
        if ((rc = crec_fmt_sym_decode(body, blen, &s, err)) != CREC_OK)
            break;
        if (s.name_len == 0 || (s.type != STT_FUNC_ && s.type != STT_GNU_IFUNC_ &&
                                s.type != STT_NOTYPE_))
            continue;
        for (size_t i = 0; i < rec->ncode; i++) {
            if (memcmp(&rec->code[i].blob, &s.blob, sizeof s.blob) != 0)
                continue;
            if (s.type == STT_NOTYPE_ && s.addr >= rec->code[i].len)
                continue; /* a label outside the code */
            if (add_sym(rec, &cap, &s, i) != 0) {
                crec_fmt_cursor_free(c);
                return crec_error_set(err, CREC_ERR_NOMEM, "out of memory loading symbols");
            }
        }
    }
    crec_fmt_cursor_free(c);
    if (rc != CREC_ERR_NOTFOUND && rc != CREC_ERR_TRUNCATED && rc != CREC_OK)
        return rc;
    crec_sort(rec->syms, rec->nsyms, sizeof *rec->syms, cmp_sym);
    for (size_t i = 0; i < rec->nsyms; i++) { /* one symbol per address: the best */
        if (kept > 0 && rec->syms[kept - 1].addr == rec->syms[i].addr) {
            crec_free(rec->syms[i].name);
            continue;
        }
        rec->syms[kept++] = rec->syms[i];
    }
    rec->nsyms = kept;
    return CREC_OK;
}

static int load_program(crec_recording *rec, crec_error *err)
{
    int rc;

    if (rec->program_loaded)
        return CREC_OK;
    rec->modules = crec_calloc(rec->ncode ? rec->ncode : 1, sizeof *rec->modules);
    if (!rec->modules)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < rec->ncode; i++) {
        crec_module *m = &rec->modules[i];
        m->path = rec->code[i].path;
        m->addr = rec->code[i].addr;
        m->len = rec->code[i].len;
        m->file_off = rec->code[i].file_off;
        m->on_disk = still_on_disk(rec, i);
    }
    rc = load_symbols(rec, err);
    if (rc != CREC_OK) {
        qx_program_free(rec);
        return rc;
    }
    rec->program_loaded = 1;
    return CREC_OK;
}

int crec_modules(crec_recording *rec, const crec_module **out, size_t *n, crec_error *err)
{
    int rc = load_program(rec, err);

    *out = rec->modules;
    *n = rc == CREC_OK ? rec->ncode : 0;
    return rc;
}

static const crec_module *module_at(const crec_recording *rec, uint64_t addr)
{
    for (size_t i = 0; i < rec->ncode; i++)
        if (addr >= rec->modules[i].addr && addr - rec->modules[i].addr < rec->modules[i].len)
            return &rec->modules[i];
    return NULL;
}

int crec_symbolize(crec_recording *rec, uint64_t addr, crec_symbol *sym, crec_error *err)
{
    size_t a = 0, b;
    int rc = load_program(rec, err);

    memset(sym, 0, sizeof *sym);
    if (rc != CREC_OK)
        return rc;
    sym->module = module_at(rec, addr);
    b = rec->nsyms;
    while (a < b) { /* the first symbol after addr */
        size_t m = a + (b - a) / 2;
        if (rec->syms[m].addr <= addr)
            a = m + 1;
        else
            b = m;
    }
    /* the nearest before that covers addr: a symbol without a size covers
     * only its first byte (stretching it would name a PLT after _init) */
    for (size_t i = a; i-- > 0 && a - i <= 8;) {
        const struct qx_sym *s = &rec->syms[i];
        if (s->size ? addr - s->addr < s->size : addr == s->addr) {
            sym->name = s->name;
            sym->addr = s->addr;
            sym->size = s->size;
            sym->offset = addr - s->addr;
            return CREC_OK;
        }
    }
    return CREC_OK;
}

int crec_symbols(crec_recording *rec, int (*fn)(void *ctx, const crec_symbol *s), void *ctx,
                 crec_error *err)
{
    int rc = load_program(rec, err);

    for (size_t i = 0; rc == CREC_OK && i < rec->nsyms; i++) {
        crec_symbol s = {rec->syms[i].name, rec->syms[i].addr, rec->syms[i].size, 0,
                         &rec->modules[rec->syms[i].code]};
        if (fn(ctx, &s))
            break;
    }
    return rc;
}

/* ---- the start: auxv and the program ------------------------------------------ */

static uint64_t le64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* A u64 of the initial stack.  @return CREC_OK or an error. */
static int stack_u64(crec_recording *rec, uint64_t addr, uint64_t *v, crec_error *err)
{
    uint8_t b[8], k[8];
    int src, rc = qx_read_at(rec, 0, addr, 8, b, k, &src, err);

    if (rc == CREC_OK && memchr(k, 0, 8))
        rc = crec_error_set(err, CREC_ERR_NOTFOUND, "the initial stack at 0x%" PRIx64
                            " is not in the recording", addr);
    *v = le64(b);
    return rc;
}

int crec_initial_auxv(crec_recording *rec, uint8_t **out, size_t *len, crec_error *err)
{
    uint64_t sp, argc, v = 1, p;
    size_t n = 0;
    int rc;

    *out = NULL, *len = 0;
    if ((rc = qx_need_kf(rec, 0, err)) != CREC_OK)
        return rc;
    if (rec->kfs[0].global_icount != 0)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "the recording does not start at the "
                              "program's start (its oldest part was dropped)");
    sp = rec->kfs[0].regs.gpr[CREC_RSP];
    if ((rc = stack_u64(rec, sp, &argc, err)) != CREC_OK)
        return rc;
    p = sp + 8 * (argc + 2); /* past argc, argv[] and its NULL */
    for (int guard = 0; v != 0 && guard < 65536; guard++, p += 8) /* envp[] and its NULL */
        if ((rc = stack_u64(rec, p, &v, err)) != CREC_OK)
            return rc;
    for (;;) { /* (type, value) pairs up to AT_NULL */
        uint64_t type, val;
        uint8_t *grown;
        if ((rc = stack_u64(rec, p + 16 * n, &type, err)) != CREC_OK ||
            (rc = stack_u64(rec, p + 16 * n + 8, &val, err)) != CREC_OK)
            break;
        if (++n > 4096) {
            rc = crec_error_corrupt(err, "the initial auxv has no end");
            break;
        }
        grown = realloc(*out, 16 * n);
        if (!grown) {
            rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory");
            break;
        }
        *out = grown;
        for (int i = 0; i < 8; i++) {
            grown[16 * (n - 1) + i] = (uint8_t)(type >> 8 * i);
            grown[16 * (n - 1) + 8 + i] = (uint8_t)(val >> 8 * i);
        }
        if (type == 0) {
            *len = 16 * n;
            return CREC_OK;
        }
    }
    free(*out);
    *out = NULL;
    return rc;
}

const char *crec_program_path(crec_recording *rec)
{
    uint8_t *auxv = NULL;
    size_t len = 0;
    const crec_module *m = NULL;

    if (rec->program_path)
        return rec->program_path;
    if (load_program(rec, NULL) != CREC_OK)
        return "";
    /* the mapping holding AT_ENTRY is the program (ld.so runs first) */
    if (crec_initial_auxv(rec, &auxv, &len, NULL) == CREC_OK)
        for (size_t i = 0; i + 16 <= len && !m; i += 16)
            if (le64(auxv + i) == AT_ENTRY_)
                m = module_at(rec, le64(auxv + i + 8));
    free(auxv);
    if (!m && rec->ncode > 0)
        m = &rec->modules[0];
    rec->program_path = crec_malloc(m ? strlen(m->path) + 1 : 1);
    if (!rec->program_path)
        return "";
    strcpy(rec->program_path, m ? m->path : "");
    return rec->program_path;
}

/* ---- events ----------------------------------------------------------------- */

/* Call fn for every event of thread tid from EVENTS offset off on. */
static int events_from(crec_recording *rec, uint32_t tid, uint64_t off,
                       int (*fn)(void *ctx, const crec_fmt_event *ev), void *ctx, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t blen;
    int kind, rc;

    rc = crec_fmt_cursor_open(rec->r, CREC_FMT_S_EVENTS, tid, off, &c, err);
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        crec_fmt_event ev;
        if ((rc = crec_fmt_ev_decode(crec_fmt_reader_header(rec->r)->version, kind, body, blen,
                                     &ev, err)) != CREC_OK)
            break;
        if (fn(ctx, &ev))
            break;
    }
    crec_fmt_cursor_free(c);
    return rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED ? CREC_OK : rc;
}

/* Call fn for every event of the thread of key frame k from there on. */
static int each_event(crec_recording *rec, size_t k,
                      int (*fn)(void *ctx, const crec_fmt_event *ev), void *ctx, crec_error *err)
{
    return events_from(rec, rec->kfs[k].tid, rec->kfs[k].events_off, fn, ctx, err);
}

struct sys_walk {
    crec_recording *rec;
    uint32_t tid;
    int (*fn)(void *ctx, const crec_syscall_info *s);
    void *ctx;
};

static int sys_event(void *ctx, const crec_fmt_event *ev)
{
    struct sys_walk *w = ctx;
    crec_syscall_info si = {0};

    if (ev->kind != CREC_FMT_K_SYSCALL)
        return 0;
    if (ev->u.sys.icount > w->rec->end)
        return 1; /* past where a file cut short can be replayed */
    /* a SYSCALL record's icount counts the syscall instruction itself */
    si.t = ev->u.sys.icount ? ev->u.sys.icount - 1 : 0;
    si.tid = w->tid;
    si.nr = ev->u.sys.nr;
    memcpy(si.args, ev->u.sys.args, sizeof si.args);
    si.ret = ev->u.sys.ret;
    return w->fn(w->ctx, &si);
}

/* Several threads: every thread's syscalls, in global time. */
struct sys_all {
    crec_syscall_info *v;
    size_t n, cap;
    int nomem;
};

static int keep_syscall(void *ctx, const crec_syscall_info *s)
{
    struct sys_all *a = ctx;
    crec_syscall_info *p = crec_grow(a->v, &a->cap, a->n + 1, sizeof *p, 256);

    if (!p) {
        a->nomem = 1;
        return 1;
    }
    a->v = p;
    a->v[a->n++] = *s;
    return 0;
}

static int cmp_syscall(const void *a, const void *b)
{
    const crec_syscall_info *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

int crec_syscalls(crec_recording *rec, int (*fn)(void *ctx, const crec_syscall_info *s),
                  void *ctx, crec_error *err)
{
    struct sys_walk w = {rec, rec->kfs[0].tid, fn, ctx};
    struct sys_all all = {0};
    int rc;

    if (!rec->nthr)
        return each_event(rec, 0, sys_event, &w, err);
    if ((rc = qx_schedule(rec, err)) != CREC_OK)
        return rc;
    w.fn = keep_syscall, w.ctx = &all;
    for (uint32_t tid = 1; tid <= rec->nthr && rc == CREC_OK && !all.nomem; tid++) {
        size_t from = all.n;
        if (!(w.rec = rec->thr[tid - 1]))
            continue;
        w.tid = tid;
        rc = each_event(w.rec, 0, sys_event, &w, err);
        for (size_t i = from; i < all.n; i++) /* its own count, as global time */
            all.v[i].t = qx_global_time(rec, tid, all.v[i].t);
    }
    if (rc == CREC_OK && all.nomem)
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the syscalls");
    if (rc == CREC_OK) {
        crec_sort(all.v, all.n, sizeof *all.v, cmp_syscall);
        for (size_t i = 0; i < all.n; i++)
            if (fn(ctx, &all.v[i]))
                break;
    }
    crec_free(all.v);
    return rc;
}

static int exit_event(void *ctx, const crec_fmt_event *ev)
{
    crec_end *e = ctx;

    if (ev->kind != CREC_FMT_K_EXIT)
        return 0;
    e->how = (int)ev->u.exit.how;
    e->value = ev->u.exit.value;
    return 1;
}

int crec_ending(crec_recording *rec, crec_end *e, crec_error *err)
{
    size_t last = rec->nkf - 1;
    int rc;

    memset(e, 0, sizeof *e);
    e->how = -1;
    e->t = rec->end;
    e->tid = rec->kfs[last].tid;
    if ((rc = qx_need_kf(rec, last, err)) != CREC_OK)
        return rc;
    e->rip = rec->kfs[last].regs.rip;
    return each_event(rec, last, exit_event, e, err);
}

/* ---- a thread's life ------------------------------------------------------------- */

/* A thread's creation opens its stream; the first thread's comes when it
 * makes the second. */
static int create_event(void *ctx, const crec_fmt_event *ev)
{
    crec_thread_info *ti = ctx;

    if (ev->kind != CREC_FMT_K_THREAD)
        return 0;
    if (ev->u.thread.op == CREC_FMT_TH_CREATE) {
        ti->parent = ev->u.thread.parent;
        ti->guest_tid = ev->u.thread.guest_tid;
    }
    return 1;
}

static int end_event(void *ctx, const crec_fmt_event *ev)
{
    crec_thread_info *ti = ctx;

    if (ev->kind != CREC_FMT_K_THREAD || ev->u.thread.op != CREC_FMT_TH_EXIT)
        return 0;
    ti->exited = ev->u.thread.how == CREC_FMT_TH_EXITED;
    ti->status = ev->u.thread.status;
    return 1;
}

int crec_thread_describe(crec_recording *rec, uint32_t tid, crec_thread_info *ti,
                         crec_error *err)
{
    const crec_fmt_slice *first, *last;
    crec_recording *th;
    const size_t *v;
    size_t n;
    crec_end e;
    int rc;

    memset(ti, 0, sizeof *ti);
    ti->tid = tid;
    if (!rec->nthr) {
        if (tid != 1)
            return crec_error_set(err, CREC_ERR_ARG, "no thread %u (the recording has one "
                                  "thread, 1)", tid);
        ti->end = ti->instructions = rec->end;
        ti->keyframes = rec->nkf;
        ti->ended_program = 1;
        return CREC_OK;
    }
    if ((rc = qx_thread_slices(rec, tid, &v, &n, err)) != CREC_OK)
        return rc;
    if (!(th = rec->thr[tid - 1]))
        return crec_error_corrupt(err, "the schedule runs thread %u, which has no key frame", tid);
    first = &rec->slices[v[0]];
    last = &rec->slices[v[n - 1]];
    ti->start = first->start;
    ti->end = last->start + last->len;
    ti->instructions = last->thread_start + last->len;
    ti->keyframes = th->nkf;
    /* its creation opens its stream; its end is after its last key frame */
    if ((rc = events_from(th, tid, 0, create_event, ti, err)) != CREC_OK ||
        (rc = each_event(th, th->nkf - 1, end_event, ti, err)) != CREC_OK)
        return rc;
    if ((rc = crec_ending(rec, &e, err)) != CREC_OK)
        return rc;
    ti->ended_program = e.tid == tid;
    return CREC_OK;
}

/* ---- how a crash happened ------------------------------------------------------ */

/* A register as Capstone names it, in the state r.  @return 0 for none. */
static uint64_t cs_reg_value(csh cs, unsigned reg, const crec_regs *r)
{
    static const char *const r64[CREC_NGPR] = {
        "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
    };
    static const char *const r32[CREC_NGPR] = {
        "eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
        "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d",
    };
    const char *name;

    if (reg == X86_REG_INVALID)
        return 0;
    if (reg == X86_REG_RIP)
        return r->rip;
    name = cs_reg_name(cs, reg);
    for (int i = 0; name && i < CREC_NGPR; i++) {
        if (strcmp(name, r64[i]) == 0)
            return r->gpr[i];
        if (strcmp(name, r32[i]) == 0) /* a 32-bit address (addr32 prefix) */
            return r->gpr[i] & 0xffffffffu;
    }
    return 0;
}

int crec_crash_info(crec_recording *rec, crec_crash *c, crec_error *err)
{
    crec_end e;
    crec_regs r;
    uint8_t code[16];
    uint64_t t0 = crec_tell(rec);
    cs_insn *insn = NULL;
    csh cs;
    size_t n;
    int rc;

    memset(c, 0, sizeof *c);
    if ((rc = crec_ending(rec, &e, err)) != CREC_OK)
        return rc;
    if (e.how != 1)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "the program was not killed by a signal");
    c->signo = (int)e.value;
    c->t = e.t;
    c->rip = e.rip;
    if ((rc = crec_seek(rec, e.t, err)) == CREC_OK)
        rc = crec_read_registers(rec, &r, err);
    if (rc == CREC_OK)
        rc = crec_read_memory(rec, c->rip, sizeof code, code, NULL, NULL, NULL);
    crec_seek(rec, t0, NULL);
    if (rc != CREC_OK)
        return CREC_OK; /* what the fault was, without its address */
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
        return CREC_OK;
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    n = cs_disasm(cs, code, sizeof code, c->rip, 1, &insn);
    if (n)
        snprintf(c->insn, sizeof c->insn, "%.31s%s%.120s", insn[0].mnemonic,
                 insn[0].op_str[0] ? " " : "", insn[0].op_str);
    else
        snprintf(c->insn, sizeof c->insn, "(not an instruction)");
    for (uint8_t i = 0; n && i < insn[0].detail->x86.op_count; i++) {
        const cs_x86_op *op = &insn[0].detail->x86.operands[i];
        if (op->type != X86_OP_MEM)
            continue;
        c->addr = cs_reg_value(cs, op->mem.base, &r) +
                  cs_reg_value(cs, op->mem.index, &r) * (uint64_t)op->mem.scale +
                  (uint64_t)op->mem.disp;
        if (op->mem.base == X86_REG_RIP)
            c->addr += insn[0].size; /* rip-relative: from the next instruction */
        if (op->mem.segment == X86_REG_FS)
            c->addr += r.fs_base;
        else if (op->mem.segment == X86_REG_GS)
            c->addr += r.gs_base;
        c->has_addr = 1;
        break;
    }
    if (n)
        cs_free(insn, n);
    cs_close(&cs);
    return CREC_OK;
}
