/*
 * ucfix.c - work-arounds for Debian's Unicorn 2.0.1, applied by
 * defining some of the library's internal functions in our own program.
 *
 * libunicorn calls its internal functions through its PLT, so a function
 * of the same name that the executable exports (emu/ucfix.sym) replaces the
 * library's in the whole process (recording, replay and `crec run`).  Each replacement
 * changes nothing unless the library reports version 2.0.1; any other
 * version gets its own functions back through dlsym of the library (ucload.c).
 *
 * 1. Every store built and freed a tree.  Unicorn 2.0.1 never marks a page
 *    of guest RAM dirty (its tlb_unprotect_code() and
 *    cpu_physical_memory_test_and_clear_dirty() are empty), so every TLB
 *    entry for writable RAM carries TLB_NOTDIRTY and every guest store
 *    takes QEMU's slow path through notdirty_write().  That calls
 *    page_collection_lock(), which builds a GLib tree with one malloc'ed
 *    entry per page, and page_collection_unlock(), which frees it again:
 *    half of the time of `sort` (unicorn issue #1970).  The collection only
 *    takes page locks, which are no-ops in Unicorn (one vCPU); its one other
 *    reader is the unlock after a self-modifying store, which gets it back
 *    unused.  Upstream dropped it after 2.0.1 (unicorn PR #1838).  The store
 *    still takes the slow path, and still invalidates code it writes over.
 *
 * 2. Every store looked for code to invalidate.  notdirty_write() then
 *    calls tb_invalidate_phys_page_fast(), which walks QEMU's page table to
 *    find out whether the page holds translated code: 120 instructions of
 *    the 270 a store costs.  A page gets its first block through
 *    tlb_protect_code(), so a bitmap of the pages it was called for (never
 *    cleared: a page that held code once keeps the slow check) lets a store
 *    anywhere else skip the walk.  The bitmap covers the first 2^22 pages
 *    of Unicorn's RAM offsets (16 GiB); stores beyond it are always checked.
 *
 * 3. Every slow-path access searched the regions.  memory_mapping(), the
 *    region holding an address, is a binary search over every region
 *    (every mapping of the guest), and the slow path calls it for each
 *    load and store: for every store (above), and for every access once
 *    memory hooks are installed (recording, replay).  A small cache per
 *    thread of its answers by page sits in front of it.  The answers change
 *    only when regions do: emu_uc_open, emu_uc_close and the emu_uc_mem_*
 *    wrappers below, the only way crec changes them, empty every cache and
 *    keep this thread's off while Unicorn rearranges its regions.
 *
 * 4. The CPU could do more than it was allowed to.  Whatever CPU model is
 *    asked for, 2.0.1's x86_reg_reset() overwrites the feature words that
 *    the translator consults with a fixed set (CX8 CMOV CLFSH FXSR SSE
 *    SSE2; SSSE3 CX16 SSE4.1 SSE4.2 AES; BMI1 BMI2 ADX SMAP; LAHF ABM), so
 *    QEMU's own translations of POPCNT, MOVBE and PCLMULQDQ raise #UD.
 *    crec's reset runs Unicorn's, then turns those bits (and SSE3) on in
 *    the CPU it just made.  The feature words are found by their known
 *    2.0.1 values (three words in a row, inside the CPU object that
 *    cpu_x86_init() returned), never by an offset taken on trust.
 *
 * 6. Unmapping a region flushed the TLB one page at a time.
 *    memory_unmap() calls tlb_flush_page() for every page of the region:
 *    40 s for a 1 TiB one.  While crec unmaps (emu_uc_mem_unmap), the
 *    first such call flushes the whole TLB instead, and the rest do
 *    nothing; a whole flush drops every entry the page flushes would.
 *
 * 7. Every load and store with a memory hook took Unicorn's slow path.
 *    A memory hook makes the translated code call the load and store
 *    helpers for every guest access, and they search the region, walk the
 *    hook lists, check permissions and the TLB, and, for a store, mark the
 *    page dirty and look for code to invalidate: that, not the hooks, was
 *    most of the cost of recording and replay over plain emulation.  The
 *    helpers the translated code calls (helper_le_ldq_mmu and the rest)
 *    are replaced; each hands the access to cpu.c's fast path
 *    (emu_fast_load, emu_fast_store), which does it through host memory
 *    for an access inside one page of plain RAM, calling the client's
 *    hooks as Unicorn does, and otherwise calls the library's own helper.
 *    A store to a RAM page some block was translated from (the bitmap of
 *    2 above) always goes the library's way, which invalidates that code.
 *
 * 5. A code hook costs a walk of every code hook.  helper_uc_tracecode()
 *    calls every UC_HOOK_CODE whose range holds the address, after walking
 *    the whole list; crec hooks each instruction that it executes itself
 *    (emu/xinsn.c), hundreds in a program built with -march=native.  Its
 *    replacement hands those addresses straight to crec (emu_xinsn_fast)
 *    and passes every other call on.
 *
 * 8. Some invalid instructions killed the process.  2.0.1's translator
 *    calls abort() ("tcg fatal error") on a few encodings a CPU answers
 *    with #UD (a far call through a register, LOCK on cmp: blocks.c's
 *    tcg_aborts), so a guest that ran one, or a corrupt recording that
 *    made replay run one, took crec down with it.  Before a block is
 *    translated (tb_gen_code), emu looks over the instructions it will
 *    hold: a block that would reach such an instruction is cut short of
 *    it, and one that starts with it is not translated: the engine leaves
 *    the translator (cpu_loop_exit) and crec stops as for an illegal
 *    instruction, which the guest gets as SIGILL.
 *
 * 9. One code hook per site cost translation a walk of them all.  The
 *    translator looks through every code hook for each instruction it
 *    translates (HOOK_EXISTS_BOUNDED), and at the end of each block
 *    again, so with a hook on each instruction crec executes itself
 *    (thousands in a -march=native build) translation slowed with their
 *    number.  The sites share one hook (blocks.c), whose range, found in
 *    the hook by the values it was added with, spans the sites of each
 *    block while it is translated and nothing otherwise; calls for other
 *    instructions in that span are passed on as 5 says, to hooks whose
 *    range holds them, which the shared one's by then does not.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>

#include "emu/emu_int.h"

/* Unicorn's own names (QEMU's, with the target as a suffix). */
struct uc_struct;
struct page_collection;
struct MemoryRegion;
typedef struct page_collection *(*emu_pc_lock_fn)(struct uc_struct *uc, uint64_t start,
                                                  uint64_t end);
typedef void (*emu_pc_unlock_fn)(struct page_collection *set);
typedef struct MemoryRegion *(*emu_mapping_fn)(struct uc_struct *uc, uint64_t address);
typedef void (*emu_protect_fn)(struct uc_struct *uc, uint64_t ram_addr);
typedef void (*emu_invalidate_fn)(struct uc_struct *uc, struct page_collection *pages,
                                  uint64_t start, int len, uintptr_t retaddr);
typedef void *(*emu_cpu_init_fn)(struct uc_struct *uc);
typedef void (*emu_reg_reset_fn)(struct uc_struct *uc);
typedef void (*emu_tracecode_fn)(int32_t size, int index, void *handle, int64_t address);
typedef void (*emu_flush_page_fn)(void *cpu, uint64_t addr);
typedef void (*emu_flush_fn)(void *cpu);
typedef void *(*emu_gen_code_fn)(void *cpu, uint64_t pc, uint64_t cs_base, uint32_t flags,
                                 int cflags);
typedef void (*emu_loop_exit_fn)(void *cpu);

struct page_collection *page_collection_lock_x86_64(struct uc_struct *uc, uint64_t start,
                                                    uint64_t end);
void page_collection_unlock_x86_64(struct page_collection *set);
struct MemoryRegion *memory_mapping(struct uc_struct *uc, uint64_t address);
void tlb_protect_code_x86_64(struct uc_struct *uc, uint64_t ram_addr);
void tb_invalidate_phys_page_fast_x86_64(struct uc_struct *uc, struct page_collection *pages,
                                         uint64_t start, int len, uintptr_t retaddr);
void *cpu_x86_init_x86_64(struct uc_struct *uc);
void x86_reg_reset_x86_64(struct uc_struct *uc);
void helper_uc_tracecode(int32_t size, int index, void *handle, int64_t address);
void tlb_flush_page_x86_64(void *cpu, uint64_t addr);
uint64_t qemu_ram_addr_from_host_x86_64(struct uc_struct *uc, void *ptr);
void *tb_gen_code_x86_64(void *cpu, uint64_t pc, uint64_t cs_base, uint32_t flags, int cflags);

/* The load and store helpers of 2.0.1 (QEMU 5.0's softmmu): CPU state,
 * guest address, TCGMemOpIdx, return address in the translated code.
 * Loads return the value widened to 64 bits (sign-extended by the "s"
 * ones); stores take it in its own width. */
typedef uint64_t (*ucfix_ld_fn)(void *env, uint64_t addr, uint32_t oi, uintptr_t ra);
typedef void (*ucfix_st8_fn)(void *env, uint64_t addr, uint8_t v, uint32_t oi, uintptr_t ra);
typedef void (*ucfix_st16_fn)(void *env, uint64_t addr, uint16_t v, uint32_t oi, uintptr_t ra);
typedef void (*ucfix_st32_fn)(void *env, uint64_t addr, uint32_t v, uint32_t oi, uintptr_t ra);
typedef void (*ucfix_st64_fn)(void *env, uint64_t addr, uint64_t v, uint32_t oi, uintptr_t ra);
uint64_t helper_ret_ldub_mmu_x86_64(void *env, uint64_t addr, uint32_t oi, uintptr_t ra);
uint64_t helper_ret_ldsb_mmu_x86_64(void *env, uint64_t addr, uint32_t oi, uintptr_t ra);
uint64_t helper_le_lduw_mmu_x86_64(void *env, uint64_t addr, uint32_t oi, uintptr_t ra);
uint64_t helper_le_ldsw_mmu_x86_64(void *env, uint64_t addr, uint32_t oi, uintptr_t ra);
uint64_t helper_le_ldul_mmu_x86_64(void *env, uint64_t addr, uint32_t oi, uintptr_t ra);
uint64_t helper_le_ldsl_mmu_x86_64(void *env, uint64_t addr, uint32_t oi, uintptr_t ra);
uint64_t helper_le_ldq_mmu_x86_64(void *env, uint64_t addr, uint32_t oi, uintptr_t ra);
void helper_ret_stb_mmu_x86_64(void *env, uint64_t addr, uint8_t v, uint32_t oi, uintptr_t ra);
void helper_le_stw_mmu_x86_64(void *env, uint64_t addr, uint16_t v, uint32_t oi, uintptr_t ra);
void helper_le_stl_mmu_x86_64(void *env, uint64_t addr, uint32_t v, uint32_t oi, uintptr_t ra);
void helper_le_stq_mmu_x86_64(void *env, uint64_t addr, uint64_t v, uint32_t oi, uintptr_t ra);

/* The version these work-arounds are for: 2.0.1, any release candidate. */
#define UCFIX_VERSION ((2u << 16) | (0u << 8) | 1u)

static pthread_once_t ucfix_once = PTHREAD_ONCE_INIT;
static int ucfix_on;                   /* 1: the library is 2.0.1 */
static int ucfix_fast;                 /* 7 is on */
static int ucfix_used;                 /* a collection was skipped (for the tests) */
static emu_pc_lock_fn ucfix_real_lock; /* the library's own functions */
static emu_pc_unlock_fn ucfix_real_unlock;
static emu_mapping_fn ucfix_real_mapping;
static emu_protect_fn ucfix_real_protect;
static emu_invalidate_fn ucfix_real_invalidate;
static emu_cpu_init_fn ucfix_real_cpu_init;
static emu_reg_reset_fn ucfix_real_reg_reset;
static emu_tracecode_fn ucfix_real_tracecode;
static emu_flush_page_fn ucfix_real_flush_page;
static emu_flush_fn ucfix_real_flush;
static ucfix_ld_fn ucfix_real_ldub, ucfix_real_ldsb, ucfix_real_lduw, ucfix_real_ldsw,
    ucfix_real_ldul, ucfix_real_ldsl, ucfix_real_ldq;
static ucfix_st8_fn ucfix_real_stb;
static ucfix_st16_fn ucfix_real_stw;
static ucfix_st32_fn ucfix_real_stl;
static ucfix_st64_fn ucfix_real_stq;
static uint64_t (*ucfix_real_ram_addr)(struct uc_struct *uc, void *ptr);
static emu_gen_code_fn ucfix_real_gen_code;
static emu_loop_exit_fn ucfix_real_loop_exit;

/* dlsym returns a void * that holds a function's address. */
static void ucfix_real(const char *name, void *fn, size_t size)
{
    void *h = emu_uc_handle(); /* the library's own, not ours (ucload.c) */
    void *p = h ? dlsym(h, name) : NULL;
    memcpy(fn, &p, size);
}

static void ucfix_decide(void)
{
    unsigned major, minor;

    ucfix_on = (uc_version(&major, &minor) >> 8) == UCFIX_VERSION;
    ucfix_real("page_collection_lock_x86_64", &ucfix_real_lock, sizeof ucfix_real_lock);
    ucfix_real("page_collection_unlock_x86_64", &ucfix_real_unlock, sizeof ucfix_real_unlock);
    ucfix_real("memory_mapping", &ucfix_real_mapping, sizeof ucfix_real_mapping);
    ucfix_real("tlb_protect_code_x86_64", &ucfix_real_protect, sizeof ucfix_real_protect);
    ucfix_real("tb_invalidate_phys_page_fast_x86_64", &ucfix_real_invalidate,
               sizeof ucfix_real_invalidate);
    ucfix_real("cpu_x86_init_x86_64", &ucfix_real_cpu_init, sizeof ucfix_real_cpu_init);
    ucfix_real("x86_reg_reset_x86_64", &ucfix_real_reg_reset, sizeof ucfix_real_reg_reset);
    ucfix_real("helper_uc_tracecode", &ucfix_real_tracecode, sizeof ucfix_real_tracecode);
    ucfix_real("tlb_flush_page_x86_64", &ucfix_real_flush_page, sizeof ucfix_real_flush_page);
    ucfix_real("tlb_flush_x86_64", &ucfix_real_flush, sizeof ucfix_real_flush);
    ucfix_real("helper_ret_ldub_mmu_x86_64", &ucfix_real_ldub, sizeof ucfix_real_ldub);
    ucfix_real("helper_ret_ldsb_mmu_x86_64", &ucfix_real_ldsb, sizeof ucfix_real_ldsb);
    ucfix_real("helper_le_lduw_mmu_x86_64", &ucfix_real_lduw, sizeof ucfix_real_lduw);
    ucfix_real("helper_le_ldsw_mmu_x86_64", &ucfix_real_ldsw, sizeof ucfix_real_ldsw);
    ucfix_real("helper_le_ldul_mmu_x86_64", &ucfix_real_ldul, sizeof ucfix_real_ldul);
    ucfix_real("helper_le_ldsl_mmu_x86_64", &ucfix_real_ldsl, sizeof ucfix_real_ldsl);
    ucfix_real("helper_le_ldq_mmu_x86_64", &ucfix_real_ldq, sizeof ucfix_real_ldq);
    ucfix_real("helper_ret_stb_mmu_x86_64", &ucfix_real_stb, sizeof ucfix_real_stb);
    ucfix_real("helper_le_stw_mmu_x86_64", &ucfix_real_stw, sizeof ucfix_real_stw);
    ucfix_real("helper_le_stl_mmu_x86_64", &ucfix_real_stl, sizeof ucfix_real_stl);
    ucfix_real("helper_le_stq_mmu_x86_64", &ucfix_real_stq, sizeof ucfix_real_stq);
    ucfix_real("qemu_ram_addr_from_host_x86_64", &ucfix_real_ram_addr,
               sizeof ucfix_real_ram_addr);
    ucfix_real("tb_gen_code_x86_64", &ucfix_real_gen_code, sizeof ucfix_real_gen_code);
    ucfix_real("cpu_loop_exit_x86_64", &ucfix_real_loop_exit, sizeof ucfix_real_loop_exit);
    /* the fast path needs every one of them, and data as plain RAM */
    ucfix_fast = ucfix_on && ucfix_real_ldub && ucfix_real_ldsb && ucfix_real_lduw &&
                 ucfix_real_ldsw && ucfix_real_ldul && ucfix_real_ldsl && ucfix_real_ldq &&
                 ucfix_real_stb && ucfix_real_stw && ucfix_real_stl && ucfix_real_stq &&
                 ucfix_real_ram_addr && !emu_mem_data_mmio_default();
}

int crec_emu_ucfix_used(void)
{
    return __atomic_load_n(&ucfix_used, __ATOMIC_RELAXED);
}

/* Counted once per run of fast accesses that begins (a counter bumped on
 * every access would cost the path a shared cache line). */
static int ucfix_fast_seen;

uint64_t crec_emu_fast_accesses(void)
{
    return (uint64_t)__atomic_load_n(&ucfix_fast_seen, __ATOMIC_RELAXED);
}

/* ---- 1. the page collection --------------------------------------------- */

struct page_collection *page_collection_lock_x86_64(struct uc_struct *uc, uint64_t start,
                                                    uint64_t end)
{
    if (ucfix_on) {
        /* Read before writing: replay threads on other cores keep sharing
         * the cache line instead of bouncing it at every store. */
        if (!__atomic_load_n(&ucfix_used, __ATOMIC_RELAXED))
            __atomic_store_n(&ucfix_used, 1, __ATOMIC_RELAXED);
        return NULL; /* the unlock below ignores it; nothing else reads it */
    }
    return ucfix_real_lock ? ucfix_real_lock(uc, start, end) : NULL;
}

void page_collection_unlock_x86_64(struct page_collection *set)
{
    if (!ucfix_on && ucfix_real_unlock)
        ucfix_real_unlock(set);
}

/* ---- 2. pages that may hold code ------------------------------------------ */

#define UCFIX_WORD_BITS 64

/* Bit n: RAM page n (RAM offset / 4096) of some engine got a translated
 * block.  Shared by every engine and thread: set bits only add checks. */
uint64_t emu_code_pages[EMU_CODE_PAGES / UCFIX_WORD_BITS];

void tlb_protect_code_x86_64(struct uc_struct *uc, uint64_t ram_addr)
{
    uint64_t page = ram_addr / CREC_PAGE_SIZE;

    if (page < EMU_CODE_PAGES)
        __atomic_fetch_or(&emu_code_pages[page / UCFIX_WORD_BITS],
                          1ull << (page % UCFIX_WORD_BITS), __ATOMIC_RELAXED);
    if (ucfix_real_protect)
        ucfix_real_protect(uc, ram_addr);
}

void tb_invalidate_phys_page_fast_x86_64(struct uc_struct *uc, struct page_collection *pages,
                                         uint64_t start, int len, uintptr_t retaddr)
{
    uint64_t page = start / CREC_PAGE_SIZE;

    if (ucfix_on && page < EMU_CODE_PAGES &&
        !(__atomic_load_n(&emu_code_pages[page / UCFIX_WORD_BITS], __ATOMIC_RELAXED) &
          1ull << (page % UCFIX_WORD_BITS)))
        return; /* no block was ever translated from this page */
    ucfix_real_invalidate(uc, pages, start, len, retaddr);
}

uint64_t emu_ram_page(uc_engine *uc, void *host)
{
    uint64_t ram = ucfix_real_ram_addr ? ucfix_real_ram_addr((struct uc_struct *)uc, host)
                                       : UINT64_MAX;

    return ram == UINT64_MAX ? UINT64_MAX : ram / CREC_PAGE_SIZE;
}

/* ---- 3. the region of an address ------------------------------------------ */

#define UCFIX_SLOTS 64 /* pages remembered per thread */

struct ucfix_slot {
    uint64_t page_plus1; /* guest page number + 1; 0: empty */
    uint64_t generation; /* emu_regions_gen when it was filled */
    struct uc_struct *uc;
    struct MemoryRegion *mr;
};

/* Bumped before and after every change of any engine's regions: a slot
 * filled under another generation is stale. */
uint64_t emu_regions_gen = 1;
static _Thread_local struct ucfix_slot ucfix_slots[UCFIX_SLOTS];
static _Thread_local int ucfix_changing; /* this thread is changing regions */

struct MemoryRegion *memory_mapping(struct uc_struct *uc, uint64_t address)
{
    uint64_t page = address / CREC_PAGE_SIZE; /* regions are whole pages */
    struct ucfix_slot *s = &ucfix_slots[page % UCFIX_SLOTS];
    uint64_t gen = __atomic_load_n(&emu_regions_gen, __ATOMIC_RELAXED);
    struct MemoryRegion *mr;

    if (s->page_plus1 == page + 1 && s->uc == uc && s->generation == gen)
        return s->mr;
    mr = ucfix_real_mapping(uc, address);
    if (ucfix_on && !ucfix_changing)
        *s = (struct ucfix_slot){page + 1, gen, uc, mr};
    return mr;
}

static void ucfix_regions_begin(void)
{
    ucfix_changing++;
    __atomic_fetch_add(&emu_regions_gen, 1, __ATOMIC_RELAXED);
}

static void ucfix_regions_end(void)
{
    __atomic_fetch_add(&emu_regions_gen, 1, __ATOMIC_RELAXED);
    ucfix_changing--;
}

uc_err emu_uc_open(uc_engine **uc)
{
    uc_err ue;

    pthread_once(&ucfix_once, ucfix_decide);
    ucfix_regions_begin(); /* a new engine may reuse a freed one's address */
    ue = uc_open(UC_ARCH_X86, UC_MODE_64, uc);
    ucfix_regions_end();
    return ue;
}

/* ---- 4. the CPU's feature words ------------------------------------------ */

/* 2.0.1's x86_reg_reset() values of FEAT_1_EDX, FEAT_1_ECX and FEAT_7_0_EBX
 * (QEMU's FeatureWordArray: 64-bit words, in that order). */
#define UCFIX_F1_EDX 0x07088100ull
#define UCFIX_F1_ECX 0x02182200ull
#define UCFIX_F7_EBX 0x00180108ull
/* What crec adds to FEAT_1_ECX: SSE3, PCLMULQDQ, MOVBE, POPCNT. */
#define UCFIX_F1_ECX_ADD ((1ull << 0) | (1ull << 1) | (1ull << 22) | (1ull << 23))

/* The CPU object cpu_x86_init() made last on this thread; the reset that
 * follows it in uc_init() is the one that needs it. */
static _Thread_local void *ucfix_new_cpu;
static int ucfix_features_set; /* some engine got the features (for the tests) */

void *cpu_x86_init_x86_64(struct uc_struct *uc)
{
    pthread_once(&ucfix_once, ucfix_decide);
    ucfix_new_cpu = ucfix_real_cpu_init ? ucfix_real_cpu_init(uc) : NULL;
    return ucfix_new_cpu;
}

void x86_reg_reset_x86_64(struct uc_struct *uc)
{
    uint64_t *w = ucfix_new_cpu;
    size_t n = w ? malloc_usable_size(w) / sizeof *w : 0, found = 0, at = 0;

    if (ucfix_real_reg_reset)
        ucfix_real_reg_reset(uc);
    if (!ucfix_on)
        return;
    for (size_t i = 0; i + 2 < n; i++)
        if (w[i] == UCFIX_F1_EDX && w[i + 1] == UCFIX_F1_ECX && w[i + 2] == UCFIX_F7_EBX)
            found++, at = i;
    if (found != 1)
        return; /* not the layout we know: leave the CPU as it is */
    w[at + 1] |= UCFIX_F1_ECX_ADD;
    __atomic_store_n(&ucfix_features_set, 1, __ATOMIC_RELAXED);
}

int emu_ucfix_features(void)
{
    return __atomic_load_n(&ucfix_features_set, __ATOMIC_RELAXED);
}

/* ---- 5. code hooks on crec's own instructions ----------------------------- */

/* uc_hook_idx: UC_HOOK_CODE_IDX is 2, and the low 6 bits are the index. */
#define UCFIX_HOOK_CODE_IDX 2
#define UCFIX_HOOK_IDX_MASK 0x3f

void helper_uc_tracecode(int32_t size, int index, void *handle, int64_t address)
{
    if (ucfix_on && size != 0 && (index & UCFIX_HOOK_IDX_MASK) == UCFIX_HOOK_CODE_IDX &&
        emu_xinsn_fast(handle, (uint64_t)address))
        return;
    ucfix_real_tracecode(size, index, handle, address);
}

void emu_uc_close(uc_engine *uc)
{
    ucfix_regions_begin();
    uc_close(uc);
    ucfix_regions_end();
}

uc_err emu_uc_mem_map_ptr(uc_engine *uc, uint64_t addr, size_t len, uint32_t perms, void *host)
{
    uc_err ue;

    ucfix_regions_begin();
    ue = uc_mem_map_ptr(uc, addr, len, perms, host);
    ucfix_regions_end();
    return ue;
}

uc_err emu_uc_mmio_map(uc_engine *uc, uint64_t addr, size_t len, uc_cb_mmio_read_t rd,
                       void *rd_ctx, uc_cb_mmio_write_t wr, void *wr_ctx)
{
    uc_err ue;

    ucfix_regions_begin();
    ue = uc_mmio_map(uc, addr, len, rd, rd_ctx, wr, wr_ctx);
    ucfix_regions_end();
    return ue;
}

/* 6: set while crec unmaps a region; then whether the TLB was flushed */
static _Thread_local int ucfix_unmapping, ucfix_flushed;

void tlb_flush_page_x86_64(void *cpu, uint64_t addr)
{
    if (ucfix_on && ucfix_unmapping && ucfix_real_flush) {
        if (!ucfix_flushed)
            ucfix_real_flush(cpu);
        ucfix_flushed = 1;
        return;
    }
    ucfix_real_flush_page(cpu, addr);
}

uc_err emu_uc_mem_unmap(uc_engine *uc, uint64_t addr, size_t len)
{
    uc_err ue;

    ucfix_regions_begin();
    ucfix_unmapping = 1, ucfix_flushed = 0;
    ue = uc_mem_unmap(uc, addr, len);
    ucfix_unmapping = 0;
    ucfix_regions_end();
    return ue;
}

/* ---- 8. instructions the translator aborts on ------------------------------ */

/* QEMU 5.0's cflags: the low 15 bits cap a block's instructions (0: 512). */
#define UCFIX_CF_COUNT_MASK 0x7fff

void *tb_gen_code_x86_64(void *cpu, uint64_t pc, uint64_t cs_base, uint32_t flags, int cflags)
{
    crec_emu_cpu *c = emu_running;
    uint64_t sites[2] = {0, 0};
    long n = ucfix_on && c && ucfix_real_loop_exit ? emu_untranslatable(c, pc, sites) : -1;
    void *tb;

    if (n == 0) {
        emu_untranslatable_stop(c, pc);
        ucfix_real_loop_exit(cpu); /* back into cpu_exec, which sees the stop */
    }
    if (n > 0 && ((cflags & UCFIX_CF_COUNT_MASK) == 0 || (cflags & UCFIX_CF_COUNT_MASK) > n))
        cflags = (cflags & ~UCFIX_CF_COUNT_MASK) | (int)n;
    /* 9: the sites' shared hook spans this block's sites while it is
     * translated (the translator may longjmp out: the next one resets it) */
    if (c)
        emu_xsites_range(c, sites[0], sites[1]);
    tb = ucfix_real_gen_code(cpu, pc, cs_base, flags, cflags);
    if (c)
        emu_xsites_range(c, 0, 0);
    return tb;
}

/* ---- 9. one code hook for many addresses ------------------------------------ */

/* 2.0.1's struct hook: int type, insn, refs, op, op_flags; bool to_delete;
 * uint64_t begin, end; void *callback, *user_data (uc_priv.h). */
#define UCFIX_HOOK_TYPE_AT 0
#define UCFIX_HOOK_BEGIN_AT 24
#define UCFIX_HOOK_CALLBACK_AT 40

uint64_t *emu_ucfix_hook_range(uc_hook h, void *callback, void *user_data, uint64_t begin,
                               uint64_t end)
{
    unsigned char *p = (unsigned char *)(uintptr_t)h;
    int type;
    uint64_t range[2];
    void *fn[2];

    /* the translation that moves it is ours only on 2.0.1 */
    if (!ucfix_on || !ucfix_real_gen_code || !ucfix_real_loop_exit || !p)
        return NULL;
    memcpy(&type, p + UCFIX_HOOK_TYPE_AT, sizeof type);
    memcpy(range, p + UCFIX_HOOK_BEGIN_AT, sizeof range);
    memcpy(fn, p + UCFIX_HOOK_CALLBACK_AT, sizeof fn);
    if (type != UC_HOOK_CODE || range[0] != begin || range[1] != end || fn[0] != callback ||
        fn[1] != user_data)
        return NULL;
    return (uint64_t *)(void *)(p + UCFIX_HOOK_BEGIN_AT);
}

/* ---- 7. loads and stores ---------------------------------------------------- */

/* Guest (little-endian) bytes as a number, and back: one load or store on
 * the x86-64 hosts where the fast path runs. */
static uint64_t ucfix_get(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;

    memcpy(&v, p, n);
    return v;
}

#define UCFIX_LOAD(name, real, n, cast)                                                     \
    uint64_t name(void *env, uint64_t addr, uint32_t oi, uintptr_t ra)                     \
    {                                                                                       \
        const uint8_t *h = ucfix_fast ? emu_fast_load(addr, n, oi) : NULL;                 \
        if (h && !ucfix_fast_seen)                                                          \
            __atomic_store_n(&ucfix_fast_seen, 1, __ATOMIC_RELAXED);                        \
        return h ? (uint64_t)(cast)ucfix_get(h, n) : real(env, addr, oi, ra);              \
    }
UCFIX_LOAD(helper_ret_ldub_mmu_x86_64, ucfix_real_ldub, 1, uint8_t)
UCFIX_LOAD(helper_ret_ldsb_mmu_x86_64, ucfix_real_ldsb, 1, int8_t)
UCFIX_LOAD(helper_le_lduw_mmu_x86_64, ucfix_real_lduw, 2, uint16_t)
UCFIX_LOAD(helper_le_ldsw_mmu_x86_64, ucfix_real_ldsw, 2, int16_t)
UCFIX_LOAD(helper_le_ldul_mmu_x86_64, ucfix_real_ldul, 4, uint32_t)
UCFIX_LOAD(helper_le_ldsl_mmu_x86_64, ucfix_real_ldsl, 4, int32_t)
UCFIX_LOAD(helper_le_ldq_mmu_x86_64, ucfix_real_ldq, 8, uint64_t)

#define UCFIX_STORE(name, real, n, type)                                                    \
    void name(void *env, uint64_t addr, type v, uint32_t oi, uintptr_t ra)                  \
    {                                                                                       \
        uint8_t *h = ucfix_fast ? emu_fast_store(addr, n, oi, v) : NULL;                   \
        if (h && !ucfix_fast_seen)                                                          \
            __atomic_store_n(&ucfix_fast_seen, 1, __ATOMIC_RELAXED);                        \
        if (h)                                                                              \
            memcpy(h, &v, n);                                                               \
        else                                                                                \
            real(env, addr, v, oi, ra);                                                     \
    }
UCFIX_STORE(helper_ret_stb_mmu_x86_64, ucfix_real_stb, 1, uint8_t)
UCFIX_STORE(helper_le_stw_mmu_x86_64, ucfix_real_stw, 2, uint16_t)
UCFIX_STORE(helper_le_stl_mmu_x86_64, ucfix_real_stl, 4, uint32_t)
UCFIX_STORE(helper_le_stq_mmu_x86_64, ucfix_real_stq, 8, uint64_t)
