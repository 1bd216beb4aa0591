/*
 * clock_pipe_file.c - reads a file (argv[1]), its standard input (a pipe)
 * and the clock, and prints all three: its output depends on things a
 * replay can only get from the recording.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    char file_line[256] = "", pipe_line[256] = "";
    struct timespec ts;
    FILE *f;

    if (argc < 2 || !(f = fopen(argv[1], "r"))) {
        fprintf(stderr, "usage: clock_pipe_file FILE < PIPE\n");
        return 2;
    }
    if (!fgets(file_line, sizeof file_line, f))
        return 3;
    fclose(f);
    if (!fgets(pipe_line, sizeof pipe_line, stdin))
        return 4;
    clock_gettime(CLOCK_REALTIME, &ts);
    printf("file: %s", file_line);
    printf("pipe: %s", pipe_line);
    printf("clock: %lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
    printf("time: %lld\n", (long long)time(NULL));
    return 0;
}
