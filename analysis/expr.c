/*
 * expr.c - expressions over registers and memory, for find's conditions
 * and printf's arguments (crec_expr_*).  A small recursive-descent parser,
 * C's precedence, into a tree evaluated at a callback's point.
 *
 *   expr   := or
 *   or     := and ('||' and)*          and := bor ('&&' bor)*
 *   bor    := bxor ('|' bxor)*         bxor := band ('^' band)*
 *   band   := eq ('&' eq)*             eq := rel (('=='|'!=') rel)*
 *   rel    := shift (('<'|'<='|'>'|'>=') shift)*
 *   shift  := sum (('<<'|'>>') sum)*   sum := prod (('+'|'-') prod)*
 *   prod   := unary (('*'|'/'|'%') unary)*
 *   unary  := ('-'|'!'|'~') unary | '*' '(' TYPE '*' ')' unary
 *           | '(' TYPE '*' ')' unary | '(' expr ')' | NUMBER | REGISTER | SYMBOL
 *
 * Comparisons are unsigned unless a side is a signed memory read (i8..i64,
 * int, long, char is signed as in C on x86-64).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

enum { E_NUM, E_REG, E_MEM, E_STR, E_BIN, E_UN };

struct crec_expr {
    int kind;
    int op;              /* E_BIN / E_UN: the operator (a char or a two-char code) */
    uint64_t num;        /* E_NUM */
    int reg;             /* E_REG */
    unsigned width, shift;
    unsigned size;       /* E_MEM: bytes */
    int is_signed;       /* E_MEM: sign-extended */
    struct crec_expr *a, *b;
};

struct parser {
    crec_symtab *sym;
    const char *s, *p;
    crec_error *err;
    int failed;
};

#define OP2(a, b) ((a) << 8 | (b))

static struct crec_expr *node(struct parser *ps, int kind)
{
    struct crec_expr *e = calloc(1, sizeof *e);

    if (!e && !ps->failed)
        ps->failed = an_error(ps->err, CREC_ERR_NOMEM, "out of memory");
    if (e)
        e->kind = kind;
    return e;
}

static void fail(struct parser *ps, const char *what)
{
    if (!ps->failed)
        ps->failed = an_error(ps->err, CREC_ERR_ARG, "bad expression '%s': %s at '%s'", ps->s,
                              what, *ps->p ? ps->p : "the end");
}

static void skip(struct parser *ps)
{
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

static int eat(struct parser *ps, const char *tok)
{
    size_t n = strlen(tok);

    skip(ps);
    if (strncmp(ps->p, tok, n) != 0)
        return 0;
    /* "<" must not eat the start of "<<" or "<=", nor "&" of "&&", ... */
    if (n == 1 && ps->p[1] && strchr("<>&|=", tok[0]) && (ps->p[1] == tok[0] || ps->p[1] == '='))
        return 0;
    ps->p += n;
    return 1;
}

/* A type name of a cast: its size and signedness.  @return 0 or -1. */
static int type_of(const char *t, size_t n, unsigned *size, int *is_signed)
{
    static const struct { const char *name; unsigned size; int is_signed; } types[] = {
        {"u8", 1, 0},  {"u16", 2, 0}, {"u32", 4, 0},  {"u64", 8, 0},  {"i8", 1, 1},
        {"i16", 2, 1}, {"i32", 4, 1}, {"i64", 8, 1},  {"char", 1, 1}, {"uchar", 1, 0},
        {"short", 2, 1}, {"ushort", 2, 0}, {"int", 4, 1}, {"uint", 4, 0}, {"long", 8, 1},
        {"ulong", 8, 0}, {"void", 1, 0},
    };

    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].name) == n && strncmp(types[i].name, t, n) == 0) {
            *size = types[i].size;
            *is_signed = types[i].is_signed;
            return 0;
        }
    return -1;
}

/* "(" TYPE "*" ")" at p?  @return 1 and consumes it. */
static int cast(struct parser *ps, unsigned *size, int *is_signed, int *is_char)
{
    const char *save = ps->p, *t;
    size_t n;

    if (!eat(ps, "("))
        return 0;
    skip(ps);
    t = ps->p;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    n = (size_t)(ps->p - t);
    if (n == 0 || type_of(t, n, size, is_signed) != 0 || !eat(ps, "*") || !eat(ps, ")")) {
        ps->p = save;
        return 0;
    }
    *is_char = n == 4 && strncmp(t, "char", 4) == 0;
    return 1;
}

static struct crec_expr *parse_or(struct parser *ps);

static struct crec_expr *unary(struct parser *ps)
{
    struct crec_expr *e;
    unsigned size;
    int is_signed, is_char;

    if (ps->failed)
        return NULL;
    skip(ps);
    if (*ps->p == '*') {
        ps->p++;
        if (!cast(ps, &size, &is_signed, &is_char)) {
            fail(ps, "a memory read needs a type, as *(u32*)ADDR");
            return NULL;
        }
        if (!(e = node(ps, E_MEM)))
            return NULL;
        e->size = size, e->is_signed = is_signed;
        e->a = unary(ps);
        return e;
    }
    if (*ps->p == '(' && cast(ps, &size, &is_signed, &is_char)) {
        if (!(e = node(ps, is_char ? E_STR : E_UN)))
            return NULL;
        e->op = '+'; /* a pointer cast: the value as it is */
        e->a = unary(ps);
        return e;
    }
    if (*ps->p == '-' || *ps->p == '!' || *ps->p == '~') {
        int op = *ps->p++;
        if (!(e = node(ps, E_UN)))
            return NULL;
        e->op = op;
        e->a = unary(ps);
        return e;
    }
    if (eat(ps, "(")) {
        e = parse_or(ps);
        if (!eat(ps, ")"))
            fail(ps, "')' expected");
        return e;
    }
    if (isdigit((unsigned char)*ps->p)) {
        char *end;
        if (!(e = node(ps, E_NUM)))
            return NULL;
        e->num = strtoull(ps->p, &end, 0);
        ps->p = end;
        return e;
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.') {
        const char *t = ps->p;
        char name[256];
        unsigned width, shift;
        int id;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.' || *ps->p == '@')
            ps->p++;
        if ((size_t)(ps->p - t) >= sizeof name) {
            fail(ps, "name too long");
            return NULL;
        }
        memcpy(name, t, (size_t)(ps->p - t));
        name[ps->p - t] = 0;
        if ((id = an_reg_id(name, strlen(name), &width, &shift)) >= 0) {
            if (!(e = node(ps, E_REG)))
                return NULL;
            e->reg = id, e->width = width, e->shift = shift;
            return e;
        }
        if (!(e = node(ps, E_NUM)))
            return NULL;
        int rc = crec_symtab_resolve(ps->sym, name, &e->num, ps->err);
        if (rc != CREC_OK && !ps->failed)
            ps->failed = rc;
        return e;
    }
    fail(ps, "a number, register, symbol or '(' expected");
    return NULL;
}

/* One level of left-associative binary operators. */
struct level {
    const char *ops[4];
    int codes[4];
};

static const struct level levels[] = {
    {{"||"}, {OP2('|', '|')}},
    {{"&&"}, {OP2('&', '&')}},
    {{"|"}, {'|'}},
    {{"^"}, {'^'}},
    {{"&"}, {'&'}},
    {{"==", "!="}, {OP2('=', '='), OP2('!', '=')}},
    {{"<=", ">=", "<", ">"}, {OP2('<', '='), OP2('>', '='), '<', '>'}},
    {{"<<", ">>"}, {OP2('<', '<'), OP2('>', '>')}},
    {{"+", "-"}, {'+', '-'}},
    {{"*", "/", "%"}, {'*', '/', '%'}},
};

static struct crec_expr *binary(struct parser *ps, size_t level)
{
    struct crec_expr *l;

    if (level == sizeof levels / sizeof levels[0])
        return unary(ps);
    l = binary(ps, level + 1);
    for (;;) {
        int op = 0;
        for (int i = 0; i < 4 && levels[level].ops[i] && !op; i++)
            if (eat(ps, levels[level].ops[i]))
                op = levels[level].codes[i];
        if (!op || ps->failed)
            return l;
        struct crec_expr *e = node(ps, E_BIN);
        if (!e)
            return l;
        e->op = op;
        e->a = l;
        e->b = binary(ps, level + 1);
        l = e;
    }
}

static struct crec_expr *parse_or(struct parser *ps)
{
    return binary(ps, 0);
}

int crec_expr_parse(crec_symtab *sym, const char *text, crec_expr **out, crec_error *err)
{
    struct parser ps = {sym, text, text, err, 0};
    crec_expr *e = parse_or(&ps);

    skip(&ps);
    if (!ps.failed && *ps.p)
        fail(&ps, "unexpected text");
    if (ps.failed || !e) {
        if (!ps.failed)
            fail(&ps, "empty");
        crec_expr_free(e);
        *out = NULL;
        return ps.failed;
    }
    *out = e;
    return CREC_OK;
}

void crec_expr_free(crec_expr *e)
{
    if (!e)
        return;
    crec_expr_free(e->a);
    crec_expr_free(e->b);
    free(e);
}

int crec_expr_uses_registers(const crec_expr *e)
{
    return e && (e->kind == E_REG || crec_expr_uses_registers(e->a) ||
                 crec_expr_uses_registers(e->b));
}

static int count_mem(const crec_expr *e, const crec_expr **one)
{
    if (!e)
        return 0;
    if (e->kind == E_MEM)
        *one = e;
    return (e->kind == E_MEM) + count_mem(e->a, one) + count_mem(e->b, one);
}

int crec_expr_memory(const crec_expr *e, crec_range *r)
{
    const crec_expr *m = NULL;
    uint64_t addr;
    int known;

    if (crec_expr_uses_registers(e) || count_mem(e, &m) != 1 || count_mem(m->a, &m) != 0)
        return 0;
    /* the address has no register and no memory read: a constant */
    if (an_expr_value(m->a, NULL, &addr, &known) != CREC_OK || !known)
        return 0;
    r->addr = addr;
    r->len = m->size;
    return 1;
}

static uint64_t sign_extend(uint64_t v, unsigned bytes)
{
    unsigned bits = 8 * bytes;

    if (bits >= 64)
        return v;
    v &= (1ull << bits) - 1;
    return v & 1ull << (bits - 1) ? v | ~((1ull << bits) - 1) : v;
}

/* Is this a signed value (compared as such)? */
static int is_signed_expr(const crec_expr *e)
{
    return e->kind == E_MEM ? e->is_signed
           : e->kind == E_UN && e->op == '-' ? 1
           : e->kind == E_BIN && (e->op == '+' || e->op == '-' || e->op == '*')
               ? is_signed_expr(e->a) || is_signed_expr(e->b)
               : 0;
}

int an_expr_value(const crec_expr *e, const struct an_source *src, uint64_t *v, int *known)
{
    uint64_t a = 0, b = 0;
    int ka = 1, kb = 1, rc;

    *known = 1;
    switch (e->kind) {
    case E_NUM:
        *v = e->num;
        return CREC_OK;
    case E_REG:
        if (!src)
            return CREC_ERR_ARG;
        a = src->reg(src->ctx, e->reg) >> e->shift;
        *v = e->width == 64 ? a : a & ((1ull << e->width) - 1);
        return CREC_OK;
    case E_MEM: {
        uint8_t buf[8], k[8];
        if ((rc = an_expr_value(e->a, src, &a, &ka)) != CREC_OK)
            return rc;
        if (!src)
            return CREC_ERR_ARG;
        if ((rc = src->read(src->ctx, a, e->size, buf, k, src->err)) != CREC_OK)
            return rc;
        *v = 0;
        for (unsigned i = e->size; i-- > 0;) {
            *v = *v << 8 | buf[i];
            *known &= k[i] != 0;
        }
        *known &= ka;
        if (e->is_signed)
            *v = sign_extend(*v, e->size);
        return CREC_OK;
    }
    case E_STR:
        return an_expr_value(e->a, src, v, known);
    }
    if ((rc = an_expr_value(e->a, src, &a, &ka)) != CREC_OK)
        return rc;
    if (e->kind == E_UN) {
        *known = ka;
        *v = e->op == '-' ? -a : e->op == '!' ? !a : e->op == '~' ? ~a : a;
        return CREC_OK;
    }
    /* && and || need the right side only when the left does not decide */
    if (e->op == OP2('&', '&') && ka && !a) {
        *v = 0;
        return CREC_OK;
    }
    if (e->op == OP2('|', '|') && ka && a) {
        *v = 1;
        return CREC_OK;
    }
    if ((rc = an_expr_value(e->b, src, &b, &kb)) != CREC_OK)
        return rc;
    *known = ka && kb;
    int sgn = is_signed_expr(e->a) || is_signed_expr(e->b);
    switch (e->op) {
    case '+': *v = a + b; break;
    case '-': *v = a - b; break;
    case '*': *v = a * b; break;
    case '/': *v = b ? (sgn ? (uint64_t)((int64_t)a / (int64_t)b) : a / b) : 0; break;
    case '%': *v = b ? (sgn ? (uint64_t)((int64_t)a % (int64_t)b) : a % b) : 0; break;
    case '&': *v = a & b; break;
    case '|': *v = a | b; break;
    case '^': *v = a ^ b; break;
    case OP2('<', '<'): *v = b < 64 ? a << b : 0; break;
    case OP2('>', '>'): *v = b < 64 ? a >> b : 0; break;
    case OP2('&', '&'): *v = a && b; break;
    case OP2('|', '|'): *v = a || b; break;
    case OP2('=', '='): *v = a == b; break;
    case OP2('!', '='): *v = a != b; break;
    case '<': *v = sgn ? (int64_t)a < (int64_t)b : a < b; break;
    case '>': *v = sgn ? (int64_t)a > (int64_t)b : a > b; break;
    case OP2('<', '='): *v = sgn ? (int64_t)a <= (int64_t)b : a <= b; break;
    case OP2('>', '='): *v = sgn ? (int64_t)a >= (int64_t)b : a >= b; break;
    default: *v = 0; break;
    }
    return CREC_OK;
}

int an_expr_is_string(const crec_expr *e)
{
    return e->kind == E_STR;
}

/* ---- at a callback's point -------------------------------------------------- */

static uint64_t exec_reg(void *ctx, int id)
{
    return crec_exec_reg(ctx, id);
}

static int exec_read(void *ctx, uint64_t addr, size_t len, uint8_t *buf, uint8_t *known,
                     crec_error *err)
{
    return crec_exec_read(ctx, addr, len, buf, known, err);
}

int crec_expr_eval(const crec_expr *e, crec_exec *x, uint64_t *value, int *known,
                   crec_error *err)
{
    struct an_source src = {x, exec_reg, exec_read, err};

    return an_expr_value(e, &src, value, known);
}

/* ---- registers ------------------------------------------------------------------ */

int an_reg_id(const char *name, size_t len, unsigned *width, unsigned *shift)
{
    static const char *const r64[] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi"};
    static const char *const r32[] = {"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"};
    static const char *const r16[] = {"ax", "cx", "dx", "bx", "sp", "bp", "si", "di"};
    static const char *const r8[] = {"al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil"};
    static const char *const r8h[] = {"ah", "ch", "dh", "bh"};
    char n[8];

    if (len == 0 || len >= sizeof n)
        return -1;
    memcpy(n, name, len);
    n[len] = 0;
    *shift = 0;
    for (int i = 0; i < 8; i++) {
        if (!strcmp(n, r64[i]))
            return *width = 64, i;
        if (!strcmp(n, r32[i]))
            return *width = 32, i;
        if (!strcmp(n, r16[i]))
            return *width = 16, i;
        if (!strcmp(n, r8[i]))
            return *width = 8, i;
        if (i < 4 && !strcmp(n, r8h[i]))
            return *width = 8, *shift = 8, i;
    }
    if (n[0] == 'r' && n[1] >= '0' && n[1] <= '9') {
        char *end;
        long k = strtol(n + 1, &end, 10);
        if (k < 8 || k > 15)
            return -1;
        *width = !*end ? 64 : !strcmp(end, "d") ? 32 : !strcmp(end, "w") ? 16
                 : !strcmp(end, "b") ? 8 : 0;
        return *width ? (int)k : -1;
    }
    *width = 64;
    if (!strcmp(n, "rip"))
        return CREC_REG_RIP;
    if (!strcmp(n, "rflags") || !strcmp(n, "eflags"))
        return CREC_REG_RFLAGS;
    if (!strcmp(n, "fs_base"))
        return CREC_REG_FS_BASE;
    if (!strcmp(n, "gs_base"))
        return CREC_REG_GS_BASE;
    return -1;
}
