/*
 * blocks.c - exact instruction counting and the RDTSC trap.
 *
 * Unicorn calls UC_HOOK_BLOCK with a block's address and size before the
 * block runs.  We decode each block once with Capstone, memoise its
 * instruction count in an open-addressing table keyed by address, and add
 * the count.  A UC_HOOK_CODE on every instruction would cost 10x.
 *
 * A `rep` instruction: QEMU ends the block after one iteration and jumps
 * back to the instruction itself, so every further iteration is a block of
 * one instruction, and a rep instruction counts once per iteration (once
 * when it runs zero times).  tests/test_emu.c checks this.
 *
 * RDTSC: Unicorn 2.0.1 refuses an instruction hook for it, and a code hook
 * bounded to one address costs nothing elsewhere, but applies only to code
 * translated after it is added.  So when a newly decoded block holds an
 * RDTSC we add a bounded hook on it, drop the block's translation, stop, and
 * let the run loop restart at the block's start (DESIGN.md option b).
 */
#include <signal.h>
#include <string.h>
#include <xxhash.h>

#include "emu/emu_int.h"
#include "emu/xinsn.h"

static void xsites_forget(crec_emu_cpu *cpu, uint64_t addr, uint64_t len);

static size_t block_slot(uint64_t addr, size_t cap)
{
    uint64_t h = addr * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

int emu_blocks_init(crec_emu_cpu *cpu)
{
    cpu->blocks_cap = 1 << 14;
    cpu->blocks = crec_calloc(cpu->blocks_cap, sizeof *cpu->blocks);
    return cpu->blocks ? 0 : -1;
}

void emu_blocks_free(crec_emu_cpu *cpu)
{
    crec_free(cpu->blocks);
    cpu->blocks = NULL;
    crec_free(cpu->atomic_lists);
    cpu->atomic_lists = NULL;
    crec_free(cpu->rdtsc_sites);
    cpu->rdtsc_sites = NULL;
    crec_free(cpu->rdtsc_hooks);
    cpu->rdtsc_hooks = NULL;
    emu_xsites_free(cpu, 0);
}

static void block_put(struct emu_block *tab, size_t cap, const struct emu_block *b)
{
    size_t i = block_slot(b->addr, cap);
    while (tab[i].addr && tab[i].addr != b->addr)
        i = (i + 1) & (cap - 1);
    tab[i] = *b;
}

static int blocks_grow(crec_emu_cpu *cpu)
{
    size_t cap = cpu->blocks_cap * 2;
    struct emu_block *n = crec_calloc(cap, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < cpu->blocks_cap; i++)
        if (cpu->blocks[i].addr)
            block_put(n, cap, &cpu->blocks[i]);
    crec_free(cpu->blocks);
    cpu->blocks = n;
    cpu->blocks_cap = cap;
    return 0;
}

/* Drop every memoised block that overlaps [addr, addr+len); rebuild the
 * table so that the probe chains stay intact. */
void emu_blocks_forget(crec_emu_cpu *cpu, uint64_t addr, uint64_t len)
{
    struct emu_block *old = cpu->blocks;

    size_t cap = cpu->blocks_cap, kept = 0;
    struct emu_block *n = crec_calloc(cap, sizeof *n);

    memset(cpu->count_memo, 0, sizeof cpu->count_memo);
    xsites_forget(cpu, addr, len);
    if (!n) { /* can't rebuild: forget everything, which is always safe */
        memset(old, 0, cap * sizeof *old);
        cpu->blocks_used = 0;
        return;
    }
    for (size_t i = 0; i < cap; i++) {
        const struct emu_block *b = &old[i];
        if (!b->addr)
            continue;
        if (len == 0 || (b->addr < addr + len && b->addr + b->size > addr))
            continue;
        block_put(n, cap, b);
        kept++;
    }
    crec_free(old);
    cpu->blocks = n;
    cpu->blocks_used = kept;
}

/* What prefixes_len saw among the prefixes. */
enum { PFX_LOCK = 1, PFX_REP = 2 };

/* Bytes of legacy prefixes and REX at the start of the n bytes at p (in
 * any order, as the CPU and QEMU's decoder take them); *seen (if not
 * NULL): PFX_LOCK if one was LOCK, PFX_REP if one was REP or REPNE. */
static unsigned prefixes_len(const uint8_t *p, unsigned n, unsigned *seen)
{
    unsigned i = 0, s = 0;

    while (i < n && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0xf2 || p[i] == 0xf3 ||
                     p[i] == 0xf0 || p[i] == 0x2e || p[i] == 0x3e || p[i] == 0x26 ||
                     p[i] == 0x36 || p[i] == 0x64 || p[i] == 0x65 || (p[i] & 0xf0) == 0x40)) {
        s |= p[i] == 0xf0 ? PFX_LOCK : p[i] == 0xf2 || p[i] == 0xf3 ? PFX_REP : 0;
        i++;
    }
    if (seen)
        *seen = s;
    return i;
}

/*
 * The next instruction of [*code, *code + *left) at *pc: Capstone's
 * decode, or, for an encoding Capstone 4.0.2 does not know (some AVX-512
 * ones), xdecode's length.  *xi tells what crec must run itself (kind
 * XI_NONE for everything TCG runs).  @return its length, 0 if neither
 * knows it.
 */
static unsigned insn_next(crec_emu_cpu *cpu, const uint8_t **code, size_t *left, uint64_t *pc,
                          cs_insn *insn, struct xi_insn *xi)
{
    const uint8_t *start = *code;
    unsigned len, at;

    xi->kind = XI_NONE;
    if (cs_disasm_iter(cpu->cs, code, left, pc, insn)) {
        len = insn->size;
        /* past the legacy prefixes and REX: VEX, EVEX or 0f c7 (rdrand)? */
        at = prefixes_len(start, len, NULL);
        if (at < len && (start[at] == 0xc4 || start[at] == 0xc5 || start[at] == 0x62 ||
                         (start[at] == 0x0f && at + 1 < len && start[at + 1] == 0xc7)))
            xi_decode(start, len, xi);
        return len;
    }
    len = xi_decode(start, *left > 15 ? 15 : (unsigned)*left, xi);
    if (len) {
        *code += len, *left -= len, *pc += len;
    }
    return len;
}

long emu_count_insns(crec_emu_cpu *cpu, uint64_t addr, uint64_t size, uint64_t upto)
{
    uint8_t buf[4096 + 16];
    const uint8_t *code = buf;
    size_t left;
    uint64_t pc = addr;
    struct xi_insn xi;
    cs_insn *insn;
    long n = 0;
    struct emu_count_memo *m = &cpu->count_memo[(upto ^ upto >> 7) & (EMU_COUNT_MEMO - 1)];
    struct emu_count_memo key = {addr, size, upto, 0};

    if (upto <= addr)
        return 0;
    if (m->upto == upto && m->addr == addr && m->size == size)
        return m->n;
    if (size > 4096)
        size = 4096;
    if (crec_emu_mem_read(cpu, buf, addr, size) != 0)
        return -1;
    left = size;
    insn = cs_malloc(cpu->cs);
    if (!insn)
        return -1;
    while (pc < upto && left > 0 && insn_next(cpu, &code, &left, &pc, insn, &xi))
        n++;
    if (pc < upto && left > 0)
        n++; /* an instruction nobody knows still counts as one */
    cs_free(insn, 1);
    key.n = n;
    *m = key;
    return n;
}

void emu_describe_insn(crec_emu_cpu *cpu, uint64_t addr, char *buf, size_t size)
{
    uint8_t code[16];
    size_t got = 0, off;
    cs_insn *insn = NULL;

    got = emu_mem_read_mapped(cpu, code, addr, sizeof code);
    if (got == 0) {
        snprintf(buf, size, "(unmapped)");
        return;
    }
    size_t n = cs_disasm(cpu->cs, code, got, addr, 1, &insn);
    struct xi_insn xi;
    unsigned xlen = n ? 0 : xi_decode(code, (unsigned)got, &xi);
    size_t len = n ? insn[0].size : xlen ? xlen : (got < 4 ? got : 4);
    off = 0;
    for (size_t i = 0; i < len && off + 3 < size; i++)
        off += snprintf(buf + off, size - off, "%s%02x", i ? " " : "", code[i]);
    if (n)
        snprintf(buf + off, size - off, " (%s%s%s)", insn[0].mnemonic,
                 insn[0].op_str[0] ? " " : "", insn[0].op_str);
    else if (xlen)
        snprintf(buf + off, size - off, " (%s, map %u opcode %02x)",
                 (xi.kind & 0x7f) == XI_EVEX ? "EVEX" : "VEX", xi.map, xi.op);
    else
        snprintf(buf + off, size - off, " (not decodable)");
    if (n)
        cs_free(insn, n);
}

/*
 * May LOCK go before the instruction (opcode and ModRM at p, n bytes)?
 * Only add, adc, and, btc, btr, bts, cmpxchg, cmpxchg8b/16b, dec, inc,
 * neg, not, or, sbb, sub, xor, xadd and xchg may be locked, and only with
 * a memory destination (Intel SDM vol. 2, LOCK); a CPU raises #UD on
 * anything else.  System instructions (0f 00, 0f 20..23) are left to
 * what they do anyway: #GP in user mode.
 */
static int lockable(const uint8_t *p, unsigned n)
{
    uint8_t op, reg;

    if (n < 2)
        return 0;
    if (p[0] == 0x0f) {
        if (n < 3 || p[1] == 0x00 || (p[1] >= 0x20 && p[1] <= 0x23))
            return 1;
        op = p[1], reg = p[2] >> 3 & 7;
        if (p[2] >> 6 == 3)
            return 0;
        return op == 0xab || op == 0xb3 || op == 0xbb || (op == 0xba && reg >= 5) ||
               op == 0xb0 || op == 0xb1 || op == 0xc0 || op == 0xc1 || (op == 0xc7 && reg == 1);
    }
    op = p[0], reg = p[1] >> 3 & 7;
    if (p[1] >> 6 == 3)
        return 0;
    if (op <= 0x31 && (op & 7) <= 1) /* add, or, adc, sbb, and, sub, xor: r/m, reg */
        return 1;
    if (op == 0x80 || op == 0x81 || op == 0x83)
        return reg != 7; /* not cmp */
    if (op == 0x86 || op == 0x87)
        return 1;
    if (op == 0xf6 || op == 0xf7)
        return reg == 2 || reg == 3;
    if (op == 0xfe || op == 0xff)
        return reg <= 1;
    return 0;
}

/*
 * Instructions Unicorn 2.0.1's translator kills the process on ("tcg fatal
 * error", then abort) where a CPU raises #UD (unicorn issue #1716): a far
 * call or jump through a register (ff /3 and ff /5 with ModRM mod 3: QEMU
 * 5.0 loads the far pointer through an address it never computed), and
 * LOCK where it may not go (lock cmp, cmps, bt, a register bts: its locked
 * path leaves the operand unloaded).  Trying every one-, two- and
 * three-byte opcode, bare and with each prefix, with register and memory
 * operands, and 600,000 random instructions, under 2.0.1 found no abort
 * outside these.  Every misplaced LOCK counts, the ones QEMU would run
 * anyway included: the CPU's answer is #UD, which is what crec gives.
 * tests/guests/untranslatable.c runs each kind.
 */
static int tcg_aborts(const uint8_t *p, unsigned n)
{
    unsigned seen, i = prefixes_len(p, n, &seen);

    if (i >= n)
        return 0;
    if (p[i] == 0xff && i + 1 < n && p[i + 1] >> 6 == 3 &&
        ((p[i + 1] >> 3 & 7) == 3 || (p[i + 1] >> 3 & 7) == 5))
        return 1;
    return (seen & PFX_LOCK) && !lockable(p + i, n - i);
}

/* Does QEMU end a block after this instruction (a jump, call, return,
 * interrupt, system call, halt, or a REP string instruction, which jumps
 * back to itself)? */
static int ends_block(const cs_insn *insn)
{
    unsigned seen, i = prefixes_len(insn->bytes, insn->size, &seen);

    if ((seen & PFX_REP) && i < insn->size &&
        ((insn->bytes[i] >= 0xa4 && insn->bytes[i] <= 0xa7) ||
         (insn->bytes[i] >= 0xaa && insn->bytes[i] <= 0xaf) ||
         (insn->bytes[i] >= 0x6c && insn->bytes[i] <= 0x6f)))
        return 1;
    switch (insn->id) {
    case X86_INS_JMP: case X86_INS_LJMP: case X86_INS_CALL: case X86_INS_LCALL:
    case X86_INS_RET: case X86_INS_RETF: case X86_INS_RETFQ: case X86_INS_IRET:
    case X86_INS_IRETD: case X86_INS_IRETQ: case X86_INS_INT: case X86_INS_INT1:
    case X86_INS_INT3: case X86_INS_INTO: case X86_INS_SYSCALL: case X86_INS_SYSENTER:
    case X86_INS_SYSEXIT: case X86_INS_SYSRET: case X86_INS_HLT: case X86_INS_UD2:
    case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE: case X86_INS_JCXZ:
    case X86_INS_JECXZ: case X86_INS_JRCXZ: case X86_INS_JAE: case X86_INS_JA:
    case X86_INS_JBE: case X86_INS_JB: case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG:
    case X86_INS_JLE: case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP:
    case X86_INS_JNS: case X86_INS_JO: case X86_INS_JP: case X86_INS_JS:
        return 1;
    default:
        return 0;
    }
}

long emu_untranslatable(crec_emu_cpu *cpu, uint64_t pc, uint64_t sites[2])
{
    enum { WINDOW = 512, SPAN = 4096, INSN_MAX = 15 };
    uint8_t buf[WINDOW];
    const uint8_t *code = buf;
    size_t left = 0;
    uint64_t at = pc, base = pc;
    struct xi_insn xi;
    cs_insn *insn = cs_malloc(cpu->cs);
    long n = 0, found = -1;

    sites[0] = sites[1] = 0;
    /* QEMU's block holds at most 512 instructions from under 4 KiB past pc */
    while (insn && n < EMU_BLOCK_MAX_INSNS && at - pc < SPAN) {
        if (left < INSN_MAX && (at == pc || base + WINDOW == at + left)) {
            left = emu_mem_read_mapped(cpu, buf, at, WINDOW); /* refill from here */
            code = buf, base = at;
            if (!left)
                break;
        }
        if (tcg_aborts(code, (unsigned)(left < INSN_MAX ? left : INSN_MAX))) {
            found = n;
            break;
        }
        if (cpu->n_xsites && emu_xsite_has(cpu, at)) {
            if (!sites[0])
                sites[0] = at;
            sites[1] = at;
        }
        if (!insn_next(cpu, &code, &left, &at, insn, &xi))
            break; /* not decodable: QEMU's #UD ends the block */
        if (xi.kind == XI_NONE && ends_block(insn))
            break;
        n++;
    }
    if (insn)
        cs_free(insn, 1);
    return found;
}

void emu_untranslatable_stop(crec_emu_cpu *cpu, uint64_t pc)
{
    struct crec_emu_stop *f = &cpu->fault;

    memset(f, 0, sizeof *f);
    f->why = CREC_STOP_ILLEGAL;
    f->signo = SIGILL;
    f->rip = pc;
    emu_describe_insn(cpu, pc, f->what, sizeof f->what);
    cpu->fault_seen = 1;
    uc_emu_stop(cpu->uc);
}

static void until_check(crec_emu_cpu *cpu, uint64_t addr, uint32_t size);

static int rdtsc_known(const crec_emu_cpu *cpu, uint64_t addr)
{
    for (size_t i = 0; i < cpu->n_rdtsc; i++)
        if (cpu->rdtsc_sites[i] == addr)
            return 1;
    return 0;
}

/* The bounded code hook on one RDTSC/RDTSCP: emulate it and skip it. */
static void rdtsc_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud)
{
    crec_emu_cpu *cpu = ud;
    uint8_t b[3] = {0};
    uint64_t v;
    long before;

    (void)uc;
    crec_emu_mem_read(cpu, b, addr, 3);
    /* the block was counted whole on entry: keep only what ran, plus this */
    before = emu_count_insns(cpu, cpu->cur_block, cpu->cur_block_size, addr);
    if (before >= 0 && (uint64_t)before < cpu->cur_block_n) {
        cpu->icount -= cpu->cur_block_n - (uint64_t)before - 1;
        cpu->cur_block_n = (uint32_t)before + 1;
    }
    v = cpu->hooks.rdtsc ? cpu->hooks.rdtsc(cpu->hooks.ctx, cpu)
                         : crec_emu_rdtsc_default(cpu->icount);
    emu_reg_set(cpu, UC_X86_REG_RAX, v & 0xffffffffu);
    emu_reg_set(cpu, UC_X86_REG_RDX, v >> 32);
    if (b[2] == 0xf9) /* rdtscp: ecx = TSC_AUX, processor 0 */
        emu_reg_set(cpu, UC_X86_REG_RCX, 0);
    /* Writing RIP from a code hook makes Unicorn leave the block here and
     * go on at the new address, where a new block (and count) starts. */
    emu_reg_set(cpu, UC_X86_REG_RIP, addr + size);
    cpu->cur_block = addr + size;
    cpu->cur_block_n = 0;
    cpu->cur_block_size = 0;
}

/*
 * Privileged instructions.  Unicorn runs the guest at CPL 0, so it carries
 * them out; at CPL 3 Linux gets #GP and kills the program with SIGSEGV.
 * Each gets a bounded code hook, as an RDTSC does, that stops the run with
 * that fault before it executes (on record and replay alike).  HLT needs
 * none: Unicorn stops after it (cpu.c).
 */
static const char *privileged(const cs_insn *insn)
{
    switch (insn->id) {
    case X86_INS_CLI: case X86_INS_STI: case X86_INS_IN: case X86_INS_OUT:
    case X86_INS_INSB: case X86_INS_INSW: case X86_INS_INSD: case X86_INS_OUTSB:
    case X86_INS_OUTSW: case X86_INS_OUTSD: case X86_INS_RDMSR: case X86_INS_WRMSR:
    case X86_INS_INVD: case X86_INS_WBINVD: case X86_INS_SWAPGS: case X86_INS_CLTS:
    case X86_INS_LGDT: case X86_INS_LIDT: case X86_INS_LLDT: case X86_INS_LTR:
    case X86_INS_LMSW: case X86_INS_INVLPG: case X86_INS_SYSRET: case X86_INS_SYSEXIT:
    case X86_INS_RDPMC: case X86_INS_XSETBV: case X86_INS_INVPCID:
        return insn->mnemonic;
    case X86_INS_MOV: { /* opcode 0f 20..23: to or from a control or debug register */
        unsigned i = prefixes_len(insn->bytes, insn->size, NULL);
        return i + 1 < insn->size && insn->bytes[i] == 0x0f && insn->bytes[i + 1] >= 0x20 &&
                       insn->bytes[i + 1] <= 0x23
                   ? "mov to or from a control register"
                   : NULL;
    }
    default:
        return NULL;
    }
}

/* The bounded code hook on a privileged instruction: #GP, before it runs. */
static void privileged_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud)
{
    crec_emu_cpu *cpu = ud;
    struct crec_emu_stop *f = &cpu->fault;
    char what[96];

    (void)size;
    emu_describe_insn(cpu, addr, what, sizeof what);
    memset(f, 0, sizeof *f);
    f->why = CREC_STOP_TRAP;
    f->signo = SIGSEGV;
    f->rip = addr;
    snprintf(f->what, sizeof f->what, "privileged instruction %s", what);
    cpu->fault_seen = 1; /* describe_stop uncounts it and what follows */
    uc_emu_stop(uc);
}

/* Room for one more RDTSC site (and its hook). */
static int rdtsc_grow(crec_emu_cpu *cpu)
{
    size_t need = cpu->n_rdtsc + 1, cap_sites = cpu->cap_rdtsc, cap_hooks = cpu->cap_rdtsc;
    uint64_t *sites = crec_grow(cpu->rdtsc_sites, &cap_sites, need, sizeof *sites, 16);
    uc_hook *hooks;

    if (!sites)
        return -1;
    cpu->rdtsc_sites = sites;
    hooks = crec_grow(cpu->rdtsc_hooks, &cap_hooks, need, sizeof *hooks, 16);
    if (!hooks)
        return -1;
    cpu->rdtsc_hooks = hooks;
    cpu->cap_rdtsc = cap_hooks; /* both arrays have it, now */
    return 0;
}

/* A bounded code hook on an RDTSC or a privileged instruction (fn: its
 * hook).  @return 1 if one was added. */
static int trap_special(crec_emu_cpu *cpu, uint64_t addr, void *fn)
{
    uc_hook h;

    if (rdtsc_known(cpu, addr))
        return 0;
    if (cpu->n_rdtsc == cpu->cap_rdtsc && rdtsc_grow(cpu) != 0)
        return 0;
    if (uc_hook_add(cpu->uc, &h, UC_HOOK_CODE, fn, cpu, addr, addr) != UC_ERR_OK)
        return 0;
    cpu->rdtsc_hooks[cpu->n_rdtsc] = h;
    cpu->rdtsc_sites[cpu->n_rdtsc++] = addr;
    return 1;
}

/*
 * A block in memory that is writable as well as executable may be
 * rewritten in place by the program, into code of the same size but other
 * instructions; Unicorn translates it again at the same address and size,
 * and only its bytes tell that the count memoised for it is stale.  So for
 * such blocks the memo keeps a hash of the bytes, checked every time the
 * block runs.  @return the hash (never 0), or 0 for code not writable.
 */
static uint64_t block_sum(crec_emu_cpu *cpu, uint64_t addr, uint32_t size)
{
    uint8_t buf[4096];
    const void *p;
    uint64_t h;
    int prot = crec_emu_mem_prot(cpu, addr);

    if (prot < 0 || !(prot & CREC_PROT_WRITE))
        return 0;
    if (size > sizeof buf)
        size = sizeof buf;
    p = crec_emu_mem_host(cpu, addr, size ? size : 1, CREC_PROT_READ);
    if (!p && crec_emu_mem_read(cpu, buf, addr, size) == 0)
        p = buf;
    h = p ? XXH3_64bits(p, size) : 1;
    return h ? h : 1;
}

/* ---- instructions crec runs itself (xinsn.c) ------------------------------- */

static size_t xsite_slot(uint64_t addr, size_t cap)
{
    return (size_t)((addr * 0x9E3779B97F4A7C15ull) >> 24) & (cap - 1);
}

int emu_xsite_has(const crec_emu_cpu *cpu, uint64_t addr)
{
    size_t i;

    if (!cpu->xsites_cap)
        return 0;
    for (i = xsite_slot(addr, cpu->xsites_cap); cpu->xsites[i].addr; i = (i + 1) & (cpu->xsites_cap - 1))
        if (cpu->xsites[i].addr == addr)
            return 1;
    return 0;
}

static void xsite_put(struct emu_xsite *tab, size_t cap, const struct emu_xsite *x)
{
    size_t i = xsite_slot(x->addr, cap);

    while (tab[i].addr)
        i = (i + 1) & (cap - 1);
    tab[i] = *x;
}

/*
 * Unicorn 2.0.1 looks through every code hook for each instruction it
 * translates, so a hook per site made translation cost grow with the
 * sites: 3 s, then 33 s, for 18,000 and 54,000 of them (a -march=native
 * build uses VEX for all its floating point).  Where ucfix can move a
 * hook's range, every site shares one hook instead, whose range is
 * nowhere (EMU_XSITE_IDLE) but while a block is translated: then it spans
 * the block's sites (ucfix.c, tb_gen_code), so each of them gets its call.
 */
#define EMU_XSITE_IDLE UINT64_MAX /* no user-space instruction is there */

/* The shared hook, added when the first site is.  @return 1 if it is in
 * effect, 0 if each site needs a hook of its own. */
static int xsite_hook_shared(crec_emu_cpu *cpu)
{
    uc_hook h;
    uint64_t *range;

    if (cpu->xsite_range)
        return 1;
    if (cpu->xsite_hook) /* tried, and the range could not be found */
        return 0;
    if (uc_hook_add(cpu->uc, &h, UC_HOOK_CODE, (void *)emu_xinsn_hook, cpu, EMU_XSITE_IDLE - 1,
                    EMU_XSITE_IDLE) != UC_ERR_OK)
        return 0;
    cpu->xsite_hook = h;
    range = emu_ucfix_hook_range(h, (void *)emu_xinsn_hook, cpu, EMU_XSITE_IDLE - 1,
                                 EMU_XSITE_IDLE);
    if (!range)
        return 0;
    range[0] = range[1] = EMU_XSITE_IDLE;
    cpu->xsite_range = range;
    return 1;
}

/* Add a site (and its own hook if it needs one).  @return 1 if added. */
static int trap_xsite(crec_emu_cpu *cpu, uint64_t addr)
{
    struct emu_xsite x = {addr, 0};

    if (emu_xsite_has(cpu, addr))
        return 0;
    if ((cpu->n_xsites + 1) * 2 > cpu->xsites_cap) {
        size_t cap = cpu->xsites_cap ? 2 * cpu->xsites_cap : 64;
        struct emu_xsite *n = crec_calloc(cap, sizeof *n);
        if (!n)
            return 0;
        for (size_t i = 0; i < cpu->xsites_cap; i++)
            if (cpu->xsites[i].addr)
                xsite_put(n, cap, &cpu->xsites[i]);
        crec_free(cpu->xsites);
        cpu->xsites = n;
        cpu->xsites_cap = cap;
    }
    if (!xsite_hook_shared(cpu) &&
        uc_hook_add(cpu->uc, &x.hook, UC_HOOK_CODE, (void *)emu_xinsn_hook, cpu, addr, addr) !=
            UC_ERR_OK)
        return 0;
    xsite_put(cpu->xsites, cpu->xsites_cap, &x);
    cpu->n_xsites++;
    return 1;
}

void emu_xsites_range(crec_emu_cpu *cpu, uint64_t first, uint64_t last)
{
    if (!cpu->xsite_range)
        return;
    cpu->xsite_range[0] = first ? first : EMU_XSITE_IDLE;
    cpu->xsite_range[1] = first ? last : EMU_XSITE_IDLE;
}

/* Drop the sites in [addr, addr+len) (len 0: all), hooks included. */
static void xsites_forget(crec_emu_cpu *cpu, uint64_t addr, uint64_t len)
{
    struct emu_xsite *old = cpu->xsites;
    size_t cap = cpu->xsites_cap;

    if (!cpu->n_xsites)
        return;
    cpu->xsites = crec_calloc(cap, sizeof *cpu->xsites);
    if (!cpu->xsites) { /* keep them all: a stale site is only a wasted hook */
        cpu->xsites = old;
        return;
    }
    cpu->n_xsites = 0;
    for (size_t i = 0; i < cap; i++) {
        if (!old[i].addr)
            continue;
        if (len == 0 || (old[i].addr >= addr && old[i].addr < addr + len)) {
            if (old[i].hook)
                uc_hook_del(cpu->uc, old[i].hook);
            continue;
        }
        xsite_put(cpu->xsites, cap, &old[i]);
        cpu->n_xsites++;
    }
    crec_free(old);
}

void emu_xsites_free(crec_emu_cpu *cpu, int del_hooks)
{
    if (del_hooks) {
        xsites_forget(cpu, 0, 0);
        if (cpu->xsite_hook)
            uc_hook_del(cpu->uc, cpu->xsite_hook);
    }
    cpu->xsite_hook = 0;
    cpu->xsite_range = NULL;
    crec_free(cpu->xsites);
    cpu->xsites = NULL;
    cpu->xsites_cap = cpu->n_xsites = 0;
}

/*
 * Is this instruction atomic on a multiprocessor: a lock prefix among its
 * legacy prefixes, or xchg with a memory operand (locked implicitly)?
 * These are the synchronisation points a recording sequences.
 */
static int insn_atomic(const cs_insn *insn)
{
    for (unsigned i = 0; i < insn->size; i++) {
        uint8_t b = insn->bytes[i];
        if (b == 0xf0)
            return 1;
        if (b != 0xf2 && b != 0xf3 && b != 0x2e && b != 0x36 && b != 0x3e && b != 0x26 &&
            b != 0x64 && b != 0x65 && b != 0x66 && b != 0x67)
            break;
    }
    return insn->id == X86_INS_XCHG && strchr(insn->op_str, '[') != NULL;
}

/* Keep the list of atomic instructions of a block: @return its reference
 * for emu_block.atomics, or 0 when there is no room (not sequenced then). */
static uint16_t atomics_keep(crec_emu_cpu *cpu, const uint16_t *idx, unsigned n)
{
    size_t at = cpu->n_atomic_lists, need = at + 1 + n;
    uint16_t *p;

    if (need > 0xffff)
        return 0;
    p = crec_grow(cpu->atomic_lists, &cpu->cap_atomic_lists, need, sizeof *p, 256);
    if (!p)
        return 0;
    cpu->atomic_lists = p;
    p[at] = (uint16_t)n;
    memcpy(p + at + 1, idx, n * sizeof *idx);
    cpu->n_atomic_lists = need;
    return (uint16_t)(at + 1);
}

/*
 * Decode a block seen for the first time: count its instructions, and put
 * a bounded code hook on each RDTSC/RDTSCP and on the first of each run of
 * instructions crec executes itself (the hook runs the whole run).  A hook
 * applies only to code translated after it, so when one is added the
 * block's translation is dropped, and the run loop enters it again.  The
 * bytes are read past the block's end: TCG ends a block in the middle of
 * an instruction it can't decode.
 */
static int block_learn(crec_emu_cpu *cpu, uint64_t addr, uint32_t size, struct emu_block *out)
{
    uint8_t buf[4096 + 16];
    const uint8_t *code = buf;
    size_t got = 0, left;
    uint64_t pc = addr, end;
    struct xi_insn xi;
    cs_insn *insn;
    int added = 0, prev_site = 0;
    long n = 0, nrun = 0, run = 0; /* run: sites in a row from the first */
    long ntsc = 0;
    uint16_t idx[EMU_BLOCK_MAX_INSNS];
    unsigned nat = 0;

    if (size > 4096)
        size = 4096;
    got = emu_mem_read_mapped(cpu, buf, addr, size + 16);
    end = addr + (size ? size : 1);
    left = got;
    insn = cs_malloc(cpu->cs);
    while (insn && pc < end && left > 0) {
        uint64_t at = pc;
        unsigned len = insn_next(cpu, &code, &left, &pc, insn, &xi);
        if (!len)
            break;
        if (at < addr + size || !size) {
            /* the atomic ones are the block's sequencing points (threads) */
            if (xi.kind == XI_NONE && insn_atomic(insn) && nat < EMU_BLOCK_MAX_INSNS &&
                n < 0xffff)
                idx[nat++] = (uint16_t)n;
            n++;
        }
        if (xi.kind != XI_NONE && xi_is_site(&xi)) {
            if (!prev_site || at == addr)
                added |= trap_xsite(cpu, at);
            /* the first run of them ends the block's visit (xinsn.c) */
            if ((at < addr + size || !size) && (nrun == 0 || (prev_site && run > 0)) &&
                run < EMU_XI_BATCH)
                nrun = n, run++;
            else if (run > 0)
                run = -1; /* done */
            prev_site = 1;
            continue;
        }
        if (run > 0)
            run = -1;
        prev_site = 0;
        if (xi.kind == XI_NONE && (insn->id == X86_INS_RDTSC || insn->id == X86_INS_RDTSCP)) {
            added |= trap_special(cpu, at, (void *)rdtsc_hook);
            if (!ntsc && (at < addr + size || !size))
                ntsc = n; /* counted above: this one included */
        }
        else if (xi.kind == XI_NONE && privileged(insn))
            added |= trap_special(cpu, at, (void *)privileged_hook);
    }
    if (pc < addr + size && left > 0)
        n++; /* an instruction nobody knows still counts as one */
    if (insn)
        cs_free(insn, 1);
    out->addr = addr;
    out->size = size;
    out->ninsns = (uint32_t)n;
    out->nrun = nrun > 0 && nrun < n ? (uint32_t)nrun : 0;
    out->ntsc = (uint32_t)ntsc;
    out->atomics = 0;
    out->sum = block_sum(cpu, addr, size);
    if (added) {
        uc_ctl_remove_cache(cpu->uc, addr, addr + (size ? size : 1));
        cpu->restart_at = addr;
        uc_emu_stop(cpu->uc);
        return 1;
    }
    if (nat) /* kept once the block is learnt, not for a visit that starts again */
        out->atomics = atomics_keep(cpu, idx, nat);
    if (cpu->blocks_used * 2 >= cpu->blocks_cap && blocks_grow(cpu) != 0)
        return 0;
    block_put(cpu->blocks, cpu->blocks_cap, out);
    cpu->blocks_used++;
    return 0;
}

void emu_block_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud)
{
    crec_emu_cpu *cpu = ud;
    size_t i = block_slot(addr, cpu->blocks_cap);
    struct emu_block b;

    (void)uc;
    if (cpu->xstop_pending) { /* see emu_int.h: the block must not run */
        if (cpu->stop_requested)
            cpu->xstop_rip = addr; /* a syscall's stop, asked again: RIP here */
        uc_emu_stop(cpu->uc);
        return;
    }
    if (cpu->restart_at)
        return; /* stopping: this block will be entered again */
    if (cpu->until_stop_rip) { /* an exact stop went on here: stop before it */
        uc_emu_stop(uc);
        return;
    }
    for (;;) {
        const struct emu_block *s = &cpu->blocks[i];
        if (s->addr == addr && s->size == size && (!s->sum || s->sum == block_sum(cpu, addr, size))) {
            b = *s;
            break;
        }
        if (s->addr == 0 || s->addr == addr) {
            /* new, or same start and a new size or new bytes (retranslated code) */
            if (s->addr == addr)
                emu_blocks_forget(cpu, addr, 1);
            if (block_learn(cpu, addr, size, &b))
                return;
            break;
        }
        i = (i + 1) & (cpu->blocks_cap - 1);
    }
    cpu->icount += b.ninsns;
    cpu->cur_block = addr;
    cpu->cur_block_n = b.ninsns;
    cpu->cur_block_size = size;
    cpu->cur_atomics = b.atomics ? cpu->atomic_lists + b.atomics - 1 : NULL;
    cpu->cur_block_run = b.nrun;
    cpu->cur_block_tsc = b.ntsc;
    if (cpu->hooks.block) {
        cpu->in_block_hook = 1;
        cpu->hooks.block(cpu->hooks.ctx, addr, b.ninsns, cpu->icount);
        cpu->in_block_hook = 0;
    }
    if (cpu->until_armed && !cpu->stop_requested && cpu->icount > cpu->until) {
        cpu->in_block_hook = 1;
        until_check(cpu, addr, size);
        cpu->in_block_hook = 0;
    }
}

unsigned crec_emu_cpu_block_atomics(const crec_emu_cpu *cpu, const uint16_t **index)
{
    if (!cpu->cur_atomics) {
        *index = NULL;
        return 0;
    }
    *index = cpu->cur_atomics + 1;
    return cpu->cur_atomics[0];
}

/* ---- exact stops: query runs, and switches inside blocks ----------------- */

uint64_t crec_emu_cpu_icount_at(crec_emu_cpu *cpu, uint64_t rip)
{
    uint64_t before = cpu->icount - cpu->cur_block_n;
    long n;

    if (rip < cpu->cur_block || rip >= cpu->cur_block + cpu->cur_block_size)
        return before;
    n = emu_count_insns(cpu, cpu->cur_block, cpu->cur_block_size, rip);
    return n < 0 ? before : before + (uint64_t)n;
}

uint32_t crec_emu_cpu_block_insns(crec_emu_cpu *cpu)
{
    uint32_t n = cpu->cur_block_n;

    /* Instructions crec executes itself leave the block after their run. */
    if (cpu->cur_block_run && cpu->cur_block_run < n)
        n = cpu->cur_block_run;
    /* An emulated RDTSC leaves its block (rdtsc_hook): the rest does not
     * run.  (A size of 0: no block is running, or a hook ended it.) */
    if (cpu->cur_block_tsc && cpu->cur_block_size && cpu->cur_block_tsc < n)
        n = cpu->cur_block_tsc;
    return n;
}

/* The bounded code hook on the instruction that must not run. */
static void until_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud)
{
    crec_emu_cpu *cpu = ud;

    (void)uc, (void)size;
    if (!cpu->until_armed || crec_emu_cpu_icount_at(cpu, addr) != cpu->until)
        return;
    emu_until_stop(cpu, addr);
}

void emu_until_stop(crec_emu_cpu *cpu, uint64_t addr)
{
    cpu->until_armed = 0;
    cpu->until_hook_is_stale = 1;
    cpu->icount = cpu->until;
    cpu->cur_block_n = 0, cpu->cur_block_size = 0;
    /* Writing RIP leaves the block here, before the instruction runs.  A
     * stop asked for after that is undone by Unicorn 2.0.1 (a hook that
     * writes the PC makes it go on at the new PC: tcg_exec_all clears
     * stop_request on quit_request), so the block hook stops the block
     * that starts here, before it runs. */
    emu_reg_set(cpu, UC_X86_REG_RIP, addr);
    cpu->until_stop_rip = addr;
    cpu->stop_requested = 1;
    uc_emu_stop(cpu->uc);
}

/* From emu_block_hook: the block that starts at addr holds instruction
 * `until`+1.  Stop before it, or trap inside it. */
static void until_check(crec_emu_cpu *cpu, uint64_t addr, uint32_t size)
{
    uint64_t before = cpu->icount - cpu->cur_block_n;
    uint8_t buf[4096];
    const uint8_t *code = buf;
    size_t left = size > sizeof buf ? sizeof buf : size;
    uint64_t pc = addr, k, target = 0;
    cs_insn *insn;

    if (before >= cpu->until) {
        cpu->until_armed = 0;
        crec_emu_cpu_stop(cpu); /* uncounts the block */
        emu_reg_set(cpu, UC_X86_REG_RIP, addr);
        return;
    }
    if (cpu->h_until)
        return; /* trapped already: the code hook stops it */
    k = cpu->until - before; /* instructions of this block that must run */
    if (crec_emu_mem_read(cpu, buf, addr, left) != 0)
        return;
    insn = cs_malloc(cpu->cs);
    if (!insn)
        return;
    for (uint64_t i = 0; i <= k && cs_disasm_iter(cpu->cs, &code, &left, &pc, insn); i++)
        if (i == k)
            target = insn->address;
    cs_free(insn, 1);
    if (!target)
        return;
    uc_err ue = uc_hook_add(cpu->uc, &cpu->h_until, UC_HOOK_CODE, (void *)until_hook, cpu,
                            target, target);
    if (ue != UC_ERR_OK) {
        cpu->h_until = 0; /* the run would go past `until`: stop it with the reason */
        emu_engine_error(cpu, ue, "can't stop at instruction %" PRIu64 " (0x%" PRIx64 ")",
                         cpu->until, target);
        return;
    }
    cpu->until_block = addr;
    cpu->until_block_size = size;
    /* take the block back and enter it again, retranslated with the hook */
    cpu->icount -= cpu->cur_block_n;
    cpu->cur_block_n = 0, cpu->cur_block_size = 0;
    uc_ctl_remove_cache(cpu->uc, addr, addr + (size ? size : 1));
    cpu->restart_at = addr;
    uc_emu_stop(cpu->uc);
}

void emu_until_clear(crec_emu_cpu *cpu)
{
    if (cpu->h_until) {
        uc_hook_del(cpu->uc, cpu->h_until);
        uc_ctl_remove_cache(cpu->uc, cpu->until_block,
                            cpu->until_block + (cpu->until_block_size ? cpu->until_block_size : 1));
        cpu->h_until = 0;
    }
    cpu->until_hook_is_stale = 0;
}

int crec_emu_cpu_stop_inside(crec_emu_cpu *cpu, uint64_t t)
{
    uint64_t before = cpu->icount - cpu->cur_block_n;

    if (!cpu->in_block_hook || t <= before || t >= cpu->icount || cpu->until_armed)
        return -1;
    emu_until_clear(cpu);
    cpu->until = t;
    cpu->until_armed = 1;
    until_check(cpu, cpu->cur_block, cpu->cur_block_size);
    if (!cpu->h_until) { /* could not set the hook: no stop */
        cpu->until_armed = 0;
        return -1;
    }
    return 0;
}

int crec_emu_cpu_run_until(crec_emu_cpu *cpu, uint64_t t, int *reached,
                           struct crec_emu_stop *stop, crec_error *err)
{
    int rc;

    *reached = 0;
    if (cpu->icount >= t) {
        memset(stop, 0, sizeof *stop);
        *reached = cpu->icount == t;
        return CREC_OK;
    }
    cpu->until = t;
    cpu->until_armed = 1;
    cpu->h_until = 0;
    rc = crec_emu_cpu_run(cpu, stop, err);
    *reached = cpu->icount == t;
    cpu->until_armed = 0;
    emu_until_clear(cpu);
    return rc;
}

/* ---- which instruction made a memory access ------------------------------------ */

/* The value of a base or index register of an address, as Capstone names it. */
static int addr_reg(crec_emu_cpu *cpu, unsigned reg, uint64_t next_rip, uint64_t *v)
{
    static const struct { unsigned cs; int uc; } map[] = {
        {X86_REG_RAX, UC_X86_REG_RAX}, {X86_REG_RCX, UC_X86_REG_RCX},
        {X86_REG_RDX, UC_X86_REG_RDX}, {X86_REG_RBX, UC_X86_REG_RBX},
        {X86_REG_RSP, UC_X86_REG_RSP}, {X86_REG_RBP, UC_X86_REG_RBP},
        {X86_REG_RSI, UC_X86_REG_RSI}, {X86_REG_RDI, UC_X86_REG_RDI},
        {X86_REG_R8, UC_X86_REG_R8},   {X86_REG_R9, UC_X86_REG_R9},
        {X86_REG_R10, UC_X86_REG_R10}, {X86_REG_R11, UC_X86_REG_R11},
        {X86_REG_R12, UC_X86_REG_R12}, {X86_REG_R13, UC_X86_REG_R13},
        {X86_REG_R14, UC_X86_REG_R14}, {X86_REG_R15, UC_X86_REG_R15},
    };

    if (reg == X86_REG_INVALID) {
        *v = 0;
        return 0;
    }
    if (reg == X86_REG_RIP) {
        *v = next_rip;
        return 0;
    }
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].cs == reg) {
            *v = emu_reg_get(cpu, map[i].uc);
            return 0;
        }
    return -1; /* a 32-bit address or something rarer: not worked out */
}

/* A register an instruction may use as a pointer without naming it. */
static int implicit_pointer(uint16_t reg)
{
    return reg == X86_REG_RSP || reg == X86_REG_ESP || reg == X86_REG_RSI ||
           reg == X86_REG_ESI || reg == X86_REG_RDI || reg == X86_REG_EDI ||
           reg == X86_REG_RBX || reg == X86_REG_EBX;
}

/* Does an explicit memory operand of insn cover addr, with the registers
 * as they are now?  @return 1 yes, 0 no (nor can an implicit one), -1
 * can't tell. */
static int insn_touches(crec_emu_cpu *cpu, const cs_insn *insn, uint64_t addr)
{
    const cs_x86 *x = &insn->detail->x86;
    int any = 0;

    for (uint8_t k = 0; k < x->op_count; k++) {
        const cs_x86_op *op = &x->operands[k];
        uint64_t base, index, ea;
        if (op->type != X86_OP_MEM)
            continue;
        if (addr_reg(cpu, op->mem.base, insn->address + insn->size, &base) != 0 ||
            addr_reg(cpu, op->mem.index, 0, &index) != 0)
            return -1;
        ea = base + index * (uint64_t)op->mem.scale + (uint64_t)op->mem.disp;
        if (op->mem.segment == X86_REG_FS)
            ea += emu_reg_get(cpu, UC_X86_REG_FS_BASE);
        else if (op->mem.segment == X86_REG_GS)
            ea += emu_reg_get(cpu, UC_X86_REG_GS_BASE);
        any = 1;
        if (addr >= ea && addr - ea < (op->size ? op->size : 8))
            return 1;
    }
    if (any)
        return 0;
    /* no memory operand: it touches memory only through an implicit one
     * (the stack, a string instruction's RSI/RDI, xlat's RBX): can't say */
    for (uint8_t k = 0; k < insn->detail->regs_read_count; k++)
        if (implicit_pointer(insn->detail->regs_read[k]))
            return -1;
    for (uint8_t k = 0; k < insn->detail->regs_write_count; k++)
        if (implicit_pointer(insn->detail->regs_write[k]))
            return -1;
    return 0;
}

uint64_t crec_emu_cpu_access_rip(crec_emu_cpu *cpu, uint64_t rip, uint64_t addr)
{
    uint8_t buf[4096];
    const uint8_t *code = buf;
    uint64_t pc = rip, end = cpu->cur_block + cpu->cur_block_size, found = rip;
    size_t left;
    cs_insn *insn;
    int first = 1;

    if (!cpu->cur_atomics)
        return rip; /* no atomic instruction in the block: RIP is right */
    if (rip < cpu->cur_block || rip >= end) { /* still the block before's: from the start */
        rip = pc = cpu->cur_block;
        first = 0;
    }
    if (!cpu->cs_detail) {
        if (cs_open(CS_ARCH_X86, CS_MODE_64, &cpu->cs_detail) != CS_ERR_OK)
            return rip;
        cs_option(cpu->cs_detail, CS_OPT_DETAIL, CS_OPT_ON);
    }
    left = end - rip > sizeof buf ? sizeof buf : end - rip;
    if (crec_emu_mem_read(cpu, buf, rip, left) != 0 || !(insn = cs_malloc(cpu->cs_detail)))
        return rip;
    while (cs_disasm_iter(cpu->cs_detail, &code, &left, &pc, insn)) {
        int t = insn_touches(cpu, insn, addr);
        if (first && t != 0)
            break; /* the instruction at RIP is the one (or it can't be told) */
        first = 0;
        /* an atomic helper does not bring RIP up to date: a later one of
         * the block that touches addr made the access */
        if (t == 1 && insn_atomic(insn)) {
            found = insn->address;
            break;
        }
    }
    cs_free(insn, 1);
    return found;
}
