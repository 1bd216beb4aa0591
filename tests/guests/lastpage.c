/*
 * lastpage.c - calls a function on the last page of the program's code
 * mapping, whose next page is not executable.  A query run copies code in
 * a group of 16 pages at a time, when a block first starts there; Unicorn
 * translates a block before any hook sees it, so an empty last page would
 * be translated as zeros running past the mapping, a fault
 * (tests/e2e/t_query.sh).
 */
#include <stdio.h>

long last_page_add(long x);

/*
 * main goes in .text.startup, linked before .text; the function is the
 * last thing in this file's .text, 40 pages on (another group of 16 than
 * main's) and 64 bytes before a page end: only .fini follows it.
 */
__asm__(".text\n"
        ".balign 4096\n"
        ".skip 40 * 4096 - 64\n"
        ".globl last_page_add\n"
        ".type last_page_add, @function\n"
        "last_page_add:\n"
        "    lea 1(%rdi), %rax\n"
        "    ret\n"
        ".size last_page_add, . - last_page_add\n");

__attribute__((section(".text.startup"))) int main(void)
{
    long s = 0;

    for (long i = 0; i < 300000; i++)
        s = last_page_add(s);
    printf("%ld\n", s);
    return 0;
}
