/*
 * strace.c - `crec run --strace`: one line per syscall, as strace(1)
 * prints it: name(args) = result, with paths and short buffers quoted.
 */
#include <string.h>

#include "emu/emu_int.h"

#define SHOW_MAX 32 /* bytes of a buffer shown, like strace -s 32 */

static void put_quoted(FILE *f, const unsigned char *p, size_t n, int more)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned c = p[i];
        if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c >= 32 && c < 127) fputc((int)c, f);
        else fprintf(f, "\\%o", c);
    }
    fputc('"', f);
    if (more)
        fputs("...", f);
}

static void put_buffer(crec_emu *e, uint64_t addr, int64_t len)
{
    unsigned char buf[SHOW_MAX];
    size_t n;

    if (len < 0) {
        fprintf(e->log, "0x%llx", (unsigned long long)addr);
        return;
    }
    n = (uint64_t)len < SHOW_MAX ? (size_t)len : SHOW_MAX;
    if (crec_emu_mem_read(e->cpu, buf, addr, n) != 0) {
        fprintf(e->log, "0x%llx", (unsigned long long)addr);
        return;
    }
    put_quoted(e->log, buf, n, (uint64_t)len > n);
}

static void put_string(crec_emu *e, uint64_t addr)
{
    char buf[256];
    long n;

    if (addr == 0) {
        fputs("NULL", e->log);
        return;
    }
    n = emu_string_in(e, addr, buf, sizeof buf);
    if (n < 0)
        fprintf(e->log, "0x%llx", (unsigned long long)addr);
    else
        put_quoted(e->log, (unsigned char *)buf, (size_t)n, 0);
}

static void put_arg(crec_emu *e, char kind, const uint64_t a[6], int i, int64_t ret)
{
    FILE *f = e->log;
    switch (kind) {
    case 'd': fprintf(f, "%lld", (long long)a[i]); break;
    case 'f': fprintf(f, "%d", (int)a[i]); break;
    case 'u': fprintf(f, "%llu", (unsigned long long)a[i]); break;
    case 'o': fprintf(f, "0%llo", (unsigned long long)a[i]); break;
    case 's': put_string(e, a[i]); break;
    case 'b': put_buffer(e, a[i], i < 5 ? (int64_t)a[i + 1] : 0); break;
    case 'B': put_buffer(e, a[i], ret); break;
    case 'p': if (a[i]) fprintf(f, "0x%llx", (unsigned long long)a[i]); else fputs("NULL", f); break;
    default: fprintf(f, "0x%llx", (unsigned long long)a[i]); break;
    }
}

void emu_strace(crec_emu *e, uint64_t nr, const uint64_t a[6], int64_t ret)
{
    const char *fmt = emu_syscall_fmt(nr);
    FILE *f = e->log;

    fprintf(f, "%s(", emu_syscall_name(nr));
    for (int i = 0; fmt[i] && i < 6; i++) {
        if (i)
            fputs(", ", f);
        put_arg(e, fmt[i], a, i, ret);
    }
    if (e->done && (nr == 60 || nr == 231)) {
        fputs(") = ?\n", f);
        return;
    }
    if (ret < 0 && ret > -4096)
        fprintf(f, ") = -1 %s (%s)\n", strerrorname_np((int)-ret) ? strerrorname_np((int)-ret) : "E?",
                strerror((int)-ret));
    else if (ret > 0xffff || ret < 0)
        fprintf(f, ") = 0x%llx\n", (unsigned long long)ret);
    else
        fprintf(f, ") = %lld\n", (long long)ret);
}
