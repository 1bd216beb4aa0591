/*
 * privileged.c - runs the privileged instruction named by argv[1] (cli,
 * sti, rdmsr, wrmsr, invd, wbinvd, swapgs, clts, in, out, ins, hlt,
 * movcr): at CPL 3 each raises #GP, and Linux kills the program with
 * SIGSEGV before "after" is printed.
 */
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    const char *w = argc > 1 ? argv[1] : "cli";
    printf("before\n");
    fflush(stdout);
    if (!strcmp(w, "cli")) __asm__ volatile("cli");
    else if (!strcmp(w, "sti")) __asm__ volatile("sti");
    else if (!strcmp(w, "rdmsr")) __asm__ volatile("xor %%ecx,%%ecx; rdmsr" ::: "eax", "ecx", "edx");
    else if (!strcmp(w, "wrmsr")) __asm__ volatile("xor %%ecx,%%ecx; xor %%eax,%%eax; xor %%edx,%%edx; wrmsr" ::: "eax", "ecx", "edx");
    else if (!strcmp(w, "invd")) __asm__ volatile("invd");
    else if (!strcmp(w, "wbinvd")) __asm__ volatile("wbinvd");
    else if (!strcmp(w, "swapgs")) __asm__ volatile("swapgs");
    else if (!strcmp(w, "clts")) __asm__ volatile("clts");
    else if (!strcmp(w, "in")) __asm__ volatile("in $0x80, %%al" ::: "eax");
    else if (!strcmp(w, "out")) __asm__ volatile("out %%al, $0x80" ::: "eax");
    else if (!strcmp(w, "ins")) { char b[4]; __asm__ volatile("mov %0, %%rdi; xor %%edx,%%edx; insb" :: "r"(b) : "rdi", "edx", "memory"); }
    else if (!strcmp(w, "hlt")) __asm__ volatile("hlt");
    else if (!strcmp(w, "movcr")) __asm__ volatile("mov %%cr0, %%rax" ::: "rax");
    printf("after %s\n", w);
    return 0;
}
