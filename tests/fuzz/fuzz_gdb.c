/*
 * fuzz_gdb.c - libFuzzer target over the gdb remote server's input: the
 * packet parser (gdb/conn.c) and every packet handler (gdb/server.c).
 * The input is the byte stream a gdb would send.
 *
 *   1. It is parsed in pieces whose sizes come from the input itself, and
 *      must give the same events as one whole feed; no body is longer than
 *      GDB_PACKET_MAX.
 *   2. Each byte string framed as a reply (binary: escaped; text: run-length
 *      encoded) parses back to itself.
 *   3. Every packet found is answered by a session on
 *      traces-sample/segv.crec (999 instructions), or, when the input's
 *      first byte is odd, on traces-sample/v2-threads.crec (three threads,
 *      44943 instructions), over a socket pair whose other end is drained:
 *      breakpoints, watchpoints, steps and continues both ways, threads,
 *      memory, registers, qXfer, monitor commands.
 * Any crash, hang, leak or sanitizer report is a bug; an error reply is
 * fine.  Run from the top of the tree (make fuzz).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crec.h"
#include "gdb/gdb_int.h"

static crec_recording *one, *threads;
static gdb_parser whole, split;

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A copy of traces-sample/NAME, opened (opening it writes its index beside it). */
static crec_recording *open_sample(const char *name)
{
    char path[96], cmd[200];
    crec_error err = {0};
    crec_recording *r = NULL;

    snprintf(path, sizeof path, "/dev/shm/crec-fuzz-gdb-%d-%s", (int)getpid(), name);
    snprintf(cmd, sizeof cmd, "cp traces-sample/%s %s", name, path);
    if (system(cmd) != 0 || crec_open(path, 0, &r, &err) != CREC_OK) {
        fprintf(stderr, "fuzz_gdb: can't open traces-sample/%s (run from the top of the tree): "
                "%s\n", name, err.msg);
        exit(1);
    }
    return r;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    one = open_sample("segv.crec");
    threads = open_sample("v2-threads.crec");
    return 0;
}

/* Parse data whole, and in pieces of 1 + data[i] % 61 bytes: the same events. */
static void parse_both_ways(const uint8_t *data, size_t size)
{
    size_t i = 0, j = 0, k = 0;

    gdb_parser_init(&whole);
    gdb_parser_init(&split);
    while (i < size) {
        int ev1 = GDB_EV_NONE, ev2 = GDB_EV_NONE;
        i += gdb_parser_feed(&whole, data + i, size - i, &ev1);
        /* the split parser catches up to the same event */
        while (ev2 == GDB_EV_NONE && j < size) {
            size_t piece = 1 + data[k++ % size] % 61;
            if (piece > size - j)
                piece = size - j;
            j += gdb_parser_feed(&split, data + j, piece, &ev2);
        }
        if (ev1 != ev2 || i != j)
            abort();
        if (whole.len > GDB_PACKET_MAX || (ev1 == GDB_EV_PACKET && whole.data[whole.len] != 0))
            abort();
        if (ev1 == GDB_EV_PACKET &&
            (whole.len != split.len || memcmp(whole.data, split.data, whole.len) != 0))
            abort();
    }
}

static void frame_round_trip(const uint8_t *data, size_t size, int binary)
{
    static uint8_t framed[2 * 4096 + 8];
    size_t n, used = 0;
    int ev = GDB_EV_NONE;

    if (size > 4096)
        size = 4096;
    if (!binary)
        for (size_t i = 0; i < size; i++)
            if (data[i] == '$' || data[i] == '#' || data[i] == '*' || data[i] == '}')
                return; /* text replies never hold these */
    n = gdb_frame(data, size, binary, framed, sizeof framed);
    if (n == 0)
        abort();
    gdb_parser_init(&whole);
    while (used < n && ev == GDB_EV_NONE)
        used += gdb_parser_feed(&whole, framed + used, n - used, &ev);
    if (ev != GDB_EV_PACKET || used != n || whole.len != size || memcmp(whole.data, data, size))
        abort();
}

static void drain(int fd)
{
    char buf[65536];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

/* Answer every packet of the input in one session on rec. */
static void serve(crec_recording *rec, const uint8_t *data, size_t size)
{
    int sv[2];
    gdb_conn *c;
    gdb_session *s;
    size_t i = 0;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return;
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    c = gdb_conn_new(sv[0], NULL);
    if (!c) {
        close(sv[1]);
        return;
    }
    gdb_conn_no_ack(c); /* nobody acks: replies must not wait for it */
    s = gdb_session_new(rec, c, NULL);
    gdb_parser_init(&whole);
    while (s && i < size) {
        int ev;
        i += gdb_parser_feed(&whole, data + i, size - i, &ev);
        if (ev == GDB_EV_PACKET) {
            /* the parser's buffer is reused by nothing in the session */
            if (gdb_session_packet(s, (const char *)whole.data, whole.len))
                break;
            drain(sv[1]);
        }
    }
    gdb_session_free(s);
    gdb_conn_free(c);
    close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse_both_ways(data, size);
    frame_round_trip(data, size, 1);
    frame_round_trip(data, size, 0);
    serve(size && data[0] & 1 ? threads : one, data, size);
    return 0;
}
