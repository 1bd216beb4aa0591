/*
 * tdesc.c - the registers gdb sees: their numbers, sizes and values, and
 * the target description (target.xml) that names them.
 *
 * One table below gives both the XML and the `g`/`p` encoding, so the two
 * can't disagree.  The order is gdb's for amd64 GNU/Linux: the features
 * org.gnu.gdb.i386.core, .sse, .linux, .segments, then .avx when the
 * recording's CPUID showed AVX (gdb numbers the registers in document
 * order: rip 16, eflags 17, xmm0 40, orig_rax 57, fs_base 58, ymm0h 60).
 * What crec does not record (segment selectors, the x87 pointers and
 * opcode, orig_rax, the upper halves of the ymm registers) is sent as
 * unavailable ("xx..."), never made up.
 */
#include <stdlib.h>
#include <string.h>

#include "gdb/gdb_int.h"

/* Where a register's value comes from in crec_regs. */
enum src {
    S_NONE,   /* not recorded: unavailable */
    S_GPR,    /* gpr[n] */
    S_RIP,
    S_FLAGS,  /* low 32 bits of rflags */
    S_FSBASE,
    S_GSBASE,
    S_ST,     /* st[n] */
    S_FPCW,
    S_FPSW,
    S_FPTAG,
    S_XMM,    /* xmm[n] */
    S_MXCSR,
};

struct reg {
    const char *name;
    int bits;
    const char *type;
    const char *group; /* NULL: gdb's default */
    int src, n;
};

#define GPR(name, type, n) {name, 64, type, NULL, S_GPR, n}
#define ST(i) {"st" #i, 80, "i387_ext", NULL, S_ST, i}
#define XMM(i) {"xmm" #i, 128, "vec128", NULL, S_XMM, i}
#define YMMH(i) {"ymm" #i "h", 128, "uint128", NULL, S_NONE, 0}

static const struct reg regs[GDB_NREGS_AVX] = {
    /* org.gnu.gdb.i386.core: gdb's order, not the x86 encoding's */
    GPR("rax", "int64", CREC_RAX), GPR("rbx", "int64", CREC_RBX),
    GPR("rcx", "int64", CREC_RCX), GPR("rdx", "int64", CREC_RDX),
    GPR("rsi", "int64", CREC_RSI), GPR("rdi", "int64", CREC_RDI),
    GPR("rbp", "data_ptr", CREC_RBP), GPR("rsp", "data_ptr", CREC_RSP),
    GPR("r8", "int64", CREC_R8), GPR("r9", "int64", CREC_R9),
    GPR("r10", "int64", CREC_R10), GPR("r11", "int64", CREC_R11),
    GPR("r12", "int64", CREC_R12), GPR("r13", "int64", CREC_R13),
    GPR("r14", "int64", CREC_R14), GPR("r15", "int64", CREC_R15),
    {"rip", 64, "code_ptr", NULL, S_RIP, 0},
    {"eflags", 32, "i386_eflags", NULL, S_FLAGS, 0},
    {"cs", 32, "int32", NULL, S_NONE, 0}, {"ss", 32, "int32", NULL, S_NONE, 0},
    {"ds", 32, "int32", NULL, S_NONE, 0}, {"es", 32, "int32", NULL, S_NONE, 0},
    {"fs", 32, "int32", NULL, S_NONE, 0}, {"gs", 32, "int32", NULL, S_NONE, 0},
    ST(0), ST(1), ST(2), ST(3), ST(4), ST(5), ST(6), ST(7),
    {"fctrl", 32, "int", "float", S_FPCW, 0},
    {"fstat", 32, "int", "float", S_FPSW, 0},
    {"ftag", 32, "int", "float", S_FPTAG, 0},
    {"fiseg", 32, "int", "float", S_NONE, 0}, {"fioff", 32, "int", "float", S_NONE, 0},
    {"foseg", 32, "int", "float", S_NONE, 0}, {"fooff", 32, "int", "float", S_NONE, 0},
    {"fop", 32, "int", "float", S_NONE, 0},
    /* org.gnu.gdb.i386.sse */
    XMM(0), XMM(1), XMM(2), XMM(3), XMM(4), XMM(5), XMM(6), XMM(7),
    XMM(8), XMM(9), XMM(10), XMM(11), XMM(12), XMM(13), XMM(14), XMM(15),
    {"mxcsr", 32, "i386_mxcsr", "vector", S_MXCSR, 0},
    /* org.gnu.gdb.i386.linux */
    {"orig_rax", 64, "int", NULL, S_NONE, 0},
    /* org.gnu.gdb.i386.segments */
    {"fs_base", 64, "int", NULL, S_FSBASE, 0},
    {"gs_base", 64, "int", NULL, S_GSBASE, 0},
    /* org.gnu.gdb.i386.avx */
    YMMH(0), YMMH(1), YMMH(2), YMMH(3), YMMH(4), YMMH(5), YMMH(6), YMMH(7),
    YMMH(8), YMMH(9), YMMH(10), YMMH(11), YMMH(12), YMMH(13), YMMH(14), YMMH(15),
};

/* The features, each a range of the table and the types it defines. */
struct feature {
    const char *name;
    int first, end;
    const char *types;
};

static const char eflags_type[] =
    "<flags id=\"i386_eflags\" size=\"4\">"
    "<field name=\"CF\" start=\"0\" end=\"0\"/><field name=\"\" start=\"1\" end=\"1\"/>"
    "<field name=\"PF\" start=\"2\" end=\"2\"/><field name=\"AF\" start=\"4\" end=\"4\"/>"
    "<field name=\"ZF\" start=\"6\" end=\"6\"/><field name=\"SF\" start=\"7\" end=\"7\"/>"
    "<field name=\"TF\" start=\"8\" end=\"8\"/><field name=\"IF\" start=\"9\" end=\"9\"/>"
    "<field name=\"DF\" start=\"10\" end=\"10\"/><field name=\"OF\" start=\"11\" end=\"11\"/>"
    "<field name=\"NT\" start=\"14\" end=\"14\"/><field name=\"RF\" start=\"16\" end=\"16\"/>"
    "<field name=\"VM\" start=\"17\" end=\"17\"/><field name=\"AC\" start=\"18\" end=\"18\"/>"
    "<field name=\"VIF\" start=\"19\" end=\"19\"/><field name=\"VIP\" start=\"20\" end=\"20\"/>"
    "<field name=\"ID\" start=\"21\" end=\"21\"/></flags>\n";

static const char sse_types[] =
    "<vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>"
    "<vector id=\"v2d\" type=\"ieee_double\" count=\"2\"/>"
    "<vector id=\"v16i8\" type=\"int8\" count=\"16\"/>"
    "<vector id=\"v8i16\" type=\"int16\" count=\"8\"/>"
    "<vector id=\"v4i32\" type=\"int32\" count=\"4\"/>"
    "<vector id=\"v2i64\" type=\"int64\" count=\"2\"/>\n"
    "<union id=\"vec128\"><field name=\"v4_float\" type=\"v4f\"/>"
    "<field name=\"v2_double\" type=\"v2d\"/><field name=\"v16_int8\" type=\"v16i8\"/>"
    "<field name=\"v8_int16\" type=\"v8i16\"/><field name=\"v4_int32\" type=\"v4i32\"/>"
    "<field name=\"v2_int64\" type=\"v2i64\"/><field name=\"uint128\" type=\"uint128\"/>"
    "</union>\n"
    "<flags id=\"i386_mxcsr\" size=\"4\">"
    "<field name=\"IE\" start=\"0\" end=\"0\"/><field name=\"DE\" start=\"1\" end=\"1\"/>"
    "<field name=\"ZE\" start=\"2\" end=\"2\"/><field name=\"OE\" start=\"3\" end=\"3\"/>"
    "<field name=\"UE\" start=\"4\" end=\"4\"/><field name=\"PE\" start=\"5\" end=\"5\"/>"
    "<field name=\"DAZ\" start=\"6\" end=\"6\"/><field name=\"IM\" start=\"7\" end=\"7\"/>"
    "<field name=\"DM\" start=\"8\" end=\"8\"/><field name=\"ZM\" start=\"9\" end=\"9\"/>"
    "<field name=\"OM\" start=\"10\" end=\"10\"/><field name=\"UM\" start=\"11\" end=\"11\"/>"
    "<field name=\"PM\" start=\"12\" end=\"12\"/><field name=\"FZ\" start=\"15\" end=\"15\"/>"
    "</flags>\n";

static const struct feature features[] = {
    {"org.gnu.gdb.i386.core", 0, GDB_REG_XMM0, eflags_type},
    {"org.gnu.gdb.i386.sse", GDB_REG_XMM0, GDB_REG_ORIG_RAX, sse_types},
    {"org.gnu.gdb.i386.linux", GDB_REG_ORIG_RAX, GDB_REG_FS_BASE, ""},
    {"org.gnu.gdb.i386.segments", GDB_REG_FS_BASE, GDB_REG_YMM0H, ""},
    {"org.gnu.gdb.i386.avx", GDB_REG_YMM0H, GDB_NREGS_AVX, ""},
};

/* A growing string; `nomem` once an append failed. */
struct str {
    char *s;
    size_t len, cap;
    int nomem;
};

static void put(struct str *b, const char *s)
{
    size_t n = strlen(s);

    if (b->nomem)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->nomem = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

char *gdb_tdesc_xml(int avx)
{
    struct str b = {0};
    char line[256];

    put(&b, "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
            "<target version=\"1.0\">\n<architecture>i386:x86-64</architecture>\n"
            "<osabi>GNU/Linux</osabi>\n");
    for (size_t f = 0; f < sizeof features / sizeof features[0]; f++) {
        if (features[f].first >= GDB_NREGS && !avx)
            break;
        snprintf(line, sizeof line, "<feature name=\"%s\">\n", features[f].name);
        put(&b, line);
        put(&b, features[f].types);
        for (int i = features[f].first; i < features[f].end; i++) {
            /* regnum on the first of each feature: no doubt about numbering */
            snprintf(line, sizeof line, "<reg name=\"%s\" bitsize=\"%d\" type=\"%s\" regnum=\"%d\"%s%s%s/>\n",
                     regs[i].name, regs[i].bits, regs[i].type, i,
                     regs[i].group ? " group=\"" : "", regs[i].group ? regs[i].group : "",
                     regs[i].group ? "\"" : "");
            put(&b, line);
        }
        put(&b, "</feature>\n");
    }
    put(&b, "</target>\n");
    if (b.nomem) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

size_t gdb_reg_size(int n, int avx)
{
    if (n < 0 || n >= (avx ? GDB_NREGS_AVX : GDB_NREGS))
        return 0;
    return (size_t)regs[n].bits / 8;
}

static void le(uint64_t v, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * i));
}

int gdb_reg_value(const crec_regs *r, int n, int avx, uint8_t *out)
{
    size_t size = gdb_reg_size(n, avx);
    const struct reg *g;

    if (size == 0)
        return -1;
    g = &regs[n];
    switch (g->src) {
    case S_GPR: le(r->gpr[g->n], 8, out); return 1;
    case S_RIP: le(r->rip, 8, out); return 1;
    case S_FLAGS: le(r->rflags, 4, out); return 1;
    case S_FSBASE: le(r->fs_base, 8, out); return 1;
    case S_GSBASE: le(r->gs_base, 8, out); return 1;
    case S_ST: memcpy(out, r->st[g->n], 10); return 1;
    case S_FPCW: le(r->fpcw, 4, out); return 1;
    case S_FPSW: le(r->fpsw, 4, out); return 1;
    case S_FPTAG: le(r->fptag, 4, out); return 1;
    case S_XMM: memcpy(out, r->xmm[g->n], 16); return 1;
    case S_MXCSR: le(r->mxcsr, 4, out); return 1;
    default: memset(out, 0, size); return 0;
    }
}
