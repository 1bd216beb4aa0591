/*
 * printf.c - retroactive printf (`crec printf`), a trace statement added
 * after the run, like gdb's dprintf.
 *
 * As economizing-trace-operations prescribes, formatting is kept off the
 * path that gathers: a hit captures only raw values (a number per
 * argument, the bytes of each %s string) and crec_printf_format turns a
 * hit into text when its reader asks for it.  The recording itself never
 * formatted anything: the values are read from the replay.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

#define PF_STRING_MAX 4096

/* One piece of the format: literal text, or a conversion of one argument. */
struct piece {
    const char *text;    /* into the format copy */
    size_t len;
    char spec[32];       /* a conversion: its C spec with the length fixed ("%-8lld") */
    char conv;           /* d i u x X o c s p, or 0 for text */
    size_t arg;
};

struct crec_printf {
    char *format;
    struct piece *pieces;
    size_t npieces;
    crec_expr **args;
    size_t nargs;
    uint64_t where;
};

struct crec_printf_hit {
    uint64_t t;
    uint32_t tid;
    uint64_t *v;         /* each argument's value */
    int *known;
    char **str;          /* %s arguments: the bytes, NUL-terminated (NULL: unreadable) */
};

void crec_printf_free(crec_printf *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nargs; i++)
        crec_expr_free(p->args[i]);
    free(p->args);
    free(p->pieces);
    free(p->format);
    free(p);
}

static int add_piece(crec_printf *p, const struct piece *pc)
{
    struct piece *g = realloc(p->pieces, (p->npieces + 1) * sizeof *g);

    if (!g)
        return -1;
    p->pieces = g;
    p->pieces[p->npieces++] = *pc;
    return 0;
}

/* Parse one conversion at f ('%' there).  @return its length, or 0 if bad. */
static size_t conversion(const char *f, struct piece *pc)
{
    const char *s = f + 1;
    size_t n;

    while (*s && strchr("-+ #0", *s))
        s++;
    while (*s >= '0' && *s <= '9')
        s++;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            ;
    n = (size_t)(s - f);
    /* length modifiers are read and dropped: the value is 64 bits; the
     * conversion says how much of it the program's printf would show */
    char len = 0;
    if (*s == 'h') {
        len = 'h';
        if (*++s == 'h')
            len = 'H', s++;
    } else if (*s == 'l') {
        len = 'l';
        if (*++s == 'l')
            s++;
    } else if (*s == 'z' || *s == 'j' || *s == 't') {
        len = 'l';
        s++;
    }
    if (!*s || !strchr("diuxXocsp", *s) || n + 4 > sizeof pc->spec)
        return 0;
    memcpy(pc->spec, f, n);
    pc->conv = *s;
    if (strchr("diuxXo", *s)) { /* always printed as a long long of the right width */
        pc->spec[n++] = 'l', pc->spec[n++] = 'l';
        pc->spec[n++] = len == 'H' ? 'H' : len == 'h' ? 'h' : len == 'l' ? 'L' : 'I';
    }
    pc->spec[n] = 0;
    return (size_t)(s + 1 - f);
}

/* s as an error message shows it: on one line, its control characters
 * written back as the escapes they came from (\n, \t, \xHH). */
static const char *shown(const char *s, char *buf, size_t size)
{
    size_t n = 0;

    for (; *s && n + 5 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n' || c == '\t')
            buf[n++] = '\\', buf[n++] = c == '\n' ? 'n' : 't';
        else if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
        else
            buf[n++] = (char)c;
    }
    buf[n] = 0;
    return buf;
}

int crec_printf_parse(crec_symtab *sym, const char *location, const char *format,
                      char *const *args, size_t nargs, crec_printf **out, crec_error *err)
{
    crec_printf *p = calloc(1, sizeof *p);
    size_t used = 0;
    char fbuf[160], abuf[160];
    int rc;

    *out = NULL;
    if (!p || !(p->format = strdup(format)) || !(p->args = calloc(nargs ? nargs : 1,
                                                                  sizeof *p->args))) {
        crec_printf_free(p);
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    }
    if ((rc = crec_symtab_resolve(sym, location, &p->where, err)) != CREC_OK)
        goto bad;
    for (const char *f = p->format; *f;) {
        struct piece pc = {0};
        if (*f != '%' || f[1] == '%') {
            pc.text = f;
            pc.len = *f == '%' ? 1 : strcspn(f, "%");
            f += *f == '%' ? 2 : pc.len;
        } else {
            size_t n = conversion(f, &pc);
            if (!n) {
                rc = an_error(err, CREC_ERR_ARG, "format '%s': a conversion crec does not know "
                              "at '%s' (d i u x X o c s p, with flags, width, precision)",
                              shown(format, fbuf, sizeof fbuf), shown(f, abuf, sizeof abuf));
                goto bad;
            }
            if (used == nargs) {
                rc = an_error(err, CREC_ERR_ARG, "format '%s' has more conversions than the %zu "
                              "argument%s given", shown(format, fbuf, sizeof fbuf), nargs,
                              nargs == 1 ? "" : "s");
                goto bad;
            }
            pc.arg = used++;
            f += n;
        }
        if (add_piece(p, &pc) != 0) {
            rc = an_error(err, CREC_ERR_NOMEM, "out of memory");
            goto bad;
        }
    }
    if (used != nargs) {
        rc = an_error(err, CREC_ERR_ARG, "format '%s' has %zu conversions for %zu arguments",
                      shown(format, fbuf, sizeof fbuf), used, nargs);
        goto bad;
    }
    for (size_t i = 0; i < nargs; i++) {
        if ((rc = crec_expr_parse(sym, args[i], &p->args[i], err)) != CREC_OK)
            goto bad;
        p->nargs++;
    }
    *out = p;
    return CREC_OK;
bad:
    crec_printf_free(p);
    return rc;
}

/* ---- gathering ---------------------------------------------------------------- */

struct pf_run {
    const crec_printf *p;
    crec_printf_hit h;
    int (*fn)(void *ctx, const crec_printf_hit *h);
    void *ctx;
    crec_error err;
    int failed;
    int is_string[64];
};

/* The NUL-terminated string at addr, as the replay holds it then. */
static char *read_string(crec_exec *x, uint64_t addr)
{
    char *s = malloc(PF_STRING_MAX + 1);
    size_t n = 0;

    if (!s)
        return NULL;
    while (n < PF_STRING_MAX) {
        uint8_t chunk[64], known[64];
        size_t want = 64 - (size_t)((addr + n) % 64); /* never past the line */
        if (crec_exec_read(x, addr + n, want, chunk, known, NULL) != CREC_OK)
            break;
        for (size_t i = 0; i < want && n < PF_STRING_MAX; i++) {
            if (!known[i] || chunk[i] == 0) {
                s[n] = 0;
                return s;
            }
            s[n++] = (char)chunk[i];
        }
    }
    s[n] = 0;
    if (n == 0) {
        free(s);
        return NULL;
    }
    return s;
}

static int on_hit(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    struct pf_run *r = ctx;
    int stop;

    (void)rip;
    r->h.t = t;
    r->h.tid = tid;
    for (size_t i = 0; i < r->p->nargs; i++) {
        r->h.str[i] = NULL;
        if (crec_expr_eval(r->p->args[i], x, &r->h.v[i], &r->h.known[i], &r->err) != CREC_OK) {
            r->h.known[i] = 0; /* a pointer that was never mapped: shown as ?? */
            continue;
        }
        if (r->is_string[i] && r->h.known[i])
            r->h.str[i] = read_string(x, r->h.v[i]);
    }
    stop = r->fn(r->ctx, &r->h);
    for (size_t i = 0; i < r->p->nargs; i++)
        free(r->h.str[i]);
    return stop;
}

int crec_printf_run(crec_recording *rec, const crec_printf *p, uint64_t from, uint64_t to,
                    uint32_t tid, int (*fn)(void *ctx, const crec_printf_hit *h), void *ctx,
                    crec_error *err)
{
    struct pf_run r = {p, {0}, fn, ctx, {0}, 0, {0}};
    crec_observer o = {.ctx = &r, .flags = CREC_EXEC_READS_MEMORY, .tid = tid, .insn = on_hit,
                       .addrs = &p->where, .n_addrs = 1};
    size_t n = p->nargs ? p->nargs : 1;
    int rc;

    if (p->nargs > 64)
        return an_error(err, CREC_ERR_ARG, "at most 64 arguments");
    r.h.v = calloc(n, sizeof *r.h.v);
    r.h.known = calloc(n, sizeof *r.h.known);
    r.h.str = calloc(n, sizeof *r.h.str);
    if (!r.h.v || !r.h.known || !r.h.str)
        rc = an_error(err, CREC_ERR_NOMEM, "out of memory");
    else {
        for (size_t i = 0; i < p->npieces; i++)
            if (p->pieces[i].conv == 's')
                r.is_string[p->pieces[i].arg] = 1;
        rc = crec_exec_run(rec, from, to, &o, NULL, err);
    }
    free(r.h.v);
    free(r.h.known);
    free(r.h.str);
    return rc;
}

uint64_t crec_printf_hit_time(const crec_printf_hit *h, uint32_t *tid)
{
    if (tid)
        *tid = h->tid;
    return h->t;
}

/* ---- formatting, when it is read ------------------------------------------------ */

static size_t put(char *out, size_t size, size_t at, const char *s, size_t n)
{
    if (at < size) {
        size_t k = size - at - 1 < n ? size - at - 1 : n;
        memcpy(out + at, s, k);
        out[at + k] = 0;
    }
    return at + n;
}

size_t crec_printf_format(const crec_printf *p, const crec_printf_hit *h, char *out,
                          size_t size)
{
    size_t at = 0;

    if (size)
        out[0] = 0;
    for (size_t i = 0; i < p->npieces; i++) {
        const struct piece *pc = &p->pieces[i];
        char spec[40], buf[PF_STRING_MAX + 128];
        uint64_t v = h->v[pc->arg];
        size_t n = strlen(pc->spec);
        int len;
        if (!pc->conv) {
            at = put(out, size, at, pc->text, pc->len);
            continue;
        }
        if (!h->known[pc->arg] || (pc->conv == 's' && !h->str[pc->arg])) {
            at = put(out, size, at, "??", 2);
            continue;
        }
        memcpy(spec, pc->spec, n + 1);
        if (strchr("diuxXo", pc->conv)) {
            char w = spec[n - 1]; /* the width mark conversion() left */
            int sgn = pc->conv == 'd' || pc->conv == 'i';
            spec[n - 1] = pc->conv;
            if (w == 'H')
                v = sgn ? (uint64_t)(int64_t)(int8_t)v : (uint8_t)v;
            else if (w == 'h')
                v = sgn ? (uint64_t)(int64_t)(int16_t)v : (uint16_t)v;
            else if (w == 'I')
                v = sgn ? (uint64_t)(int64_t)(int32_t)v : (uint32_t)v;
            len = sgn ? snprintf(buf, sizeof buf, spec, (long long)v)
                      : snprintf(buf, sizeof buf, spec, (unsigned long long)v);
        } else {
            spec[n] = pc->conv, spec[n + 1] = 0;
            len = pc->conv == 'c'   ? snprintf(buf, sizeof buf, spec, (int)(unsigned char)v)
                  : pc->conv == 's' ? snprintf(buf, sizeof buf, spec, h->str[pc->arg])
                                    : snprintf(buf, sizeof buf, spec, (void *)(uintptr_t)v);
        }
        if (len > 0)
            at = put(out, size, at, buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
    }
    return at;
}
