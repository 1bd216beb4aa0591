/*
 * qexec.c - execution runs: a query run that also tells a client (index/
 * exec.c, behind crec_exec_run) about every block, instruction, memory
 * access and syscall, and lets it look at the CPU from its callbacks
 * without seeing the emulator.
 *
 * Instructions are reported by Unicorn code hooks: one everywhere when the
 * client wants every instruction (then the count of an instruction is the
 * block's start plus the hooks seen since it began, which costs nothing),
 * else one bounded hook per address, which costs nothing elsewhere (the
 * count is then worked out from the block's start by decoding).
 *
 * A client that halts the run is told nothing more: Unicorn may still run
 * the rest of the block, which no one sees.
 */
#include "common/common.h"
#include "replayer/replayer_int.h"

static crec_replay_qrun *qrun_of(struct rep_seg *s)
{
    return s->owner;
}

static struct rep_seg *seg_of(crec_replay_qrun *q)
{
    return (struct rep_seg *)(void *)q; /* a qrun is its rep_seg (qrun.c) */
}

static void code_hook(void *ctx, uint64_t addr, unsigned size)
{
    struct rep_seg *s = ctx;
    uint64_t t;

    (void)size;
    if (s->halted || !s->exec->insn)
        return;
    if (s->exec->every_insn)
        t = s->blk_t + s->blk_k++;
    else
        t = crec_emu_cpu_icount_at(s->cpu, addr);
    s->rip_fix = 0; /* Unicorn sets RIP for a code hook */
    s->exec->insn(s->exec->ctx, qrun_of(s), t, addr);
}

int rep_exec_open(struct rep_seg *s, crec_error *err)
{
    const struct crec_replay_exec *x = s->exec;
    int rc = CREC_OK;

    if (!x->insn)
        return CREC_OK;
    if (x->every_insn)
        return crec_emu_cpu_hook_code(s->cpu, 1, 0, code_hook, s, err);
    for (size_t i = 0; i < x->n_addrs && rc == CREC_OK; i++)
        if (i == 0 || x->addrs[i] != x->addrs[i - 1])
            rc = crec_emu_cpu_hook_code(s->cpu, x->addrs[i], x->addrs[i], code_hook, s, err);
    return rc;
}

void rep_exec_block(struct rep_seg *s, uint64_t addr, uint32_t ninsns, uint64_t before)
{
    /* The exact stop may take a block back and enter it again (emu's
     * until_check): the same block at the same count is reported once. */
    int again = s->blk_seen && s->blk_t == before && s->blk_addr == addr;

    s->blk_t = before;
    s->blk_addr = addr;
    s->blk_k = 0;
    s->blk_seen = 1;
    if (again || s->halted || !s->exec->block)
        return;
    ninsns = crec_emu_cpu_block_insns(s->cpu); /* an RDTSC cuts it short */
    s->rip_fix = addr; /* inside a block hook RIP can still be in the block before */
    s->exec->block(s->exec->ctx, qrun_of(s), before, addr, ninsns);
    s->rip_fix = 0;
}

void rep_exec_access(struct rep_seg *s, int kind, uint64_t addr, uint64_t len,
                     const uint8_t *value)
{
    if (s->halted || !s->exec->access)
        return;
    s->in_syscall = kind == 'k';
    s->exec->access(s->exec->ctx, qrun_of(s), kind, addr, len, value);
    s->in_syscall = 0;
}

void rep_exec_syscall(struct rep_seg *s, const crec_fmt_event *ev)
{
    uint64_t rip = crec_emu_reg_get(s->cpu, CREC_EMU_RIP);

    if (s->halted || !s->exec->syscall)
        return;
    /* the syscall ends its block, so it is the last instruction counted */
    s->rip_fix = rip + 2; /* past the 2-byte `syscall`, where the run goes on */
    s->exec->syscall(s->exec->ctx, qrun_of(s), crec_emu_cpu_icount(s->cpu) - 1, ev->u.sys.nr,
                     ev->u.sys.args, ev->u.sys.ret);
    s->rip_fix = 0;
}

void crec_replay_qrun_halt(crec_replay_qrun *q)
{
    struct rep_seg *s = seg_of(q);

    if (!s->halted) {
        s->halted = 1;
        crec_emu_cpu_stop(s->cpu);
    }
}

int crec_replay_qrun_halted(const crec_replay_qrun *q)
{
    return ((const struct rep_seg *)(const void *)q)->halted;
}

uint64_t crec_replay_qrun_time(crec_replay_qrun *q)
{
    struct rep_seg *s = seg_of(q);
    uint64_t rip;

    if (s->in_syscall)
        return crec_emu_cpu_icount(s->cpu) - 1;
    if (s->exec && s->exec->insn && s->exec->every_insn && s->blk_k > 0)
        return s->blk_t + s->blk_k - 1; /* the instruction the code hook saw last */
    rip = crec_emu_reg_get(s->cpu, CREC_EMU_RIP);
    return crec_emu_cpu_icount_at(s->cpu, rip);
}

uint32_t crec_replay_qrun_tid(const crec_replay_qrun *q)
{
    return ((const struct rep_seg *)(const void *)q)->tid;
}

uint64_t crec_replay_qrun_reg(crec_replay_qrun *q, int id)
{
    struct rep_seg *s = seg_of(q);

    if (id < 0 || id > CREC_FMT_REG_GS_BASE)
        return 0;
    if (id == CREC_FMT_REG_RIP && s->rip_fix)
        return s->rip_fix;
    /* emu's ids follow crec_gpr order, then rip, rflags, fs_base, gs_base,
     * as the SYSCALL record's ids do */
    return crec_emu_reg_get(s->cpu, (enum crec_emu_reg)(CREC_EMU_RAX + id));
}

int crec_replay_qrun_predicted(const crec_replay_qrun *q)
{
    return seg_of((crec_replay_qrun *)q)->predicted;
}

void crec_replay_qrun_write_masked(crec_replay_qrun *q, uint64_t line, uint64_t mask,
                                   const uint8_t *values)
{
    rep_write_line(seg_of(q), line, mask, values);
}
