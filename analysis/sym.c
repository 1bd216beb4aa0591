/*
 * sym.c - symbols, source lines and disassembly of a recording, cached
 * (crec_symtab_*), and what each block's last instruction does to the
 * call stack (an_block_flow).
 *
 * Symbols come from the recording (crec_symbolize).  Source lines come
 * from the DWARF line tables of the module's file, read with elfutils'
 * libdw, only while the file is on disk with the bytes that were mapped
 * (crec_module.on_disk): a rebuilt or deleted program has no lines rather
 * than wrong ones.  A separate debug file is looked for under --debug-dir
 * by build id, then by path and by name.
 *
 * A build with CREC_NO_DWARF (the s390x cross build, mk/s390x.mk: Debian's
 * libdw-dev:s390x is not installed there) has no source lines; the rest is
 * the same.
 */
#include <capstone/capstone.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"

#ifndef CREC_NO_DWARF
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <gelf.h>
#else
typedef struct Elf Elf;
typedef struct Dwarf Dwarf;
#endif

/* A module's code and, once looked for, its line table. */
struct an_module {
    const crec_module *m;
    uint8_t *code;       /* its bytes, read on first need */
    int code_tried;
    int dwarf_tried;
    int fd, dbg_fd;
    Elf *elf, *dbg_elf;
    Dwarf *dw;
    uint64_t bias;       /* run-time address - ELF address */
};

struct an_place_slot {
    uint64_t addr_plus1;
    crec_place p;
};

struct an_func_slot {
    uint64_t addr_plus1;
    uint64_t func_addr;  /* 0: no symbol */
};

struct an_flow_slot {
    uint64_t addr;       /* 0: empty */
    uint32_t n;
    int flow;
    uint64_t last, next;
};

struct crec_symtab {
    crec_recording *rec;
    char *debug_dir;
    csh cs;
    struct an_module *mods;
    size_t nmods;
    struct an_place_slot *places; /* a cache, overwritten on collision */
    struct an_flow_slot *flows;
    struct an_func_slot *funcs;   /* the function of an address, without lines */
};

int an_error(crec_error *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (err) {
        err->code = (crec_err)code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

#define AN_PLACES 8192
#define AN_FLOWS 65536

int crec_symtab_open(crec_recording *rec, const char *debug_dir, crec_symtab **out,
                     crec_error *err)
{
    const crec_module *mods;
    size_t n;
    crec_symtab *s;
    int rc;

    *out = NULL;
    if ((rc = crec_modules(rec, &mods, &n, err)) != CREC_OK)
        return rc;
    s = calloc(1, sizeof *s);
    if (!s)
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    s->rec = rec;
    s->nmods = n;
    s->mods = calloc(n ? n : 1, sizeof *s->mods);
    s->places = calloc(AN_PLACES, sizeof *s->places);
    s->flows = calloc(AN_FLOWS, sizeof *s->flows);
    s->funcs = calloc(AN_FLOWS, sizeof *s->funcs);
    s->debug_dir = debug_dir ? strdup(debug_dir) : NULL;
    if (!s->mods || !s->places || !s->flows || !s->funcs || (debug_dir && !s->debug_dir)) {
        crec_symtab_free(s);
        return an_error(err, CREC_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        s->mods[i].m = &mods[i];
        s->mods[i].fd = s->mods[i].dbg_fd = -1;
    }
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &s->cs) != CS_ERR_OK) {
        s->cs = 0;
        crec_symtab_free(s);
        return an_error(err, CREC_ERR_NOMEM, "can't open Capstone");
    }
#ifndef CREC_NO_DWARF
    elf_version(EV_CURRENT);
#endif
    *out = s;
    return CREC_OK;
}

void crec_symtab_free(crec_symtab *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++) {
        struct an_module *am = &s->mods[i];
        free(am->code);
#ifndef CREC_NO_DWARF
        if (am->dw)
            dwarf_end(am->dw);
        if (am->dbg_elf)
            elf_end(am->dbg_elf);
        if (am->elf)
            elf_end(am->elf);
#endif
        if (am->dbg_fd >= 0)
            close(am->dbg_fd);
        if (am->fd >= 0)
            close(am->fd);
    }
    if (s->cs)
        cs_close(&s->cs);
    free(s->mods);
    free(s->places);
    free(s->flows);
    free(s->funcs);
    free(s->debug_dir);
    free(s);
}

crec_recording *an_recording(crec_symtab *s)
{
    return s->rec;
}

static struct an_module *module_of(crec_symtab *s, uint64_t addr)
{
    for (size_t i = 0; i < s->nmods; i++)
        if (addr >= s->mods[i].m->addr && addr - s->mods[i].m->addr < s->mods[i].m->len)
            return &s->mods[i];
    return NULL;
}

/* The module's bytes (code is the same at every time: read it at 0). */
static const uint8_t *module_code(crec_symtab *s, struct an_module *am)
{
    uint64_t at = crec_tell(s->rec);

    if (am->code_tried)
        return am->code;
    am->code_tried = 1;
    am->code = malloc(am->m->len ? am->m->len : 1);
    if (am->code && (crec_seek(s->rec, crec_start(s->rec), NULL) != CREC_OK ||
                     crec_read_memory(s->rec, am->m->addr, am->m->len, am->code, NULL, NULL,
                                      NULL) != CREC_OK)) {
        free(am->code);
        am->code = NULL;
    }
    crec_seek(s->rec, at, NULL);
    return am->code;
}

#ifndef CREC_NO_DWARF
/* ---- DWARF ------------------------------------------------------------------ */

/* The ELF address at file offset `off` of a PT_LOAD segment.  @return 0 or -1. */
static int vaddr_of(Elf *elf, uint64_t off, uint64_t *vaddr)
{
    size_t n;

    if (elf_getphdrnum(elf, &n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        if (off >= (ph.p_offset & ~(uint64_t)4095) && off < ph.p_offset + ph.p_filesz) {
            *vaddr = ph.p_vaddr + off - ph.p_offset;
            return 0;
        }
    }
    return -1;
}

/* Open a file as an ELF with DWARF.  @return 0 and fills fd/elf/dw, or -1. */
static int open_dwarf(const char *path, int *fd, Elf **elf, Dwarf **dw)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return -1;
    *elf = elf_begin(*fd, ELF_C_READ, NULL);
    *dw = *elf ? dwarf_begin_elf(*elf, DWARF_C_READ, NULL) : NULL;
    if (*dw)
        return 0;
    if (*elf)
        elf_end(*elf);
    close(*fd);
    *fd = -1, *elf = NULL;
    return -1;
}

/* A separate debug file under debug_dir: by build id, path, name. */
static void find_debug_file(crec_symtab *s, struct an_module *am)
{
    const void *id;
    char path[4096];
    const char *base = strrchr(am->m->path, '/');
    ssize_t idlen = dwelf_elf_gnu_build_id(am->elf, &id);

    if (idlen > 1) {
        const uint8_t *b = id;
        int off = snprintf(path, sizeof path, "%s/.build-id/%02x/", s->debug_dir, b[0]);
        for (ssize_t i = 1; i < idlen && off < (int)sizeof path - 8; i++)
            off += snprintf(path + off, sizeof path - (size_t)off, "%02x", b[i]);
        snprintf(path + off, sizeof path - (size_t)off, ".debug");
        if (open_dwarf(path, &am->dbg_fd, &am->dbg_elf, &am->dw) == 0)
            return;
    }
    snprintf(path, sizeof path, "%s/%s", s->debug_dir, am->m->path);
    if (open_dwarf(path, &am->dbg_fd, &am->dbg_elf, &am->dw) == 0)
        return;
    snprintf(path, sizeof path, "%s/%s", s->debug_dir, base ? base + 1 : am->m->path);
    open_dwarf(path, &am->dbg_fd, &am->dbg_elf, &am->dw);
}

static Dwarf *module_dwarf(crec_symtab *s, struct an_module *am)
{
    uint64_t vaddr;

    if (am->dwarf_tried)
        return am->dw;
    am->dwarf_tried = 1;
    if (!am->m->on_disk)
        return NULL; /* deleted or rebuilt: its lines would be wrong */
    am->fd = open(am->m->path, O_RDONLY | O_CLOEXEC);
    if (am->fd < 0)
        return NULL;
    am->elf = elf_begin(am->fd, ELF_C_READ, NULL);
    if (!am->elf || vaddr_of(am->elf, am->m->file_off, &vaddr) != 0)
        return NULL;
    am->bias = am->m->addr - vaddr;
    am->dw = dwarf_begin_elf(am->elf, DWARF_C_READ, NULL);
    if (!am->dw && s->debug_dir)
        find_debug_file(s, am);
    return am->dw;
}

static void source_line(crec_symtab *s, struct an_module *am, uint64_t addr, crec_place *p)
{
    Dwarf *dw = module_dwarf(s, am);
    Dwarf_Die cu;
    Dwarf_Line *line;
    int lineno;

    if (!dw || !dwarf_addrdie(dw, addr - am->bias, &cu))
        return;
    line = dwarf_getsrc_die(&cu, addr - am->bias);
    if (!line || dwarf_lineno(line, &lineno) != 0 || lineno <= 0)
        return;
    p->file = dwarf_linesrc(line, NULL, NULL);
    p->line = (unsigned)lineno;
}

#else
static void source_line(crec_symtab *s, struct an_module *am, uint64_t addr, crec_place *p)
{
    (void)s, (void)am, (void)addr, (void)p; /* no libdw in this build: no lines */
}
#endif

int crec_symtab_place(crec_symtab *s, uint64_t addr, crec_place *p)
{
    struct an_place_slot *slot = &s->places[(addr * 0x9E3779B97F4A7C15ull >> 40) % AN_PLACES];
    struct an_module *am;
    crec_symbol sym;

    if (slot->addr_plus1 == addr + 1) {
        *p = slot->p;
        return CREC_OK;
    }
    memset(p, 0, sizeof *p);
    if (crec_symbolize(s->rec, addr, &sym, NULL) == CREC_OK && sym.name) {
        p->func = sym.name;
        p->func_addr = sym.addr;
        p->offset = sym.offset;
    }
    am = module_of(s, addr);
    if (am) {
        p->module = am->m->path;
        source_line(s, am, addr, p);
    }
    slot->addr_plus1 = addr + 1;
    slot->p = *p;
    return CREC_OK;
}

void crec_symtab_name(crec_symtab *s, uint64_t addr, char *buf, size_t size)
{
    crec_place p;

    crec_symtab_place(s, addr, &p);
    if (!p.func)
        snprintf(buf, size, "[unknown 0x%" PRIx64 "]", addr);
    else if (p.offset)
        snprintf(buf, size, "%s+0x%" PRIx64, p.func, p.offset);
    else
        snprintf(buf, size, "%s", p.func);
}

uint64_t an_func_of(crec_symtab *s, uint64_t addr)
{
    struct an_func_slot *slot = &s->funcs[(addr * 0x9E3779B97F4A7C15ull >> 40) % AN_FLOWS];
    crec_symbol sym;

    if (slot->addr_plus1 != addr + 1) {
        slot->addr_plus1 = addr + 1;
        slot->func_addr = crec_symbolize(s->rec, addr, &sym, NULL) == CREC_OK && sym.name
                              ? sym.addr : 0;
    }
    return slot->func_addr;
}

int an_is_function_start(crec_symtab *s, uint64_t addr)
{
    return an_func_of(s, addr) == addr;
}

int crec_symtab_resolve(crec_symtab *s, const char *what, uint64_t *addr, crec_error *err)
{
    char name[512];
    const char *plus = strchr(what, '+');
    size_t n = plus ? (size_t)(plus - what) : strlen(what);
    uint64_t off = 0;
    char *end;

    if (what[0] >= '0' && what[0] <= '9') {
        *addr = strtoull(what, &end, 0);
        if (*end == 0)
            return CREC_OK;
        return an_error(err, CREC_ERR_ARG, "bad address '%s'", what);
    }
    if (plus) {
        off = strtoull(plus + 1, &end, 0);
        if (*end || plus[1] == 0)
            return an_error(err, CREC_ERR_ARG, "bad offset in '%s'", what);
    }
    if (n == 0 || n >= sizeof name)
        return an_error(err, CREC_ERR_ARG, "bad location '%s'", what);
    memcpy(name, what, n);
    name[n] = 0;
    if (crec_lookup_symbol(s->rec, name, addr, NULL) != CREC_OK)
        return an_error(err, CREC_ERR_NOTFOUND, "no function or symbol '%s' in the "
                              "recording", name);
    *addr += off;
    return CREC_OK;
}

int crec_symtab_disasm(crec_symtab *s, uint64_t addr, char *text, size_t size,
                       unsigned *len, crec_error *err)
{
    struct an_module *am = module_of(s, addr);
    const uint8_t *code = am ? module_code(s, am) : NULL;
    cs_insn *insn;
    size_t n;

    if (!code)
        return an_error(err, CREC_ERR_NOTFOUND, "0x%" PRIx64 " is not in a code mapping",
                              addr);
    n = cs_disasm(s->cs, code + (addr - am->m->addr),
                  (size_t)(am->m->addr + am->m->len - addr < 16 ? am->m->addr + am->m->len - addr
                                                                : 16),
                  addr, 1, &insn);
    if (n == 0) {
        snprintf(text, size, "(bad)");
        if (len)
            *len = 1;
        return an_error(err, CREC_ERR_NOTFOUND, "no instruction at 0x%" PRIx64, addr);
    }
    snprintf(text, size, "%s%s%s", insn[0].mnemonic, insn[0].op_str[0] ? " " : "",
             insn[0].op_str);
    if (len)
        *len = insn[0].size;
    cs_free(insn, n);
    return CREC_OK;
}

/* ---- what a block does to the call stack ---------------------------------------- */

static int decode_flow(crec_symtab *s, uint64_t addr, uint32_t n, uint64_t *last, uint64_t *next)
{
    struct an_module *am = module_of(s, addr);
    const uint8_t *code = am ? module_code(s, am) : NULL;
    const uint8_t *p;
    size_t left;
    uint64_t pc = addr;
    cs_insn *insn;
    int flow = AN_FLOW_OTHER;

    *last = *next = addr;
    if (!code)
        return AN_FLOW_OTHER;
    p = code + (addr - am->m->addr);
    left = (size_t)(am->m->addr + am->m->len - addr);
    insn = cs_malloc(s->cs);
    if (!insn)
        return AN_FLOW_OTHER;
    for (uint32_t i = 0; i < n && cs_disasm_iter(s->cs, &p, &left, &pc, insn); i++) {
        *last = insn->address;
        *next = pc;
        if (i + 1 < n)
            continue;
        switch (insn->id) {
        case X86_INS_CALL:
            flow = AN_FLOW_CALL;
            break;
        case X86_INS_RET:
        case X86_INS_RETF:
        case X86_INS_RETFQ:
            flow = AN_FLOW_RET;
            break;
        case X86_INS_JMP:
            flow = AN_FLOW_JMP;
            break;
        case X86_INS_SYSCALL:
            flow = AN_FLOW_SYSCALL;
            break;
        }
    }
    cs_free(insn, 1);
    return flow;
}

int an_block_flow(crec_symtab *s, uint64_t addr, uint32_t n, uint64_t *last, uint64_t *next)
{
    size_t i = (size_t)((addr * 0x9E3779B97F4A7C15ull >> 32) ^ n) % AN_FLOWS;
    struct an_flow_slot *slot = &s->flows[i];

    if (slot->addr != addr || slot->n != n) {
        slot->addr = addr;
        slot->n = n;
        slot->flow = decode_flow(s, addr, n, &slot->last, &slot->next);
    }
    *last = slot->last;
    *next = slot->next;
    return slot->flow;
}
