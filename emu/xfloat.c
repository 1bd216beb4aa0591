/*
 * xfloat.c - the floating-point instructions of AVX, FMA, F16C and AVX-512
 * that crec executes itself (see xinsn.h).
 *
 * The host computes each operation with the C operators, correctly
 * rounded in the rounding mode MXCSR (or EVEX embedded rounding) asks for;
 * what IEEE 754 leaves to the machine is done the x86 way by hand, so that
 * an s390x replay computes the same bits: which NaN a result carries (the
 * first NaN source, quieted; the "indefinite" -NaN for an invalid
 * operation), MINPS/MAXPS returning the second source on NaN or equal
 * zeros, out-of-range conversions to the integer indefinite value,
 * denormals-are-zero and flush-to-zero.  The exception flags the host
 * raised become MXCSR's; an unmasked one is #XM (SIGFPE), with nothing
 * written.
 *
 * RCPPS/RSQRTPS (and the AVX-512 14-bit forms) are approximations whose
 * bits differ between CPU makers; here they are the correctly rounded
 * 1/x and 1/sqrt(x), as QEMU does.
 */
#if defined(__clang__)
#pragma clang fp contract(off)
#pragma STDC FENV_ACCESS ON
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off", "rounding-math", "trapping-math")
#endif

#include <fenv.h>
#include <math.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif
#include <signal.h>
#include <string.h>

#include "emu/emu_int.h"
#include "emu/xinsn.h"

/* MXCSR bits */
#define MX_IE 0x01u
#define MX_DE 0x02u
#define MX_ZE 0x04u
#define MX_OE 0x08u
#define MX_UE 0x10u
#define MX_PE 0x20u
#define MX_DAZ 0x40u
#define MX_FZ 0x8000u

/* How the current instruction rounds and what it may raise. */
struct fctx {
    struct xi_ctx *c;
    int rc;      /* 0 nearest, 1 down, 2 up, 3 toward zero */
    int sae;     /* EVEX {sae}: no flags */
    int daz, ftz;
    uint32_t flags;
};

static void fctx_init(struct fctx *f, struct xi_ctx *c)
{
    uint32_t mx = (uint32_t)emu_reg_get(c->cpu, UC_X86_REG_MXCSR);

    f->c = c;
    f->rc = (int)(mx >> 13 & 3);
    f->daz = (mx & MX_DAZ) != 0;
    f->ftz = (mx & MX_FZ) != 0;
    f->sae = 0;
    f->flags = 0;
    c->mxcsr = mx;
    if (c->evex && c->in.b && c->in.mod == 3) { /* embedded rounding / SAE */
        f->rc = c->in.l;
        f->sae = 1;
    }
}

#if defined(__x86_64__)
/* On an x86-64 host, double and float arithmetic is SSE, which MXCSR alone
 * governs: one write of it (its rounding field encodes as the guest's),
 * where glibc's fe* functions also save and load the x87 unit's
 * environment, a fifth of the time of an -O3 -march=native loop of AVX
 * arithmetic.  Every exception stays masked, as the host's default. */
static void host_begin(int rc)
{
    _mm_setcsr(0x1f80u | (unsigned)(rc & 3) << 13);
}

static void host_nearest(void)
{
    _mm_setcsr(_mm_getcsr() & ~0x6000u);
}

/* The flags raised since host_begin (MX_*, DE left to the caller). */
static uint32_t host_raised(void)
{
    return _mm_getcsr() & (MX_IE | MX_ZE | MX_OE | MX_UE | MX_PE);
}
#else
static const int host_round[4] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};

static void host_begin(int rc)
{
    feclearexcept(FE_ALL_EXCEPT);
    fesetround(host_round[rc & 3]);
}

static void host_nearest(void)
{
    fesetround(FE_TONEAREST);
}

static uint32_t host_raised(void)
{
    int e = fetestexcept(FE_ALL_EXCEPT);
    uint32_t fl = 0;

    if (e & FE_INVALID) fl |= MX_IE;
    if (e & FE_DIVBYZERO) fl |= MX_ZE;
    if (e & FE_OVERFLOW) fl |= MX_OE;
    if (e & FE_UNDERFLOW) fl |= MX_UE;
    if (e & FE_INEXACT) fl |= MX_PE;
    return fl;
}
#endif

/* The flags the host raised since host_begin.  An operand's DE (`de`) is
 * reported only when the operation raised no invalid or divide-by-zero:
 * those are checked before it (SDM vol. 1, 11.5.2, "SIMD Floating-Point
 * Exception Priority"). */
static void host_end(struct fctx *f, int de)
{
    uint32_t fl = host_raised();

    host_nearest();
    if (de && !(fl & (MX_IE | MX_ZE)))
        fl |= MX_DE;
    f->flags |= fl;
}

/* Raise the flags into MXCSR.  @return 0, or -1 when one is unmasked (the
 * instruction then has no effect: #XM, SIGFPE). */
static int fctx_done(struct fctx *f)
{
    struct xi_ctx *c = f->c;
    uint32_t unmasked;

    if (f->sae)
        return 0;
    unmasked = f->flags & ~(c->mxcsr >> 7) & 0x3f;
    if (unmasked) {
        xi_gp(c, "SIMD floating-point exception (#XM)");
        c->cpu->fault.signo = SIGFPE;
        return -1;
    }
    if ((c->mxcsr | f->flags) != c->mxcsr)
        emu_reg_set(c->cpu, UC_X86_REG_MXCSR, c->mxcsr | f->flags);
    return 0;
}

/* ---- classes of values, by bits ----------------------------------------------- */

static int is_nan(uint64_t x, unsigned es)
{
    return es == 4 ? (x & 0x7fffffff) > 0x7f800000 : (x & ~(1ull << 63)) > 0x7ff0000000000000ull;
}

static int is_snan(uint64_t x, unsigned es)
{
    return is_nan(x, es) && !(es == 4 ? x >> 22 & 1 : x >> 51 & 1);
}

static uint64_t quiet(uint64_t x, unsigned es)
{
    return x | (es == 4 ? 1ull << 22 : 1ull << 51);
}

static uint64_t indefinite(unsigned es)
{
    return es == 4 ? 0xffc00000ull : 0xfff8000000000000ull;
}

static int is_denormal(uint64_t x, unsigned es)
{
    return es == 4 ? (x & 0x7f800000) == 0 && (x & 0x7fffff) : (x & 0x7ff0000000000000ull) == 0 &&
                                                                    (x & 0xfffffffffffffull);
}

static uint64_t sign_bit(unsigned es)
{
    return es == 4 ? 0x80000000ull : 1ull << 63;
}

/* An input operand: DAZ; *de set when it is a denormal that counts (the
 * DE flag, raised by host_end when nothing of higher priority is). */
static uint64_t fin(struct fctx *f, uint64_t x, unsigned es, int *de)
{
    if (is_denormal(x, es)) {
        if (f->daz)
            return x & sign_bit(es);
        *de = 1;
    }
    return x;
}

/* An output: flush-to-zero of a denormal result (it underflowed). */
static uint64_t fout(struct fctx *f, uint64_t x, unsigned es)
{
    if (f->ftz && is_denormal(x, es)) {
        f->flags |= MX_UE | MX_PE;
        return x & sign_bit(es);
    }
    return x;
}

static float f32(uint64_t x)
{
    uint32_t u = (uint32_t)x;
    float v;
    memcpy(&v, &u, 4);
    return v;
}

static double f64(uint64_t x)
{
    double v;
    memcpy(&v, &x, 8);
    return v;
}

static uint64_t b32(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

static uint64_t b64(double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return u;
}

/* The NaN a result carries when some source is a NaN (x86: the first
 * NaN source, quieted); the invalid flag for a signalling one.
 * @return 1 with *out set when some source is a NaN. */
static int nan_result(struct fctx *f, const uint64_t *src, unsigned n, unsigned es,
                      uint64_t *out)
{
    int found = 0;

    for (unsigned i = 0; i < n; i++) {
        if (is_snan(src[i], es))
            f->flags |= MX_IE;
        if (!found && is_nan(src[i], es)) {
            *out = quiet(src[i], es);
            found = 1;
        }
    }
    return found;
}

/* ---- arithmetic ------------------------------------------------------------------ */

/* floor(y) for VSCALEF, clamped to +-lim (beyond it every result is +-inf
 * or 0 already), computed without touching the exception flags (floor
 * raises "inexact" in glibc). */
static int scale_of(double y, int lim)
{
    fenv_t env;
    double n;

    feholdexcept(&env);
    n = isinf(y) ? (y > 0 ? lim : -lim) : floor(y);
    fesetenv(&env);
    return n > lim ? lim : n < -lim ? -lim : (int)n;
}

enum fop { F_ADD, F_SUB, F_MUL, F_DIV, F_MIN, F_MAX, F_SQRT, F_RCP, F_RSQRT, F_SCALEF,
           F_GETEXP };

static uint64_t farith(struct fctx *f, enum fop op, uint64_t a, uint64_t b, unsigned es)
{
    uint64_t src[2], r;
    volatile double d;
    volatile float s;
    int unary = op == F_SQRT || op == F_RCP || op == F_RSQRT || op == F_GETEXP, de = 0;

    if (unary)
        a = b; /* the source is the second operand */
    a = fin(f, a, es, &de);
    {
        int de_b = 0; /* VSCALEF's scale does not report DE */
        b = fin(f, b, es, &de_b);
        de |= op == F_SCALEF ? 0 : de_b;
    }
    if (op == F_MIN || op == F_MAX) { /* second source on NaN or equal */
        int lt;
        if (is_nan(a, es) || is_nan(b, es)) {
            f->flags |= MX_IE;
            return b;
        }
        if (de)
            f->flags |= MX_DE;
        lt = es == 4 ? f32(a) < f32(b) : f64(a) < f64(b);
        if (op == F_MIN)
            return lt ? a : b;
        return (es == 4 ? f32(a) > f32(b) : f64(a) > f64(b)) ? a : b;
    }
    /* VSCALEF of a quiet NaN by an infinity is +inf or +0 on the CPU the
     * tests run on (AMD Zen 4), not the NaN */
    if (op == F_SCALEF && is_nan(a, es) && !is_snan(a, es) && !is_nan(b, es) &&
        (b & ~sign_bit(es)) == (es == 4 ? 0x7f800000ull : 0x7ff0000000000000ull))
        return (b & sign_bit(es)) ? 0 : (es == 4 ? 0x7f800000ull : 0x7ff0000000000000ull);
    src[0] = a, src[1] = b;
    if (nan_result(f, src, unary ? 1 : 2, es, &r))
        return r;
    host_begin(f->rc);
    if (es == 4) {
        float x = f32(a), y = f32(b);
        switch (op) {
        case F_ADD: s = x + y; break;
        case F_SUB: s = x - y; break;
        case F_MUL: s = x * y; break;
        case F_DIV: s = x / y; break;
        case F_SQRT: s = sqrtf(y); break;
        case F_RCP: s = 1.0f / y; break;
        case F_RSQRT: s = (float)(1.0 / sqrt((double)y)); break;
        case F_SCALEF: /* exact in double, then one rounding */
            s = (float)((double)x * ldexp(1.0, scale_of(y, 400)));
            break;
        default: s = y == 0 ? -INFINITY : isinf(y) ? INFINITY : (float)ilogbf(y); break;
        }
        r = b32(s);
    } else {
        double x = f64(a), y = f64(b);
        switch (op) {
        case F_ADD: d = x + y; break;
        case F_SUB: d = x - y; break;
        case F_MUL: d = x * y; break;
        case F_DIV: d = x / y; break;
        case F_SQRT: d = sqrt(y); break;
        case F_RCP: d = 1.0 / y; break;
        case F_RSQRT: d = 1.0 / sqrt(y); break;
        case F_SCALEF: d = ldexp(x, scale_of(y, 2200)); break;
        default: d = y == 0 ? -INFINITY : isinf(y) ? INFINITY : (double)ilogb(y); break;
        }
        r = b64(d);
    }
    host_end(f, de);
    if (is_nan(r, es)) /* an invalid operation of numbers: the indefinite NaN */
        r = indefinite(es);
    return fout(f, r, es);
}

/* a * b + c, with the signs the FMA form asks for (neg_ab: -(a*b),
 * neg_c: -c).  NaN: the first NaN in the order of the operands given. */
static uint64_t fused(struct fctx *f, uint64_t a, uint64_t b, uint64_t c, int neg_ab, int neg_c,
                     const uint64_t order[3], unsigned es)
{
    uint64_t r;
    volatile double d;
    volatile float s;
    int de = 0;

    a = fin(f, a, es, &de), b = fin(f, b, es, &de), c = fin(f, c, es, &de);
    if (nan_result(f, order, 3, es, &r))
        return r;
    if (neg_ab)
        a ^= sign_bit(es);
    if (neg_c)
        c ^= sign_bit(es);
    host_begin(f->rc);
    if (es == 4) {
        s = fmaf(f32(a), f32(b), f32(c));
        r = b32(s);
    } else {
        d = fma(f64(a), f64(b), f64(c));
        r = b64(d);
    }
    host_end(f, de);
    if (is_nan(r, es))
        r = indefinite(es);
    return fout(f, r, es);
}

/* ---- comparisons --------------------------------------------------------------- */

/* cmpps predicate p (0-31) on a, b. */
static int fcmp(struct fctx *f, uint64_t a, uint64_t b, unsigned es, unsigned p)
{
    int un, lt = 0, eq = 0, gt = 0, t, de = 0;
    static const uint8_t signalling = 0x66; /* 1 2 5 6 (and 9 10 13 14) */

    a = fin(f, a, es, &de), b = fin(f, b, es, &de);
    un = is_nan(a, es) || is_nan(b, es);
    if (de && !un)
        f->flags |= MX_DE;
    if (is_snan(a, es) || is_snan(b, es) ||
        (un && ((signalling >> (p & 7) & 1) ^ (p >> 4 & 1))))
        f->flags |= MX_IE;
    if (!un) {
        if (es == 4)
            lt = f32(a) < f32(b), eq = f32(a) == f32(b);
        else
            lt = f64(a) < f64(b), eq = f64(a) == f64(b);
        gt = !lt && !eq;
    }
    switch (p & 15) {
    case 0: t = !un && eq; break;
    case 1: t = !un && lt; break;
    case 2: t = !un && (lt || eq); break;
    case 3: t = un; break;
    case 4: t = un || !eq; break;
    case 5: t = un || !lt; break;
    case 6: t = un || gt; break;
    case 7: t = !un; break;
    case 8: t = un || eq; break;
    case 9: t = un || lt; break;
    case 10: t = un || lt || eq; break;
    case 11: t = 0; break;
    case 12: t = !un && !eq; break;
    case 13: t = !un && (gt || eq); break;
    case 14: t = !un && gt; break;
    default: t = 1; break;
    }
    return t;
}

/* ---- conversions --------------------------------------------------------------------- */

/* A float (es_in) to a signed or unsigned integer of `bytes`: rounded by
 * rc (or truncated), out of range or NaN gives the indefinite value. */
static uint64_t f2i(struct fctx *f, uint64_t x, unsigned es_in, unsigned bytes, int is_signed,
                    int truncate)
{
    double v, r, lo, hi;
    uint64_t bad = is_signed ? 1ull << (8 * bytes - 1) : (bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1);
    int de = 0; /* conversions to integers do not report DE */

    x = fin(f, x, es_in, &de);
    if (is_nan(x, es_in)) {
        f->flags |= MX_IE;
        return bad;
    }
    v = es_in == 4 ? (double)f32(x) : f64(x);
    if (truncate) {
        r = trunc(v);
    } else {
        host_begin(f->rc);
        r = nearbyint(v);
        host_nearest();
    }
    lo = is_signed ? -ldexp(1.0, 8 * (int)bytes - 1) : 0.0;
    hi = ldexp(1.0, 8 * (int)bytes - (is_signed ? 1 : 0));
    if (!(r >= lo && r < hi)) { /* out of range: invalid, and no precision flag */
        f->flags |= MX_IE;
        return bad;
    }
    if (r != v)
        f->flags |= MX_PE;
    if (is_signed)
        return (uint64_t)(int64_t)r & (bytes == 8 ? ~0ull : (1ull << (8 * bytes)) - 1);
    return (uint64_t)r;
}

/* An integer of `bytes` (signed or not) to a float of es_out. */
static uint64_t i2f(struct fctx *f, uint64_t x, unsigned bytes, int is_signed, unsigned es_out)
{
    volatile float s;
    volatile double d;
    uint64_t r;

    host_begin(f->rc);
    if (is_signed) {
        int64_t v = bytes == 8 ? (int64_t)x : (int64_t)(int32_t)(uint32_t)x;
        if (es_out == 4)
            s = (float)v;
        else
            d = (double)v;
    } else {
        uint64_t v = bytes == 8 ? x : (uint32_t)x;
        if (es_out == 4)
            s = (float)v;
        else
            d = (double)v;
    }
    r = es_out == 4 ? b32(s) : b64(d);
    host_end(f, 0);
    return r;
}

/* float <-> double. */
static uint64_t f2f(struct fctx *f, uint64_t x, unsigned es_in, unsigned es_out)
{
    volatile float s;
    volatile double d;
    uint64_t r;
    int de = 0;

    x = fin(f, x, es_in, &de);
    if (is_nan(x, es_in)) {
        if (is_snan(x, es_in))
            f->flags |= MX_IE;
        x = quiet(x, es_in);
        if (es_out == 8) /* the payload moves to the top of the wider mantissa */
            return (x & 0x80000000ull) << 32 | 0x7ff0000000000000ull | (x & 0x7fffffull) << 29;
        return (x >> 32 & 0x80000000ull) | 0x7f800000ull | (x >> 29 & 0x7fffffull);
    }
    host_begin(f->rc);
    if (es_out == 8) {
        d = (double)f32(x);
        r = b64(d);
    } else {
        s = (float)f64(x);
        r = b32(s);
    }
    host_end(f, de);
    return fout(f, r, es_out);
}

/* Half precision (F16C): a float to a half, rounded by rc. */
static uint64_t f2h(struct fctx *f, uint64_t x, int rc)
{
    int de = 0;
    uint32_t u = (uint32_t)fin(f, x, 4, &de), sign = u >> 16 & 0x8000, mant = u & 0x7fffff;
    int exp = (int)(u >> 23 & 0xff) - 127 + 15;
    uint32_t m, rest, half, shift;

    if ((u & 0x7fffffff) > 0x7f800000) { /* NaN: quieted, payload's top bits */
        if (!(u >> 22 & 1))
            f->flags |= MX_IE;
        return sign | 0x7e00 | (mant >> 13);
    }
    if ((u & 0x7fffffff) == 0x7f800000)
        return sign | 0x7c00;
    if ((u & 0x7fffffff) == 0)
        return sign;
    if (de)
        f->flags |= MX_DE;
    m = mant | 0x800000; /* 24 bits */
    if (exp >= 1) {
        shift = 13;
    } else {
        shift = (uint32_t)(14 - exp);
        if (shift > 25)
            shift = 25;
        exp = 0;
    }
    rest = m & ((1u << shift) - 1);
    half = 1u << (shift - 1);
    m >>= shift;
    if (rest) {
        int up;
        f->flags |= MX_PE;
        switch (rc & 3) {
        case 0: up = rest > half || (rest == half && (m & 1)); break;
        case 1: up = sign != 0; break;
        case 2: up = sign == 0; break;
        default: up = 0; break;
        }
        m += (uint32_t)up;
        if (exp == 0 && m < 0x400)
            f->flags |= MX_UE;
    }
    if (exp == 0) /* denormal (or rounded up to the smallest normal) */
        return sign | m;
    if (m & 0x800) { /* the mantissa carried over */
        m >>= 1;
        exp++;
    }
    if (exp >= 31) {
        f->flags |= MX_OE | MX_PE;
        if ((rc == 1 && !sign) || (rc == 2 && sign) || rc == 3)
            return sign | 0x7bff;
        return sign | 0x7c00;
    }
    return sign | (uint32_t)exp << 10 | (m & 0x3ff);
}

static uint64_t h2f(struct fctx *f, uint64_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = h >> 10 & 0x1f, mant = h & 0x3ff;

    if (exp == 31) {
        if (mant && !(mant & 0x200))
            f->flags |= MX_IE;
        return sign | 0x7f800000 | (mant ? (mant | 0x200) << 13 : 0);
    }
    if (exp == 0) { /* a denormal half: converted exactly (no DAZ, no DE) */
        if (!mant)
            return sign;
        exp = 127 - 15 + 1;
        while (!(mant & 0x400)) {
            mant <<= 1;
            exp--;
        }
        return sign | exp << 23 | (mant & 0x3ff) << 13;
    }
    return sign | (exp + 127 - 15) << 23 | mant << 13;
}

/* roundps & co: mode from imm (bit 2: MXCSR's), bit 3 no precision flag;
 * EVEX rndscale: imm[7:4] fraction bits kept. */
static uint64_t fround(struct fctx *f, uint64_t x, unsigned es, unsigned imm)
{
    int rc = (imm & 4) ? f->rc : (int)(imm & 3), scale = (int)(imm >> 4);
    uint64_t src = x, r;
    volatile double d;
    volatile float s;
    uint32_t keep = f->flags;
    int de = 0;

    x = fin(f, x, es, &de);
    if (nan_result(f, &src, 1, es, &r))
        return r;
    host_begin(rc);
    if (es == 4) {
        s = ldexpf(nearbyintf(ldexpf(f32(x), scale)), -scale);
        r = b32(s);
    } else {
        d = ldexp(nearbyint(ldexp(f64(x), scale)), -scale);
        r = b64(d);
    }
    host_end(f, de);
    /* round reports no DE, and PE only when not suppressed */
    f->flags = keep | (f->flags & MX_IE);
    if (r != x && !(imm & 8))
        f->flags |= MX_PE;
    return r;
}

/* ---- the instructions -------------------------------------------------------------- */

/* Element size of a packed/scalar op by the implied prefix: ps pd ss sd. */
static unsigned pp_es(unsigned pp)
{
    return pp == 1 || pp == 3 ? 8 : 4;
}

/* A result vector written under the mask (after the flags are settled). */
static void fwrite_vec(struct fctx *f, const uint8_t *r, unsigned es, unsigned nel)
{
    if (fctx_done(f) != 0)
        return;
    xi_write_masked(f->c, f->c->in.reg, r, es, nel);
}

/* A scalar result: element 0 computed, elements 1.. of the 128 bits from
 * src1 (vvvv), masked on element 0. */
static void fwrite_scalar(struct fctx *f, uint64_t v, unsigned es)
{
    struct xi_ctx *c = f->c;
    uint8_t a[64];

    if (fctx_done(f) != 0)
        return;
    xi_vget(c, c->in.vvvv, a);
    memset(a + 16, 0, 48);
    if (!c->evex || (xi_mask(c, 1) & 1)) {
        xi_set_el(a, 0, es, v);
    } else {
        uint8_t old[64];
        xi_vget(c, c->in.reg, old);
        xi_set_el(a, 0, es, c->in.z ? 0 : xi_el(old, 0, es));
    }
    xi_vset(c, c->in.reg, a, 16);
}

/* vadd/vsub/vmul/vdiv/vmin/vmax/vsqrt/vrcp/vrsqrt, packed or scalar. */
static void arith(struct xi_ctx *c, enum fop op, int scalar, unsigned es)
{
    struct fctx f;
    uint8_t a[64], b[64], r[64];
    unsigned nel;

    fctx_init(&f, c);
    if (f.sae && !scalar)
        c->vl = 64;
    nel = scalar ? 1 : c->vl / es;
    xi_vget(c, c->in.vvvv, a);
    if (xi_src2(c, b, es, scalar ? es : c->vl) != 0)
        return;
    if (scalar) { /* a masked-off element is not computed (no flags) */
        uint64_t v = 0;
        if (!c->evex || (xi_mask(c, 1) & 1))
            v = farith(&f, op, xi_el(a, 0, es), xi_el(b, 0, es), es);
        fwrite_scalar(&f, v, es);
        return;
    }
    memset(r, 0, sizeof r);
    uint64_t m = xi_mask(c, nel);
    for (unsigned i = 0; i < nel; i++)
        if (m >> i & 1)
            xi_set_el(r, i, es, farith(&f, op, xi_el(a, i, es), xi_el(b, i, es), es));
    fwrite_vec(&f, r, es, nel);
}

/* The FMA family, map 0F38 96-BF. */
static void fma_insn(struct xi_ctx *c)
{
    unsigned op = c->in.op, form = op >> 4 == 9 ? 132 : op >> 4 == 0xa ? 213 : 231;
    unsigned kind = op & 15, es = c->in.w ? 8 : 4;
    int scalar = (kind & 1) && kind >= 9, alt = kind == 6 || kind == 7;
    int neg_ab = kind == 0xc || kind == 0xd || kind == 0xe || kind == 0xf;
    int sub = kind == 0xa || kind == 0xb || kind == 0xe || kind == 0xf;
    struct fctx f;
    uint8_t d[64], v[64], s[64], r[64];
    unsigned nel;

    fctx_init(&f, c);
    if (f.sae && !scalar)
        c->vl = 64;
    nel = scalar ? 1 : c->vl / es;
    xi_vget(c, c->in.reg, d);
    xi_vget(c, c->in.vvvv, v);
    if (xi_src2(c, s, es, scalar ? es : c->vl) != 0)
        return;
    memset(r, 0, sizeof r);
    uint64_t m = xi_mask(c, nel);
    for (unsigned i = 0; i < nel; i++) {
        uint64_t o1 = xi_el(d, i, es), o2 = xi_el(v, i, es), o3 = xi_el(s, i, es), x, y, z;
        int nc = sub;
        if (!(m >> i & 1))
            continue;
        if (form == 132)
            x = o1, y = o3, z = o2;
        else if (form == 213)
            x = o2, y = o1, z = o3;
        else
            x = o2, y = o3, z = o1;
        if (alt) /* fmaddsub: even elements subtract; fmsubadd: odd ones */
            nc = (kind == 6) ? !(i & 1) : (i & 1);
        /* a NaN result is the first NaN of multiplicand, multiplier, addend */
        uint64_t order[3] = {x, y, z};
        xi_set_el(r, i, es, fused(&f, x, y, z, neg_ab, nc, order, es));
    }
    if (scalar) {
        uint8_t keep[64];
        if (fctx_done(&f) != 0)
            return;
        memcpy(keep, d, 64);
        memset(keep + 16, 0, 48);
        if (!c->evex || (xi_mask(c, 1) & 1))
            xi_set_el(keep, 0, es, xi_el(r, 0, es));
        else if (c->in.z)
            xi_set_el(keep, 0, es, 0);
        xi_vset(c, c->in.reg, keep, 16);
        return;
    }
    fwrite_vec(&f, r, es, nel);
}

/* vcmpps/pd/ss/sd: a vector of all-ones/zeros (VEX), a mask (EVEX). */
static void cmp_insn(struct xi_ctx *c, int scalar, unsigned es)
{
    struct fctx f;
    uint8_t a[64], b[64], r[64];
    unsigned nel, p = c->in.imm & 31;
    uint64_t bits = 0, all;

    fctx_init(&f, c);
    if (f.sae && !scalar)
        c->vl = 64;
    nel = scalar ? 1 : c->vl / es;
    xi_vget(c, c->in.vvvv, a);
    if (xi_src2(c, b, es, scalar ? es : c->vl) != 0)
        return;
    all = es == 8 ? ~0ull : 0xffffffffull;
    memcpy(r, a, 64);
    uint64_t m = xi_mask(c, nel);
    for (unsigned i = 0; i < nel; i++) {
        int t = (m >> i & 1) ? fcmp(&f, xi_el(a, i, es), xi_el(b, i, es), es, p) : 0;
        bits |= (uint64_t)t << i;
        xi_set_el(r, i, es, t ? all : 0);
    }
    if (fctx_done(&f) != 0)
        return;
    if (c->evex) {
        xi_kset(c, c->in.reg, bits & xi_mask(c, nel));
        return;
    }
    if (scalar) {
        memset(r + 16, 0, 48);
        xi_vset(c, c->in.reg, r, 16);
        return;
    }
    xi_vset(c, c->in.reg, r, c->vl);
}

/* vucomiss/vcomiss/...: ZF PF CF. */
static void comis(struct xi_ctx *c, unsigned es, int signalling)
{
    struct fctx f;
    uint8_t a[64], b[64];
    uint64_t x, y, fl;
    int de = 0;

    fctx_init(&f, c);
    xi_vget(c, c->in.reg, a);
    if (xi_src2(c, b, es, es) != 0)
        return;
    x = fin(&f, xi_el(a, 0, es), es, &de), y = fin(&f, xi_el(b, 0, es), es, &de);
    if (de && !is_nan(x, es) && !is_nan(y, es))
        f.flags |= MX_DE;
    if (is_nan(x, es) || is_nan(y, es)) {
        if (signalling || is_snan(x, es) || is_snan(y, es))
            f.flags |= MX_IE;
        fl = 0x45; /* ZF PF CF */
    } else if (es == 4 ? f32(x) < f32(y) : f64(x) < f64(y)) {
        fl = 0x01;
    } else if (es == 4 ? f32(x) == f32(y) : f64(x) == f64(y)) {
        fl = 0x40;
    } else {
        fl = 0;
    }
    if (fctx_done(&f) != 0)
        return;
    xi_set_flags(c, 0x8d5, fl);
}

/* hadd/hsub (pairs), addsub (alternate). */
static void horiz(struct xi_ctx *c, int what, unsigned es)
{
    struct fctx f;
    uint8_t a[64], b[64], r[64];
    unsigned per = 16 / es, half = per / 2, nel = c->vl / es;

    fctx_init(&f, c);
    if (xi_operands(c, a, b, r, es) != 0)
        return;
    if (what == 2) { /* addsub: even subtract, odd add */
        for (unsigned i = 0; i < nel; i++)
            xi_set_el(r, i, es, farith(&f, (i & 1) ? F_ADD : F_SUB, xi_el(a, i, es), xi_el(b, i, es), es));
    } else {
        enum fop op = what ? F_SUB : F_ADD;
        for (unsigned lane = 0; lane < c->vl / 16; lane++)
            for (unsigned i = 0; i < half; i++) {
                unsigned p = lane * per + 2 * i;
                xi_set_el(r, lane * per + i, es, farith(&f, op, xi_el(a, p, es), xi_el(a, p + 1, es), es));
                xi_set_el(r, lane * per + half + i, es,
                          farith(&f, op, xi_el(b, p, es), xi_el(b, p + 1, es), es));
            }
    }
    fwrite_vec(&f, r, es, nel);
}

/* dpps/dppd: per 128-bit lane, the sum of the products imm[7:4] selects,
 * to the elements imm[3:0] selects. */
static void dotp(struct xi_ctx *c, unsigned es)
{
    struct fctx f;
    uint8_t a[64], b[64], r[64];
    unsigned per = 16 / es, imm = c->in.imm;
    uint64_t zero = 0;

    fctx_init(&f, c);
    if (xi_operands(c, a, b, r, es) != 0)
        return;
    for (unsigned lane = 0; lane < c->vl / 16; lane++) {
        uint64_t t[4], sum;
        for (unsigned i = 0; i < per; i++)
            t[i] = (imm >> (4 + i) & 1) ? farith(&f, F_MUL, xi_el(a, lane * per + i, es),
                                                 xi_el(b, lane * per + i, es), es)
                                        : zero;
        if (per == 4)
            sum = farith(&f, F_ADD, farith(&f, F_ADD, t[0], t[1], es),
                         farith(&f, F_ADD, t[2], t[3], es), es);
        else
            sum = farith(&f, F_ADD, t[0], t[1], es);
        for (unsigned i = 0; i < per; i++)
            xi_set_el(r, lane * per + i, es, (imm >> i & 1) ? sum : 0);
    }
    if (fctx_done(&f) != 0)
        return;
    xi_vset(c, c->in.reg, r, c->vl);
}

/* Conversions between vectors of different element sizes.  kind:
 *   0 int32->f32  1 f32->int32  2 f32->int32 truncating
 *   3 f32->f64    4 f64->f32    5 int32->f64  6 f64->int32  7 f64->int32 trunc
 *   8 f32->uint32 9 f32->uint32 trunc 10 uint32->f32 11 uint32->f64
 *   12 f64->uint32 13 f64->uint32 trunc 14 int64->f64 15 int64->f32
 *   16 f64->int64 17 f64->int64 trunc 18 uint64->f64 19 uint64->f32
 *   20 f32->int64 21 f32->int64 trunc 22 f64->uint64 23 f64->uint64 trunc
 *   24 f32->uint64 25 f32->uint64 trunc 26 half->f32 */
static void cvt_vec(struct xi_ctx *c, unsigned kind)
{
    static const uint8_t in_es[27] = {4, 4, 4, 4, 8, 4, 8, 8, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8,
                                      4, 4, 8, 8, 4, 4, 2};
    static const uint8_t out_es[27] = {4, 4, 4, 8, 4, 8, 4, 4, 4, 4, 4, 8, 4, 4, 8, 4, 8, 8, 8, 4,
                                       8, 8, 8, 8, 8, 8, 4};
    unsigned ei = in_es[kind], eo = out_es[kind], nel, bytes_in;
    struct fctx f;
    uint8_t s[64], r[64];

    fctx_init(&f, c);
    if (f.sae)
        c->vl = 64;
    /* the wider side fills the vector */
    nel = c->vl / (ei > eo ? ei : eo);
    bytes_in = nel * ei;
    memset(s, 0, sizeof s);
    if (c->in.mod == 3)
        xi_vget(c, c->in.rm, s);
    else if (xi_src2(c, s, ei, bytes_in) != 0)
        return;
    memset(r, 0, sizeof r);
    uint64_t m = xi_mask(c, nel);
    for (unsigned i = 0; i < nel; i++) {
        uint64_t x = xi_el(s, i, ei), y;
        if (!(m >> i & 1))
            continue;
        switch (kind) {
        case 0: y = i2f(&f, x, 4, 1, 4); break;
        case 1: y = f2i(&f, x, 4, 4, 1, 0); break;
        case 2: y = f2i(&f, x, 4, 4, 1, 1); break;
        case 3: y = f2f(&f, x, 4, 8); break;
        case 4: y = f2f(&f, x, 8, 4); break;
        case 5: y = i2f(&f, x, 4, 1, 8); break;
        case 6: y = f2i(&f, x, 8, 4, 1, 0); break;
        case 7: y = f2i(&f, x, 8, 4, 1, 1); break;
        case 8: y = f2i(&f, x, 4, 4, 0, 0); break;
        case 9: y = f2i(&f, x, 4, 4, 0, 1); break;
        case 10: y = i2f(&f, x, 4, 0, 4); break;
        case 11: y = i2f(&f, x, 4, 0, 8); break;
        case 12: y = f2i(&f, x, 8, 4, 0, 0); break;
        case 13: y = f2i(&f, x, 8, 4, 0, 1); break;
        case 14: y = i2f(&f, x, 8, 1, 8); break;
        case 15: y = i2f(&f, x, 8, 1, 4); break;
        case 16: y = f2i(&f, x, 8, 8, 1, 0); break;
        case 17: y = f2i(&f, x, 8, 8, 1, 1); break;
        case 18: y = i2f(&f, x, 8, 0, 8); break;
        case 19: y = i2f(&f, x, 8, 0, 4); break;
        case 20: y = f2i(&f, x, 4, 8, 1, 0); break;
        case 21: y = f2i(&f, x, 4, 8, 1, 1); break;
        case 22: y = f2i(&f, x, 8, 8, 0, 0); break;
        case 23: y = f2i(&f, x, 8, 8, 0, 1); break;
        case 24: y = f2i(&f, x, 4, 8, 0, 0); break;
        case 25: y = f2i(&f, x, 4, 8, 0, 1); break;
        default: y = h2f(&f, x); break;
        }
        xi_set_el(r, i, eo, y);
    }
    if (fctx_done(&f) != 0)
        return;
    /* a narrowing conversion of a whole vector gives half a vector */
    c->vl = nel * eo < 16 ? 16 : nel * eo;
    xi_write_masked(c, c->in.reg, r, eo, nel);
}

/* vcvtps2ph: to a register or memory, rounding by imm. */
static void cvt_ps2ph(struct xi_ctx *c)
{
    struct fctx f;
    uint8_t s[64], r[64];
    unsigned nel = c->vl / 4;
    int rc;

    fctx_init(&f, c);
    rc = (c->in.imm & 4) ? f.rc : (int)(c->in.imm & 3);
    xi_vget(c, c->in.reg, s);
    memset(r, 0, sizeof r);
    for (unsigned i = 0; i < nel; i++)
        xi_set_el(r, i, 2, f2h(&f, xi_el(s, i, 4), rc));
    if (fctx_done(&f) != 0)
        return;
    if (c->in.mod == 3) {
        c->in.reg = c->in.rm;
        c->vl = nel * 2 < 16 ? 16 : nel * 2;
        xi_write_masked(c, c->in.reg, r, 2, nel);
        return;
    }
    xi_store(c, xi_ea(c, nel * 2), nel * 2, r);
}

/* Scalar conversions to and from general registers and between sizes. */
static void cvt_scalar(struct xi_ctx *c)
{
    struct fctx f;
    unsigned es = c->in.pp == 3 ? 8 : 4, ib = c->in.w ? 8 : 4;
    uint8_t b[64];
    uint64_t x;

    fctx_init(&f, c);
    switch (c->in.op) {
    case 0x2a: /* cvtsi2ss/sd: from r/m */
    case 0x7b: /* cvtusi2ss/sd */
        if (c->in.mod == 3) {
            x = xi_gpr(c, c->in.rm);
        } else {
            memset(b, 0, 8);
            if (xi_load(c, xi_ea(c, ib), ib, b) != 0)
                return;
            x = xi_el(b, 0, 8);
        }
        fwrite_scalar(&f, i2f(&f, x, ib, c->in.op == 0x2a, es), es);
        return;
    case 0x2c: case 0x2d: case 0x78: case 0x79: /* to a general register */
        if (xi_src2(c, b, es, es) != 0)
            return;
        x = f2i(&f, xi_el(b, 0, es), es, ib, c->in.op < 0x78, c->in.op == 0x2c || c->in.op == 0x78);
        if (fctx_done(&f) != 0)
            return;
        xi_set_gpr(c, c->in.reg, x, ib);
        return;
    default: /* 5a: cvtss2sd / cvtsd2ss */
        if (xi_src2(c, b, es, es) != 0)
            return;
        fwrite_scalar(&f, f2f(&f, xi_el(b, 0, es), es, es == 4 ? 8 : 4), es == 4 ? 8 : 4);
        return;
    }
}

/* roundps/pd/ss/sd and rndscale. */
static void round_insn(struct xi_ctx *c, int scalar, unsigned es)
{
    struct fctx f;
    uint8_t b[64], r[64];
    unsigned nel, imm = c->in.imm;

    fctx_init(&f, c);
    if (!c->evex)
        imm &= 15; /* VEX roundps has no scale */
    if (f.sae && !scalar)
        c->vl = 64;
    nel = scalar ? 1 : c->vl / es;
    if (xi_src2(c, b, es, scalar ? es : c->vl) != 0)
        return;
    if (scalar) {
        fwrite_scalar(&f, fround(&f, xi_el(b, 0, es), es, imm), es);
        return;
    }
    memset(r, 0, sizeof r);
    uint64_t m = xi_mask(c, nel);
    for (unsigned i = 0; i < nel; i++)
        if (m >> i & 1)
            xi_set_el(r, i, es, fround(&f, xi_el(b, i, es), es, imm));
    fwrite_vec(&f, r, es, nel);
}

int xi_float(struct xi_ctx *c)
{
    struct xi_insn *in = &c->in;
    unsigned pp = in->pp, es = pp_es(pp);
    int scalar = pp >= 2;

    if (in->map == 1) {
        switch (in->op) {
        case 0x51: arith(c, F_SQRT, scalar, es); return 1;
        case 0x52: arith(c, F_RSQRT, scalar, es); return 1;
        case 0x53: arith(c, F_RCP, scalar, es); return 1;
        case 0x58: arith(c, F_ADD, scalar, es); return 1;
        case 0x59: arith(c, F_MUL, scalar, es); return 1;
        case 0x5c: arith(c, F_SUB, scalar, es); return 1;
        case 0x5d: arith(c, F_MIN, scalar, es); return 1;
        case 0x5e: arith(c, F_DIV, scalar, es); return 1;
        case 0x5f: arith(c, F_MAX, scalar, es); return 1;
        case 0x5a:
            if (scalar)
                cvt_scalar(c);
            else
                cvt_vec(c, pp == 0 ? 3 : 4);
            return 1;
        case 0x5b:
            if (pp == 0)
                cvt_vec(c, in->w ? 15 : 0);
            else if (pp == 1)
                cvt_vec(c, 1);
            else if (pp == 2)
                cvt_vec(c, 2);
            else
                return 0;
            return 1;
        case 0xe6:
            if (pp == 1)
                cvt_vec(c, 7);
            else if (pp == 2)
                cvt_vec(c, in->w ? 14 : 5);
            else if (pp == 3)
                cvt_vec(c, 6);
            else
                return 0;
            return 1;
        case 0x2a: case 0x2c: case 0x2d:
            if (!scalar)
                return 0;
            cvt_scalar(c);
            return 1;
        case 0x2e: case 0x2f:
            if (pp > 1)
                return 0;
            comis(c, es, in->op == 0x2f);
            return 1;
        case 0xc2: cmp_insn(c, scalar, es); return 1;
        case 0x7c: case 0x7d:
            if (pp != 1 && pp != 3)
                return 0;
            horiz(c, in->op == 0x7d, pp == 1 ? 8 : 4);
            return 1;
        case 0xd0:
            if (pp != 1 && pp != 3)
                return 0;
            horiz(c, 2, pp == 1 ? 8 : 4);
            return 1;
        case 0x78: case 0x79: /* AVX-512: to unsigned */
            if (!c->evex)
                return 0;
            if (scalar)
                cvt_scalar(c);
            else if (pp == 0)
                cvt_vec(c, in->w ? (in->op == 0x78 ? 13 : 12) : (in->op == 0x78 ? 9 : 8));
            else
                cvt_vec(c, in->w ? (in->op == 0x78 ? 23 : 22) : (in->op == 0x78 ? 25 : 24));
            return 1;
        case 0x7a:
            if (!c->evex)
                return 0;
            if (pp == 2)
                cvt_vec(c, in->w ? 18 : 11);
            else if (pp == 3)
                cvt_vec(c, in->w ? 19 : 10);
            else if (pp == 1)
                cvt_vec(c, in->w ? 17 : 21);
            else
                return 0;
            return 1;
        case 0x7b:
            if (!c->evex)
                return 0;
            if (scalar)
                cvt_scalar(c);
            else if (pp == 1)
                cvt_vec(c, in->w ? 16 : 20);
            else
                return 0;
            return 1;
        default:
            return 0;
        }
    }
    if (in->map == 2 && pp == 1) {
        if (in->op >= 0x96 && in->op <= 0xbf && (in->op & 15) >= 6) {
            fma_insn(c);
            return 1;
        }
        switch (in->op) {
        case 0x13: cvt_vec(c, 26); return 1;
        case 0x2c: case 0x2d:
            if (!c->evex)
                return 0;
            arith(c, F_SCALEF, in->op == 0x2d, in->w ? 8 : 4);
            return 1;
        case 0x42: case 0x43:
            if (!c->evex)
                return 0;
            arith(c, F_GETEXP, in->op == 0x43, in->w ? 8 : 4);
            return 1;
        case 0x4c: case 0x4d: case 0x4e: case 0x4f:
            if (!c->evex)
                return 0;
            arith(c, in->op < 0x4e ? F_RCP : F_RSQRT, in->op & 1, in->w ? 8 : 4);
            return 1;
        default:
            return 0;
        }
    }
    if (in->map == 3 && pp == 1) {
        switch (in->op) {
        case 0x08: round_insn(c, 0, 4); return 1;
        case 0x09: round_insn(c, 0, 8); return 1;
        case 0x0a: round_insn(c, 1, 4); return 1;
        case 0x0b: round_insn(c, 1, 8); return 1;
        case 0x1d: cvt_ps2ph(c); return 1;
        case 0x40: dotp(c, 4); return 1;
        case 0x41: dotp(c, 8); return 1;
        default:
            return 0;
        }
    }
    return 0;
}
