/*
 * rdrand.c - uses RDRAND and RDSEED (built for them with a target
 * attribute, as -mrdrnd -mrdseed would): each gives a value with CF=1 in
 * each width.  Prints what every run prints the same (that the values came
 * and were not all equal), then with "show" the values themselves, which
 * a replay must reproduce.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

__attribute__((target("rdrnd,rdseed"))) static int draw(uint64_t v[8])
{
    unsigned long long q;
    unsigned int d;
    unsigned short s;
    int ok = 1;

    for (int i = 0; i < 4; i++) {
        ok &= _rdrand64_step(&q);
        v[i] = q;
    }
    ok &= _rdrand32_step(&d);
    v[4] = d;
    ok &= _rdrand16_step(&s);
    v[5] = s;
    ok &= _rdseed64_step(&q);
    v[6] = q;
    ok &= _rdseed32_step(&d);
    v[7] = d;
    return ok;
}

int main(int argc, char **argv)
{
    uint64_t v[8];
    int ok = draw(v), distinct = v[0] != v[1] || v[1] != v[2] || v[2] != v[3];

    printf("rdrand cf=%d distinct=%d\n", ok, distinct);
    if (argc > 1 && strcmp(argv[1], "show") == 0)
        for (int i = 0; i < 8; i++)
            printf("%016llx\n", (unsigned long long)v[i]);
    return ok && distinct ? 0 : 1;
}
