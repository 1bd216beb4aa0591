/*
 * xinsn.c - the instructions crec executes itself (see xinsn.h): how a
 * hooked instruction is reached, the register state Unicorn can't hold,
 * memory accesses reported to the client, and the integer, logic, move,
 * shuffle and mask instructions of AVX, AVX2 and AVX-512.  Floating point
 * is in xfloat.c.
 *
 * Everything here is plain portable C on guest (little-endian) bytes, so a
 * replay on a big-endian host computes exactly what the recording did.
 *
 * An instruction here is all or nothing: its memory operands are checked
 * before anything is written, and a fault, a #GP (a misaligned aligned
 * move) or #UD (an encoding crec does not execute) leaves registers and
 * memory as they were, with the stop described as the kernel would.
 */
#include <signal.h>
#include <string.h>

#include "emu/emu_int.h"
#include "emu/xinsn.h"

/* Consecutive instructions carried out in one visit (each one reached
 * through a hook would cost a trip out of the translated block). */
#define XI_BATCH EMU_XI_BATCH

static const int gpr_uc[16] = {
    UC_X86_REG_RAX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RBX,
    UC_X86_REG_RSP, UC_X86_REG_RBP, UC_X86_REG_RSI, UC_X86_REG_RDI,
    UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
    UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15,
};

/* ---- stops ----------------------------------------------------------------- */

static void xi_stop(struct xi_ctx *c, enum crec_emu_stop_why why, int signo, const char *why_text)
{
    struct crec_emu_stop *s = &c->cpu->fault;
    char desc[100];

    memset(s, 0, sizeof *s);
    s->why = why;
    s->signo = signo;
    s->rip = c->rip;
    if (why_text) {
        emu_describe_insn(c->cpu, c->rip, desc, sizeof desc);
        snprintf(s->what, sizeof s->what, "%.99s: %.58s", desc, why_text);
    }
    c->cpu->fault_seen = 1;
    c->stop = 1;
}

void xi_ud(struct xi_ctx *c, const char *why)
{
    if (!c->stop)
        xi_stop(c, CREC_STOP_ILLEGAL, SIGILL, why);
}

void xi_gp(struct xi_ctx *c, const char *why)
{
    if (!c->stop)
        xi_stop(c, CREC_STOP_TRAP, SIGSEGV, why);
}

static void xi_fault(struct xi_ctx *c, uint64_t addr, unsigned n, int access)
{
    struct crec_emu_stop *s = &c->cpu->fault;
    uint64_t bad = addr;

    if (c->stop)
        return;
    xi_stop(c, CREC_STOP_FAULT, SIGSEGV, NULL);
    /* the first byte that is not accessible */
    for (unsigned i = 0; i < n; i++) {
        int prot = crec_emu_mem_prot(c->cpu, addr + i);
        if (prot < 0 || !(prot & (access == 'w' ? CREC_PROT_WRITE : CREC_PROT_READ))) {
            bad = addr + i;
            break;
        }
    }
    s->addr = bad;
    s->access = access;
    s->unmapped = crec_emu_mem_prot(c->cpu, bad) < 0;
}

/* ---- registers ------------------------------------------------------------- */

uint64_t xi_gpr(struct xi_ctx *c, unsigned r)
{
    return emu_reg_get(c->cpu, gpr_uc[r & 15]);
}

/* Write the low `bytes` of a general register; a 32-bit write zeroes the
 * upper half, as on the CPU. */
void xi_set_gpr(struct xi_ctx *c, unsigned r, uint64_t v, unsigned bytes)
{
    uint64_t old = bytes < 4 ? xi_gpr(c, r) : 0;

    if (bytes == 4)
        v &= 0xffffffffu;
    else if (bytes < 4)
        v = (old & ~((1ull << (8 * bytes)) - 1)) | (v & ((1ull << (8 * bytes)) - 1));
    emu_reg_set(c->cpu, gpr_uc[r & 15], v);
}

/* Set the arithmetic flags in `mask` to `bits`. */
void xi_set_flags(struct xi_ctx *c, uint64_t mask, uint64_t bits)
{
    uint64_t f = emu_reg_get(c->cpu, UC_X86_REG_EFLAGS);
    emu_reg_set(c->cpu, UC_X86_REG_EFLAGS, (f & ~mask) | (bits & mask));
}

/* Hand an unknown piece of the state to the client (see xinsn.h). */
static void xstate_load(struct xi_ctx *c, uint8_t *bytes, unsigned len)
{
    crec_emu_cpu *cpu = c->cpu;

    for (unsigned off = 0; off < len; off += 16)
        if (cpu->xstate_fn)
            cpu->xstate_fn(cpu->xstate_ctx, bytes + off, len - off < 16 ? len - off : 16);
}

/* The state at the upper end: known, loaded if it was not. */
static uint8_t *xhi(struct xi_ctx *c, unsigned r)
{
    struct xi_state *x = &c->cpu->xs;

    x->touched = 1;
    if (!(x->hi_known >> r & 1)) {
        xstate_load(c, x->hi[r], 48);
        x->hi_known |= 1u << r;
    }
    return x->hi[r];
}

static uint8_t *xext(struct xi_ctx *c, unsigned r)
{
    struct xi_state *x = &c->cpu->xs;

    x->touched = 1;
    if (!(x->ext_known >> r & 1)) {
        xstate_load(c, x->ext[r], 64);
        x->ext_known |= 1u << r;
    }
    return x->ext[r];
}

static uint64_t xk(struct xi_ctx *c, unsigned r)
{
    struct xi_state *x = &c->cpu->xs;
    uint8_t b[8];

    x->touched = 1;
    if (!(x->k_known >> r & 1)) {
        for (int i = 0; i < 8; i++)
            b[i] = (uint8_t)(x->k[r] >> (8 * i));
        xstate_load(c, b, 8);
        x->k[r] = xi_el(b, 0, 8);
        x->k_known |= 1u << r;
    }
    return x->k[r];
}

void xi_kset(struct xi_ctx *c, unsigned r, uint64_t v)
{
    struct xi_state *x = &c->cpu->xs;

    x->touched = 1;
    x->k[r & 7] = v;
    x->k_known |= 1u << (r & 7);
}

/* The low 128 bits of xmm0-15 live in Unicorn: two host-order words,
 * read once per visit and written back at its end (xmm_flush). */
static void xmm_get(struct xi_ctx *c, unsigned r, uint8_t out[16])
{
    if (!(c->lo_valid >> r & 1)) {
        uint64_t q[2] = {0, 0};
        uc_reg_read(c->cpu->uc, UC_X86_REG_XMM0 + (int)r, q);
        xi_set_el(c->lo[r], 0, 8, q[0]);
        xi_set_el(c->lo[r], 1, 8, q[1]);
        c->lo_valid |= (uint16_t)(1u << r);
    }
    memcpy(out, c->lo[r], 16);
}

static void xmm_put(struct xi_ctx *c, unsigned r, const uint8_t in[16])
{
    memcpy(c->lo[r], in, 16);
    c->lo_valid |= (uint16_t)(1u << r);
    c->lo_dirty |= (uint16_t)(1u << r);
}

static void xmm_flush(struct xi_ctx *c)
{
    for (unsigned r = 0; r < 16; r++)
        if (c->lo_dirty >> r & 1) {
            uint64_t q[2] = {xi_el(c->lo[r], 0, 8), xi_el(c->lo[r], 1, 8)};
            uc_reg_write(c->cpu->uc, UC_X86_REG_XMM0 + (int)r, q);
        }
    c->lo_dirty = 0;
}

/* The low vl bytes of zmm r (the instruction's vector length, at least
 * 16), the rest of out zero: an instruction reads no more of a source, so
 * the state above it need not be known. */
void xi_vget(struct xi_ctx *c, unsigned r, uint8_t out[64])
{
    unsigned n = c->vl < 16 ? 16 : c->vl;

    if (r < 16) {
        xmm_get(c, r, out);
        if (n > 16)
            memcpy(out + 16, xhi(c, r), n - 16);
    } else {
        memcpy(out, xext(c, r - 16), n);
    }
    memset(out + n, 0, 64 - n);
}

/* Write the low vl bytes of zmm r and zero the rest (VEX and EVEX writes
 * zero the register above the vector length). */
void xi_vset(struct xi_ctx *c, unsigned r, const uint8_t v[64], unsigned vl)
{
    struct xi_state *x = &c->cpu->xs;
    uint8_t full[64];

    memset(full, 0, sizeof full);
    memcpy(full, v, vl);
    x->touched = 1;
    if (r < 16) {
        xmm_put(c, r, full);
        memcpy(x->hi[r], full + 16, 48);
        x->hi_known |= 1u << r;
    } else {
        memcpy(x->ext[r - 16], full, 64);
        x->ext_known |= 1u << (r - 16);
    }
}

/* The write mask of the instruction for nel elements (all ones without
 * EVEX masking). */
uint64_t xi_mask(struct xi_ctx *c, unsigned nel)
{
    uint64_t all = nel >= 64 ? ~0ull : (1ull << nel) - 1;

    if (!c->evex || c->in.aaa == 0)
        return all;
    return xk(c, c->in.aaa) & all;
}

/*
 * Write a result of nel elements of es bytes to zmm r, under the write
 * mask: a masked-off element keeps the register's old value, or is zeroed
 * with {z}.  Bytes past nel * es and up to 64 are zero.
 */
void xi_write_masked(struct xi_ctx *c, unsigned r, const uint8_t res[64], unsigned es,
                     unsigned nel)
{
    uint8_t out[64], old[64];
    uint64_t m = xi_mask(c, nel);
    uint64_t all = nel >= 64 ? ~0ull : (1ull << nel) - 1;

    memset(out, 0, sizeof out);
    if (m == all) {
        memcpy(out, res, (size_t)es * nel);
    } else {
        if (!c->in.z)
            xi_vget(c, r, old);
        for (unsigned i = 0; i < nel; i++) {
            if (m >> i & 1)
                memcpy(out + i * es, res + i * es, es);
            else if (!c->in.z)
                memcpy(out + i * es, old + i * es, es);
        }
    }
    xi_vset(c, r, out, es * nel > 16 ? es * nel : 16);
}

/* ---- memory ---------------------------------------------------------------- */

/*
 * The effective address.  An EVEX disp8 counts in units of the memory
 * access (N in the SDM's tables: the bytes accessed, or one element with a
 * broadcast), which the caller knows.
 */
uint64_t xi_ea(struct xi_ctx *c, unsigned memsize)
{
    const struct xi_insn *in = &c->in;
    uint64_t a = (uint64_t)in->disp;

    if (in->disp8)
        a = (uint64_t)(in->disp * (int64_t)memsize);
    if (in->riprel)
        a += c->rip + in->len;
    if (in->base >= 0)
        a += xi_gpr(c, (unsigned)in->base);
    if (in->index >= 0)
        a += xi_gpr(c, (unsigned)in->index) * in->scale;
    if (in->addr32)
        a &= 0xffffffffu;
    if (in->seg == 4)
        a += emu_reg_get(c->cpu, UC_X86_REG_FS_BASE);
    else if (in->seg == 5)
        a += emu_reg_get(c->cpu, UC_X86_REG_GS_BASE);
    return a;
}

/* Tell the client's memory hooks (crec_emu_cpu_hook_mem) about an
 * access, as Unicorn tells them of its own, in pieces of at most 8 bytes. */
static void report(struct xi_ctx *c, int store, uint64_t addr, unsigned n, const uint8_t *bytes)
{
    crec_emu_cpu *cpu = c->cpu;
    int kind = store ? CREC_EMU_STORE : CREC_EMU_LOAD;

    cpu->xreporting = 1; /* no echo to filter (crec_emu_mem_echo) */
    for (size_t h = 0; h < cpu->n_client_hooks; h++) {
        const struct emu_client_hook *ch = &cpu->client_hooks[h];
        if (!(ch->kinds & kind))
            continue;
        for (unsigned off = 0; off < n; off += 8) {
            unsigned k = n - off < 8 ? n - off : 8;
            ch->fn(ch->ctx, kind, addr + off, k, store ? xi_el(bytes + off, 0, k) : 0);
        }
    }
    cpu->xreporting = 0;
}

/* Load n bytes: reported first (a replayer writes the recorded value
 * there), then read.  @return 0, or -1 with a fault stop. */
int xi_load(struct xi_ctx *c, uint64_t addr, unsigned n, uint8_t *out)
{
    if (c->stop)
        return -1;
    if (emu_mem_check(c->cpu, addr, n, CREC_PROT_READ) != 0) {
        xi_fault(c, addr, n, 'r');
        return -1;
    }
    report(c, 0, addr, n, NULL);
    crec_emu_mem_read(c->cpu, out, addr, n);
    return 0;
}

/* Whether a store of n bytes at addr would fault (and the stop, if so). */
static int store_check(struct xi_ctx *c, uint64_t addr, unsigned n)
{
    if (c->stop)
        return -1;
    if (emu_mem_check(c->cpu, addr, n, CREC_PROT_WRITE) != 0) {
        xi_fault(c, addr, n, 'w');
        return -1;
    }
    return 0;
}

/* Store n bytes (checked with store_check already, or checked here). */
int xi_store(struct xi_ctx *c, uint64_t addr, unsigned n, const uint8_t *in)
{
    if (store_check(c, addr, n) != 0)
        return -1;
    report(c, 1, addr, n, in);
    crec_emu_mem_write(c->cpu, addr, in, n);
    /* code written over: Unicorn did not see this store */
    if (crec_emu_mem_prot(c->cpu, addr) & CREC_PROT_EXEC ||
        crec_emu_mem_prot(c->cpu, addr + n - 1) & CREC_PROT_EXEC)
        crec_emu_cpu_flush_code(c->cpu, addr, n);
    return 0;
}

/*
 * The rm operand as a vector of `bytes` (the rest zero): a register, or
 * memory; with EVEX.b on memory, one element of es bytes broadcast to the
 * vector length.  @return 0, or -1 with a stop.
 */
int xi_src2(struct xi_ctx *c, uint8_t out[64], unsigned es, unsigned bytes)
{
    memset(out, 0, 64);
    if (c->in.mod == 3) {
        xi_vget(c, c->in.rm, out);
        if (bytes < 64)
            memset(out + bytes, 0, 64 - bytes);
        return 0;
    }
    if (c->evex && c->in.b) {
        uint8_t one[8];
        if (xi_load(c, xi_ea(c, es), es, one) != 0)
            return -1;
        for (unsigned i = 0; i < bytes / es; i++)
            memcpy(out + i * es, one, es);
        return 0;
    }
    return xi_load(c, xi_ea(c, bytes), bytes, out);
}

/* The memory operand must be aligned to n bytes (movdqa, movaps, ...). */
static int aligned(struct xi_ctx *c, uint64_t addr, unsigned n)
{
    if (addr % n == 0)
        return 1;
    xi_gp(c, "general protection (misaligned operand)");
    return 0;
}

/* The usual operands: src1 (vvvv) in a, src2 (rm: a register, memory, or
 * a broadcast element of es bytes) in b, and a cleared result r.
 * @return 0, or -1 with a stop. */
int xi_operands(struct xi_ctx *c, uint8_t a[64], uint8_t b[64], uint8_t r[64], unsigned es)
{
    xi_vget(c, c->in.vvvv, a);
    memset(r, 0, 64);
    return xi_src2(c, b, es, c->vl);
}

/* ---- integer lanes ----------------------------------------------------------- */

static int64_t sx(uint64_t v, unsigned es)
{
    unsigned sh = 64 - 8 * es;
    return (int64_t)(v << sh) >> sh;
}

static uint64_t ones(unsigned es)
{
    return es >= 8 ? ~0ull : (1ull << (8 * es)) - 1;
}

static uint64_t sat_s(int64_t v, unsigned es)
{
    int64_t hi = (int64_t)(ones(es) >> 1), lo = -hi - 1;
    return (uint64_t)(v > hi ? hi : v < lo ? lo : v) & ones(es);
}

static uint64_t sat_u(int64_t v, unsigned es)
{
    int64_t hi = (int64_t)ones(es);
    return (uint64_t)(v > hi ? hi : v < 0 ? 0 : v);
}

enum iop {
    I_ADD, I_SUB, I_ADDS, I_ADDUS, I_SUBS, I_SUBUS, I_MINS, I_MINU, I_MAXS, I_MAXU,
    I_AND, I_ANDN, I_OR, I_XOR, I_AVG, I_MULLO, I_MULHS, I_MULHU, I_MULHRS, I_CMPEQ,
    I_CMPGT, I_SLLV, I_SRLV, I_SRAV, I_ROLV, I_RORV, I_SIGN, I_MULUDQ, I_MULDQ,
};

static inline uint64_t iop(enum iop op, uint64_t a, uint64_t b, unsigned es)
{
    uint64_t m = ones(es);
    unsigned bits = 8 * es;

    switch (op) {
    case I_ADD: return (a + b) & m;
    case I_SUB: return (a - b) & m;
    case I_ADDS: return sat_s(sx(a, es) + sx(b, es), es);
    case I_ADDUS: return sat_u((int64_t)(a + b), es);
    case I_SUBS: return sat_s(sx(a, es) - sx(b, es), es);
    case I_SUBUS: return a > b ? a - b : 0;
    case I_MINS: return sx(a, es) < sx(b, es) ? a : b;
    case I_MINU: return a < b ? a : b;
    case I_MAXS: return sx(a, es) > sx(b, es) ? a : b;
    case I_MAXU: return a > b ? a : b;
    case I_AND: return a & b;
    case I_ANDN: return ~a & b & m;
    case I_OR: return a | b;
    case I_XOR: return a ^ b;
    case I_AVG: return (a + b + 1) >> 1;
    case I_MULLO: return (a * b) & m;
    case I_MULHS: return (uint64_t)((sx(a, es) * sx(b, es)) >> bits) & m;
    case I_MULHU: return ((a * b) >> bits) & m;
    case I_MULHRS: return (uint64_t)((((sx(a, es) * sx(b, es)) >> 14) + 1) >> 1) & m;
    case I_CMPEQ: return a == b ? m : 0;
    case I_CMPGT: return sx(a, es) > sx(b, es) ? m : 0;
    case I_SLLV: return b >= bits ? 0 : (a << b) & m;
    case I_SRLV: return b >= bits ? 0 : a >> b;
    case I_SRAV: return (uint64_t)(sx(a, es) >> (b >= bits ? bits - 1 : b)) & m;
    case I_ROLV: b %= bits; return b ? ((a << b) | (a >> (bits - b))) & m : a;
    case I_RORV: b %= bits; return b ? ((a >> b) | (a << (bits - b))) & m : a;
    case I_SIGN: return sx(b, es) < 0 ? (0 - a) & m : b == 0 ? 0 : a;
    case I_MULUDQ: return (a & 0xffffffffu) * (b & 0xffffffffu);
    case I_MULDQ: return (uint64_t)(sx(a & 0xffffffffu, 4) * sx(b & 0xffffffffu, 4));
    }
    return 0;
}

/* dst = src1 op src2, element by element; es a constant once inlined into
 * int_bin's cases, so that each element is one load and one store. */
static inline __attribute__((always_inline)) void int_bin_es(struct xi_ctx *c, enum iop op,
                                                             unsigned es)
{
    uint8_t a[64], b[64], r[64];
    unsigned nel = c->vl / es;

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned i = 0; i < nel; i++)
        xi_set_el(r, i, es, iop(op, xi_el(a, i, es), xi_el(b, i, es), es));
    xi_write_masked(c, c->in.reg, r, es, nel);
}

static void int_bin(struct xi_ctx *c, enum iop op, unsigned es)
{
    switch (es) {
    case 1: int_bin_es(c, op, 1); break;
    case 2: int_bin_es(c, op, 2); break;
    case 4: int_bin_es(c, op, 4); break;
    default: int_bin_es(c, op, 8); break;
    }
}

/* A compare whose EVEX form writes a mask register: bit i = (a op b), and
 * the write mask. */
static void cmp_to_k(struct xi_ctx *c, const uint8_t *a, const uint8_t *b, unsigned es, int pred,
                     int sign)
{
    unsigned nel = c->vl / es;
    uint64_t bits = 0, m = xi_mask(c, nel);

    for (unsigned i = 0; i < nel; i++) {
        uint64_t x = xi_el(a, i, es), y = xi_el(b, i, es);
        int lt = sign ? sx(x, es) < sx(y, es) : x < y, eq = x == y, t;
        switch (pred & 7) {
        case 0: t = eq; break;
        case 1: t = lt; break;
        case 2: t = lt || eq; break;
        case 3: t = 0; break;
        case 4: t = !eq; break;
        case 5: t = !lt; break;
        case 6: t = !lt && !eq; break;
        default: t = 1; break;
        }
        bits |= (uint64_t)t << i;
    }
    xi_kset(c, c->in.reg, bits & m);
}

/* pcmpeq/pcmpgt: a vector of all-ones/zeros (VEX), a mask (EVEX). */
static void int_cmp(struct xi_ctx *c, int gt, unsigned es)
{
    uint8_t a[64], b[64];

    if (!c->evex) {
        int_bin(c, gt ? I_CMPGT : I_CMPEQ, es);
        return;
    }
    xi_vget(c, c->in.vvvv, a);
    if (xi_src2(c, b, es, c->vl) != 0)
        return;
    cmp_to_k(c, a, b, es, gt ? 6 : 0, 1);
}

/* vpcmp[u]b/w/d/q k, src1, src2, imm (EVEX). */
static void int_cmp_imm(struct xi_ctx *c, unsigned es, int sign)
{
    uint8_t a[64], b[64];

    xi_vget(c, c->in.vvvv, a);
    if (xi_src2(c, b, es, c->vl) != 0)
        return;
    cmp_to_k(c, a, b, es, c->in.imm, sign);
}

/* vptestm / vptestnm: bit i = ((a & b) != 0), or == 0. */
static void int_testm(struct xi_ctx *c, unsigned es, int neg)
{
    uint8_t a[64], b[64];
    unsigned nel = c->vl / es;
    uint64_t bits = 0;

    xi_vget(c, c->in.vvvv, a);
    if (xi_src2(c, b, es, c->vl) != 0)
        return;
    for (unsigned i = 0; i < nel; i++)
        bits |= (uint64_t)(((xi_el(a, i, es) & xi_el(b, i, es)) != 0) ^ neg) << i;
    xi_kset(c, c->in.reg, bits & xi_mask(c, nel));
}

/* Unary: abs, popcount, lzcnt. */
static void int_un(struct xi_ctx *c, int what, unsigned es)
{
    uint8_t b[64], r[64];
    unsigned nel = c->vl / es;

    if (xi_src2(c, b, es, c->vl) != 0)
        return;
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < nel; i++) {
        uint64_t x = xi_el(b, i, es), y = 0;
        if (what == 0)
            y = sx(x, es) < 0 ? (0 - x) & ones(es) : x;
        else if (what == 1)
            y = (uint64_t)__builtin_popcountll(x);
        else
            y = x ? (uint64_t)(__builtin_clzll(x) - (64 - 8 * (int)es)) : 8 * es;
        xi_set_el(r, i, es, y);
    }
    xi_write_masked(c, c->in.reg, r, es, nel);
}

/* ---- shifts ------------------------------------------------------------------ */

/* Shift every element of src by n (count already known). */
static void shift_all(uint8_t *r, const uint8_t *src, unsigned es, unsigned nel, int kind,
                      uint64_t n)
{
    unsigned bits = 8 * es;

    for (unsigned i = 0; i < nel; i++) {
        uint64_t x = xi_el(src, i, es), y;
        if (kind == 0) /* left */
            y = n >= bits ? 0 : (x << n) & ones(es);
        else if (kind == 1) /* logical right */
            y = n >= bits ? 0 : x >> n;
        else /* arithmetic right */
            y = (uint64_t)(sx(x, es) >> (n >= bits ? bits - 1 : n)) & ones(es);
        xi_set_el(r, i, es, y);
    }
}

/* psll/psrl/psra by imm (group 71-73: dst = vvvv, src = rm). */
static void shift_imm(struct xi_ctx *c, int kind, unsigned es)
{
    uint8_t s[64], r[64];
    unsigned nel = c->vl / es;

    if (xi_src2(c, s, es, c->vl) != 0)
        return;
    memset(r, 0, sizeof r);
    shift_all(r, s, es, nel, kind, c->in.imm);
    c->in.reg = c->in.vvvv;
    xi_write_masked(c, c->in.reg, r, es, nel);
}

/* psll/psrl/psra by the low 64 bits of an xmm operand. */
static void shift_xmm(struct xi_ctx *c, int kind, unsigned es)
{
    uint8_t s[64], cnt[64], r[64];
    unsigned nel = c->vl / es;

    xi_vget(c, c->in.vvvv, s);
    if (c->in.mod == 3)
        xi_vget(c, c->in.rm, cnt);
    else if (xi_load(c, xi_ea(c, 16), 16, cnt) != 0)
        return;
    memset(r, 0, sizeof r);
    shift_all(r, s, es, nel, kind, xi_el(cnt, 0, 8));
    xi_write_masked(c, c->in.reg, r, es, nel);
}

/* pslldq/psrldq: bytes within each 128-bit lane. */
static void shift_bytes(struct xi_ctx *c, int left)
{
    uint8_t s[64], r[64];
    unsigned n = c->in.imm;

    if (xi_src2(c, s, 1, c->vl) != 0)
        return;
    memset(r, 0, sizeof r);
    for (unsigned lane = 0; lane < c->vl; lane += 16)
        for (unsigned i = 0; i < 16; i++) {
            unsigned from = left ? i - n : i + n;
            r[lane + i] = (left ? i >= n : i + n < 16) ? s[lane + from] : 0;
        }
    xi_write_masked(c, c->in.vvvv, r, 1, c->vl);
}

/* ---- packs, unpacks, shuffles ---------------------------------------------------- */

/* Interleave the low (hi = 0) or high halves of each 128-bit lane. */
static void unpack(struct xi_ctx *c, unsigned es, int hi)
{
    uint8_t a[64], b[64], r[64];
    unsigned per = 16 / es, half = per / 2;

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned lane = 0; lane < c->vl / 16; lane++)
        for (unsigned i = 0; i < half; i++) {
            unsigned from = lane * per + (hi ? half : 0) + i, to = lane * per + 2 * i;
            xi_set_el(r, to, es, xi_el(a, from, es));
            xi_set_el(r, to + 1, es, xi_el(b, from, es));
        }
    xi_write_masked(c, c->in.reg, r, es, c->vl / es);
}

/* packsswb/packuswb/packssdw/packusdw: narrow with saturation, per lane. */
static void pack(struct xi_ctx *c, unsigned es, int sign)
{
    uint8_t a[64], b[64], r[64];
    unsigned per = 16 / es, out = es / 2;

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned lane = 0; lane < c->vl / 16; lane++)
        for (unsigned i = 0; i < per; i++) {
            int64_t x = sx(xi_el(a, lane * per + i, es), es);
            int64_t y = sx(xi_el(b, lane * per + i, es), es);
            unsigned base = lane * 2 * per;
            xi_set_el(r, base + i, out, sign ? sat_s(x, out) : sat_u(x, out));
            xi_set_el(r, base + per + i, out, sign ? sat_s(y, out) : sat_u(y, out));
        }
    xi_write_masked(c, c->in.reg, r, out, c->vl / out);
}

/* pshufb: each byte picks a byte of its own 128-bit lane, or zero. */
static void pshufb(struct xi_ctx *c)
{
    uint8_t a[64], b[64], r[64];

    if (xi_operands(c, a, b, r, 1) != 0)
        return;
    for (unsigned i = 0; i < c->vl; i++)
        r[i] = (b[i] & 0x80) ? 0 : a[(i & ~15u) + (b[i] & 15)];
    xi_write_masked(c, c->in.reg, r, 1, c->vl);
}

/* pshufd (es 4, every dword), pshufhw/pshuflw (es 2, one half of each
 * lane: hi says which). */
static void pshuf(struct xi_ctx *c, unsigned es, int which)
{
    uint8_t s[64], r[64];
    unsigned imm = c->in.imm;

    if (xi_src2(c, s, 4, c->vl) != 0)
        return;
    memcpy(r, s, 64);
    for (unsigned lane = 0; lane < c->vl / 16; lane++) {
        if (es == 4) {
            for (unsigned i = 0; i < 4; i++)
                xi_set_el(r, lane * 4 + i, 4, xi_el(s, lane * 4 + (imm >> (2 * i) & 3), 4));
        } else {
            unsigned base = lane * 8 + (which ? 4 : 0);
            for (unsigned i = 0; i < 4; i++)
                xi_set_el(r, base + i, 2, xi_el(s, base + (imm >> (2 * i) & 3), 2));
        }
    }
    xi_write_masked(c, c->in.reg, r, es, c->vl / es);
}

/* phadd/phsub w/d/sw: pairs of each source, per 128-bit lane. */
static void hadd_int(struct xi_ctx *c, unsigned es, enum iop op)
{
    uint8_t a[64], b[64], r[64];
    unsigned per = 16 / es, half = per / 2;

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned lane = 0; lane < c->vl / 16; lane++)
        for (unsigned i = 0; i < half; i++) {
            unsigned p = lane * per + 2 * i;
            xi_set_el(r, lane * per + i, es, iop(op, xi_el(a, p, es), xi_el(a, p + 1, es), es));
            xi_set_el(r, lane * per + half + i, es,
                      iop(op, xi_el(b, p, es), xi_el(b, p + 1, es), es));
        }
    xi_write_masked(c, c->in.reg, r, es, c->vl / es);
}

/* pmaddwd (words to dwords), pmaddubsw (unsigned x signed bytes to
 * saturated words), psadbw (sums of absolute byte differences). */
static void madd(struct xi_ctx *c, int what)
{
    uint8_t a[64], b[64], r[64];

    if (xi_operands(c, a, b, r, 4) != 0)
        return;
    if (what == 0) {
        for (unsigned i = 0; i < c->vl / 4; i++) {
            int64_t s = sx(xi_el(a, 2 * i, 2), 2) * sx(xi_el(b, 2 * i, 2), 2) +
                        sx(xi_el(a, 2 * i + 1, 2), 2) * sx(xi_el(b, 2 * i + 1, 2), 2);
            xi_set_el(r, i, 4, (uint64_t)s & 0xffffffffu);
        }
        xi_write_masked(c, c->in.reg, r, 4, c->vl / 4);
    } else if (what == 1) {
        for (unsigned i = 0; i < c->vl / 2; i++) {
            int64_t s = (int64_t)a[2 * i] * (int8_t)b[2 * i] +
                        (int64_t)a[2 * i + 1] * (int8_t)b[2 * i + 1];
            xi_set_el(r, i, 2, sat_s(s, 2));
        }
        xi_write_masked(c, c->in.reg, r, 2, c->vl / 2);
    } else {
        for (unsigned i = 0; i < c->vl / 8; i++) {
            uint64_t s = 0;
            for (unsigned k = 0; k < 8; k++)
                s += (uint64_t)(a[8 * i + k] > b[8 * i + k] ? a[8 * i + k] - b[8 * i + k]
                                                             : b[8 * i + k] - a[8 * i + k]);
            xi_set_el(r, i, 8, s);
        }
        xi_write_masked(c, c->in.reg, r, 8, c->vl / 8);
    }
}

/* pmuludq/pmuldq: the even dwords, to qwords. */
static void mul_dq(struct xi_ctx *c, int sign)
{
    int_bin(c, sign ? I_MULDQ : I_MULUDQ, 8);
}

/* palignr: per 128-bit lane, bytes imm.. of (src1:src2). */
static void palignr(struct xi_ctx *c)
{
    uint8_t a[64], b[64], r[64];
    unsigned n = c->in.imm;

    if (xi_operands(c, a, b, r, 1) != 0)
        return;
    for (unsigned lane = 0; lane < c->vl; lane += 16)
        for (unsigned i = 0; i < 16; i++) {
            unsigned k = i + n;
            r[lane + i] = k < 16 ? b[lane + k] : k < 32 ? a[lane + k - 16] : 0;
        }
    xi_write_masked(c, c->in.reg, r, 1, c->vl);
}

/* valignd/q: elements imm.. of (src1:src2), across the whole vector. */
static void valign(struct xi_ctx *c, unsigned es)
{
    uint8_t a[64], b[64], r[64];
    unsigned nel = c->vl / es, n = c->in.imm & (nel - 1);

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned i = 0; i < nel; i++) {
        unsigned k = i + n;
        xi_set_el(r, i, es, k < nel ? xi_el(b, k, es) : xi_el(a, k - nel, es));
    }
    xi_write_masked(c, c->in.reg, r, es, nel);
}

/* pblendw/blendps/blendpd/pblendd by imm (bits repeat per 128-bit lane
 * for pblendw), pblendvb/blendvps/blendvpd by the sign of a register. */
static void blend_imm(struct xi_ctx *c, unsigned es)
{
    uint8_t a[64], b[64], r[64];
    unsigned nel = c->vl / es;

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned i = 0; i < nel; i++) {
        xi_set_el(r, i, es, (c->in.imm >> (i % 8) & 1) ? xi_el(b, i, es) : xi_el(a, i, es));
    }
    xi_vset(c, c->in.reg, r, c->vl);
}

static void blend_var(struct xi_ctx *c, unsigned es)
{
    uint8_t a[64], b[64], m[64], r[64];
    unsigned nel = c->vl / es;

    xi_vget(c, c->in.vvvv, a);
    xi_vget(c, c->in.imm >> 4, m);
    if (xi_src2(c, b, es, c->vl) != 0)
        return;
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < nel; i++)
        xi_set_el(r, i, es, (m[i * es + es - 1] & 0x80) ? xi_el(b, i, es) : xi_el(a, i, es));
    xi_vset(c, c->in.reg, r, c->vl);
}

/* vpblendm*, vblendm*: pick src2 where the mask is set, src1 elsewhere
 * ({z}: zero). */
static void blend_mask(struct xi_ctx *c, unsigned es)
{
    uint8_t a[64], b[64], r[64];
    unsigned nel = c->vl / es;
    uint64_t m = c->in.aaa ? xk(c, c->in.aaa) : ~0ull;

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned i = 0; i < nel; i++)
        xi_set_el(r, i, es, (m >> i & 1) ? xi_el(b, i, es) : c->in.z ? 0 : xi_el(a, i, es));
    xi_vset(c, c->in.reg, r, c->vl);
}

/* shufps/shufpd: per lane, two elements from src1 then two from src2. */
static void shufp(struct xi_ctx *c, unsigned es)
{
    uint8_t a[64], b[64], r[64];
    unsigned imm = c->in.imm;

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned lane = 0; lane < c->vl / 16; lane++) {
        if (es == 4) {
            unsigned o = lane * 4;
            xi_set_el(r, o + 0, 4, xi_el(a, o + (imm & 3), 4));
            xi_set_el(r, o + 1, 4, xi_el(a, o + (imm >> 2 & 3), 4));
            xi_set_el(r, o + 2, 4, xi_el(b, o + (imm >> 4 & 3), 4));
            xi_set_el(r, o + 3, 4, xi_el(b, o + (imm >> 6 & 3), 4));
        } else {
            unsigned o = lane * 2;
            xi_set_el(r, o + 0, 8, xi_el(a, o + (imm >> (2 * lane) & 1), 8));
            xi_set_el(r, o + 1, 8, xi_el(b, o + (imm >> (2 * lane + 1) & 1), 8));
        }
    }
    xi_write_masked(c, c->in.reg, r, es, c->vl / es);
}

/* vpermilps/pd by imm (src = rm) or by a vector (src1 = vvvv, control = rm). */
static void permil(struct xi_ctx *c, unsigned es, int by_imm)
{
    uint8_t s[64], ctl[64], r[64];
    unsigned nel = c->vl / es, per = 16 / es;

    if (by_imm) {
        if (xi_src2(c, s, es, c->vl) != 0)
            return;
    } else {
        xi_vget(c, c->in.vvvv, s);
        if (xi_src2(c, ctl, es, c->vl) != 0)
            return;
    }
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < nel; i++) {
        unsigned lane = i / per * per, sel;
        if (by_imm)
            sel = es == 4 ? c->in.imm >> (2 * (i % 4)) & 3 : c->in.imm >> (i % 8) & 1;
        else
            sel = es == 4 ? (unsigned)(xi_el(ctl, i, 4) & 3) : (unsigned)(xi_el(ctl, i, 8) >> 1 & 1);
        xi_set_el(r, i, es, xi_el(s, lane + sel, es));
    }
    xi_write_masked(c, c->in.reg, r, es, nel);
}

/* vpermd/ps/q/pd/b/w by a vector of indexes (src1 = indexes), or vpermq/pd
 * by imm (per 256 bits). */
static void perm_var(struct xi_ctx *c, unsigned es)
{
    uint8_t idx[64], s[64], r[64];
    unsigned nel = c->vl / es;

    if (xi_operands(c, idx, s, r, es) != 0)
        return;
    for (unsigned i = 0; i < nel; i++)
        xi_set_el(r, i, es, xi_el(s, (unsigned)(xi_el(idx, i, es) & (nel - 1)), es));
    xi_write_masked(c, c->in.reg, r, es, nel);
}

static void perm_imm(struct xi_ctx *c)
{
    uint8_t s[64], r[64];

    if (c->vl == 16) {
        xi_ud(c, "vpermq/vpermpd need a 256-bit vector");
        return;
    }
    if (xi_src2(c, s, 8, c->vl) != 0)
        return;
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < c->vl / 8; i++)
        xi_set_el(r, i, 8, xi_el(s, (i & ~3u) + (c->in.imm >> (2 * (i % 4)) & 3), 8));
    xi_write_masked(c, c->in.reg, r, 8, c->vl / 8);
}

/* vpermt2* (dst is an index table's first half; indexes in vvvv) and
 * vpermi2* (dst holds the indexes, tables are vvvv and rm). */
static void perm2(struct xi_ctx *c, unsigned es, int i2)
{
    uint8_t d[64], v[64], s[64], r[64];
    unsigned nel = c->vl / es;

    xi_vget(c, c->in.reg, d);
    if (xi_operands(c, v, s, r, es) != 0)
        return;
    for (unsigned i = 0; i < nel; i++) {
        unsigned k = (unsigned)((i2 ? xi_el(d, i, es) : xi_el(v, i, es)) & (2 * nel - 1));
        const uint8_t *t1 = i2 ? v : d;
        xi_set_el(r, i, es, k < nel ? xi_el(t1, k, es) : xi_el(s, k - nel, es));
    }
    xi_write_masked(c, c->in.reg, r, es, nel);
}

/* vperm2f128/vperm2i128. */
static void perm2x128(struct xi_ctx *c)
{
    uint8_t a[64], b[64], r[64];

    if (c->vl != 32) {
        xi_ud(c, "vperm2f128 needs VEX.L=1");
        return;
    }
    xi_vget(c, c->in.vvvv, a);
    if (xi_src2(c, b, 16, 32) != 0)
        return;
    memset(r, 0, sizeof r);
    for (unsigned h = 0; h < 2; h++) {
        unsigned ctl = c->in.imm >> (4 * h);
        const uint8_t *src = (ctl & 2) ? b : a;
        if (!(ctl & 8))
            memcpy(r + 16 * h, src + 16 * (ctl & 1), 16);
    }
    xi_vset(c, c->in.reg, r, 32);
}

/* vshuff32x4 & co: 128-bit blocks, the low half of the result from src1. */
static void shuf128(struct xi_ctx *c, unsigned es)
{
    uint8_t a[64], b[64], r[64];
    unsigned blocks = c->vl / 16, bits = blocks == 4 ? 2 : 1;

    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned k = 0; k < blocks; k++) {
        unsigned sel = c->in.imm >> (k * bits) & (blocks - 1);
        memcpy(r + 16 * k, (k < blocks / 2 ? a : b) + 16 * sel, 16);
    }
    xi_write_masked(c, c->in.reg, r, es, c->vl / es);
}

/* pmovsx/pmovzx: es_from bytes to es_to, from the low part of src. */
static void pmovx(struct xi_ctx *c, unsigned from, unsigned to, int sign)
{
    uint8_t s[64], r[64];
    unsigned nel = c->vl / to, bytes = nel * from;

    memset(s, 0, sizeof s);
    if (c->in.mod == 3)
        xi_vget(c, c->in.rm, s);
    else if (xi_load(c, xi_ea(c, bytes), bytes, s) != 0)
        return;
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < nel; i++) {
        uint64_t x = xi_el(s, i, from);
        xi_set_el(r, i, to, sign ? (uint64_t)sx(x, from) & ones(to) : x);
    }
    xi_write_masked(c, c->in.reg, r, to, nel);
}

/* vpmov[s|us]{qb,qw,qd,db,dw,wb}: narrow, to a register or memory
 * (ModRM.reg is the source here). */
static void pmov_down(struct xi_ctx *c, unsigned from, unsigned to, int sat)
{
    uint8_t s[64], r[64];
    unsigned nel = c->vl / from;
    uint64_t m = xi_mask(c, nel);

    xi_vget(c, c->in.reg, s);
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < nel; i++) {
        uint64_t x = xi_el(s, i, from), y;
        if (sat == 1)
            y = sat_s(sx(x, from), to);
        else if (sat == 2)
            y = x > ones(to) ? ones(to) : x;
        else
            y = x & ones(to);
        xi_set_el(r, i, to, y);
    }
    if (c->in.mod == 3) {
        uint8_t one = c->in.reg;
        c->in.reg = c->in.rm;
        xi_write_masked(c, c->in.reg, r, to, nel);
        c->in.reg = one;
        return;
    }
    /* to memory: only the elements the mask keeps */
    uint64_t ea = xi_ea(c, nel * to);
    for (unsigned i = 0; i < nel; i++)
        if ((m >> i & 1) && store_check(c, ea + i * to, to) != 0)
            return;
    for (unsigned i = 0; i < nel; i++)
        if (m >> i & 1)
            xi_store(c, ea + i * to, to, r + i * to);
}

/* ---- moves ---------------------------------------------------------------------- */

/* A whole-vector move: load (reg <- rm) or store (rm <- reg), aligned to
 * the vector length when `align`.  EVEX masking by elements of es. */
static void vmove(struct xi_ctx *c, int store, int align, unsigned es)
{
    uint8_t v[64];
    unsigned nel = c->vl / es;

    if (!store) {
        if (c->in.mod != 3) {
            uint64_t ea = xi_ea(c, c->vl);
            uint64_t m = xi_mask(c, nel), all = nel >= 64 ? ~0ull : (1ull << nel) - 1;
            if (align && !aligned(c, ea, c->vl))
                return;
            memset(v, 0, sizeof v);
            if (m == all) {
                if (xi_load(c, ea, c->vl, v) != 0)
                    return;
            } else { /* masked-off elements are not read, and can't fault */
                for (unsigned i = 0; i < nel; i++)
                    if ((m >> i & 1) && xi_load(c, ea + i * es, es, v + i * es) != 0)
                        return;
            }
        } else {
            xi_vget(c, c->in.rm, v);
        }
        xi_write_masked(c, c->in.reg, v, es, nel);
        return;
    }
    xi_vget(c, c->in.reg, v);
    if (c->in.mod == 3) {
        uint8_t r = c->in.reg;
        c->in.reg = c->in.rm;
        xi_write_masked(c, c->in.reg, v, es, nel);
        c->in.reg = r;
        return;
    }
    uint64_t ea = xi_ea(c, c->vl), m = xi_mask(c, nel);
    uint64_t all = nel >= 64 ? ~0ull : (1ull << nel) - 1;
    if (align && !aligned(c, ea, c->vl))
        return;
    if (m == all) {
        xi_store(c, ea, c->vl, v);
        return;
    }
    for (unsigned i = 0; i < nel; i++)
        if ((m >> i & 1) && store_check(c, ea + i * es, es) != 0)
            return;
    for (unsigned i = 0; i < nel; i++)
        if (m >> i & 1)
            xi_store(c, ea + i * es, es, v + i * es);
}

/* vmovss/vmovsd (es 4 or 8). */
static void vmove_scalar(struct xi_ctx *c, int store, unsigned es)
{
    uint8_t v[64], s[64];

    if (store && c->in.mod != 3) {
        uint64_t ea = xi_ea(c, es);
        xi_vget(c, c->in.reg, v);
        if (c->evex && !(xi_mask(c, 1) & 1))
            return;
        xi_store(c, ea, es, v);
        return;
    }
    memset(v, 0, sizeof v);
    if (c->in.mod != 3) { /* load: the rest of the register is zeroed */
        if (xi_load(c, xi_ea(c, es), es, v) != 0)
            return;
    } else { /* dst = low element of rm, the rest of xmm from vvvv */
        unsigned dst = store ? c->in.rm : c->in.reg, src = store ? c->in.reg : c->in.rm;
        xi_vget(c, c->in.vvvv, v);
        xi_vget(c, src, s);
        memcpy(v, s, es);
        memset(v + 16, 0, 48);
        c->in.reg = (uint8_t)dst;
    }
    if (c->evex && !(xi_mask(c, 1) & 1)) {
        uint8_t old[64];
        xi_vget(c, c->in.reg, old);
        if (c->in.z)
            memset(v, 0, es);
        else
            memcpy(v, old, es);
    }
    xi_vset(c, c->in.reg, v, 16);
}

/* movlps/movhps/movlpd/movhpd/movhlps/movlhps and the stores 13/17. */
static void vmove_half(struct xi_ctx *c, int high)
{
    uint8_t a[64], b[64], r[64];

    xi_vget(c, c->in.vvvv, a);
    memset(r, 0, sizeof r);
    memcpy(r, a, 16);
    if (c->in.mod == 3) {
        xi_vget(c, c->in.rm, b);
        if (high) /* movlhps: [a.lo, b.lo] */
            memcpy(r + 8, b, 8);
        else /* movhlps: [b.hi, a.hi] */
            memcpy(r, b + 8, 8);
    } else {
        if (xi_load(c, xi_ea(c, 8), 8, b) != 0)
            return;
        memcpy(r + (high ? 8 : 0), b, 8);
    }
    xi_vset(c, c->in.reg, r, 16);
}

static void vstore_half(struct xi_ctx *c, int high)
{
    uint8_t v[64];

    if (c->in.mod == 3) {
        xi_ud(c, "a register form of movlps/movhps store");
        return;
    }
    xi_vget(c, c->in.reg, v);
    xi_store(c, xi_ea(c, 8), 8, v + (high ? 8 : 0));
}

/* movsldup / movshdup / movddup. */
static void vmove_dup(struct xi_ctx *c, int what)
{
    uint8_t s[64], r[64];
    unsigned bytes = what == 2 && c->vl == 16 ? 8 : c->vl;

    memset(s, 0, sizeof s);
    if (c->in.mod == 3)
        xi_vget(c, c->in.rm, s);
    else if (xi_load(c, xi_ea(c, bytes), bytes, s) != 0)
        return;
    memset(r, 0, sizeof r);
    if (what == 2) {
        for (unsigned i = 0; i < c->vl / 8; i++)
            xi_set_el(r, i, 8, xi_el(s, i & ~1u, 8));
        xi_write_masked(c, c->in.reg, r, 8, c->vl / 8);
        return;
    }
    for (unsigned i = 0; i < c->vl / 4; i++)
        xi_set_el(r, i, 4, xi_el(s, (i & ~1u) + (unsigned)what, 4));
    xi_write_masked(c, c->in.reg, r, 4, c->vl / 4);
}

/* The general-register or memory operand of movd/movq/pinsr/pextr (rm). */
static int gpr_or_mem_in(struct xi_ctx *c, unsigned bytes, uint64_t *v)
{
    uint8_t b[8] = {0};

    if (c->in.mod == 3) {
        *v = xi_gpr(c, c->in.rm) & ones(bytes);
        return 0;
    }
    if (xi_load(c, xi_ea(c, bytes), bytes, b) != 0)
        return -1;
    *v = xi_el(b, 0, bytes);
    return 0;
}

static void gpr_or_mem_out(struct xi_ctx *c, unsigned bytes, uint64_t v, unsigned regbytes)
{
    uint8_t b[8];

    if (c->in.mod == 3) {
        xi_set_gpr(c, c->in.rm, v, regbytes);
        return;
    }
    xi_set_el(b, 0, bytes, v);
    xi_store(c, xi_ea(c, bytes), bytes, b);
}

/* vmovd/vmovq xmm <- r/m (6e), r/m <- xmm (7e 66), xmm <- xmm/m64 (7e f3),
 * xmm/m64 <- xmm (d6). */
static void vmove_gpr(struct xi_ctx *c, int op)
{
    uint8_t v[64];
    unsigned bytes = c->in.w ? 8 : 4;
    uint64_t x;

    memset(v, 0, sizeof v);
    switch (op) {
    case 0x6e:
        if (gpr_or_mem_in(c, bytes, &x) != 0)
            return;
        xi_set_el(v, 0, bytes, x);
        xi_vset(c, c->in.reg, v, 16);
        return;
    case 0x7e:
        xi_vget(c, c->in.reg, v);
        gpr_or_mem_out(c, bytes, xi_el(v, 0, bytes), bytes);
        return;
    case 0x7f: /* f3 0f 7e: movq xmm, xmm/m64 */
        if (c->in.mod == 3) {
            xi_vget(c, c->in.rm, v);
            memset(v + 8, 0, 56);
        } else if (xi_load(c, xi_ea(c, 8), 8, v) != 0) {
            return;
        }
        xi_vset(c, c->in.reg, v, 16);
        return;
    default: /* d6: movq xmm/m64, xmm */
        xi_vget(c, c->in.reg, v);
        if (c->in.mod != 3) {
            xi_store(c, xi_ea(c, 8), 8, v);
            return;
        }
        memset(v + 8, 0, 56);
        xi_vset(c, c->in.rm, v, 16);
        return;
    }
}

/* pinsrb/w/d/q: dst = src1 with one element from a register or memory. */
static void pinsr(struct xi_ctx *c, unsigned es)
{
    uint8_t v[64];
    uint64_t x;

    xi_vget(c, c->in.vvvv, v);
    if (gpr_or_mem_in(c, es, &x) != 0)
        return;
    xi_set_el(v, c->in.imm & (16 / es - 1), es, x);
    xi_vset(c, c->in.reg, v, 16);
}

/* pextrb/w/d/q and extractps: one element to a register or memory. */
static void pextr(struct xi_ctx *c, unsigned es, int legacy_w)
{
    uint8_t v[64];
    unsigned from = legacy_w ? c->in.rm : c->in.reg;
    uint64_t x;

    xi_vget(c, from, v);
    x = xi_el(v, c->in.imm & (16 / es - 1), es);
    if (legacy_w) { /* c5: pextrw r32, xmm, imm (reg is the destination) */
        xi_set_gpr(c, c->in.reg, x, 4);
        return;
    }
    gpr_or_mem_out(c, es, x, es == 8 ? 8 : 4);
}

/* insertps: one float from src2 (reg: element imm[7:6]; memory: the dword)
 * into element imm[5:4] of src1, then zero the elements imm[3:0] says. */
static void insertps(struct xi_ctx *c)
{
    uint8_t a[64], b[64];
    unsigned imm = c->in.imm;
    uint64_t x;

    xi_vget(c, c->in.vvvv, a);
    if (c->in.mod == 3) {
        xi_vget(c, c->in.rm, b);
        x = xi_el(b, imm >> 6, 4);
    } else {
        if (xi_load(c, xi_ea(c, 4), 4, b) != 0)
            return;
        x = xi_el(b, 0, 4);
    }
    xi_set_el(a, imm >> 4 & 3, 4, x);
    for (unsigned i = 0; i < 4; i++)
        if (imm >> i & 1)
            xi_set_el(a, i, 4, 0);
    xi_vset(c, c->in.reg, a, 16);
}

/* movmskps/pd, pmovmskb: sign bits to a general register. */
static void movmsk(struct xi_ctx *c, unsigned es)
{
    uint8_t v[64];
    uint64_t bits = 0;

    xi_vget(c, c->in.rm, v);
    for (unsigned i = 0; i < c->vl / es; i++)
        bits |= (uint64_t)(v[i * es + es - 1] >> 7) << i;
    xi_set_gpr(c, c->in.reg, bits, 4);
}

/* Broadcast the low `bytes` (an element, or a 128/256-bit block) of the
 * source to the vector.  From memory the block is read once. */
static void broadcast(struct xi_ctx *c, unsigned bytes, unsigned es)
{
    uint8_t s[64], r[64];

    if (bytes >= c->vl && bytes > 8) {
        xi_ud(c, "a broadcast as wide as the vector");
        return;
    }
    memset(s, 0, sizeof s);
    if (c->in.mod == 3) {
        if (bytes > 8) {
            xi_ud(c, "a register form of a 128/256-bit broadcast");
            return;
        }
        xi_vget(c, c->in.rm, s);
    } else if (xi_load(c, xi_ea(c, bytes), bytes, s) != 0) {
        return;
    }
    for (unsigned i = 0; i < c->vl; i += bytes)
        memcpy(r + i, s, bytes);
    xi_write_masked(c, c->in.reg, r, es, c->vl / es);
}

/* vpbroadcastb/w/d/q from a general register (EVEX 7a-7c). */
static void broadcast_gpr(struct xi_ctx *c, unsigned es)
{
    uint8_t r[64];
    uint64_t x = xi_gpr(c, c->in.rm);

    for (unsigned i = 0; i < c->vl / es; i++)
        xi_set_el(r, i, es, x);
    xi_write_masked(c, c->in.reg, r, es, c->vl / es);
}

/* vinsert{f,i}{128,32x4,64x2,32x8,64x4}: src1 with a block of `bytes` from
 * src2 at block imm. */
static void vinsert(struct xi_ctx *c, unsigned bytes, unsigned es)
{
    uint8_t a[64], b[64];
    unsigned nblocks = c->vl / bytes;

    if (nblocks < 2) {
        xi_ud(c, "vinsert into a vector no wider than the block");
        return;
    }
    xi_vget(c, c->in.vvvv, a);
    memset(b, 0, sizeof b);
    if (c->in.mod == 3)
        xi_vget(c, c->in.rm, b);
    else if (xi_load(c, xi_ea(c, bytes), bytes, b) != 0)
        return;
    memcpy(a + bytes * (c->in.imm & (nblocks - 1)), b, bytes);
    xi_write_masked(c, c->in.reg, a, es, c->vl / es);
}

/* vextract{f,i}...: the block imm of reg to an xmm/ymm register or memory. */
static void vextract(struct xi_ctx *c, unsigned bytes, unsigned es)
{
    uint8_t s[64], r[64];
    unsigned nblocks = c->vl / bytes, nel = bytes / es;

    if (nblocks < 2) {
        xi_ud(c, "vextract from a vector no wider than the block");
        return;
    }
    xi_vget(c, c->in.reg, s);
    memset(r, 0, sizeof r);
    memcpy(r, s + bytes * (c->in.imm & (nblocks - 1)), bytes);
    if (c->in.mod == 3) {
        c->in.reg = c->in.rm;
        xi_write_masked(c, c->in.reg, r, es, nel);
        return;
    }
    uint64_t ea = xi_ea(c, bytes), m = xi_mask(c, nel);
    for (unsigned i = 0; i < nel; i++)
        if ((m >> i & 1) && store_check(c, ea + i * es, es) != 0)
            return;
    for (unsigned i = 0; i < nel; i++)
        if (m >> i & 1)
            xi_store(c, ea + i * es, es, r + i * es);
}

/* vmaskmovps/pd, vpmaskmovd/q: elements whose mask (the sign of vvvv's
 * element) is set are loaded (others zero) or stored (others untouched). */
static void maskmov(struct xi_ctx *c, unsigned es, int store)
{
    uint8_t m[64], v[64];
    unsigned nel = c->vl / es;
    uint64_t ea = xi_ea(c, c->vl);

    if (c->in.mod == 3) {
        xi_ud(c, "a register form of vmaskmov");
        return;
    }
    xi_vget(c, c->in.vvvv, m);
    if (!store) {
        memset(v, 0, sizeof v);
        for (unsigned i = 0; i < nel; i++)
            if ((m[i * es + es - 1] & 0x80) && xi_load(c, ea + i * es, es, v + i * es) != 0)
                return;
        xi_vset(c, c->in.reg, v, c->vl);
        return;
    }
    xi_vget(c, c->in.reg, v);
    for (unsigned i = 0; i < nel; i++)
        if ((m[i * es + es - 1] & 0x80) && store_check(c, ea + i * es, es) != 0)
            return;
    for (unsigned i = 0; i < nel; i++)
        if (m[i * es + es - 1] & 0x80)
            xi_store(c, ea + i * es, es, v + i * es);
}

/*
 * Gathers.  idx: the index element size (4: dword indexes, 8: qword); es:
 * the data element size.  VEX: the mask is vvvv's sign bits, and is
 * cleared; EVEX: the mask register, cleared.  Elements are loaded in
 * order; a fault leaves the completed ones done and their mask bits
 * cleared, as the CPU does.
 */
static void gather(struct xi_ctx *c, unsigned idx, unsigned es)
{
    uint8_t d[64], ix[64], m[64];
    unsigned nel = c->vl / (idx > es ? idx : es), bytes;
    uint64_t base = 0, kmask = 0;
    struct xi_insn *in = &c->in;

    if (in->mod == 3 || in->index < 0) {
        xi_ud(c, "a gather needs a VSIB memory operand");
        return;
    }
    bytes = nel * es < 16 ? 16 : nel * es;
    xi_vget(c, in->reg, d);
    xi_vget(c, (unsigned)in->index, ix);
    if (c->evex)
        kmask = in->aaa ? xk(c, in->aaa) : 0;
    else
        xi_vget(c, in->vvvv, m);
    if (in->base >= 0)
        base = xi_gpr(c, (unsigned)in->base);
    if (in->seg == 4)
        base += emu_reg_get(c->cpu, UC_X86_REG_FS_BASE);
    else if (in->seg == 5)
        base += emu_reg_get(c->cpu, UC_X86_REG_GS_BASE);
    for (unsigned i = 0; i < nel && !c->stop; i++) {
        int on = c->evex ? (int)(kmask >> i & 1) : m[i * es + es - 1] >> 7;
        int64_t off = idx == 4 ? sx(xi_el(ix, i, 4), 4) : (int64_t)xi_el(ix, i, 8);
        uint64_t disp = in->disp8 ? (uint64_t)(in->disp * (int64_t)es) : (uint64_t)in->disp;
        uint64_t a = base + (uint64_t)off * in->scale + disp;
        if (!on)
            continue;
        /* the elements loaded before a fault stay loaded, their mask
         * bits cleared, as on the CPU */
        if (xi_load(c, a, es, d + i * es) != 0)
            break;
        if (c->evex)
            kmask &= ~(1ull << i);
        else
            memset(m + i * es, 0, es);
    }
    if (!c->stop) { /* done: the whole mask is cleared */
        kmask = 0;
        memset(m, 0, sizeof m);
    }
    memset(d + nel * es, 0, 64 - nel * es);
    xi_vset(c, in->reg, d, bytes);
    if (c->evex) {
        xi_kset(c, in->aaa, kmask);
    } else {
        memset(m + nel * es, 0, 64 - nel * es);
        xi_vset(c, in->vvvv, m, bytes);
    }
}

/* ptest / vtestps / vtestpd: ZF = (a & b) == 0, CF = (~a & b) == 0 over
 * all bits (ptest) or the sign bits (vtest). */
static void ptest(struct xi_ctx *c, unsigned es)
{
    uint8_t a[64], b[64];
    int zf = 1, cf = 1;

    xi_vget(c, c->in.reg, a);
    if (xi_src2(c, b, 16, c->vl) != 0)
        return;
    for (unsigned i = 0; i < c->vl; i++) {
        uint8_t mask = es == 1 || (i % es == es - 1) ? (es == 1 ? 0xff : 0x80) : 0;
        if (a[i] & b[i] & mask)
            zf = 0;
        if (~a[i] & b[i] & mask)
            cf = 0;
    }
    /* ZF, CF set; AF, OF, PF, SF cleared */
    xi_set_flags(c, 0x8d5, (uint64_t)zf << 6 | (uint64_t)cf);
}

/* vpternlogd/q: each bit of the result is imm[(a << 2) | (b << 1) | c] with
 * a from the destination, b from src1, c from src2. */
static void ternlog(struct xi_ctx *c, unsigned es)
{
    uint8_t a[64], b[64], s[64], r[64];

    xi_vget(c, c->in.reg, a);
    xi_vget(c, c->in.vvvv, b);
    if (xi_src2(c, s, es, c->vl) != 0)
        return;
    for (unsigned i = 0; i < c->vl; i++) {
        uint8_t x = 0;
        for (unsigned bit = 0; bit < 8; bit++) {
            unsigned k = (unsigned)((a[i] >> bit & 1) << 2 | (b[i] >> bit & 1) << 1 | (s[i] >> bit & 1));
            x |= (uint8_t)((c->in.imm >> k & 1) << bit);
        }
        r[i] = x;
    }
    xi_write_masked(c, c->in.reg, r, es, c->vl / es);
}

/* vpclmulqdq: carry-less products of one qword of each 128-bit lane. */
static void pclmul(struct xi_ctx *c)
{
    uint8_t a[64], b[64], r[64];

    if (xi_operands(c, a, b, r, 8) != 0)
        return;
    for (unsigned lane = 0; lane < c->vl / 16; lane++) {
        uint64_t x = xi_el(a, 2 * lane + (c->in.imm & 1), 8);
        uint64_t y = xi_el(b, 2 * lane + (c->in.imm >> 4 & 1), 8), lo = 0, hi = 0;
        for (unsigned bit = 0; bit < 64; bit++)
            if (y >> bit & 1) {
                lo ^= x << bit;
                hi ^= bit ? x >> (64 - bit) : 0;
            }
        xi_set_el(r, 2 * lane, 8, lo);
        xi_set_el(r, 2 * lane + 1, 8, hi);
    }
    xi_vset(c, c->in.reg, r, c->vl);
}

/* vpcompress/vpexpand (and the float forms): es-byte elements. */
static void compress(struct xi_ctx *c, unsigned es, int expand)
{
    uint8_t s[64], r[64];
    unsigned nel = c->vl / es, n = 0;
    uint64_t m = c->in.aaa ? xk(c, c->in.aaa) : ~0ull;

    memset(r, 0, sizeof r);
    if (!expand) {
        xi_vget(c, c->in.reg, s);
        for (unsigned i = 0; i < nel; i++)
            if (m >> i & 1)
                memcpy(r + es * n++, s + es * i, es);
        if (c->in.mod == 3) {
            uint8_t old[64];
            xi_vget(c, c->in.rm, old);
            if (!c->in.z)
                memcpy(r + es * n, old + es * n, (nel - n) * es);
            xi_vset(c, c->in.rm, r, c->vl);
            return;
        }
        uint64_t ea = xi_ea(c, es);
        if (n && store_check(c, ea, n * es) != 0)
            return;
        if (n)
            xi_store(c, ea, n * es, r);
        return;
    }
    /* expand: consecutive source elements go to the mask's positions */
    memset(s, 0, sizeof s);
    for (unsigned i = 0; i < nel; i++)
        n += (unsigned)(m >> i & 1);
    if (c->in.mod == 3)
        xi_vget(c, c->in.rm, s);
    else if (n && xi_load(c, xi_ea(c, es), n * es, s) != 0)
        return;
    n = 0;
    for (unsigned i = 0; i < nel; i++)
        if (m >> i & 1)
            memcpy(r + es * i, s + es * n++, es);
    xi_write_masked(c, c->in.reg, r, es, nel);
}

/* vpconflictd/q: bit j of element i set when element j < i equals it. */
static void conflict(struct xi_ctx *c, unsigned es)
{
    uint8_t s[64], r[64];
    unsigned nel = c->vl / es;

    if (xi_src2(c, s, es, c->vl) != 0)
        return;
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < nel; i++) {
        uint64_t bits = 0;
        for (unsigned j = 0; j < i; j++)
            if (xi_el(s, j, es) == xi_el(s, i, es))
                bits |= 1ull << j;
        xi_set_el(r, i, es, bits);
    }
    xi_write_masked(c, c->in.reg, r, es, nel);
}

/* vpmovm2* (mask to all-ones/zero elements) and vpmov*2m (sign bits to a
 * mask). */
static void mask_vec(struct xi_ctx *c, unsigned es, int to_mask)
{
    uint8_t v[64];
    unsigned nel = c->vl / es;

    if (to_mask) {
        uint64_t bits = 0;
        xi_vget(c, c->in.rm, v);
        for (unsigned i = 0; i < nel; i++)
            bits |= (uint64_t)(v[i * es + es - 1] >> 7) << i;
        xi_kset(c, c->in.reg, bits);
        return;
    }
    uint64_t k = xk(c, c->in.rm);
    memset(v, 0, sizeof v);
    for (unsigned i = 0; i < nel; i++)
        xi_set_el(v, i, es, (k >> i & 1) ? ones(es) : 0);
    xi_vset(c, c->in.reg, v, c->vl);
}

/* vpmultishiftqb: each byte of the result is 8 bits of the qword of src2
 * at the bit offset in the matching byte of src1. */
static void multishift(struct xi_ctx *c)
{
    uint8_t a[64], b[64], r[64];

    xi_vget(c, c->in.vvvv, a);
    if (xi_src2(c, b, 8, c->vl) != 0)
        return;
    for (unsigned i = 0; i < c->vl; i++) {
        uint64_t q = xi_el(b, i / 8, 8);
        unsigned sh = a[i] & 63;
        r[i] = (uint8_t)((q >> sh | (sh ? q << (64 - sh) : 0)) & 0xff);
    }
    xi_write_masked(c, c->in.reg, r, 1, c->vl);
}

/* VNNI: vpdpbusd[s] (unsigned x signed bytes), vpdpwssd[s] (signed words),
 * summed into the dwords of the destination. */
static void vnni(struct xi_ctx *c, int words, int sat)
{
    uint8_t d[64], a[64], b[64], r[64];

    xi_vget(c, c->in.reg, d);
    xi_vget(c, c->in.vvvv, a);
    if (xi_src2(c, b, 4, c->vl) != 0)
        return;
    for (unsigned i = 0; i < c->vl / 4; i++) {
        int64_t s = sx(xi_el(d, i, 4), 4);
        if (words)
            for (unsigned k = 0; k < 2; k++)
                s += sx(xi_el(a, 2 * i + k, 2), 2) * sx(xi_el(b, 2 * i + k, 2), 2);
        else
            for (unsigned k = 0; k < 4; k++)
                s += (int64_t)a[4 * i + k] * (int8_t)b[4 * i + k];
        xi_set_el(r, i, 4, sat ? sat_s(s, 4) : (uint64_t)s & 0xffffffffu);
    }
    xi_write_masked(c, c->in.reg, r, 4, c->vl / 4);
}

/* ---- mask registers (VEX-encoded k instructions) ------------------------------- */

/* The width of a k instruction: byte, word, dword, qword by pp and W. */
static unsigned kwidth(const struct xi_insn *in)
{
    if (in->pp == 0)
        return in->w ? 64 : 16;
    return in->pp == 1 ? (in->w ? 32 : 8) : 0;
}

static uint64_t kbits(unsigned w)
{
    return w >= 64 ? ~0ull : (1ull << w) - 1;
}

/* @return 1 if the opcode was a mask instruction. */
static int kinsn(struct xi_ctx *c)
{
    struct xi_insn *in = &c->in;
    unsigned w = kwidth(in);
    uint64_t a, b, r, m;

    if (in->kind != XI_VEX || in->map != 1)
        return 0;
    switch (in->op) {
    case 0x41: case 0x42: case 0x44: case 0x45: case 0x46: case 0x47: case 0x4a: case 0x4b:
        break;
    case 0x90: case 0x91: case 0x92: case 0x93: case 0x98: case 0x99:
        break;
    default:
        return 0;
    }
    if (in->op == 0x92 || in->op == 0x93) { /* kmov k <-> r32/r64 */
        w = in->pp == 3 ? (in->w ? 64 : 32) : in->pp == 1 ? 8 : 16;
        if (in->mod != 3) {
            xi_ud(c, "kmov with a memory operand here");
            return 1;
        }
        if (in->op == 0x92)
            xi_kset(c, in->reg & 7, xi_gpr(c, in->rm) & kbits(w));
        else
            xi_set_gpr(c, in->reg, xk(c, in->rm & 7) & kbits(w), w == 64 ? 8 : 4);
        return 1;
    }
    if (in->op == 0x90 || in->op == 0x91) { /* kmov k <- k/m, m <- k */
        w = in->pp == 1 ? (in->w ? 32 : 8) : (in->w ? 64 : 16);
        if (in->op == 0x90) {
            uint64_t v = 0;
            if (in->mod == 3) {
                v = xk(c, in->rm & 7);
            } else {
                uint8_t b8[8] = {0};
                if (xi_load(c, xi_ea(c, w / 8), w / 8, b8) != 0)
                    return 1;
                v = xi_el(b8, 0, w / 8);
            }
            xi_kset(c, in->reg & 7, v & kbits(w));
        } else {
            uint8_t b8[8];
            if (in->mod == 3) {
                xi_ud(c, "kmov store to a register");
                return 1;
            }
            xi_set_el(b8, 0, w / 8, xk(c, in->reg & 7));
            xi_store(c, xi_ea(c, w / 8), w / 8, b8);
        }
        return 1;
    }
    if (!w || in->mod != 3) {
        xi_ud(c, "a mask instruction with this width");
        return 1;
    }
    m = kbits(w);
    a = xk(c, in->vvvv & 7) & m;
    b = xk(c, in->rm & 7) & m;
    switch (in->op) {
    case 0x41: r = a & b; break;
    case 0x42: r = ~a & b; break;
    case 0x44: r = ~b; break; /* knot k, k */
    case 0x45: r = a | b; break;
    case 0x46: r = ~(a ^ b); break;
    case 0x47: r = a ^ b; break;
    case 0x4a: r = a + b; break;
    case 0x4b: /* kunpck: low halves, src1 above */
        if (in->pp == 1 && !in->w)
            r = (a & 0xff) << 8 | (b & 0xff);
        else if (in->pp == 0 && !in->w)
            r = (a & 0xffff) << 16 | (b & 0xffff);
        else
            r = (a & 0xffffffff) << 32 | (b & 0xffffffff);
        xi_kset(c, in->reg & 7, r);
        return 1;
    case 0x98: /* kortest */
    case 0x99: /* ktest */ {
        uint64_t x = xk(c, in->reg & 7) & m;
        uint64_t zero = in->op == 0x98 ? (x | b) : (x & b);
        uint64_t full = in->op == 0x98 ? (x | b) : (~x & b & m);
        int cf = in->op == 0x98 ? (full & m) == m : full == 0;
        xi_set_flags(c, 0x8d5, (uint64_t)(zero == 0) << 6 | (uint64_t)cf);
        return 1;
    }
    default:
        return 0;
    }
    xi_kset(c, in->reg & 7, r & m);
    return 1;
}

/* kshiftl/kshiftr (VEX map 3, 30-33). */
static void kshift(struct xi_ctx *c)
{
    struct xi_insn *in = &c->in;
    unsigned w = (in->op & 1) ? (in->w ? 64 : 32) : (in->w ? 16 : 8);
    uint64_t v = xk(c, in->rm & 7) & kbits(w), r;
    unsigned n = in->imm;

    if (n >= w)
        r = 0;
    else if (in->op < 0x32)
        r = v >> n;
    else
        r = (v << n) & kbits(w);
    xi_kset(c, in->reg & 7, r);
}

/* ---- the instruction table ------------------------------------------------------- */

/* d/q forms by EVEX.W (vpandd/vpandq ...), dword for VEX. */
static unsigned es_w(const struct xi_ctx *c)
{
    return c->evex && c->in.w ? 8 : 4;
}

/* Map 0F, implied prefix 66: integer operations. */
static int map1_66(struct xi_ctx *c)
{
    struct xi_insn *in = &c->in;

    switch (in->op) {
    case 0x60: unpack(c, 1, 0); return 1;
    case 0x61: unpack(c, 2, 0); return 1;
    case 0x62: unpack(c, 4, 0); return 1;
    case 0x63: pack(c, 2, 1); return 1;
    case 0x64: int_cmp(c, 1, 1); return 1;
    case 0x65: int_cmp(c, 1, 2); return 1;
    case 0x66: int_cmp(c, 1, 4); return 1;
    case 0x67: pack(c, 2, 0); return 1;
    case 0x68: unpack(c, 1, 1); return 1;
    case 0x69: unpack(c, 2, 1); return 1;
    case 0x6a: unpack(c, 4, 1); return 1;
    case 0x6b: pack(c, 4, 1); return 1;
    case 0x6c: unpack(c, 8, 0); return 1;
    case 0x6d: unpack(c, 8, 1); return 1;
    case 0x6e: vmove_gpr(c, 0x6e); return 1;
    case 0x6f: vmove(c, 0, 1, es_w(c)); return 1;
    case 0x70: pshuf(c, 4, 0); return 1;
    case 0x71: case 0x72: case 0x73: {
        unsigned g = in->regf, es = in->op == 0x71 ? 2 : in->op == 0x72 ? 4 : 8;
        if (in->op == 0x72 && c->evex && in->w)
            es = 8;
        if (in->op == 0x72 && c->evex && g <= 1) { /* vprord, vprold */
            uint8_t s[64], r[64];
            unsigned e2 = in->w ? 8 : 4;
            if (xi_src2(c, s, e2, c->vl) != 0)
                return 1;
            for (unsigned i = 0; i < c->vl / e2; i++)
                xi_set_el(r, i, e2, iop(g ? I_ROLV : I_RORV, xi_el(s, i, e2), in->imm, e2));
            xi_write_masked(c, in->vvvv, r, e2, c->vl / e2);
            return 1;
        }
        if (g == 2)
            shift_imm(c, 1, es);
        else if (g == 4 && es != 8)
            shift_imm(c, 2, es);
        else if (g == 4 && c->evex)
            shift_imm(c, 2, 8);
        else if (g == 6)
            shift_imm(c, 0, es);
        else if (in->op == 0x73 && g == 3)
            shift_bytes(c, 0);
        else if (in->op == 0x73 && g == 7)
            shift_bytes(c, 1);
        else
            return 0;
        return 1;
    }
    case 0x74: int_cmp(c, 0, 1); return 1;
    case 0x75: int_cmp(c, 0, 2); return 1;
    case 0x76: int_cmp(c, 0, 4); return 1;
    case 0x7e: vmove_gpr(c, 0x7e); return 1;
    case 0x7f: vmove(c, 1, 1, es_w(c)); return 1;
    case 0xc4: pinsr(c, 2); return 1;
    case 0xc5: pextr(c, 2, 1); return 1;
    case 0xd1: shift_xmm(c, 1, 2); return 1;
    case 0xd2: shift_xmm(c, 1, 4); return 1;
    case 0xd3: shift_xmm(c, 1, 8); return 1;
    case 0xd4: int_bin(c, I_ADD, 8); return 1;
    case 0xd5: int_bin(c, I_MULLO, 2); return 1;
    case 0xd6: vmove_gpr(c, 0xd6); return 1;
    case 0xd7: movmsk(c, 1); return 1;
    case 0xd8: int_bin(c, I_SUBUS, 1); return 1;
    case 0xd9: int_bin(c, I_SUBUS, 2); return 1;
    case 0xda: int_bin(c, I_MINU, 1); return 1;
    case 0xdb: int_bin(c, I_AND, es_w(c)); return 1;
    case 0xdc: int_bin(c, I_ADDUS, 1); return 1;
    case 0xdd: int_bin(c, I_ADDUS, 2); return 1;
    case 0xde: int_bin(c, I_MAXU, 1); return 1;
    case 0xdf: int_bin(c, I_ANDN, es_w(c)); return 1;
    case 0xe0: int_bin(c, I_AVG, 1); return 1;
    case 0xe1: shift_xmm(c, 2, 2); return 1;
    case 0xe2: shift_xmm(c, 2, es_w(c)); return 1;
    case 0xe3: int_bin(c, I_AVG, 2); return 1;
    case 0xe4: int_bin(c, I_MULHU, 2); return 1;
    case 0xe5: int_bin(c, I_MULHS, 2); return 1;
    case 0xe7: vmove(c, 1, 1, 4); return 1; /* movntdq */
    case 0xe8: int_bin(c, I_SUBS, 1); return 1;
    case 0xe9: int_bin(c, I_SUBS, 2); return 1;
    case 0xea: int_bin(c, I_MINS, 2); return 1;
    case 0xeb: int_bin(c, I_OR, es_w(c)); return 1;
    case 0xec: int_bin(c, I_ADDS, 1); return 1;
    case 0xed: int_bin(c, I_ADDS, 2); return 1;
    case 0xee: int_bin(c, I_MAXS, 2); return 1;
    case 0xef: int_bin(c, I_XOR, es_w(c)); return 1;
    case 0xf1: shift_xmm(c, 0, 2); return 1;
    case 0xf2: shift_xmm(c, 0, 4); return 1;
    case 0xf3: shift_xmm(c, 0, 8); return 1;
    case 0xf4: mul_dq(c, 0); return 1;
    case 0xf5: madd(c, 0); return 1;
    case 0xf6: madd(c, 2); return 1;
    case 0xf8: int_bin(c, I_SUB, 1); return 1;
    case 0xf9: int_bin(c, I_SUB, 2); return 1;
    case 0xfa: int_bin(c, I_SUB, 4); return 1;
    case 0xfb: int_bin(c, I_SUB, 8); return 1;
    case 0xfc: int_bin(c, I_ADD, 1); return 1;
    case 0xfd: int_bin(c, I_ADD, 2); return 1;
    case 0xfe: int_bin(c, I_ADD, 4); return 1;
    default: return 0;
    }
}

/* Map 0F: moves and the packed-float logic, any prefix. */
static int map1(struct xi_ctx *c)
{
    struct xi_insn *in = &c->in;
    unsigned pp = in->pp, fes = pp == 1 ? 8 : 4;

    if (kinsn(c))
        return 1;
    switch (in->op) {
    case 0x10: case 0x11:
        if (pp >= 2)
            vmove_scalar(c, in->op == 0x11, pp == 3 ? 8 : 4);
        else
            vmove(c, in->op == 0x11, 0, fes);
        return 1;
    case 0x12:
        if (pp == 2)
            vmove_dup(c, 0);
        else if (pp == 3)
            vmove_dup(c, 2);
        else
            vmove_half(c, 0);
        return 1;
    case 0x13: if (pp > 1) return 0; vstore_half(c, 0); return 1;
    case 0x14: if (pp > 1) return 0; unpack(c, fes, 0); return 1;
    case 0x15: if (pp > 1) return 0; unpack(c, fes, 1); return 1;
    case 0x16:
        if (pp == 2)
            vmove_dup(c, 1);
        else if (pp == 3)
            return 0;
        else
            vmove_half(c, 1);
        return 1;
    case 0x17: if (pp > 1) return 0; vstore_half(c, 1); return 1;
    case 0x28: case 0x29:
        if (pp > 1)
            return 0;
        vmove(c, in->op == 0x29, 1, fes);
        return 1;
    case 0x2b:
        if (pp > 1 || in->mod == 3)
            return 0;
        vmove(c, 1, 1, fes);
        return 1;
    case 0x50: if (pp > 1) return 0; movmsk(c, fes); return 1;
    case 0x54: if (pp > 1) return 0; int_bin(c, I_AND, fes); return 1;
    case 0x55: if (pp > 1) return 0; int_bin(c, I_ANDN, fes); return 1;
    case 0x56: if (pp > 1) return 0; int_bin(c, I_OR, fes); return 1;
    case 0x57: if (pp > 1) return 0; int_bin(c, I_XOR, fes); return 1;
    case 0x6f: case 0x7f:
        if (pp == 2) /* vmovdqu, vmovdqu32/64 */
            vmove(c, in->op == 0x7f, 0, es_w(c));
        else if (pp == 3 && c->evex) /* vmovdqu8/16 */
            vmove(c, in->op == 0x7f, 0, in->w ? 2 : 1);
        else
            break;
        return 1;
    case 0x70:
        if (pp == 2)
            pshuf(c, 2, 1);
        else if (pp == 3)
            pshuf(c, 2, 0);
        else
            break;
        return 1;
    case 0x7e:
        if (pp == 2) {
            vmove_gpr(c, 0x7f);
            return 1;
        }
        break;
    case 0x77: /* vzeroupper (L=0), vzeroall (L=1): zmm0-15 only */
        if (c->evex)
            return 0;
        {
            struct xi_state *x = &c->cpu->xs;
            uint8_t z[16] = {0};
            memset(x->hi, 0, sizeof x->hi);
            x->hi_known |= 0xffff;
            x->touched = 1;
            if (in->l)
                for (unsigned r = 0; r < 16; r++)
                    xmm_put(c, r, z);
        }
        return 1;
    case 0xae: /* vldmxcsr / vstmxcsr */
        if (c->evex || in->mod == 3 || (in->regf != 2 && in->regf != 3))
            return 0;
        {
            uint8_t b[4];
            uint64_t ea = xi_ea(c, 4);
            if (in->regf == 2) {
                if (xi_load(c, ea, 4, b) != 0)
                    return 1;
                if (xi_el(b, 0, 4) & ~0xffffull) {
                    xi_gp(c, "general protection (reserved MXCSR bits)");
                    return 1;
                }
                emu_reg_set(c->cpu, UC_X86_REG_MXCSR, xi_el(b, 0, 4));
            } else {
                xi_set_el(b, 0, 4, emu_reg_get(c->cpu, UC_X86_REG_MXCSR));
                xi_store(c, ea, 4, b);
            }
        }
        return 1;
    case 0xc6: if (pp > 1) return 0; shufp(c, fes); return 1;
    case 0xe6: break;
    case 0xf0:
        if (pp == 3 && in->mod != 3 && !c->evex) { /* vlddqu */
            vmove(c, 0, 0, 4);
            return 1;
        }
        return 0;
    default:
        break;
    }
    if (pp == 1 && map1_66(c))
        return 1;
    return xi_float(c);
}

/* Map 0F38 (implied prefix 66 unless said). */
static int map2(struct xi_ctx *c)
{
    struct xi_insn *in = &c->in;
    unsigned w8 = in->w ? 8 : 4;

    if (in->pp == 2 && c->evex) { /* f3: down-converts and mask <-> vector */
        switch (in->op) {
        case 0x10: case 0x20: case 0x30: /* wb */
            pmov_down(c, 2, 1, in->op == 0x10 ? 2 : in->op == 0x20);
            return 1;
        case 0x11: case 0x21: case 0x31: /* db */
            pmov_down(c, 4, 1, in->op == 0x11 ? 2 : in->op == 0x21);
            return 1;
        case 0x12: case 0x22: case 0x32: /* qb */
            pmov_down(c, 8, 1, in->op == 0x12 ? 2 : in->op == 0x22);
            return 1;
        case 0x13: case 0x23: case 0x33: /* dw */
            pmov_down(c, 4, 2, in->op == 0x13 ? 2 : in->op == 0x23);
            return 1;
        case 0x14: case 0x24: case 0x34: /* qw */
            pmov_down(c, 8, 2, in->op == 0x14 ? 2 : in->op == 0x24);
            return 1;
        case 0x15: case 0x25: case 0x35: /* qd */
            pmov_down(c, 8, 4, in->op == 0x15 ? 2 : in->op == 0x25);
            return 1;
        case 0x26: int_testm(c, in->w ? 2 : 1, 1); return 1;
        case 0x27: int_testm(c, w8, 1); return 1;
        case 0x28: mask_vec(c, in->w ? 2 : 1, 0); return 1;
        case 0x38: mask_vec(c, w8, 0); return 1;
        case 0x29: mask_vec(c, in->w ? 2 : 1, 1); return 1;
        case 0x39: mask_vec(c, w8, 1); return 1;
        default: return 0;
        }
    }
    if (in->pp != 1)
        return 0;
    switch (in->op) {
    case 0x00: pshufb(c); return 1;
    case 0x01: hadd_int(c, 2, I_ADD); return 1;
    case 0x02: hadd_int(c, 4, I_ADD); return 1;
    case 0x03: hadd_int(c, 2, I_ADDS); return 1;
    case 0x04: madd(c, 1); return 1;
    case 0x05: hadd_int(c, 2, I_SUB); return 1;
    case 0x06: hadd_int(c, 4, I_SUB); return 1;
    case 0x07: hadd_int(c, 2, I_SUBS); return 1;
    case 0x08: int_bin(c, I_SIGN, 1); return 1;
    case 0x09: int_bin(c, I_SIGN, 2); return 1;
    case 0x0a: int_bin(c, I_SIGN, 4); return 1;
    case 0x0b: int_bin(c, I_MULHRS, 2); return 1;
    case 0x0c: permil(c, 4, 0); return 1;
    case 0x0d: permil(c, 8, 0); return 1;
    case 0x0e: ptest(c, 4); return 1;
    case 0x0f: ptest(c, 8); return 1;
    case 0x10: if (!c->evex) return 0; int_bin(c, I_SRLV, 2); return 1;
    case 0x11: if (!c->evex) return 0; int_bin(c, I_SRAV, 2); return 1;
    case 0x12: if (!c->evex) return 0; int_bin(c, I_SLLV, 2); return 1;
    case 0x14: if (!c->evex) return 0; int_bin(c, I_RORV, w8); return 1;
    case 0x15: if (!c->evex) return 0; int_bin(c, I_ROLV, w8); return 1;
    case 0x16: perm_var(c, w8); return 1; /* vpermps, vpermpd (EVEX W1) */
    case 0x17: if (c->evex) return 0; ptest(c, 1); return 1;
    case 0x18: broadcast(c, 4, 4); return 1;
    case 0x19: broadcast(c, 8, c->evex && !in->w ? 4 : 8); return 1;
    case 0x1a: broadcast(c, 16, w8); return 1;
    case 0x1b: if (!c->evex) return 0; broadcast(c, 32, w8); return 1;
    case 0x1c: int_un(c, 0, 1); return 1;
    case 0x1d: int_un(c, 0, 2); return 1;
    case 0x1e: int_un(c, 0, 4); return 1;
    case 0x1f: if (!c->evex) return 0; int_un(c, 0, 8); return 1;
    case 0x20: pmovx(c, 1, 2, 1); return 1;
    case 0x21: pmovx(c, 1, 4, 1); return 1;
    case 0x22: pmovx(c, 1, 8, 1); return 1;
    case 0x23: pmovx(c, 2, 4, 1); return 1;
    case 0x24: pmovx(c, 2, 8, 1); return 1;
    case 0x25: pmovx(c, 4, 8, 1); return 1;
    case 0x26: if (!c->evex) return 0; int_testm(c, in->w ? 2 : 1, 0); return 1;
    case 0x27: if (!c->evex) return 0; int_testm(c, w8, 0); return 1;
    case 0x28: mul_dq(c, 1); return 1;
    case 0x29: int_cmp(c, 0, 8); return 1;
    case 0x2a:
        if (in->mod == 3)
            return 0;
        vmove(c, 0, 1, 4); /* movntdqa */
        return 1;
    case 0x2b: pack(c, 4, 0); return 1;
    case 0x2c: case 0x2d:
        if (c->evex)
            return xi_float(c);
        maskmov(c, in->op == 0x2c ? 4 : 8, 0);
        return 1;
    case 0x2e: case 0x2f:
        if (c->evex)
            return 0;
        maskmov(c, in->op == 0x2e ? 4 : 8, 1);
        return 1;
    case 0x30: pmovx(c, 1, 2, 0); return 1;
    case 0x31: pmovx(c, 1, 4, 0); return 1;
    case 0x32: pmovx(c, 1, 8, 0); return 1;
    case 0x33: pmovx(c, 2, 4, 0); return 1;
    case 0x34: pmovx(c, 2, 8, 0); return 1;
    case 0x35: pmovx(c, 4, 8, 0); return 1;
    case 0x36: perm_var(c, w8); return 1; /* vpermd, vpermq (EVEX W1) */
    case 0x37: int_cmp(c, 1, 8); return 1;
    case 0x38: int_bin(c, I_MINS, 1); return 1;
    case 0x39: int_bin(c, I_MINS, es_w(c)); return 1;
    case 0x3a: int_bin(c, I_MINU, 2); return 1;
    case 0x3b: int_bin(c, I_MINU, es_w(c)); return 1;
    case 0x3c: int_bin(c, I_MAXS, 1); return 1;
    case 0x3d: int_bin(c, I_MAXS, es_w(c)); return 1;
    case 0x3e: int_bin(c, I_MAXU, 2); return 1;
    case 0x3f: int_bin(c, I_MAXU, es_w(c)); return 1;
    case 0x40: int_bin(c, I_MULLO, es_w(c)); return 1;
    case 0x44: if (!c->evex) return 0; int_un(c, 2, w8); return 1;
    case 0x45: int_bin(c, I_SRLV, w8); return 1;
    case 0x46: int_bin(c, I_SRAV, c->evex ? w8 : 4); return 1;
    case 0x47: int_bin(c, I_SLLV, w8); return 1;
    case 0x50: vnni(c, 0, 0); return 1;
    case 0x51: vnni(c, 0, 1); return 1;
    case 0x52: vnni(c, 1, 0); return 1;
    case 0x53: vnni(c, 1, 1); return 1;
    case 0x54: if (!c->evex) return 0; int_un(c, 1, in->w ? 2 : 1); return 1;
    case 0x55: if (!c->evex) return 0; int_un(c, 1, w8); return 1;
    case 0x58: broadcast(c, 4, 4); return 1;
    case 0x59: broadcast(c, 8, c->evex && !in->w ? 4 : 8); return 1;
    case 0x5a: broadcast(c, 16, c->evex ? w8 : 8); return 1;
    case 0x5b: if (!c->evex) return 0; broadcast(c, 32, w8); return 1;
    case 0x62: if (!c->evex) return 0; compress(c, in->w ? 2 : 1, 1); return 1;
    case 0x63: if (!c->evex) return 0; compress(c, in->w ? 2 : 1, 0); return 1;
    case 0x64: if (!c->evex) return 0; blend_mask(c, w8); return 1;
    case 0x65: if (!c->evex) return 0; blend_mask(c, w8); return 1;
    case 0x66: if (!c->evex) return 0; blend_mask(c, in->w ? 2 : 1); return 1;
    case 0x75: if (!c->evex) return 0; perm2(c, in->w ? 2 : 1, 1); return 1;
    case 0x76: case 0x77: if (!c->evex) return 0; perm2(c, w8, 1); return 1;
    case 0x78: broadcast(c, 1, 1); return 1;
    case 0x79: broadcast(c, 2, 2); return 1;
    case 0x7a: if (!c->evex || in->mod != 3) return 0; broadcast_gpr(c, 1); return 1;
    case 0x7b: if (!c->evex || in->mod != 3) return 0; broadcast_gpr(c, 2); return 1;
    case 0x7c: if (!c->evex || in->mod != 3) return 0; broadcast_gpr(c, w8); return 1;
    case 0x7d: if (!c->evex) return 0; perm2(c, in->w ? 2 : 1, 0); return 1;
    case 0x7e: case 0x7f: if (!c->evex) return 0; perm2(c, w8, 0); return 1;
    case 0x83: if (!c->evex || !in->w) return 0; multishift(c); return 1;
    case 0x88: case 0x89: if (!c->evex) return 0; compress(c, w8, 1); return 1;
    case 0x8a: case 0x8b: if (!c->evex) return 0; compress(c, w8, 0); return 1;
    case 0x8c: case 0x8e:
        if (c->evex)
            return 0;
        maskmov(c, w8, in->op == 0x8e);
        return 1;
    case 0x8d: if (!c->evex) return 0; perm_var(c, in->w ? 2 : 1); return 1;
    case 0x90: gather(c, 4, w8); return 1;
    case 0x91: gather(c, 8, w8); return 1;
    case 0x92: gather(c, 4, w8); return 1;
    case 0x93: gather(c, 8, w8); return 1;
    case 0xc4: if (!c->evex) return 0; conflict(c, w8); return 1;
    default:
        return xi_float(c);
    }
}

/* Map 0F3A (implied prefix 66). */
static int map3(struct xi_ctx *c)
{
    struct xi_insn *in = &c->in;
    unsigned w8 = in->w ? 8 : 4;

    if (in->pp == 0 && !c->evex && in->op >= 0x30 && in->op <= 0x33) {
        kshift(c);
        return 1;
    }
    if (in->pp == 1 && !c->evex && in->op >= 0x30 && in->op <= 0x33) {
        kshift(c);
        return 1;
    }
    if (in->pp != 1)
        return 0;
    switch (in->op) {
    case 0x00: case 0x01: perm_imm(c); return 1;
    case 0x02: blend_imm(c, 4); return 1;
    case 0x03: if (!c->evex) return 0; valign(c, w8); return 1;
    case 0x04: permil(c, 4, 1); return 1;
    case 0x05: permil(c, 8, 1); return 1;
    case 0x06: case 0x46: perm2x128(c); return 1;
    case 0x0c: blend_imm(c, 4); return 1;
    case 0x0d: blend_imm(c, 8); return 1;
    case 0x0e: blend_imm(c, 2); return 1;
    case 0x0f: palignr(c); return 1;
    case 0x14: pextr(c, 1, 0); return 1;
    case 0x15: pextr(c, 2, 0); return 1;
    case 0x16: pextr(c, in->w ? 8 : 4, 0); return 1;
    case 0x17: pextr(c, 4, 0); return 1;
    case 0x18: case 0x38: vinsert(c, 16, c->evex ? w8 : 4); return 1;
    case 0x19: case 0x39: vextract(c, 16, c->evex ? w8 : 4); return 1;
    case 0x1a: case 0x3a: if (!c->evex) return 0; vinsert(c, 32, w8); return 1;
    case 0x1b: case 0x3b: if (!c->evex) return 0; vextract(c, 32, w8); return 1;
    case 0x1e: if (!c->evex) return 0; int_cmp_imm(c, w8, 0); return 1;
    case 0x1f: if (!c->evex) return 0; int_cmp_imm(c, w8, 1); return 1;
    case 0x20: pinsr(c, 1); return 1;
    case 0x21: insertps(c); return 1;
    case 0x22: pinsr(c, in->w ? 8 : 4); return 1;
    case 0x23: case 0x43: if (!c->evex) return 0; shuf128(c, w8); return 1;
    case 0x25: if (!c->evex) return 0; ternlog(c, w8); return 1;
    case 0x3e: if (!c->evex) return 0; int_cmp_imm(c, in->w ? 2 : 1, 0); return 1;
    case 0x3f: if (!c->evex) return 0; int_cmp_imm(c, in->w ? 2 : 1, 1); return 1;
    case 0x44: pclmul(c); return 1;
    case 0x4a: if (c->evex) return 0; blend_var(c, 4); return 1;
    case 0x4b: if (c->evex) return 0; blend_var(c, 8); return 1;
    case 0x4c: if (c->evex) return 0; blend_var(c, 1); return 1;
    default:
        return xi_float(c);
    }
}

/* rdrand/rdseed: the client's value; CF = 1 (a value was there). */
static void rdrand(struct xi_ctx *c)
{
    crec_emu_cpu *cpu = c->cpu;
    unsigned bytes = c->in.w ? 8 : c->in.opsize16 ? 2 : 4;
    uint64_t v;

    v = cpu->hooks.rdrand ? cpu->hooks.rdrand(cpu->hooks.ctx, cpu, c->in.regf == 7) : 0;
    xi_set_gpr(c, c->in.rm, v, bytes);
    xi_set_flags(c, 0x8d5, 1);
}

/* Carry out one decoded instruction. */
static void xi_exec(struct xi_ctx *c)
{
    struct xi_insn *in = &c->in;
    int done;

    if (in->kind & 0x80) {
        xi_ud(c, "an invalid encoding (#UD)");
        return;
    }
    if (in->kind == XI_RDRAND) {
        rdrand(c);
        return;
    }
    c->evex = in->kind == XI_EVEX;
    c->vl = 16u << (in->l > 2 ? 2 : in->l);
    if (in->l == 3 && !(c->evex && in->b && in->mod == 3)) {
        xi_ud(c, "a reserved vector length (#UD)");
        return;
    }
    switch (in->map) {
    case 1: done = map1(c); break;
    case 2: done = map2(c); break;
    default: done = map3(c); break;
    }
    if (!done)
        xi_ud(c, c->evex ? "an AVX-512 instruction that crec does not execute"
                         : "an AVX instruction that crec does not execute");
}

/* ---- reaching the instructions -------------------------------------------------- */

/* The instruction at rip, decoded.  @return 0, or -1 (not one of ours). */
static int fetch(crec_emu_cpu *cpu, uint64_t rip, struct xi_insn *in)
{
    uint8_t b[16];
    const uint8_t *p = crec_emu_mem_host(cpu, rip, sizeof b, 0);
    unsigned n = sizeof b;

    if (!p) { /* near the end of the mapping: what is there */
        n = (unsigned)emu_mem_read_mapped(cpu, b, rip, sizeof b);
        p = b;
    }
    if (!xi_decode(p, n, in) || !xi_is_site(in))
        return -1;
    return 0;
}

/*
 * The client's code hooks (crec_emu_cpu_hook_code) whose range holds the
 * instruction at rip, which crec is about to carry out: they see it as
 * they see Unicorn's, with RIP at it, the count of what ran before it and
 * the registers as they are.  @return 1 if one of them stopped the run.
 */
static int client_code(struct xi_ctx *c, uint64_t rip)
{
    crec_emu_cpu *cpu = c->cpu;
    int told = 0;

    for (size_t i = 0; i < cpu->n_code_hooks; i++) {
        const struct emu_code_hook *h = cpu->code_hooks[i];
        if (h->begin <= h->end && (rip < h->begin || rip > h->end))
            continue;
        if (!told) {
            xmm_flush(c);
            c->lo_valid = 0; /* the hook may write registers */
            emu_reg_set(cpu, UC_X86_REG_RIP, rip);
            told = 1;
        }
        h->fn(h->ctx, rip, c->in.len);
    }
    return cpu->stop_requested;
}

/*
 * A hooked instruction is about to run at addr: carry it out, and the
 * ones after it that are ours too, then leave the translated block (a
 * write of RIP does that) at the first one that is not.  The block was
 * counted whole when it began: the count becomes what ran before addr,
 * plus what ran here; the block at the new RIP counts itself.  A stop
 * asked for before one of them (a hook earlier in the block, or a client's
 * code hook on it) comes before it: Unicorn would go on with the rest of
 * its block, but that would raise #UD here.
 */
void emu_xinsn_site(crec_emu_cpu *cpu, uint64_t addr, int hooked)
{
    struct xi_ctx c;
    uint64_t at, rip = addr, end = UINT64_MAX;
    unsigned done = 0;

    if (cpu->xstop_pending) {
        uc_emu_stop(cpu->uc);
        return;
    }
    if (cpu->restart_at)
        return; /* the block does not run: it is entered again */
    memset(&c, 0, sizeof c);
    c.cpu = cpu;
    /* A stale hook (the code there changed): TCG runs what is there now. */
    if (fetch(cpu, addr, &c.in) != 0)
        return;
    at = crec_emu_cpu_icount_at(cpu, addr);
    if (cpu->until_armed && at >= cpu->until) {
        emu_until_stop(cpu, addr); /* a query run stops before this instruction */
        return;
    }
    /* from here the count is exact by itself: what ran before the next
     * instruction (crec_emu_cpu_icount_at answers it during the accesses) */
    cpu->icount = at;
    /* the run stays in the block (crec_emu_cpu_block_insns counts it so) */
    if (addr >= cpu->cur_block && addr < cpu->cur_block + cpu->cur_block_size)
        end = cpu->cur_block + cpu->cur_block_size;
    cpu->cur_block = addr, cpu->cur_block_n = 0, cpu->cur_block_size = 0;
    cpu->cur_block_run = 0;
    emu_reg_set(cpu, UC_X86_REG_RIP, addr);
    for (;;) {
        c.rip = rip;
        if (cpu->stop_requested || (!(hooked && done == 0) && client_code(&c, rip))) {
            c.stop = 1; /* before this one, which does not run */
            break;
        }
        xi_exec(&c);
        if (c.stop)
            break;
        cpu->icount++;
        cpu->xinsns++;
        rip += c.in.len;
        if (++done >= XI_BATCH || (cpu->until_armed && cpu->icount >= cpu->until) ||
            rip >= end || fetch(cpu, rip, &c.in) != 0)
            break;
    }
    xmm_flush(&c);
    if (c.stop) {
        emu_reg_set(cpu, UC_X86_REG_RIP, c.rip);
        cpu->xstop_pending = 1;
        uc_emu_stop(cpu->uc);
        return;
    }
    emu_reg_set(cpu, UC_X86_REG_RIP, rip);
}

/* The code hook on a site (used when ucfix's dispatch is not in effect:
 * Unicorn calls the client's code hooks added before it first). */
void emu_xinsn_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud)
{
    (void)uc, (void)size;
    emu_xinsn_site(ud, addr, 1);
}

/* ---- the state kept here, for the client ----------------------------------------- */

void crec_emu_cpu_on_xstate(crec_emu_cpu *cpu, crec_emu_xstate_fn fn, void *ctx)
{
    cpu->xstate_fn = fn;
    cpu->xstate_ctx = ctx;
}

void crec_emu_cpu_xstate_forget(crec_emu_cpu *cpu)
{
    cpu->xs.hi_known = cpu->xs.ext_known = cpu->xs.k_known = 0;
    cpu->xs.touched = 0;
}

struct crec_emu_xstate {
    struct xi_state xs;
};

crec_emu_xstate *crec_emu_xstate_new(void)
{
    return crec_calloc(1, sizeof(crec_emu_xstate));
}

void crec_emu_xstate_free(crec_emu_xstate *x)
{
    crec_free(x);
}

void crec_emu_cpu_xstate_save(const crec_emu_cpu *cpu, crec_emu_xstate *x)
{
    x->xs = cpu->xs;
}

void crec_emu_cpu_xstate_load(crec_emu_cpu *cpu, const crec_emu_xstate *x)
{
    cpu->xs = x->xs;
}

int crec_emu_cpu_xstate_touched(const crec_emu_cpu *cpu)
{
    return cpu->xs.touched;
}

uint64_t crec_emu_cpu_xinsns(const crec_emu_cpu *cpu)
{
    return cpu->xinsns;
}
