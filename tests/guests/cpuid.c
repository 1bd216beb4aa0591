/* cpuid.c - prints what CPUID says: vendor, brand and feature bits. */
#include <cpuid.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    unsigned a, b, c, d, brand[12];
    char vendor[13];

    __cpuid(0, a, b, c, d);
    memcpy(vendor, &b, 4), memcpy(vendor + 4, &d, 4), memcpy(vendor + 8, &c, 4);
    vendor[12] = 0;
    printf("max=%#x vendor=%s\n", a, vendor);
    __cpuid(1, a, b, c, d);
    printf("leaf1 ecx=%#x edx=%#x avx=%d\n", c, d, !!(c & (1u << 28)));
    for (unsigned i = 0; i < 3; i++)
        __cpuid(0x80000002 + i, brand[4 * i], brand[4 * i + 1], brand[4 * i + 2],
                brand[4 * i + 3]);
    printf("brand=%.48s\n", (char *)brand);
    return 0;
}
