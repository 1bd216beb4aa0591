/*
 * symbols.c - the ELF symbols of recorded code, so that a recording can
 * name functions and globals with no file from the recording machine.
 *
 * A SYMBOL record names a code blob and gives the symbol's address relative
 * to where that blob is mapped, so it holds wherever the file was loaded:
 * runtime address = mapping start + rel.  Data symbols after the code
 * (in .data and .bss) get a rel past the blob's end, which is fine.
 */
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "recorder/recorder_int.h"

/* A read-only view of an ELF file, every access bounds-checked. */
struct elf_view {
    const uint8_t *p;
    size_t size;
};

static const void *elf_at(const struct elf_view *v, uint64_t off, uint64_t len)
{
    return off <= v->size && len <= v->size - off ? v->p + off : NULL;
}

static const Elf64_Shdr *elf_section(const struct elf_view *v, const Elf64_Ehdr *eh, unsigned i)
{
    if (i >= eh->e_shnum || eh->e_shentsize != sizeof(Elf64_Shdr))
        return NULL;
    return elf_at(v, eh->e_shoff + (uint64_t)i * sizeof(Elf64_Shdr), sizeof(Elf64_Shdr));
}

/* The ELF virtual address that lands at file offset `file_off` of a PT_LOAD. */
static int elf_vaddr_of(const struct elf_view *v, const Elf64_Ehdr *eh, uint64_t file_off,
                        uint64_t *vaddr)
{
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = elf_at(v, eh->e_phoff + (uint64_t)i * sizeof *ph, sizeof *ph);
        if (!ph || eh->e_phentsize != sizeof *ph)
            return -1;
        if (ph->p_type == PT_LOAD && file_off >= (ph->p_offset & ~(CREC_PAGE_SIZE - 1)) &&
            file_off < ph->p_offset + ph->p_filesz) {
            *vaddr = ph->p_vaddr - (ph->p_offset - file_off);
            return 0;
        }
    }
    return -1;
}

static int emit_symbol(struct rec_session *rs, const crec_fmt_hash *blob, uint64_t rel,
                       const Elf64_Sym *sym, const char *name, size_t name_len)
{
    crec_fmt_symbol s = {0};
    crec_error err = {0};
    int rc;

    s.blob = *blob;
    s.addr = rel;
    s.size = sym->st_size;
    s.type = ELF64_ST_TYPE(sym->st_info);
    s.name = name;
    s.name_len = name_len;
    crec_fmt_buf_reset(&rs->scratch);
    rc = crec_fmt_sym_encode(&rs->scratch, &s);
    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_SYMBOLS, 0, &rs->scratch, &err);
    if (rc != CREC_OK)
        rec_fail(rs, &err);
    return rc;
}

/* What to do with each named function and object of a symbol table:
 * non-zero stops the walk. */
struct sym_visit {
    int (*fn)(void *ctx, uint64_t rel, const Elf64_Sym *sym, const char *name, size_t len);
    void *ctx;
};

struct emit_ctx {
    struct rec_session *rs;
    const crec_fmt_hash *blob;
};

static int emit_one(void *ctx, uint64_t rel, const Elf64_Sym *sym, const char *name, size_t len)
{
    struct emit_ctx *e = ctx;

    return emit_symbol(e->rs, e->blob, rel, sym, name, len) != CREC_OK;
}

/* Every named function and object of one symbol table. */
static int walk_table(const struct sym_visit *vis, const struct elf_view *v,
                      const Elf64_Ehdr *eh, const Elf64_Shdr *tab, uint64_t base)
{
    const Elf64_Shdr *strs = elf_section(v, eh, tab->sh_link);
    uint64_t n = tab->sh_entsize == sizeof(Elf64_Sym) ? tab->sh_size / sizeof(Elf64_Sym) : 0;

    if (!strs || !elf_at(v, strs->sh_offset, strs->sh_size))
        return CREC_OK;
    for (uint64_t i = 1; i < n; i++) {
        const Elf64_Sym *sym = elf_at(v, tab->sh_offset + i * sizeof *sym, sizeof *sym);
        int type = sym ? ELF64_ST_TYPE(sym->st_info) : 0;
        const char *name;
        size_t len;

        if (!sym || sym->st_value < base || sym->st_shndx == SHN_UNDEF ||
            sym->st_name >= strs->sh_size || (type != STT_FUNC && type != STT_OBJECT))
            continue;
        name = (const char *)v->p + strs->sh_offset + sym->st_name;
        len = strnlen(name, strs->sh_size - sym->st_name);
        if (len == 0 || len == strs->sh_size - sym->st_name)
            continue;
        if (vis->fn(vis->ctx, sym->st_value - base, sym, name, len))
            return 1;
    }
    return 0;
}

static int walk_symbols(const struct sym_visit *vis, const struct elf_view *v, uint64_t file_off)
{
    const Elf64_Ehdr *eh = elf_at(v, 0, sizeof *eh);
    const Elf64_Shdr *symtab = NULL, *dynsym = NULL;
    uint64_t base;

    if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        elf_vaddr_of(v, eh, file_off, &base) != 0)
        return 0; /* not an ELF file we understand: no symbols, no error */
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = elf_section(v, eh, i);
        if (sh && sh->sh_type == SHT_SYMTAB)
            symtab = sh;
        else if (sh && sh->sh_type == SHT_DYNSYM)
            dynsym = sh;
    }
    /* .symtab has everything (.dynsym is a subset) when the file is not stripped. */
    if (symtab)
        return walk_table(vis, v, eh, symtab, base);
    if (dynsym)
        return walk_table(vis, v, eh, dynsym, base);
    return 0;
}

/* Walk the symbols of the file at path (a missing or odd file has none).
 * @return what the walk returned: non-zero when vis->fn stopped it. */
static int walk_file(const char *path, uint64_t file_off, const struct sym_visit *vis)
{
    struct elf_view v;
    struct stat st;
    void *p;
    int fd, rc;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* the file is gone: the code is recorded, its names are not */
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return 0;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return 0;
    v.p = p;
    v.size = (size_t)st.st_size;
    rc = walk_symbols(vis, &v, file_off);
    munmap(p, (size_t)st.st_size);
    return rc;
}

int rec_symbols(struct rec_session *rs, const char *path, uint64_t file_off,
                const crec_fmt_hash *blob)
{
    struct emit_ctx e = {rs, blob};
    struct sym_visit vis = {emit_one, &e};

    return walk_file(path, file_off, &vis) ? rs->err.code : CREC_OK;
}

struct find_ctx {
    const char *name;
    uint64_t rel;
    int found;
};

static int find_one(void *ctx, uint64_t rel, const Elf64_Sym *sym, const char *name, size_t len)
{
    struct find_ctx *f = ctx;

    (void)sym;
    if (strlen(f->name) != len || memcmp(f->name, name, len) != 0)
        return 0;
    f->rel = rel;
    f->found = 1;
    return 1;
}

int rec_symbol_find(const char *path, uint64_t file_off, const char *name, uint64_t *rel)
{
    struct find_ctx f = {name, 0, 0};
    struct sym_visit vis = {find_one, &f};

    walk_file(path, file_off, &vis);
    if (f.found)
        *rel = f.rel;
    return f.found;
}
