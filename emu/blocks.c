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
    crec_free(cpu->rdtsc_sites);
    cpu->rdtsc_sites = NULL;
    crec_free(cpu->rdtsc_hooks);
    cpu->rdtsc_hooks = NULL;
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

long emu_count_insns(crec_emu_cpu *cpu, uint64_t addr, uint64_t size, uint64_t upto)
{
    uint8_t buf[4096 + 16];
    const uint8_t *code = buf;
    size_t left;
    uint64_t pc = addr;
    cs_insn *insn;
    long n = 0;

    if (size > 4096)
        size = 4096;
    if (crec_emu_mem_read(cpu, buf, addr, size) != 0)
        return -1;
    left = size;
    insn = cs_malloc(cpu->cs);
    if (!insn)
        return -1;
    while (pc < upto && left > 0 && cs_disasm_iter(cpu->cs, &code, &left, &pc, insn))
        n++;
    if (pc < upto && left > 0)
        n++; /* an instruction Capstone does not know still counts as one */
    cs_free(insn, 1);
    return n;
}

void emu_describe_insn(crec_emu_cpu *cpu, uint64_t addr, char *buf, size_t size)
{
    uint8_t code[16];
    size_t got = 0, off;
    cs_insn *insn = NULL;

    while (got < sizeof code && crec_emu_mem_read(cpu, code + got, addr + got, 1) == 0)
        got++;
    if (got == 0) {
        snprintf(buf, size, "(unmapped)");
        return;
    }
    size_t n = cs_disasm(cpu->cs, code, got, addr, 1, &insn);
    size_t len = n ? insn[0].size : (got < 4 ? got : 4);
    off = 0;
    for (size_t i = 0; i < len && off + 3 < size; i++)
        off += snprintf(buf + off, size - off, "%s%02x", i ? " " : "", code[i]);
    if (n)
        snprintf(buf + off, size - off, " (%s%s%s)", insn[0].mnemonic,
                 insn[0].op_str[0] ? " " : "", insn[0].op_str);
    else
        snprintf(buf + off, size - off, " (not decodable)");
    if (n)
        cs_free(insn, n);
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
        uint16_t i = 0;
        while (i < insn->size && (insn->bytes[i] == 0x66 || insn->bytes[i] == 0x67 ||
                                  insn->bytes[i] == 0xf0 || insn->bytes[i] == 0xf2 ||
                                  insn->bytes[i] == 0xf3 || insn->bytes[i] == 0x2e ||
                                  insn->bytes[i] == 0x36 || insn->bytes[i] == 0x3e ||
                                  insn->bytes[i] == 0x26 || insn->bytes[i] == 0x64 ||
                                  insn->bytes[i] == 0x65 || (insn->bytes[i] & 0xf0) == 0x40))
            i++; /* prefixes and REX */
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

/* Whether the bytes may hold an RDTSC (0f 31), an RDTSCP (0f 01 f9) or a
 * privileged instruction: when they don't, which is almost always, no
 * decoding is needed to know that the block has none. */
static int may_hold_special(const uint8_t *code, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t b = code[i], c = i + 1 < n ? code[i + 1] : 0;
        if (b == 0xfa || b == 0xfb || (b >= 0xe4 && b <= 0xe7) || (b >= 0xec && b <= 0xef) ||
            (b >= 0x6c && b <= 0x6f)) /* cli sti in out ins outs */
            return 1;
        if (b == 0x0f && (c == 0x31 || c == 0x01 || c == 0x00 || c == 0x30 || c == 0x32 ||
                          c == 0x33 || c == 0x06 || c == 0x07 || c == 0x08 || c == 0x09 ||
                          c == 0x35 || (c >= 0x20 && c <= 0x23) || c == 0x38))
            return 1;
    }
    return 0;
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

/* Add bounded hooks for the RDTSCs and privileged instructions of a new
 * block.  Returns 1 if any. */
static int trap_special(crec_emu_cpu *cpu, uint64_t addr, uint32_t size)
{
    uint8_t buf[4096];
    const uint8_t *code = buf;
    size_t left = size > sizeof buf ? sizeof buf : size;
    uint64_t pc = addr;
    cs_insn *insn;
    int added = 0;

    if (crec_emu_mem_read(cpu, buf, addr, left) != 0 || !may_hold_special(buf, left))
        return 0;
    insn = cs_malloc(cpu->cs);
    if (!insn)
        return 0;
    while (cs_disasm_iter(cpu->cs, &code, &left, &pc, insn)) {
        int is_rdtsc = insn->id == X86_INS_RDTSC || insn->id == X86_INS_RDTSCP;
        uc_hook h;
        if (!is_rdtsc && !privileged(insn))
            continue;
        if (rdtsc_known(cpu, insn->address))
            continue;
        if (cpu->n_rdtsc == cpu->cap_rdtsc && rdtsc_grow(cpu) != 0)
            break;
        if (uc_hook_add(cpu->uc, &h, UC_HOOK_CODE,
                        is_rdtsc ? (void *)rdtsc_hook : (void *)privileged_hook, cpu,
                        insn->address, insn->address) != UC_ERR_OK)
            continue;
        cpu->rdtsc_hooks[cpu->n_rdtsc] = h;
        cpu->rdtsc_sites[cpu->n_rdtsc++] = insn->address;
        added = 1;
    }
    cs_free(insn, 1);
    return added;
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

/* Decode a block seen for the first time. */
static int block_learn(crec_emu_cpu *cpu, uint64_t addr, uint32_t size, struct emu_block *out)
{
    long n = emu_count_insns(cpu, addr, size, addr + size);

    out->addr = addr;
    out->size = size;
    out->ninsns = n < 0 ? 1 : (uint32_t)n;
    out->sum = block_sum(cpu, addr, size);
    if (trap_special(cpu, addr, size)) {
        uc_ctl_remove_cache(cpu->uc, addr, addr + (size ? size : 1));
        cpu->restart_at = addr;
        uc_emu_stop(cpu->uc);
        return 1;
    }
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
    if (cpu->restart_at)
        return; /* stopping: this block will be entered again */
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

/* ---- exact stops, for query runs --------------------------------------- */

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

    /* An emulated RDTSC leaves its block (rdtsc_hook): the rest does not run. */
    for (size_t i = 0; i < cpu->n_rdtsc; i++) {
        uint64_t site = cpu->rdtsc_sites[i];
        long before;
        if (site < cpu->cur_block || site >= cpu->cur_block + cpu->cur_block_size)
            continue;
        before = emu_count_insns(cpu, cpu->cur_block, cpu->cur_block_size, site);
        if (before >= 0 && (uint64_t)before + 1 < n)
            n = (uint32_t)before + 1;
    }
    return n;
}

/* The bounded code hook on the instruction that must not run. */
static void until_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud)
{
    crec_emu_cpu *cpu = ud;

    (void)uc, (void)size;
    if (!cpu->until_armed || crec_emu_cpu_icount_at(cpu, addr) != cpu->until)
        return;
    cpu->until_armed = 0;
    cpu->icount = cpu->until;
    cpu->cur_block_n = 0, cpu->cur_block_size = 0;
    /* Writing RIP leaves the block here, before the instruction runs. */
    emu_reg_set(cpu, UC_X86_REG_RIP, addr);
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
    if (cpu->h_until) {
        uc_hook_del(cpu->uc, cpu->h_until);
        uc_ctl_remove_cache(cpu->uc, cpu->until_block,
                            cpu->until_block + (cpu->until_block_size ? cpu->until_block_size : 1));
        cpu->h_until = 0;
    }
    return rc;
}
