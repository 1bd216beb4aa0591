/*
 * sysout.h - which guest bytes a syscall sends out of the process.
 * (To be folded into emu.h.)
 */
#ifndef CREC_EMU_SYSOUT_H
#define CREC_EMU_SYSOUT_H

#include <stdint.h>

/*
 * Read `len` (1..8) guest bytes at addr into out, the way the kernel reads
 * a syscall's buffer.  The recorder and the replayer each pass their own:
 * both must see the same sequence of calls.  @return 0, or -1 if the bytes
 * can't be had (unmapped).
 */
typedef int (*crec_emu_sysout_read_fn)(void *ctx, uint64_t addr, unsigned len, uint8_t *out);

/*! crec_emu_sysout_walk() :
 *  For a write-like syscall (write, pwrite64, writev, pwritev, pwritev2,
 *  sendto) that returned `ret` > 0, read every byte it sent out through
 *  `read`, in order, in pieces that never cross an aligned 8-byte granule,
 *  and hash them.  writev's iovec array is read the same way first.
 *  @return 1 and *hash (XXH3-64 of the bytes sent) for such a syscall, 0
 *          for any other syscall, -1 if `read` failed. */
int crec_emu_sysout_walk(uint64_t nr, const uint64_t args[6], int64_t ret,
                         crec_emu_sysout_read_fn read, void *ctx, uint64_t *hash);

#endif /* CREC_EMU_SYSOUT_H */
