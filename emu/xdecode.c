/*
 * xdecode.c - decode VEX and EVEX instructions (and rdrand/rdseed): their
 * length, register fields and memory operand.
 *
 * Capstone 4.0.2 measures most instructions, but not every AVX-512 one
 * (vpcmpud, vpopcntq, vaddps with embedded rounding are "undecodable"),
 * and a block whose instructions can't all be measured can't be counted.
 * These encodings have a regular shape (Intel SDM vol. 2, 2.3 and 2.7):
 *
 *   [legacy prefixes] C5 RvvvvLpp                       opcode ModRM ...
 *   [legacy prefixes] C4 RXBmmmmm WvvvvLpp              opcode ModRM ...
 *   [legacy prefixes] 62 RXBR'0mmm Wvvvv1pp zL'LbV'aaa  opcode ModRM ...
 *
 * then SIB, displacement and an imm8 (every opcode of map 0F3A, a few of
 * map 0F).  The EVEX displacement disp8 is scaled by the size of the
 * memory access, which depends on the instruction: the executor scales it
 * (xi_ea), this file only says that it is a disp8.
 */
#include <string.h>

#include "emu/xinsn.h"

/* Map 0F opcodes that take an imm8 (pshufd and shifts, cmpps, pinsrw,
 * pextrw, shufps). */
static int map1_imm(uint8_t op)
{
    return (op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 || op == 0xc5 || op == 0xc6;
}

/* Map 0F38 opcodes whose index register is a vector (gathers, scatters). */
static int vsib_op(uint8_t op)
{
    return (op >= 0x90 && op <= 0x93) || (op >= 0xa0 && op <= 0xa3) || op == 0xc6 || op == 0xc7;
}

/* ModRM, SIB, displacement from p; @return bytes used, 0 if cut short.
 * rx, rb, rv: the X, B and V' extension bits (already un-inverted). */
static unsigned modrm(const uint8_t *p, unsigned n, struct xi_insn *in, unsigned rx,
                      unsigned rb, unsigned rv, int evex)
{
    unsigned at = 1, rm;
    uint8_t m;

    if (n < 1)
        return 0;
    m = p[0];
    in->mod = m >> 6;
    in->regf = (m >> 3) & 7;
    rm = m & 7;
    in->base = in->index = -1;
    in->scale = 1;
    if (in->mod == 3) {
        in->rm = (uint8_t)(rm | rb << 3 | (evex ? rx << 4 : 0));
        return at;
    }
    if (rm == 4) {
        uint8_t sib;
        unsigned idx, base;
        if (n < 2)
            return 0;
        sib = p[1];
        at = 2;
        in->scale = (uint8_t)(1u << (sib >> 6));
        idx = ((sib >> 3) & 7) | rx << 3;
        base = sib & 7;
        if (in->map == 2 && vsib_op(in->op))
            in->index = (int8_t)(idx | rv << 4);
        else if (idx != 4)
            in->index = (int8_t)idx;
        if (base == 5 && in->mod == 0) {
            if (n < at + 4)
                return 0;
            in->disp = (int32_t)(p[at] | p[at + 1] << 8 | p[at + 2] << 16 | (uint32_t)p[at + 3] << 24);
            return at + 4;
        }
        in->base = (int8_t)(base | rb << 3);
    } else if (rm == 5 && in->mod == 0) {
        if (n < 5)
            return 0;
        in->riprel = 1;
        in->disp = (int32_t)(p[1] | p[2] << 8 | p[3] << 16 | (uint32_t)p[4] << 24);
        return 5;
    } else {
        in->base = (int8_t)(rm | rb << 3);
    }
    if (in->mod == 1) {
        if (n < at + 1)
            return 0;
        in->disp = (int8_t)p[at];
        in->disp8 = (uint8_t)evex;
        return at + 1;
    }
    if (in->mod == 2) {
        if (n < at + 4)
            return 0;
        in->disp = (int32_t)(p[at] | p[at + 1] << 8 | p[at + 2] << 16 | (uint32_t)p[at + 3] << 24);
        return at + 4;
    }
    return at;
}

unsigned xi_decode(const uint8_t *b, unsigned n, struct xi_insn *in)
{
    unsigned at = 0, used, rr = 0, rx = 0, rb = 0, rv = 0, r2 = 0;
    int legacy_bad = 0, rex = 0;

    memset(in, 0, sizeof *in);
    for (; at < n && at < 14; at++) {
        switch (b[at]) {
        case 0x26: case 0x2e: case 0x36: case 0x3e:
            continue;
        case 0x64: in->seg = 4; continue;
        case 0x65: in->seg = 5; continue;
        case 0x67: in->addr32 = 1; continue;
        case 0x66: in->opsize16 = 1; legacy_bad = 1; continue;
        case 0xf0: case 0xf2: case 0xf3: legacy_bad = 1; continue;
        default: break;
        }
        break;
    }
    if (at < n && (b[at] & 0xf0) == 0x40) {
        rex = b[at++];
        legacy_bad = 1;
    }
    if (at >= n)
        return 0;
    if (b[at] == 0x0f) {
        /* rdrand 0f c7 /6, rdseed 0f c7 /7, register form */
        if (at + 2 >= n || b[at + 1] != 0xc7 || b[at + 2] >> 6 != 3 ||
            ((b[at + 2] >> 3) & 7) < 6)
            return 0;
        in->kind = XI_RDRAND;
        in->map = 1;
        in->op = 0xc7;
        in->mod = 3;
        in->regf = (b[at + 2] >> 3) & 7;
        in->rm = (uint8_t)((b[at + 2] & 7) | (rex & 1) << 3);
        in->w = (uint8_t)((rex >> 3) & 1);
        in->len = (uint8_t)(at + 3);
        return in->len;
    }
    if (b[at] == 0xc5) {
        if (at + 2 >= n)
            return 0;
        in->kind = XI_VEX;
        rr = !(b[at + 1] & 0x80);
        in->vvvv = (~b[at + 1] >> 3) & 15;
        in->l = (b[at + 1] >> 2) & 1;
        in->pp = b[at + 1] & 3;
        in->map = 1;
        at += 2;
    } else if (b[at] == 0xc4) {
        if (at + 3 >= n)
            return 0;
        in->kind = XI_VEX;
        rr = !(b[at + 1] & 0x80);
        rx = !(b[at + 1] & 0x40);
        rb = !(b[at + 1] & 0x20);
        in->map = b[at + 1] & 0x1f;
        in->w = b[at + 2] >> 7;
        in->vvvv = (~b[at + 2] >> 3) & 15;
        in->l = (b[at + 2] >> 2) & 1;
        in->pp = b[at + 2] & 3;
        at += 3;
    } else if (b[at] == 0x62) {
        uint8_t p0, p1, p2;
        if (at + 4 >= n)
            return 0;
        p0 = b[at + 1], p1 = b[at + 2], p2 = b[at + 3];
        in->kind = XI_EVEX;
        rr = !(p0 & 0x80);
        rx = !(p0 & 0x40);
        rb = !(p0 & 0x20);
        r2 = !(p0 & 0x10);
        in->map = p0 & 7;
        in->w = p1 >> 7;
        in->vvvv = (~p1 >> 3) & 15;
        in->pp = p1 & 3;
        in->z = p2 >> 7;
        in->l = (p2 >> 5) & 3;
        in->b = (p2 >> 4) & 1;
        rv = !(p2 & 8);
        in->vvvv |= (uint8_t)(rv << 4);
        in->aaa = p2 & 7;
        if (!(p1 & 4) || (p0 & 8))
            legacy_bad = 1; /* fixed bits of the prefix are wrong: #UD */
        at += 4;
    } else {
        return 0;
    }
    if (in->map < 1 || in->map > 3)
        legacy_bad = 1; /* maps 5/6 (FP16) and reserved ones: not executed */
    in->op = b[at++];
    in->reg = 0;
    if (!(in->map == 1 && in->op == 0x77)) { /* vzeroupper/vzeroall: no ModRM */
        used = modrm(b + at, n - at, in, rx, rb, rv, in->kind == XI_EVEX);
        if (!used)
            return 0;
        in->reg = (uint8_t)(in->regf | rr << 3 | r2 << 4);
        at += used;
    }
    if (in->map == 3 || (in->map == 1 && map1_imm(in->op))) {
        if (at >= n)
            return 0;
        in->has_imm = 1;
        in->imm = b[at++];
    }
    if (at > 15)
        return 0;
    in->len = (uint8_t)at;
    /* A prefix that must not come before VEX/EVEX, or a reserved map: the
     * instruction raises #UD, which the executor reports (xi_ud). */
    if (legacy_bad)
        in->kind |= 0x80;
    return at;
}

int xi_is_site(const struct xi_insn *in)
{
    unsigned kind = in->kind & 0x7f;

    if (kind == XI_RDRAND || kind == XI_EVEX)
        return 1;
    if (kind != XI_VEX)
        return 0;
    /* BMI1/BMI2 on general registers: TCG runs them (andn, the blsr group,
     * bzhi/pext/pdep, mulx, bextr/shlx/sarx/shrx, rorx) */
    if (in->map == 2 && (in->op == 0xf2 || in->op == 0xf3 || in->op == 0xf5 ||
                         in->op == 0xf6 || in->op == 0xf7))
        return 0;
    if (in->map == 3 && in->op == 0xf0)
        return 0;
    return 1;
}
