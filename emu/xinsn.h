/*
 * xinsn.h - private to emu/: the instructions crec executes itself.
 *
 * Unicorn 2.0.1's TCG has no AVX: it raises #UD on VEX.256 and EVEX
 * encodings, and, worse, runs VEX.128 ones as their legacy SSE forms (it
 * ignores VEX.vvvv: `vpaddd xmm0, xmm1, xmm2` adds xmm2 to xmm0).  Nor can
 * it give RDRAND a value a recording can hold.  So every such instruction
 * is found when its block is first decoded (xdecode.c), gets a code hook
 * bounded to its address (blocks.c), and is carried out here on the
 * guest's registers and memory (xinsn.c: moves, integer and logic
 * operations, shuffles, masks; xfloat.c: floating point), with every load
 * and store reported to the memory hooks of the CPU's client (emu.h).
 *
 * The register state that Unicorn can't hold is kept here: the bytes above
 * the low 128 bits of zmm0-15, all of zmm16-31, and the mask registers
 * k0-7.  Key frames hold only crec_regs, so that state is "unknown" after
 * every key frame: the first read of a piece is handed to the client
 * (crec_emu_cpu_on_xstate), which logs it when recording and fills it in
 * when replaying.
 */
#ifndef CREC_EMU_XINSN_H
#define CREC_EMU_XINSN_H

#include <stdint.h>

struct crec_emu_cpu;

/* What kind of instruction xdecode found. */
enum xi_kind {
    XI_NONE = 0,   /* TCG runs it */
    XI_VEX,        /* VEX-encoded (2- or 3-byte prefix) */
    XI_EVEX,       /* EVEX-encoded (AVX-512) */
    XI_RDRAND,     /* rdrand / rdseed */
};

/* One decoded instruction (only the kinds above get operands filled). */
struct xi_insn {
    uint8_t len;       /* bytes */
    uint8_t kind;      /* enum xi_kind */
    uint8_t map;       /* 1: 0f, 2: 0f38, 3: 0f3a */
    uint8_t pp;        /* implied prefix: 0 none, 1 66, 2 f3, 3 f2 */
    uint8_t op;        /* opcode byte */
    uint8_t w;         /* VEX/EVEX.W (REX.W for rdrand) */
    uint8_t l;         /* vector length: 0 128, 1 256, 2 512 (EVEX L'L) */
    uint8_t vvvv;      /* the extra source register, 0-31 */
    uint8_t reg;       /* ModRM.reg with R and R': 0-31 */
    uint8_t rm;        /* ModRM.rm with B and X (register form): 0-31 */
    uint8_t regf;      /* ModRM.reg without extensions (group opcodes) */
    uint8_t mod;       /* ModRM.mod: 3 is the register form */
    uint8_t aaa;       /* EVEX opmask register, 0: none */
    uint8_t z;         /* EVEX zeroing */
    uint8_t b;         /* EVEX.b: broadcast (memory) or rounding/SAE (register) */
    uint8_t has_imm;
    uint8_t imm;
    uint8_t opsize16;  /* rdrand: 66 prefix */
    /* the memory operand (mod != 3) */
    uint8_t seg;       /* 0, 4 fs, 5 gs */
    uint8_t addr32;    /* 67 prefix */
    uint8_t disp8;     /* displacement is EVEX disp8 (scaled by N) */
    uint8_t riprel;
    int8_t base;       /* GPR number, -1 none */
    int8_t index;      /* GPR number (or vector register for VSIB), -1 none */
    uint8_t scale;     /* 1, 2, 4, 8 */
    int64_t disp;
};

/* Decode the instruction at bytes[0..n).  @return its length (and *in
 * filled), or 0 when the bytes are not one of the kinds above or are cut
 * short.  Legacy instructions other than rdrand/rdseed return 0: Capstone
 * measures those. */
unsigned xi_decode(const uint8_t *bytes, unsigned n, struct xi_insn *in);

/* Whether crec must run the decoded instruction itself (VEX/EVEX that TCG
 * gets wrong, rdrand, rdseed); the BMI instructions TCG runs well. */
int xi_is_site(const struct xi_insn *in);

/* Bytes of the state kept here. */
#define XI_KREGS 8

struct xi_state {
    uint8_t hi[16][48];   /* bytes 16..63 of zmm0-15 */
    uint8_t ext[16][64];  /* zmm16-31 */
    uint64_t k[XI_KREGS];
    /* Known since the last crec_emu_cpu_xstate_forget: bit r of hi_known
     * (zmm r, bytes 16..63), of ext_known (zmm16+r), of k_known. */
    uint32_t hi_known, ext_known, k_known;
    int touched;          /* some piece was read or written since the forget */
};

/* ---- the lanes (xinsn.c), shared with xfloat.c ------------------------- */

/* The operation being carried out. */
struct xi_ctx {
    struct crec_emu_cpu *cpu;
    struct xi_insn in;
    uint64_t rip;       /* the instruction's address */
    unsigned vl;        /* vector length in bytes: 16, 32, 64 */
    int evex;
    uint32_t mxcsr;     /* read once per floating-point instruction */
    uint32_t mxflags;   /* exception flags the instruction raised */
    int stop;           /* the instruction faulted: the stop is set */
    /* The low 128 bits of xmm0-15 (which live in Unicorn) as read or
     * written during this visit: guest bytes, written back at its end. */
    uint8_t lo[16][16];
    uint16_t lo_valid, lo_dirty;
};

/* Little-endian element i of es bytes (1, 2, 4, 8) of a vector. */
static inline uint64_t xi_el(const uint8_t *v, unsigned i, unsigned es)
{
    const uint8_t *p = v + (size_t)i * es;
    uint64_t x = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    __builtin_memcpy(&x, p, es);
#else
    for (unsigned k = es; k-- > 0;)
        x = x << 8 | p[k];
#endif
    return x;
}

static inline void xi_set_el(uint8_t *v, unsigned i, unsigned es, uint64_t x)
{
    uint8_t *p = v + (size_t)i * es;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    __builtin_memcpy(p, &x, es);
#else
    for (unsigned k = 0; k < es; k++, x >>= 8)
        p[k] = (uint8_t)x;
#endif
}

/* xfloat.c: the floating-point instructions.  @return 1 if the opcode is
 * one of them (carried out, or a stop set), 0 if it is not. */
int xi_float(struct xi_ctx *c);

/* xinsn.c services for xfloat.c */
int xi_src2(struct xi_ctx *c, uint8_t out[64], unsigned es, unsigned bytes);
int xi_operands(struct xi_ctx *c, uint8_t a[64], uint8_t b[64], uint8_t r[64], unsigned es);
void xi_vget(struct xi_ctx *c, unsigned r, uint8_t out[64]);
void xi_write_masked(struct xi_ctx *c, unsigned r, const uint8_t res[64], unsigned es,
                     unsigned nel);
void xi_vset(struct xi_ctx *c, unsigned r, const uint8_t v[64], unsigned vl);
uint64_t xi_mask(struct xi_ctx *c, unsigned nel);
void xi_kset(struct xi_ctx *c, unsigned r, uint64_t v);
int xi_load(struct xi_ctx *c, uint64_t addr, unsigned n, uint8_t *out);
int xi_store(struct xi_ctx *c, uint64_t addr, unsigned n, const uint8_t *in);
uint64_t xi_ea(struct xi_ctx *c, unsigned memsize);
uint64_t xi_gpr(struct xi_ctx *c, unsigned r);
void xi_set_gpr(struct xi_ctx *c, unsigned r, uint64_t v, unsigned bytes);
void xi_set_flags(struct xi_ctx *c, uint64_t mask, uint64_t bits);
void xi_ud(struct xi_ctx *c, const char *why);
void xi_gp(struct xi_ctx *c, const char *why);

#endif /* CREC_EMU_XINSN_H */
