/*
 * caps_pkeys.c - capget (the caller's capabilities: a line the e2e test
 * compares with the native run's) and the protection key calls (crec
 * shows a CPU without them: pkey_alloc fails with EINVAL, pkey_mprotect
 * takes only key -1; the e2e test compares those lines with the native
 * run's only where the host has none either).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
    uint32_t hdr[2] = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0}, data[6] = {0};
    uint32_t bad[2] = {0x12345678, 0};
    long r = syscall(SYS_capget, hdr, data);
    long rb = syscall(SYS_capget, bad, NULL);
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    printf("capget %ld effective %08x %08x permitted %08x %08x\n", r, data[0], data[3], data[1],
           data[4]);
    printf("capget of a bad version: %ld, version %08x\n", rb, bad[0]);
    {   /* crec shows a CPU without protection keys, as this host may not */
        long k = syscall(SYS_pkey_alloc, 0, 0);
        printf("pkey_alloc %ld %s\n", k, k < 0 ? strerrorname_np(errno) : "");
        printf("pkey_mprotect -1: %ld\n", syscall(SYS_pkey_mprotect, p, 4096, PROT_READ, -1));
        k = syscall(SYS_pkey_mprotect, p, 4096, PROT_READ, 5);
        printf("pkey_mprotect 5: %ld %s\n", k, k < 0 ? strerrorname_np(errno) : "");
    }
    return 0;
}
