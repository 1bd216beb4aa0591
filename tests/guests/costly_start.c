/*
 * costly_start.c - a program whose start costs far more an instruction than
 * the rest, as a real program's does (code run for the first time, files
 * read): N getppid system calls (a few instructions each, a few
 * microseconds each to record and replay), then a loop of M iterations of
 * register arithmetic that costs little an instruction.  `crec replay
 * --jobs 2` cuts it to equal costs as the index measured them: inside the
 * system calls, not at half its instructions (tests/e2e/t_jobs.sh).
 *
 *   costly_start [N [M]]   (default 100000 system calls, 5000000 iterations)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000, m = argc > 2 ? atol(argv[2]) : 5000000;
    uint64_t h = 1469598103934665603ull;

    for (long i = 0; i < n; i++)
        h += (uint64_t)syscall(SYS_getppid);
    for (long i = 0; i < m; i++) {
        h ^= (uint64_t)i;
        h *= 1099511628211ull;
    }
    printf("%llx\n", (unsigned long long)(h & 1));
    return 0;
}
