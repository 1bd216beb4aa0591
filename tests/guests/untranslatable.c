/*
 * untranslatable.c - runs the invalid instruction named by argv[1], one
 * of those Unicorn 2.0.1's translator aborts on where a CPU raises #UD
 * (emu/blocks.c tcg_aborts): lcall and ljmp through a register, LOCK on
 * cmp, cmps, bt, bts, btr, btc, and LOCK on a mov, which QEMU would run
 * but a CPU refuses.  Three instructions of the same block run
 * before it.  Linux kills the program with SIGILL before "after" is
 * printed; with "skip" as argv[2], a SIGILL handler steps over it and the
 * program goes on, printing what the instructions before it computed.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

static volatile long skip_len;

static void on_ill(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    (void)sig;
    printf("SIGILL code %d\n", si->si_code);
    uc->uc_mcontext.gregs[REG_RIP] += skip_len;
}

/* RAX = 5 + 7 by three instructions, then the bytes of the invalid one;
 * RCX points at a buffer for the memory forms. */
#define RUN(bytes, len)                                                                    \
    do {                                                                                   \
        skip_len = len;                                                                    \
        __asm__ volatile("mov $5, %%eax\n\tadd $7, %%eax\n\tmov %%rcx, %%rdx\n\t" bytes     \
                         : "=a"(r)                                                         \
                         : "c"(buf)                                                        \
                         : "rdx", "memory", "cc");                                         \
    } while (0)

int main(int argc, char **argv)
{
    const char *w = argc > 1 ? argv[1] : "lcall";
    static char buf[64] = "abc";
    long r = 0;

    if (argc > 2 && !strcmp(argv[2], "skip")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_ill;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGILL, &sa, NULL);
    }
    printf("before %s\n", w);
    fflush(stdout);
    if (!strcmp(w, "lcall")) RUN(".byte 0xff, 0xd8", 2);          /* lcall *%eax */
    else if (!strcmp(w, "ljmp")) RUN(".byte 0xff, 0xe8", 2);      /* ljmp *%eax */
    else if (!strcmp(w, "lcallq")) RUN(".byte 0x48, 0xff, 0xda", 3); /* REX.W, rdx */
    else if (!strcmp(w, "lockcmp")) RUN(".byte 0xf0, 0x38, 0x01", 3); /* lock cmp %al,(%rcx) */
    else if (!strcmp(w, "lockcmpq")) RUN(".byte 0xf0, 0x48, 0x39, 0x41, 0x08", 5);
    else if (!strcmp(w, "lockcmps")) RUN(".byte 0xf0, 0xa6", 2);   /* lock cmpsb */
    else if (!strcmp(w, "lockbt")) RUN(".byte 0xf0, 0x0f, 0xa3, 0xc2", 4); /* lock bt %eax,%edx */
    else if (!strcmp(w, "lockbts")) RUN(".byte 0xf0, 0x0f, 0xab, 0xc2", 4);
    else if (!strcmp(w, "lockbtr")) RUN(".byte 0xf0, 0x0f, 0xb3, 0xc2", 4);
    else if (!strcmp(w, "lockbtc")) RUN(".byte 0xf0, 0x0f, 0xbb, 0xc2", 4);
    else if (!strcmp(w, "lockbtsi")) RUN(".byte 0xf0, 0x0f, 0xba, 0xea, 0x03", 5); /* lock bts $3,%edx */
    else if (!strcmp(w, "lockmov")) RUN(".byte 0xf0, 0x89, 0x01", 3); /* lock mov %eax,(%rcx) */
    printf("after %s: %ld\n", w, r);
    return 0;
}
