/*
 * mksample.c - write the sample recording of tests/tools/sample.h.
 *   mksample FILE [THREADS [CHUNK_SIZE [open]]]
 * "open" leaves the file without directory and trailer, as a killed
 * recorder would.  FILE "-" writes to standard output.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "tests/tools/sample.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: mksample FILE [THREADS [CHUNK_SIZE [open]]]\n");
        return 2;
    }
    uint32_t threads = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 2;
    size_t chunk = argc > 3 ? (size_t)strtoul(argv[3], NULL, 0) : 64;
    int close_it = !(argc > 4 && strcmp(argv[4], "open") == 0);
    int fd = strcmp(argv[1], "-") == 0 ? 1 : open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    crec_error e = {0};
    if (sample_write_fd(fd, argv[1], threads, chunk, close_it, &e) != CREC_OK) {
        fprintf(stderr, "mksample: %s\n", e.msg);
        return 1;
    }
    return 0;
}
