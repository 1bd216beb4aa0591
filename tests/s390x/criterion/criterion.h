/*
 * criterion.h - a small stand-in for Criterion, for the s390x cross build
 * only: Debian has no libcriterion for s390x, and the format unit test
 * (tests/test_format.c) must run on a big-endian host too.  mk/s390x.mk
 * puts tests/s390x first on the include path, so the test compiles
 * unchanged.
 *
 * What it covers is what tests/test_format.c uses: Test(suite, name),
 * cr_assert*, cr_expect*, cr_log_info, cr_skip_test.  Each test runs in a
 * child process (as Criterion runs it), so a failed assertion or a crash
 * ends that test only.  The last line is Criterion's own summary,
 * "Synthesis: Tested: N | Passing: N | Failing: N | Crashing: N".
 * Arguments: test names to run (default: all); --jobs N is accepted and
 * ignored.
 */
#ifndef CREC_CRITERION_STANDIN_H
#define CREC_CRITERION_STANDIN_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct crs_test {
    const char *suite, *name;
    void (*fn)(void);
    struct crs_test *next;
};

static struct crs_test *crs_head, **crs_tail = &crs_head;
static int crs_failed;

static inline void crs_register(struct crs_test *t)
{
    *crs_tail = t;
    crs_tail = &t->next;
}

#define Test(suite, name, ...)                                                                     \
    static void suite##_##name(void);                                                              \
    static struct crs_test crs_t_##suite##_##name = {#suite, #name, suite##_##name, NULL};         \
    __attribute__((constructor)) static void crs_r_##suite##_##name(void)                          \
    {                                                                                              \
        crs_register(&crs_t_##suite##_##name);                                                     \
    }                                                                                              \
    static void suite##_##name(void)

static inline void crs_report(const char *file, int line, const char *expr, int fatal,
                              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static inline void crs_report(const char *file, int line, const char *expr, int fatal,
                              const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s:%d: assertion failed: %s", file, line, expr);
    if (fmt[2]) { /* fmt is ": " and the caller's message */
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    crs_failed = 1;
    if (fatal)
        exit(1);
}

#define crs_check(fatal, cond, expr, ...)                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            crs_report(__FILE__, __LINE__, expr, fatal, ": " __VA_ARGS__);                         \
    } while (0)

#define cr_assert(c, ...)           crs_check(1, (c), #c, __VA_ARGS__)
#define cr_expect(c, ...)           crs_check(0, (c), #c, __VA_ARGS__)
#define cr_assert_eq(a, b, ...)     crs_check(1, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...)     crs_check(0, (a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...)    crs_check(1, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...)    crs_check(0, (a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)     crs_check(1, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...)     crs_check(0, (a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...)    crs_check(1, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...)    crs_check(0, (a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)     crs_check(1, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...)     crs_check(0, (a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...)    crs_check(1, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...)    crs_check(0, (a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...)      crs_check(1, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_null(p, ...)      crs_check(0, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...)  crs_check(1, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...)  crs_check(0, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) crs_check(1, strcmp((a), (b)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) crs_check(0, strcmp((a), (b)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_log_info(...)            (fprintf(stderr, "[----] " __VA_ARGS__), fputc('\n', stderr))
#define cr_skip_test(...)           (fprintf(stderr, "[SKIP] " __VA_ARGS__), fputc('\n', stderr), exit(77))

static int crs_wanted(const struct crs_test *t, int argc, char **argv)
{
    int any = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) {
            i++;
            continue;
        }
        any = 1;
        if (strcmp(argv[i], t->name) == 0)
            return 1;
    }
    return !any;
}

int main(int argc, char **argv)
{
    int tested = 0, passed = 0, failing = 0, crashing = 0;

    for (struct crs_test *t = crs_head; t; t = t->next) {
        pid_t pid;
        int st = 0;

        if (!crs_wanted(t, argc, argv))
            continue;
        fflush(NULL);
        pid = fork();
        if (pid == 0) {
            t->fn();
            fflush(NULL);
            _exit(crs_failed ? 1 : 0);
        }
        tested++;
        if (pid < 0 || waitpid(pid, &st, 0) != pid) {
            printf("[FAIL] %s::%s: can't run it\n", t->suite, t->name);
            crashing++;
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
            printf("[SKIP] %s::%s\n", t->suite, t->name);
            tested--;
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            printf("[PASS] %s::%s\n", t->suite, t->name);
            passed++;
        } else if (WIFEXITED(st)) {
            printf("[FAIL] %s::%s\n", t->suite, t->name);
            failing++;
        } else {
            printf("[FAIL] %s::%s: crashed (signal %d)\n", t->suite, t->name, WTERMSIG(st));
            crashing++;
        }
    }
    printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d\n", tested,
           passed, failing, crashing);
    return failing || crashing ? 1 : 0;
}

#endif /* CREC_CRITERION_STANDIN_H */
