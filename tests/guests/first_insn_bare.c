/*
 * first_insn_bare.c - a program whose very first instruction is
 * privileged: Linux kills it with SIGSEGV before any instruction has run,
 * so its recording holds 0 instructions.
 */
__attribute__((naked, noreturn)) void _start(void)
{
    __asm__ volatile("cli");
}
