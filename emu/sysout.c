/*
 * sysout.c - walk the bytes a write-like syscall sends out (and the
 * signal frame rt_sigreturn reads back: its registers come from there).
 *
 * The recorder reads those bytes through its prediction cache, as if the
 * program itself had loaded them, and stores their hash.  The replayer walks
 * the same bytes in the same order, taking unpredicted ones from the read
 * stream, so it holds every byte the program sent out and can check the
 * hash: a replay that printed something else is caught at the syscall.
 */
#include <xxhash.h>

#include "emu/emu.h"

#define NR_WRITE 1
#define NR_PWRITE64 18
#define NR_WRITEV 20
#define NR_SENDTO 44
#define NR_PWRITEV 296
#define NR_PWRITEV2 328

/* Stop reading an iovec array after this many entries (Linux's UIO_MAXIOV). */
#define IOV_MAX_ENTRIES 1024

struct walk {
    crec_emu_sysout_read_fn read;
    void *ctx;
    XXH3_state_t *hash;
};

/* Read [addr, addr+len) in granule-bounded pieces; feed them to the hash. */
static int walk_range(struct walk *w, uint64_t addr, uint64_t len, int hashed, uint8_t *copy)
{
    while (len > 0) {
        uint8_t piece[8];
        unsigned n = 8 - (unsigned)(addr % 8);

        if (n > len)
            n = (unsigned)len;
        if (w->read(w->ctx, addr, n, piece) != 0)
            return -1;
        if (hashed)
            XXH3_64bits_update(w->hash, piece, n);
        if (copy) {
            for (unsigned i = 0; i < n; i++)
                copy[i] = piece[i];
            copy += n;
        }
        addr += n;
        len -= n;
    }
    return 0;
}

static uint64_t le64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

/* writev and friends: the iovec array first, then up to `total` bytes. */
static int walk_iovecs(struct walk *w, uint64_t iov, uint64_t iovcnt, uint64_t total)
{
    if (iovcnt > IOV_MAX_ENTRIES)
        iovcnt = IOV_MAX_ENTRIES;
    for (uint64_t i = 0; i < iovcnt && total > 0; i++) {
        uint8_t entry[16];
        uint64_t base, len;

        if (walk_range(w, iov + 16 * i, 16, 0, entry) != 0)
            return -1;
        base = le64(entry);
        len = le64(entry + 8);
        if (len > total)
            len = total;
        if (walk_range(w, base, len, 1, NULL) != 0)
            return -1;
        total -= len;
    }
    return 0;
}

/* rt_sigreturn: the ucontext at uc (args[0], emu/sys_signal.c) and the
 * FXSAVE image it names, which the kernel reads to restore the registers. */
static int walk_sigframe(struct walk *w, uint64_t uc, uint64_t *hash)
{
    uint8_t ucb[CREC_EMU_UCONTEXT_SIZE];
    uint64_t fp;
    int rc;

    w->hash = XXH3_createState();
    if (!w->hash)
        return -1;
    XXH3_64bits_reset(w->hash);
    rc = walk_range(w, uc, sizeof ucb, 1, ucb);
    if (rc == 0 && (fp = crec_emu_sigframe_fpstate(ucb)) != 0)
        rc = walk_range(w, fp, CREC_EMU_FXSAVE_SIZE, 1, NULL);
    *hash = XXH3_64bits_digest(w->hash);
    XXH3_freeState(w->hash);
    return rc == 0 ? 1 : -1;
}

int crec_emu_sysout_walk(uint64_t nr, const uint64_t args[6], int64_t ret,
                         crec_emu_sysout_read_fn read, void *ctx, uint64_t *hash)
{
    struct walk w = {read, ctx, NULL};
    int rc;

    if (nr == CREC_EMU_NR_RT_SIGRETURN) /* whatever it returns (the restored rax) */
        return walk_sigframe(&w, args[0], hash);
    if (nr != NR_WRITE && nr != NR_PWRITE64 && nr != NR_SENDTO && nr != NR_WRITEV &&
        nr != NR_PWRITEV && nr != NR_PWRITEV2)
        return 0;
    if (ret <= 0) {
        *hash = 0;
        return 1;
    }
    w.hash = XXH3_createState();
    if (!w.hash)
        return -1;
    XXH3_64bits_reset(w.hash);
    if (nr == NR_WRITEV || nr == NR_PWRITEV || nr == NR_PWRITEV2)
        rc = walk_iovecs(&w, args[1], args[2], (uint64_t)ret);
    else
        rc = walk_range(&w, args[1], (uint64_t)ret, 1, NULL);
    *hash = XXH3_64bits_digest(w.hash);
    XXH3_freeState(w.hash);
    return rc == 0 ? 1 : -1;
}
