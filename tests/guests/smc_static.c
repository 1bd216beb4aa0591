/*
 * smc_static.c - self-modifying code: a 6-byte function in an RWX page is
 * rewritten in place before every call (argv[2] 2: alternately; 0 or 1:
 * always the same) as two instructions (mov eax, 7; ret) or as five (push
 * rdi; pop rax; inc eax; nop; ret): the same address and size, other
 * instructions.  `marker` sums what it returned.  A replay or query
 * starting anywhere must see the code as it was at that time.  Prints
 * marker's address and final value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

volatile unsigned long marker;

int main(int argc, char **argv)
{
    static const unsigned char two[6] = {0xb8, 0x07, 0x00, 0x00, 0x00, 0xc3};
    static const unsigned char five[6] = {0x57, 0x58, 0xff, 0xc0, 0x90, 0xc3};
    unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int rounds = argc > 1 ? atoi(argv[1]) : 3000, mode = argc > 2 ? atoi(argv[2]) : 2;

    if (code == MAP_FAILED)
        return 2;
    for (int i = 0; i < rounds; i++) {
        int (*f)(int) = (int (*)(int))code;
        int v = mode == 0 ? 0 : mode == 1 ? 1 : i % 2;
        memcpy(code, v ? five : two, 6);
        marker += (unsigned)f(i) & 0xf;
    }
    printf("marker %p %lu\n", (void *)&marker, marker);
    return 0;
}
