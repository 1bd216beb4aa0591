/*
 * procself.c - what /proc/self says about the program itself: the mapping
 * of its code, stack and heap (maps), its own path (exe), its arguments
 * (cmdline), its environment (environ), the auxiliary vector (auxv), its
 * pid and name (stat, status), its descriptors (fd/), the same through
 * /proc/PID; and the CPUs (/proc/cpuinfo, /sys online, sysconf,
 * sched_getaffinity) agree with each other.  Prints facts that are the
 * same natively and under crec, not addresses.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    size_t n = 0;
    ssize_t r;

    if (fd < 0)
        return NULL;
    while ((r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* The maps line of the mapping holding addr: perms and name. */
static void maps_of(const char *maps, uintptr_t addr, const char *what)
{
    const char *l = maps;

    while (l && *l) {
        unsigned long a, b;
        char perms[8], name[512] = "";
        if (sscanf(l, "%lx-%lx %7s %*s %*s %*s %511[^\n]", &a, &b, perms, name) >= 3 &&
            addr >= a && addr < b) {
            const char *base = strrchr(name, '/');
            printf("%s: %s %s\n", what, perms, base ? base + 1 : name);
            return;
        }
        l = strchr(l, '\n');
        l = l ? l + 1 : NULL;
    }
    printf("%s: not found\n", what);
}

int main(int argc, char **argv)
{
    char path[64], link[4096], *maps, *t;
    size_t n;
    ssize_t k;
    int local = 0, fds = 0;
    char *heap = malloc(100);
    DIR *d;
    struct dirent *de;
    cpu_set_t set;

    maps = strdup(slurp("/proc/self/maps", NULL));
    maps_of(maps, (uintptr_t)&main, "code");
    maps_of(maps, (uintptr_t)&local, "stack");
    maps_of(maps, (uintptr_t)heap, "heap");
    maps_of(maps, (uintptr_t)&printf, "libc");
    snprintf(path, sizeof path, "/proc/%d/maps", getpid());
    printf("/proc/PID/maps is /proc/self/maps: %d\n", strcmp(maps, slurp(path, NULL)) == 0);
    k = readlink("/proc/self/exe", link, sizeof link - 1);
    link[k > 0 ? k : 0] = 0;
    printf("exe: %s\n", strrchr(link, '/') ? strrchr(link, '/') + 1 : link);
    t = slurp("/proc/self/cmdline", &n);
    printf("cmdline: %zu bytes, argv[1]=%s, same=%d\n", n, argc > 1 ? argv[1] : "-",
           argc > 1 && strcmp(t + strlen(t) + 1, argv[1]) == 0);
    t = slurp("/proc/self/environ", &n);
    printf("environ has PROCSELF_TEST: %d\n", memmem(t, n, "PROCSELF_TEST=yes", 17) != NULL);
    {
        Elf64_auxv_t *av = (Elf64_auxv_t *)slurp("/proc/self/auxv", &n);
        int pagesz = 0, entry = 0;
        for (size_t i = 0; i < n / sizeof *av; i++) {
            if (av[i].a_type == AT_PAGESZ && av[i].a_un.a_val == 4096)
                pagesz = 1;
            if (av[i].a_type == AT_ENTRY && av[i].a_un.a_val == getauxval(AT_ENTRY))
                entry = 1;
        }
        printf("auxv: pagesz %d entry %d\n", pagesz, entry);
    }
    t = slurp("/proc/self/stat", NULL);
    printf("stat: pid %d, name %d\n", atoi(t) == getpid(), strstr(t, "(procself)") != NULL);
    t = slurp("/proc/self/status", NULL);
    snprintf(path, sizeof path, "\nPid:\t%d\n", getpid());
    printf("status: name %d, pid %d, threads %d\n", strncmp(t, "Name:\tprocself\n", 15) == 0,
           strstr(t, path) != NULL, strstr(t, "\nThreads:\t1\n") != NULL);
    d = opendir("/proc/self/fd");
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, "0") == 0 || strcmp(de->d_name, "1") == 0 ||
            strcmp(de->d_name, "2") == 0 || (dirfd(d) >= 0 && atoi(de->d_name) == dirfd(d)))
            fds++;
    printf("fd/: 0 1 2 and the directory: %d\n", fds == 4);
    if (d)
        closedir(d);
    k = readlink("/proc/self/fd/0", link, sizeof link - 1);
    printf("fd/0 is a link: %d\n", k > 0);
    t = slurp("/proc/cpuinfo", NULL);
    {
        int cpus = 0;
        for (char *p = t; (p = strstr(p, "processor\t:")); p++)
            cpus++;
        sched_getaffinity(0, sizeof set, &set);
        printf("cpus agree: %d\n", cpus == sysconf(_SC_NPROCESSORS_ONLN) &&
                                       cpus == CPU_COUNT(&set) &&
                                       cpus == sysconf(_SC_NPROCESSORS_CONF));
    }
    free(heap);
    return 0;
}
