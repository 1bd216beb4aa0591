/*
 * tt.c - the program tests/e2e/t_gdb.sh records and debugs with gdb,
 * forwards and backwards (built -O0 -g: PIE and not, static and dynamic).
 * It prints the values gdb must show at each point, so the test compares
 * gdb against the program itself.  Line numbers matter: t_gdb.sh finds
 * lines by the LINE: comments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

long counter; /* a global gdb watches */
int values[8] = {42, 7, 19, 3, 88, 21, 5, 60};

/* A qsort callback: a backtrace in it shows libc's frames and ours. */
static int cmp(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b); /* LINE:cmp */
}

static int compute(int n)
{
    int a = n * 3;
    int b = a + 7;
    int c = a * b;
    printf("compute n=%d a=%d b=%d c=%d\n", n, a, b, c); /* LINE:compute_print */
    a = c - b;
    printf("compute2 n=%d a=%d\n", n, a);
    return a; /* LINE:compute_return */
}

static int __attribute__((noinline)) finish(int x)
{
    return x * 2 + 1; /* LINE:finish */
}

int main(void)
{
    long total = 0;

    for (int i = 0; i < 10; i++) {
        counter += i; /* LINE:counter_write */
        total += compute(i); /* LINE:compute_call */
    }
    printf("total=%ld counter=%ld\n", total, counter);
    qsort(values, 8, sizeof values[0], cmp);
    printf("sorted %d %d\n", values[0], values[7]);
    fflush(stdout);
    /* a raw write(2) and a function return just before the end, which
     * reverse-stepi crosses going back from the end */
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"(1L), "D"(1L), "S"("bye\n"), "d"(4L)
                     : "rcx", "r11", "memory");
    int code = finish((int)r); /* LINE:finish_call */
    __asm__ volatile("syscall" : : "a"(231L), "D"((long)code) : "rcx", "r11", "memory");
    return 0;
}
