/* calltree_static.c - a tail call and a longjmp, whose call tree `crec calls
 * --tree` and `crec profile` must give as the source implies: main calls
 * twice (which tail-calls leaf) and jumper (which calls deep, deep, deep,
 * deep, then longjmp back into jumper). */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf where;

__attribute__((noinline)) int leaf(int x)
{
    return x * 2 + 1;
}

/* a jmp to leaf, not a call: sibling calls are made at any -O here */
__attribute__((noinline, optimize("optimize-sibling-calls"))) int twice(int x)
{
    return leaf(x + 1);
}

__attribute__((noinline)) void deep(int n)
{
    if (n == 0)
        longjmp(where, 1);
    deep(n - 1);
    __asm__ volatile(""); /* keeps deep from becoming a loop or a jmp */
}

__attribute__((noinline)) int jumper(void)
{
    if (setjmp(where) == 0) {
        deep(3);
        return 0;
    }
    return 7;
}

int main(void)
{
    int a = twice(5);
    int b = jumper();
    printf("%d %d\n", a, b);
    return 0;
}
