/* Synchronous signals delivered to handlers: a SIGSEGV handler that
 * longjmps out (twice, with si_addr and si_code), one that makes the page
 * writable and returns so the faulting store runs again, a SIGFPE handler
 * for a division by zero and a SIGILL handler for ud2 that skip the
 * instruction through the ucontext.  Prints what each saw. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile uintptr_t fault_addr;
static volatile int fault_code, fixes;
static char *page;

static void on_segv_jump(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    fault_addr = (uintptr_t)si->si_addr;
    fault_code = si->si_code;
    siglongjmp(env, 1);
}

static void on_segv_fix(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    fixes++;
    fault_addr = (uintptr_t)si->si_addr;
    mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

static void on_skip(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    (void)si;
    /* both faulting instructions below are 2 bytes long (ud2, div %ecx) */
    uc->uc_mcontext.gregs[REG_RIP] += 2;
    if (sig == SIGFPE)
        uc->uc_mcontext.gregs[REG_RAX] = 77;
    fixes += 10;
}

int main(void)
{
    struct sigaction sa;
    volatile int *bad = (volatile int *)(uintptr_t)0x1000;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv_jump;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    for (int i = 0; i < 2; i++) {
        if (sigsetjmp(env, 1) == 0) {
            *bad = 42;
            puts("not reached");
        } else {
            printf("recovered %d: addr=%#lx code=%d\n", i, (unsigned long)fault_addr, fault_code);
        }
    }

    page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    sa.sa_sigaction = on_segv_fix;
    sigaction(SIGSEGV, &sa, NULL);
    page[100] = 7; /* faults once; the handler makes it writable */
    printf("fixed: fixes=%d value=%d addr_ok=%d\n", fixes, page[100],
           fault_addr == (uintptr_t)page + 100);

    sa.sa_sigaction = on_skip;
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
    {
        unsigned eax = 5, edx = 0, ecx = 0;
        __asm__ volatile("div %%ecx" : "+a"(eax), "+d"(edx) : "c"(ecx));
        printf("divide: eax=%u fixes=%d\n", eax, fixes);
        __asm__ volatile("ud2");
        printf("ud2 skipped: fixes=%d\n", fixes);
    }
    return 0;
}
