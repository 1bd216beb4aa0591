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

/* Every named function and object of one symbol table. */
static int emit_table(struct rec_session *rs, const struct elf_view *v, const Elf64_Ehdr *eh,
                      const Elf64_Shdr *tab, uint64_t base, const crec_fmt_hash *blob)
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
        if (emit_symbol(rs, blob, sym->st_value - base, sym, name, len) != CREC_OK)
            return rs->err.code;
    }
    return CREC_OK;
}

static int emit_symbols(struct rec_session *rs, const struct elf_view *v, uint64_t file_off,
                        const crec_fmt_hash *blob)
{
    const Elf64_Ehdr *eh = elf_at(v, 0, sizeof *eh);
    const Elf64_Shdr *symtab = NULL, *dynsym = NULL;
    uint64_t base;

    if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        elf_vaddr_of(v, eh, file_off, &base) != 0)
        return CREC_OK; /* not an ELF file we understand: no symbols, no error */
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = elf_section(v, eh, i);
        if (sh && sh->sh_type == SHT_SYMTAB)
            symtab = sh;
        else if (sh && sh->sh_type == SHT_DYNSYM)
            dynsym = sh;
    }
    /* .symtab has everything (.dynsym is a subset) when the file is not stripped. */
    if (symtab)
        return emit_table(rs, v, eh, symtab, base, blob);
    if (dynsym)
        return emit_table(rs, v, eh, dynsym, base, blob);
    return CREC_OK;
}

int rec_symbols(struct rec_session *rs, const char *path, uint64_t file_off,
                const crec_fmt_hash *blob)
{
    struct elf_view v;
    struct stat st;
    void *p;
    int fd, rc;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CREC_OK; /* the file is gone: the code is recorded, its names are not */
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return CREC_OK;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return CREC_OK;
    v.p = p;
    v.size = (size_t)st.st_size;
    rc = emit_symbols(rs, &v, file_off, blob);
    munmap(p, (size_t)st.st_size);
    return rc;
}
