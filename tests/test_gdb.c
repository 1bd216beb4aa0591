/*
 * test_gdb.c - the gdb remote server: the packet parser and framing (any
 * split of the input, checksums, escapes, run lengths, limits), hex, the
 * register layout and target description, and a server on a real socket
 * serving traces-sample/segv.crec (999 instructions, a key frame every 200,
 * ends in SIGSEGV) to a client that speaks the protocol: registers equal
 * the query API's, breakpoints and watchpoints stop where a plain replay
 * says, forwards and backwards, and bad input gets an error, never a crash.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crec.h"
#include "gdb/gdb_int.h"

/* ---- the parser ------------------------------------------------------------- */

static gdb_parser parser;

/* Feed `in` in pieces of `step` bytes; collect events (and packet bodies). */
static int feed_all(const char *in, size_t n, size_t step, int *evs, char bodies[][256], int max)
{
    int k = 0;
    size_t i = 0;

    gdb_parser_init(&parser);
    while (i < n) {
        size_t len = n - i < step ? n - i : step;
        size_t used = 0;
        while (used < len) {
            int ev;
            used += gdb_parser_feed(&parser, (const uint8_t *)in + i + used, len - used, &ev);
            if (ev != GDB_EV_NONE && k < max) {
                evs[k] = ev;
                size_t m = ev == GDB_EV_PACKET ? parser.len : 0;
                m = m < 255 ? m : 255;
                memcpy(bodies[k], parser.data, m);
                bodies[k][m] = 0;
                k++;
            }
        }
        i += len;
    }
    return k;
}

Test(gdb, parser_finds_the_same_packets_in_any_split)
{
    const char in[] = "+$qSupported:multiprocess+#c6-\x03$g#67junk$m10,4#2e";
    for (size_t step = 1; step <= sizeof in; step++) {
        int evs[8];
        char bodies[8][256];
        int k = feed_all(in, sizeof in - 1, step, evs, bodies, 8);
        cr_assert_eq(k, 6, "step %zu: %d events", step, k);
        cr_assert_eq(evs[0], GDB_EV_ACK);
        cr_assert_eq(evs[1], GDB_EV_PACKET);
        cr_assert_str_eq(bodies[1], "qSupported:multiprocess+");
        cr_assert_eq(evs[2], GDB_EV_NACK);
        cr_assert_eq(evs[3], GDB_EV_INTERRUPT);
        cr_assert_str_eq(bodies[4], "g");
        cr_assert_str_eq(bodies[5], "m10,4");
    }
}

Test(gdb, parser_checks_checksums)
{
    int evs[4];
    char bodies[4][256];

    cr_assert_eq(feed_all("$g#68", 5, 5, evs, bodies, 4), 1);
    cr_assert_eq(evs[0], GDB_EV_BADSUM);
    cr_assert_eq(feed_all("$g#6z", 5, 5, evs, bodies, 4), 1);
    cr_assert_eq(evs[0], GDB_EV_BADSUM);
    cr_assert_eq(feed_all("$g#6", 4, 4, evs, bodies, 4), 0); /* not finished yet */
    cr_assert_eq(feed_all("$g#67", 5, 5, evs, bodies, 4), 1);
    cr_assert_eq(evs[0], GDB_EV_PACKET);
}

Test(gdb, parser_undoes_escapes_and_run_lengths)
{
    uint8_t raw[64], framed[128];
    const uint8_t body[] = {'X', '}', '#', '$', '*', 0, 0xff, 'a'};
    size_t n = gdb_frame(body, sizeof body, 1, framed, sizeof framed);
    int ev = 0;

    cr_assert_gt(n, sizeof body);
    gdb_parser_init(&parser);
    cr_assert_eq(gdb_parser_feed(&parser, framed, n, &ev), n);
    cr_assert_eq(ev, GDB_EV_PACKET);
    cr_assert_eq(parser.len, sizeof body);
    cr_assert(memcmp(parser.data, body, sizeof body) == 0);

    /* "0* " is four zeros; a long run in a text reply round-trips */
    memset(raw, '0', 40);
    raw[40] = 'x';
    n = gdb_frame(raw, 41, 0, framed, sizeof framed);
    cr_assert_lt(n, 20, "40 zeros are run-length encoded (%zu bytes)", n);
    gdb_parser_init(&parser);
    gdb_parser_feed(&parser, framed, n, &ev);
    cr_assert_eq(ev, GDB_EV_PACKET);
    cr_assert_eq(parser.len, 41);
    cr_assert(memcmp(parser.data, raw, 41) == 0);
}

Test(gdb, frame_never_writes_a_bad_run_count)
{
    uint8_t body[200], framed[512];
    int ev;

    /* every run length: the count character is never '#' or '$' */
    for (size_t run = 1; run < 150; run++) {
        memset(body, 'f', run);
        body[run] = 'e';
        size_t n = gdb_frame(body, run + 1, 0, framed, sizeof framed);
        cr_assert_gt(n, 0);
        for (size_t i = 1; i + 3 < n; i++)
            cr_assert(framed[i] != '#' && framed[i] != '$', "run %zu", run);
        gdb_parser_init(&parser);
        gdb_parser_feed(&parser, framed, n, &ev);
        cr_assert_eq(ev, GDB_EV_PACKET, "run %zu", run);
        cr_assert_eq(parser.len, run + 1);
        cr_assert(memcmp(parser.data, body, run + 1) == 0);
    }
    for (size_t i = 0; i < 100; i++)
        body[i] = (uint8_t)('a' + i % 26);
    cr_assert_eq(gdb_frame(body, 100, 0, framed, 10), 0, "too small a buffer gives 0");
}

Test(gdb, parser_bounds_long_and_broken_packets)
{
    static char in[GDB_PACKET_MAX * 2 + 16];
    int evs[4];
    char bodies[4][256];
    size_t n = 0;
    uint8_t sum = 0;

    in[n++] = '$';
    for (size_t i = 0; i < GDB_PACKET_MAX + 100; i++) {
        in[n++] = 'a';
        sum = (uint8_t)(sum + 'a');
    }
    n += (size_t)sprintf(in + n, "#%02x", sum);
    cr_assert_eq(feed_all(in, n, 4096, evs, bodies, 4), 1);
    cr_assert_eq(evs[0], GDB_EV_TOOLONG);

    /* a run that expands past the limit */
    n = 0;
    sum = 0;
    in[n++] = '$';
    for (size_t i = 0; i < GDB_PACKET_MAX / 90; i++) {
        const char *r = "a*~"; /* 'a' and 97 more */
        for (int j = 0; j < 3; j++) {
            in[n++] = r[j];
            sum = (uint8_t)(sum + r[j]);
        }
    }
    n += (size_t)sprintf(in + n, "#%02x", sum);
    cr_assert_eq(feed_all(in, n, 777, evs, bodies, 4), 1);
    cr_assert_eq(evs[0], GDB_EV_TOOLONG);

    /* a run with nothing to repeat, a count below 3, an escape at the end */
    cr_assert_eq(feed_all("$*!#4b", 6, 6, evs, bodies, 4), 1);
    cr_assert_eq(evs[0], GDB_EV_MALFORMED);
    cr_assert_eq(feed_all("$a*\x01#8c", 7, 7, evs, bodies, 4), 1);
    cr_assert_eq(evs[0], GDB_EV_MALFORMED);
    cr_assert_eq(feed_all("$a}#de", 6, 6, evs, bodies, 4), 1);
    cr_assert_eq(evs[0], GDB_EV_MALFORMED);
    /* a packet cut short by the start of another: the second one counts */
    cr_assert_eq(feed_all("$qSup$g#67", 10, 3, evs, bodies, 4), 1);
    cr_assert_str_eq(bodies[0], "g");
}

Test(gdb, hex)
{
    uint8_t b[4];
    char s[16];
    const char *p = "1f,";
    uint64_t v;

    gdb_hex_encode((const uint8_t *)"\x00\xab\x10\xff", 4, s);
    cr_assert_str_eq(s, "00ab10ff");
    cr_assert_eq(gdb_hex_decode("00AB10ff", 4, b), 0);
    cr_assert(memcmp(b, "\x00\xab\x10\xff", 4) == 0);
    cr_assert_eq(gdb_hex_decode("0g", 1, b), -1);
    cr_assert_eq(gdb_hex_u64(&p, &v), 0);
    cr_assert_eq(v, 0x1f);
    cr_assert_str_eq(p, ",");
    p = "12345678123456781";
    cr_assert_eq(gdb_hex_u64(&p, &v), -1, "17 digits overflow");
    p = ",";
    cr_assert_eq(gdb_hex_u64(&p, &v), -1);
}

/* ---- registers and the target description ------------------------------------- */

Test(gdb, target_description_matches_the_register_table)
{
    char *xml = gdb_tdesc_xml(0), *avx = gdb_tdesc_xml(1);
    size_t bytes = 0;
    int regs = 0;

    cr_assert(xml && avx);
    for (const char *p = xml; (p = strstr(p, "<reg ")); p++)
        regs++;
    cr_assert_eq(regs, GDB_NREGS);
    cr_assert(strstr(xml, "org.gnu.gdb.i386.core") && strstr(xml, "org.gnu.gdb.i386.sse") &&
              strstr(xml, "org.gnu.gdb.i386.linux") && strstr(xml, "org.gnu.gdb.i386.segments"));
    cr_assert_null(strstr(xml, "org.gnu.gdb.i386.avx"), "no AVX unless the recording showed it");
    cr_assert_not_null(strstr(avx, "<reg name=\"ymm15h\" bitsize=\"128\" type=\"uint128\" regnum=\"75\""));
    cr_assert_not_null(strstr(xml, "<reg name=\"rip\" bitsize=\"64\" type=\"code_ptr\" regnum=\"16\""));
    cr_assert_not_null(strstr(xml, "<reg name=\"xmm0\" bitsize=\"128\" type=\"vec128\" regnum=\"40\""));
    cr_assert_not_null(strstr(xml, "<reg name=\"orig_rax\" bitsize=\"64\" type=\"int\" regnum=\"57\""));
    cr_assert_not_null(strstr(xml, "<reg name=\"fs_base\" bitsize=\"64\" type=\"int\" regnum=\"58\""));
    for (int i = 0; i < GDB_NREGS; i++)
        bytes += gdb_reg_size(i, 0);
    cr_assert_eq(bytes, 560, "the g packet of amd64 GNU/Linux");
    cr_assert_eq(gdb_reg_size(GDB_NREGS, 0), 0);
    cr_assert_eq(gdb_reg_size(GDB_NREGS, 1), 16);
    free(xml);
    free(avx);
}

Test(gdb, register_values_in_gdb_order)
{
    crec_regs r;
    uint8_t v[16];

    memset(&r, 0, sizeof r);
    for (int i = 0; i < CREC_NGPR; i++)
        r.gpr[i] = 0x1000 + (uint64_t)i;
    r.rip = 0x401000;
    r.rflags = 0x246;
    r.fs_base = 0x7000;
    r.xmm[3][0] = 0xaa;
    cr_assert_eq(gdb_reg_value(&r, 1, 0, v), 1); /* gdb's 1 is rbx */
    cr_assert_eq(v[0] | v[1] << 8, 0x1000 + CREC_RBX);
    cr_assert_eq(gdb_reg_value(&r, 7, 0, v), 1); /* gdb's 7 is rsp */
    cr_assert_eq(v[0] | v[1] << 8, 0x1000 + CREC_RSP);
    gdb_reg_value(&r, GDB_REG_RIP, 0, v);
    cr_assert_eq(v[0] | v[1] << 8 | v[2] << 16, 0x401000);
    gdb_reg_value(&r, GDB_REG_EFLAGS, 0, v);
    cr_assert_eq(v[0] | v[1] << 8, 0x246);
    gdb_reg_value(&r, GDB_REG_XMM0 + 3, 0, v);
    cr_assert_eq(v[0], 0xaa);
    gdb_reg_value(&r, GDB_REG_FS_BASE, 0, v);
    cr_assert_eq(v[0] | v[1] << 8, 0x7000);
    cr_assert_eq(gdb_reg_value(&r, 18, 0, v), 0, "cs is not recorded: unavailable");
    cr_assert_eq(gdb_reg_value(&r, GDB_REG_ORIG_RAX, 0, v), 0);
    cr_assert_eq(gdb_reg_value(&r, GDB_REG_YMM0H, 1, v), 0);
    cr_assert_eq(gdb_reg_value(&r, GDB_NREGS, 0, v), -1);
}

/* ---- a server on a socket ------------------------------------------------------- */

static char rec_path[64];
static crec_recording *rec;
static crec_gdb *srv;
static pthread_t srv_thread;
static int srv_rc = -1;
static int sock = -1;

static void *serve_main(void *arg)
{
    crec_error err = {0};

    (void)arg;
    srv_rc = crec_gdb_serve(srv, rec, NULL, &err);
    return NULL;
}

/* The sample the server serves (traces-sample/NAME). */
static const char *sample = "segv.crec";

/* A copy of the sample, opened: its index is written beside it. */
static void sample_open(void)
{
    char cmd[256];
    crec_error err = {0};

    snprintf(rec_path, sizeof rec_path, "/tmp/crec-test-gdb-%d.crec", (int)getpid());
    snprintf(cmd, sizeof cmd, "cp traces-sample/%s %s", sample, rec_path);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(crec_open(rec_path, 0, &rec, &err), CREC_OK, "%s", err.msg);
}

static void sample_close(void)
{
    char idx[80];

    crec_close(rec);
    snprintf(idx, sizeof idx, "%s.idx", rec_path);
    unlink(rec_path);
    unlink(idx);
}

static void server_start(void)
{
    crec_error err = {0};
    struct sockaddr_in a = {0};

    sample_open();
    cr_assert_eq(crec_gdb_listen(0, &srv, &err), CREC_OK, "%s", err.msg);
    cr_assert_gt(crec_gdb_port(srv), 0);
    cr_assert_eq(pthread_create(&srv_thread, NULL, serve_main, NULL), 0);
    sock = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)crec_gdb_port(srv));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(sock, (struct sockaddr *)&a, sizeof a), 0);
}

/* Close our end, wait for the server to end its session. */
static int server_stop(void)
{
    if (sock >= 0)
        close(sock);
    sock = -1;
    pthread_join(srv_thread, NULL);
    crec_gdb_close(srv);
    sample_close();
    return srv_rc;
}

static void send_raw(const char *s, size_t n)
{
    cr_assert_eq(send(sock, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

static void send_packet(const char *body)
{
    static uint8_t framed[2 * GDB_PACKET_MAX];
    size_t n = gdb_frame((const uint8_t *)body, strlen(body), 0, framed, sizeof framed);
    send_raw((const char *)framed, n);
}

static int ack_mode = 1;

/* The next event from the server: an ack character, or a packet in `out`. */
static int recv_event(char *out, size_t size)
{
    static gdb_parser p;
    static uint8_t buf[4096];
    static size_t pos, len;
    static int init;

    if (!init) {
        gdb_parser_init(&p);
        init = 1;
    }
    for (;;) {
        int ev;
        if (pos == len) {
            ssize_t r = recv(sock, buf, sizeof buf, 0);
            cr_assert_gt(r, 0, "the server closed the connection");
            pos = 0, len = (size_t)r;
        }
        pos += gdb_parser_feed(&p, buf + pos, len - pos, &ev);
        if (ev == GDB_EV_PACKET) {
            cr_assert_lt(p.len, size);
            memcpy(out, p.data, p.len + 1);
            if (ack_mode)
                send_raw("+", 1);
            return ev;
        }
        if (ev != GDB_EV_NONE)
            return ev;
    }
}

/* Send a packet and return the reply's body. */
static const char *ask(const char *body)
{
    static char reply[2 * GDB_PACKET_MAX];
    int ev;

    send_packet(body);
    if (ack_mode)
        cr_assert_eq(recv_event(reply, sizeof reply), GDB_EV_ACK, "no ack for %s", body);
    while ((ev = recv_event(reply, sizeof reply)) != GDB_EV_PACKET)
        ;
    return reply;
}

static void no_ack(void)
{
    cr_assert_str_eq(ask("QStartNoAckMode"), "OK");
    ack_mode = 0;
}

static uint64_t monitor_when(void)
{
    char hex[64], text[64];
    const char *r;
    unsigned long long t;

    gdb_hex_encode((const uint8_t *)"when", 4, hex);
    char q[80];
    snprintf(q, sizeof q, "qRcmd,%s", hex);
    r = ask(q);
    memset(text, 0, sizeof text);
    cr_assert_eq(gdb_hex_decode(r, strlen(r) / 2 < 63 ? strlen(r) / 2 : 63, (uint8_t *)text), 0);
    cr_assert_eq(sscanf(text, "Current instruction count: %llu", &t), 1, "%s", text);
    return t;
}

/* The recording's registers at t, through the query API. */
static crec_regs regs_at(uint64_t t)
{
    crec_error err = {0};
    crec_regs r;
    cr_assert_eq(crec_seek(rec, t, &err), CREC_OK);
    cr_assert_eq(crec_read_registers(rec, &r, &err), CREC_OK, "%s", err.msg);
    return r;
}

Test(gdb, server_answers_like_the_query_api)
{
    char q[128];
    const char *r;

    server_start();
    r = ask("qSupported:multiprocess+;swbreak+;hwbreak+;xmlRegisters=i386");
    cr_assert(strstr(r, "PacketSize=4000") && strstr(r, "QStartNoAckMode+") &&
              strstr(r, "qXfer:features:read+") && strstr(r, "qXfer:auxv:read+") &&
              strstr(r, "qXfer:exec-file:read+") && strstr(r, "swbreak+") &&
              strstr(r, "hwbreak+") && strstr(r, "vContSupported+") &&
              strstr(r, "ReverseContinue+") && strstr(r, "ReverseStep+"), "%s", r);
    no_ack();
    cr_assert_str_eq(ask("?"), "T05thread:p1.1;");
    cr_assert_str_eq(ask("qC"), "QCp1.1");
    cr_assert_str_eq(ask("qfThreadInfo"), "mp1.1");
    cr_assert_str_eq(ask("qsThreadInfo"), "l");
    cr_assert_str_eq(ask("Hgp1.1"), "OK");
    cr_assert_str_eq(ask("Hg7"), "E01", "no thread 7");
    cr_assert_str_eq(ask("Tp1.1"), "OK");
    cr_assert_str_eq(ask("vCont?"), "vCont;c;C;s;S");
    cr_assert_str_eq(ask("qAttached"), "1");

    /* registers at 0, then after 150 steps */
    crec_regs want = regs_at(0);
    char hex[17];
    uint8_t le[8];
    r = ask("g");
    cr_assert_eq(strlen(r), 1120, "560 bytes of registers");
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(want.rip >> (8 * i));
    gdb_hex_encode(le, 8, hex);
    cr_assert_eq(strncmp(r + 16 * 16, hex, 16), 0, "rip in g");
    cr_assert_eq(strncmp(r + 16 * 16 + 16 + 8, "xxxxxxxx", 8), 0, "cs unavailable");
    for (int i = 0; i < 150; i++)
        cr_assert_str_eq(ask("vCont;s:p1.1"), "T05thread:p1.1;");
    cr_assert_eq(monitor_when(), 150);
    want = regs_at(150);
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(want.gpr[CREC_RSP] >> (8 * i));
    gdb_hex_encode(le, 8, hex);
    cr_assert_str_eq(ask("p7"), hex, "rsp");

    /* memory at rsp equals crec_read_memory */
    uint8_t mem[32], known[32];
    char memhex[65];
    crec_error err = {0};
    cr_assert_eq(crec_seek(rec, 150, &err), CREC_OK);
    cr_assert_eq(crec_read_memory(rec, want.gpr[CREC_RSP], 32, mem, known, NULL, &err), CREC_OK);
    for (int i = 0; i < 32; i++)
        cr_assert(known[i]);
    gdb_hex_encode(mem, 32, memhex);
    snprintf(q, sizeof q, "m%llx,20", (unsigned long long)want.gpr[CREC_RSP]);
    cr_assert_str_eq(ask(q), memhex);
    cr_assert_str_eq(ask("m0,8"), "E0e", "never mapped");

    /* a recording is read-only */
    cr_assert_str_eq(ask("G00"), "E01");
    cr_assert_str_eq(ask("P10=0000000000000000"), "E01");
    cr_assert_str_eq(ask("M400000,1:00"), "E01");
    cr_assert_str_eq(ask("X400000,0:"), "E01");

    /* back to the start, and the ends */
    for (int i = 0; i < 150; i++)
        cr_assert_str_eq(ask("bs"), "T05thread:p1.1;");
    cr_assert_str_eq(ask("bs"), "T05thread:p1.1;replaylog:begin;");
    cr_assert_str_eq(ask("bc"), "T05thread:p1.1;replaylog:begin;");
    cr_assert_str_eq(ask("c"), "T0bthread:p1.1;", "the run ends in SIGSEGV");
    cr_assert_eq(monitor_when(), crec_length(rec));
    cr_assert_str_eq(ask("s"), "T0bthread:p1.1;", "no further");
    cr_assert_str_eq(ask("D"), "OK");
    cr_assert_eq(server_stop(), CREC_OK);
}

/* The RIP at every time, by one plain run with an every-instruction hook. */
static uint64_t rips[4096];

static int note_rip(void *ctx, crec_exec *x, uint64_t t, uint32_t tid, uint64_t rip)
{
    (void)ctx, (void)x, (void)tid;
    if (t < 4096)
        rips[t] = rip;
    return 0;
}

/* First / last t in [lo, hi) with rip == addr. */
static uint64_t rip_scan(uint64_t addr, uint64_t lo, uint64_t hi, int last)
{
    uint64_t found = UINT64_MAX;
    for (uint64_t t = lo; t < hi; t++)
        if (rips[t] == addr) {
            found = t;
            if (!last)
                break;
        }
    return found;
}

Test(gdb, breakpoints_forwards_and_backwards)
{
    char q[64];
    uint64_t end, addr, first, second, last;

    server_start();
    ask("qSupported:multiprocess+;swbreak+");
    no_ack();
    end = crec_length(rec);
    cr_assert_lt(end, 4096);
    crec_observer obs = {0};
    crec_error err = {0};
    obs.insn = note_rip;
    cr_assert_eq(crec_exec_run(rec, 0, end, &obs, NULL, &err), CREC_OK, "%s", err.msg);
    cr_assert_eq(rips[500], regs_at(500).rip, "the oracle agrees with the query API");
    addr = rips[500];
    first = rip_scan(addr, 1, end, 0);
    cr_assert_neq(first, UINT64_MAX);
    second = rip_scan(addr, first + 1, end, 0);
    last = rip_scan(addr, 0, end, 1);

    snprintf(q, sizeof q, "Z0,%llx,1", (unsigned long long)addr);
    cr_assert_str_eq(ask(q), "OK");
    cr_assert_str_eq(ask("c"), "T05thread:p1.1;swbreak:;");
    cr_assert_eq(monitor_when(), first);
    if (second != UINT64_MAX) {
        cr_assert_str_eq(ask("vCont;c"), "T05thread:p1.1;swbreak:;");
        cr_assert_eq(monitor_when(), second);
    }
    /* to the end (no more hits after `last`), then back to `last` */
    while (monitor_when() < last)
        ask("c");
    cr_assert_eq(monitor_when(), last);
    cr_assert_str_eq(ask("c"), "T0bthread:p1.1;");
    cr_assert_str_eq(ask("bc"), "T05thread:p1.1;swbreak:;");
    cr_assert_eq(monitor_when(), last);
    /* back to the first, then the beginning */
    while (monitor_when() > first)
        cr_assert_str_eq(ask("bc"), "T05thread:p1.1;swbreak:;");
    cr_assert_eq(monitor_when(), first);
    cr_assert_str_eq(ask("bc"), "T05thread:p1.1;replaylog:begin;");
    cr_assert_eq(monitor_when(), 0);
    snprintf(q, sizeof q, "z0,%llx,1", (unsigned long long)addr);
    cr_assert_str_eq(ask(q), "OK");
    cr_assert_str_eq(ask("Z5,0,1"), "", "an unknown kind: not supported");
    cr_assert_str_eq(ask("Z0,zz,1"), "E01");
    close(sock);
    sock = -1;
    cr_assert_eq(server_stop(), CREC_OK, "gdb going away is a normal end");
}

/* The writes to [addr, addr+len) over the whole recording, by one plain run. */
struct writes {
    uint64_t addr, len;
    uint64_t t[4096];
    size_t n;
};

static int note_write(void *ctx, crec_exec *x, const crec_access *a)
{
    struct writes *w = ctx;
    (void)x;
    if (a->kind != CREC_ACCESS_READ && a->addr < w->addr + w->len &&
        (a->len == UINT64_MAX || a->addr + a->len > w->addr) && w->n < 4096 &&
        (w->n == 0 || w->t[w->n - 1] != a->t))
        w->t[w->n++] = a->t;
    return 0;
}

Test(gdb, watchpoints_stop_after_the_write_forwards_and_before_it_backwards)
{
    static struct writes w;
    crec_observer obs = {0};
    crec_error err = {0};
    char q[64];

    server_start();
    ask("qSupported:multiprocess+;swbreak+;hwbreak+");
    no_ack();
    /* a stack slot the program writes several times */
    w.addr = (regs_at(300).gpr[CREC_RSP] - 8) & ~7ull;
    w.len = 8;
    obs.ctx = &w;
    obs.access = note_write;
    cr_assert_eq(crec_exec_run(rec, 0, crec_length(rec), &obs, NULL, &err), CREC_OK, "%s",
                 err.msg);
    cr_assert_geq(w.n, 2, "the slot is written at least twice (%zu)", w.n);

    snprintf(q, sizeof q, "Z2,%llx,8", (unsigned long long)w.addr);
    cr_assert_str_eq(ask(q), "OK");
    snprintf(q, sizeof q, "T05thread:p1.1;watch:%llx;", (unsigned long long)w.addr);
    for (size_t i = 0; i < w.n; i++) {
        const char *r = ask("c");
        cr_assert(strncmp(r, "T05thread:p1.1;watch:", 21) == 0, "%s", r);
        cr_assert_eq(monitor_when(), w.t[i] + 1, "write %zu: after the instruction", i);
    }
    cr_assert_str_eq(ask("c"), "T0bthread:p1.1;");
    for (size_t i = w.n; i-- > 0;) {
        const char *r = ask("bc");
        cr_assert(strncmp(r, "T05thread:p1.1;watch:", 21) == 0, "%s", r);
        cr_assert_eq(monitor_when(), w.t[i], "write %zu: before the instruction", i);
    }
    cr_assert_str_eq(ask("bc"), "T05thread:p1.1;replaylog:begin;");
    /* a read watchpoint on the same slot: only loads stop it */
    snprintf(q, sizeof q, "z2,%llx,8", (unsigned long long)w.addr);
    cr_assert_str_eq(ask(q), "OK");
    snprintf(q, sizeof q, "Z3,%llx,8", (unsigned long long)w.addr);
    cr_assert_str_eq(ask(q), "OK");
    const char *r = ask("c");
    cr_assert(strncmp(r, "T05thread:p1.1;rwatch:", 22) == 0 || strncmp(r, "T0b", 3) == 0, "%s",
              r);
    cr_assert_str_eq(ask("Z2,1000,0"), "E16", "an empty range");
    cr_assert_eq(server_stop(), CREC_OK);
}

Test(gdb, xfer_objects_come_in_pieces)
{
    char *want = gdb_tdesc_xml(0);
    char got[16384] = "", q[128];
    size_t off = 0;
    uint8_t *auxv;
    size_t auxv_len;
    crec_error err = {0};

    server_start();
    ask("qSupported:multiprocess+");
    no_ack();
    for (;;) {
        snprintf(q, sizeof q, "qXfer:features:read:target.xml:%zx,100", off);
        const char *r = ask(q);
        cr_assert(r[0] == 'm' || r[0] == 'l', "%s", r);
        strcat(got, r + 1);
        off += strlen(r + 1);
        if (r[0] == 'l')
            break;
    }
    cr_assert_str_eq(got, want);
    cr_assert_str_eq(ask("qXfer:features:read:other.xml:0,100"), "E00");
    cr_assert_str_eq(ask("qXfer:features:read:target.xml:ffffff,100"), "E16");
    cr_assert_str_eq(ask("qXfer:siginfo:read::0,100"), "");

    cr_assert_eq(crec_initial_auxv(rec, &auxv, &auxv_len, &err), CREC_OK);
    snprintf(q, sizeof q, "qXfer:auxv:read::0,%zx", auxv_len + 100);
    /* binary: compare through the parser's unescaped bytes */
    const char *r = ask(q);
    cr_assert_eq(r[0], 'l');
    cr_assert_eq(memcmp(r + 1, auxv, auxv_len), 0);
    free(auxv);
    free(want);
    cr_assert_eq(server_stop(), CREC_OK);
}

Test(gdb, bad_input_gets_an_error_not_a_crash)
{
    static char big[GDB_PACKET_MAX + 64];
    char reply[256];

    server_start();
    /* a bad checksum is refused with '-' in ack mode */
    send_raw("$g#00", 5);
    cr_assert_eq(recv_event(reply, sizeof reply), GDB_EV_NACK);
    /* too long: acked, then refused */
    memset(big, 'q', sizeof big - 1);
    big[0] = 'q';
    send_packet(big);
    cr_assert_eq(recv_event(reply, sizeof reply), GDB_EV_ACK);
    cr_assert_eq(recv_event(reply, sizeof reply), GDB_EV_PACKET);
    cr_assert_str_eq(reply, "E01");
    /* malformed run length */
    send_raw("$*!#4b", 6);
    cr_assert_eq(recv_event(reply, sizeof reply), GDB_EV_ACK);
    cr_assert_eq(recv_event(reply, sizeof reply), GDB_EV_PACKET);
    cr_assert_str_eq(reply, "E01");
    /* noise, a stray ^C, then a good packet is still answered */
    send_raw("garbage\x03", 8);
    cr_assert_str_eq(ask("qAttached"), "1");
    no_ack();
    cr_assert_str_eq(ask("m"), "E01");
    cr_assert_str_eq(ask("m10"), "E01");
    cr_assert_str_eq(ask("mffffffffffffffff,10"), "E0e");
    cr_assert_str_eq(ask("m1,ffffffffffffffff"), "E0e");
    cr_assert_str_eq(ask("p99999"), "E01");
    cr_assert_str_eq(ask("pzz"), "E01");
    cr_assert_str_eq(ask("qXfer:features:read:target.xml:"), "E01");
    cr_assert_str_eq(ask("qRcmd,zz"), "E01");
    cr_assert_str_eq(ask("vCont;x"), "E01");
    cr_assert_str_eq(ask("vCont;s:pzz"), "E01");
    cr_assert_str_eq(ask("Hx1"), "E01");
    cr_assert_str_eq(ask("c1234"), "E01", "resuming elsewhere");
    cr_assert_str_eq(ask("bx"), "");
    cr_assert_str_eq(ask("unknown"), "");
    /* a bad checksum without acks: an error reply, the session goes on */
    send_raw("$g#00", 5);
    cr_assert_eq(recv_event(reply, sizeof reply), GDB_EV_PACKET);
    cr_assert_str_eq(reply, "E01");
    cr_assert_str_eq(ask("qAttached"), "1");
    /* gone in the middle of a packet */
    send_raw("$qSupp", 6);
    cr_assert_eq(server_stop(), CREC_OK);
}

Test(gdb, a_continue_stops_when_gdb_goes_away)
{
    server_start();
    ask("qSupported:multiprocess+");
    no_ack();
    send_packet("c");
    cr_assert_eq(server_stop(), CREC_OK);
}

Test(gdb, listen_refuses_a_bad_port)
{
    crec_gdb *g = NULL;
    crec_error err = {0};

    cr_assert_eq(crec_gdb_listen(70000, &g, &err), CREC_ERR_ARG);
    cr_assert_null(g);
    cr_assert_not_null(strstr(err.msg, "70000"));
    crec_gdb_close(NULL);
}

/* ---- searches against a plain replay ----------------------------------------------- */

/* Every access of the recording, from one plain run. */
static crec_access accs[8192];
static size_t naccs;

static int note_access(void *ctx, crec_exec *x, const crec_access *a)
{
    (void)ctx, (void)x;
    if (naccs < 8192) {
        accs[naccs] = *a;
        accs[naccs++].value = NULL;
    }
    return 0;
}

static int oracle_watch_hit(const gdb_point *p, const crec_access *a)
{
    int write = a->kind != CREC_ACCESS_READ;
    if ((p->type == 2 && !write) || (p->type == 3 && write))
        return 0;
    return a->len == UINT64_MAX || (a->addr < p->addr + p->len && a->addr + a->len > p->addr);
}

/* Where a continue from t must stop, by brute force over rips[] and accs[]:
 * the stop time and kind. */
static void oracle(const gdb_point *pts, size_t n, uint64_t t, uint64_t end, int backward,
                   uint64_t *st, int *kind)
{
    if (!backward) {
        uint64_t best = end;
        *kind = GDB_STOP_END;
        for (size_t i = 0; i < naccs; i++)
            for (size_t k = 0; k < n; k++)
                if (pts[k].type >= 2 && accs[i].t >= t && accs[i].t + 1 < best + (*kind != GDB_STOP_WATCH) &&
                    oracle_watch_hit(&pts[k], &accs[i]))
                    best = accs[i].t + 1, *kind = GDB_STOP_WATCH;
        for (uint64_t u = t + 1; u < end && u < best; u++)
            for (size_t k = 0; k < n; k++)
                if (pts[k].type <= 1 && rips[u] == pts[k].addr) {
                    *st = u;
                    *kind = GDB_STOP_SWBREAK;
                    return;
                }
        *st = best;
        return;
    }
    uint64_t best = 0;
    int found = 0;
    *kind = GDB_STOP_BEGIN;
    for (size_t i = 0; i < naccs; i++)
        for (size_t k = 0; k < n; k++)
            if (pts[k].type >= 2 && accs[i].t < t && (!found || accs[i].t >= best) &&
                oracle_watch_hit(&pts[k], &accs[i]))
                best = accs[i].t, found = 1, *kind = GDB_STOP_WATCH;
    for (uint64_t u = t; u-- > (found ? best + 1 : 0);)
        for (size_t k = 0; k < n; k++)
            if (pts[k].type <= 1 && rips[u] == pts[k].addr) {
                *st = u;
                *kind = GDB_STOP_SWBREAK;
                return;
            }
    *st = found ? best : 0;
}

Test(gdb, searches_agree_with_a_plain_replay_whatever_they_remember)
{
    crec_observer obs = {0};
    crec_error err = {0};
    gdb_memo *memo;
    uint64_t end;

    sample_open();
    end = crec_length(rec);
    cr_assert_lt(end, 4096);
    obs.insn = note_rip;
    obs.access = note_access;
    cr_assert_eq(crec_exec_run(rec, 0, end, &obs, NULL, &err), CREC_OK, "%s", err.msg);
    cr_assert_lt(naccs, 8192);
    /* buckets of 32 instructions: the memory is used and filled all the time */
    memo = gdb_memo_new(end, 5);
    cr_assert_not_null(memo);
    srand(17);
    for (int iter = 0; iter < 400; iter++) {
        gdb_point pts[4];
        size_t n = 1 + (size_t)rand() % 3;
        for (size_t k = 0; k < n; k++) {
            int r = rand() % 10;
            if (r < 6) { /* a breakpoint where the program goes, or not */
                pts[k] = (gdb_point){r == 0 ? 1 : 0, rips[(size_t)rand() % end], 1};
                if (r == 5)
                    pts[k].addr = 0x1000;
            } else { /* a watchpoint on bytes the program touches */
                const crec_access *a = &accs[(size_t)rand() % naccs];
                pts[k] = (gdb_point){2 + rand() % 3, a->len == UINT64_MAX ? 0x1000 : a->addr, 1 + (uint64_t)rand() % 8};
            }
        }
        uint64_t t = (uint64_t)rand() % (end + 1);
        for (int backward = 0; backward < 2; backward++) {
            gdb_search q = {rec, pts, n, NULL, 1, memo};
            gdb_stop st;
            uint64_t want;
            int kind;
            if ((backward && t == 0) || (!backward && t == end))
                continue; /* the server answers those itself */
            oracle(pts, n, t, end, backward, &want, &kind);
            int rc = backward ? gdb_backward(&q, t, &st, &err) : gdb_forward(&q, t, &st, &err);
            cr_assert_eq(rc, CREC_OK, "%s", err.msg);
            int got = st.kind == GDB_STOP_HWBREAK ? GDB_STOP_SWBREAK : st.kind;
            cr_assert(st.t == want && got == kind,
                      "iter %d, %s from %llu with %zu points (first type %d at 0x%llx): "
                      "stopped at %llu kind %d, want %llu kind %d", iter,
                      backward ? "backward" : "forward", (unsigned long long)t, n, pts[0].type,
                      (unsigned long long)pts[0].addr, (unsigned long long)st.t, st.kind,
                      (unsigned long long)want, kind);
        }
    }
    gdb_memo_free(memo);
    sample_close();
}

static int same_regs(const crec_regs *a, const crec_regs *b)
{
    return memcmp(a->gpr, b->gpr, sizeof a->gpr) == 0 && a->rip == b->rip &&
           a->rflags == b->rflags && a->fs_base == b->fs_base && a->gs_base == b->gs_base &&
           memcmp(a->xmm, b->xmm, sizeof a->xmm) == 0 && a->mxcsr == b->mxcsr &&
           a->fpcw == b->fpcw && a->fpsw == b->fpsw && a->fptag == b->fptag &&
           memcmp(a->st, b->st, sizeof a->st) == 0;
}

Test(gdb, the_stepping_window_equals_the_query_api)
{
    crec_error err = {0};
    gdb_window *w = gdb_window_new();
    uint64_t end;
    int answered = 0;

    sample_open();
    cr_assert_not_null(w);
    end = crec_length(rec);
    srand(5);
    uint64_t t = end / 2;
    for (int iter = 0; iter < 300; iter++) {
        /* mostly steps, as gdb makes them, sometimes a jump */
        int dir = rand() % 2 ? 1 : -1;
        if (rand() % 10 == 0)
            t = (uint64_t)rand() % end;
        else if (dir > 0 ? t + 1 < end : t > 0)
            t = dir > 0 ? t + 1 : t - 1;
        crec_regs got, want = regs_at(t);
        cr_assert_eq(gdb_window_regs(w, rec, t, 1, dir, &got, &err), 0, "t %llu: %s",
                     (unsigned long long)t, err.msg);
        cr_assert(same_regs(&got, &want), "registers at %llu", (unsigned long long)t);
        for (uint64_t a = (want.gpr[CREC_RSP] - 128) & ~63ull; a < want.gpr[CREC_RSP] + 192; a += 64) {
            uint8_t b[64], k[64], qb[64], qk[64];
            if (gdb_window_line(w, rec, t, a, b, k) != 0)
                continue; /* the kernel wrote it in the window: the query API answers */
            answered++;
            cr_assert_eq(crec_seek(rec, t, &err), CREC_OK);
            cr_assert_eq(crec_read_memory(rec, a, 64, qb, qk, NULL, &err), CREC_OK, "%s", err.msg);
            for (int i = 0; i < 64; i++) {
                cr_assert_eq(k[i], qk[i], "known byte 0x%llx at %llu", (unsigned long long)(a + i),
                             (unsigned long long)t);
                if (k[i])
                    cr_assert_eq(b[i], qb[i], "byte 0x%llx at %llu", (unsigned long long)(a + i),
                                 (unsigned long long)t);
            }
        }
    }
    cr_assert_gt(answered, 300, "the window answered memory (%d lines)", answered);
    cr_assert_eq(gdb_window_regs(w, rec, end, 1, 1, &(crec_regs){0}, &err), -1, "not at the end");
    gdb_window_free(w);
    sample_close();
}

/* ---- threads: traces-sample/v2-threads.crec ------------------------------------- */

/* Thread tid's registers at t, through the query API. */
static crec_regs thread_regs_at(uint32_t tid, uint64_t t)
{
    crec_error err = {0};
    crec_regs r;
    cr_assert_eq(crec_seek(rec, t, &err), CREC_OK);
    cr_assert_eq(crec_read_thread_registers(rec, tid, &r, &err), CREC_OK, "%s", err.msg);
    return r;
}

/* The register n (gdb's number, 8 bytes) of a `g` reply. */
static uint64_t g_reg(const char *g, int n)
{
    uint8_t le[8];
    uint64_t v = 0;
    cr_assert_eq(gdb_hex_decode(g + 16 * n, 8, le), 0);
    for (int i = 7; i >= 0; i--)
        v = v << 8 | le[i];
    return v;
}

/* Go to time t with `monitor seek`. */
static void seek_to(uint64_t t)
{
    char cmd[64], hex[130], q[140];
    snprintf(cmd, sizeof cmd, "seek %llu", (unsigned long long)t);
    gdb_hex_encode((const uint8_t *)cmd, strlen(cmd), hex);
    snprintf(q, sizeof q, "qRcmd,%s", hex);
    ask(q);
    cr_assert_eq(monitor_when(), t);
}

/* The thread list now, as qfThreadInfo/qsThreadInfo give it ("p1.1,p1.2"). */
static void thread_list(char *out, size_t size)
{
    const char *r = ask("qfThreadInfo");
    out[0] = 0;
    while (r[0] == 'm') {
        snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? "," : "", r + 1);
        r = ask("qsThreadInfo");
    }
    cr_assert_str_eq(r, "l");
}

/* A continue (or a reverse one) to the next write of range: where the
 * index says, in the thread that wrote. */
static void watch_motion(const crec_range *range, int backward)
{
    uint64_t from = monitor_when();
    unsigned long long a;
    crec_error err = {0};
    crec_access hit;
    unsigned tid;
    int found;
    const char *r;

    cr_assert_eq(crec_find_access(rec, range, 1, 1, NULL, NULL, from, backward, &hit, &found,
                                  &err), CREC_OK);
    cr_assert(found);
    r = ask(backward ? "bc" : "c");
    cr_assert_eq(sscanf(r, "T05thread:p1.%x;watch:%llx;", &tid, &a), 2, "%s", r);
    cr_assert_eq(monitor_when(), backward ? hit.t : hit.t + 1);
    cr_assert_eq(tid, hit.tid);
}

Test(gdb, threads_as_the_recording_has_them)
{
    crec_error err = {0};
    crec_thread_info ti[3];
    char list[256], want[256], q[64];
    const char *r;
    uint64_t t, mid;

    sample = "v2-threads.crec";
    server_start();
    ask("qSupported:multiprocess+;swbreak+;hwbreak+");
    no_ack();
    for (uint32_t k = 0; k < 3; k++)
        cr_assert_eq(crec_thread_describe(rec, k + 1, &ti[k], &err), CREC_OK, "%s", err.msg);
    cr_assert(ti[1].exited && ti[2].exited && ti[0].ended_program);
    thread_list(list, sizeof list);
    cr_assert_str_eq(list, "p1.1", "at 0 only the first thread is there");
    cr_assert_str_eq(ask("Tp1.2"), "E01", "not started");

    /* half way: the list, and each thread's registers as the query API has them */
    mid = (ti[1].start + ti[2].end) / 2;
    seek_to(mid);
    thread_list(list, sizeof list);
    want[0] = 0;
    for (uint32_t k = 0; k < 3; k++)
        if (ti[k].start <= mid && (mid <= ti[k].end || !ti[k].exited))
            snprintf(want + strlen(want), sizeof want - strlen(want), "%sp1.%u",
                     want[0] ? "," : "", k + 1);
    cr_assert_str_eq(list, want);
    cr_assert_str_eq(list, "p1.1,p1.2,p1.3");
    snprintf(q, sizeof q, "QCp1.%u", crec_thread_at(rec, mid));
    cr_assert_str_eq(ask("qC"), q, "the thread that runs there");
    for (uint32_t tid = 1; tid <= 3; tid++) {
        snprintf(q, sizeof q, "Hgp1.%x", tid);
        cr_assert_str_eq(ask(q), "OK");
        snprintf(q, sizeof q, "Tp1.%x", tid);
        cr_assert_str_eq(ask(q), "OK");
        crec_regs w = thread_regs_at(tid, mid);
        r = ask("g");
        cr_assert_eq(g_reg(r, 16), w.rip, "thread %u's rip", tid);
        cr_assert_eq(g_reg(r, 7), w.gpr[CREC_RSP], "thread %u's rsp", tid);
        cr_assert_eq(g_reg(r, 0), w.gpr[CREC_RAX], "thread %u's rax", tid);
    }

    /* steps of thread 2 from 100 instructions before it is switched out:
     * its own instructions, across the others' slices */
    uint64_t t0 = mid;
    while (crec_thread_at(rec, t0) != 2 || crec_thread_at(rec, t0 + 100) == 2)
        t0++;
    seek_to(t0);
    cr_assert_str_eq(ask("Hgp1.2"), "OK");
    uint64_t k0 = crec_thread_count(rec, 2, t0);
    int crossed = 0;
    for (int i = 0; i < 300; i++) {
        uint64_t before = monitor_when();
        cr_assert_str_eq(ask("vCont;s:p1.2;c"), "T05thread:p1.2;");
        t = monitor_when();
        cr_assert_eq(crec_thread_count(rec, 2, t), k0 + (uint64_t)i + 1, "one of its instructions");
        crossed |= t > before + 1;
        if (i % 37 == 0 || t > before + 1)
            cr_assert_eq(g_reg(ask("g"), 16), thread_regs_at(2, t).rip, "rip after step %d", i);
    }
    cr_assert(crossed, "the steps went across another thread's slice");
    cr_assert_str_eq(ask("Hcp1.2"), "OK");
    for (int i = 0; i < 300; i++)
        cr_assert_str_eq(ask("bs"), "T05thread:p1.2;");
    cr_assert_eq(crec_thread_count(rec, 2, monitor_when()), k0, "back where it started");
    cr_assert_eq(crec_thread_insn_time(rec, 2, k0, &t, &err), CREC_OK);
    cr_assert_eq(monitor_when(), t, "before its instruction there");
    cr_assert_geq(t, t0);
    cr_assert_str_eq(ask("Hc-1"), "OK");

    /* a breakpoint any thread hits: each stop names the thread that hit */
    uint64_t work;
    cr_assert_eq(crec_lookup_symbol(rec, "work", &work, &err), CREC_OK);
    snprintf(q, sizeof q, "Z0,%llx,1", (unsigned long long)work);
    cr_assert_str_eq(ask(q), "OK");
    seek_to(0);
    int seen[4] = {0};
    uint64_t hits[2];
    for (int i = 0; i < 2; i++) {
        unsigned tid;
        r = ask("vCont;c");
        cr_assert_eq(sscanf(r, "T05thread:p1.%x;swbreak:;", &tid), 1, "%s", r);
        t = monitor_when();
        cr_assert_eq(tid, crec_thread_at(rec, t));
        cr_assert_eq(thread_regs_at(tid, t).rip, work);
        seen[tid] = 1;
        hits[i] = t;
    }
    cr_assert(seen[2] && seen[3], "both workers enter work");
    cr_assert_str_eq(ask("bc"), "T05thread:p1.2;swbreak:;");
    cr_assert_eq(monitor_when(), hits[0], "back to the first hit");
    snprintf(q, sizeof q, "z0,%llx,1", (unsigned long long)work);
    cr_assert_str_eq(ask(q), "OK");

    /* a watchpoint on what both workers write: the writer is the thread of the stop */
    uint64_t unlocked;
    crec_range range;
    cr_assert_eq(crec_lookup_symbol(rec, "unlocked", &unlocked, &err), CREC_OK);
    range = (crec_range){unlocked, 8};
    snprintf(q, sizeof q, "Z2,%llx,8", (unsigned long long)unlocked);
    cr_assert_str_eq(ask(q), "OK");
    seek_to(mid);
    for (int i = 0; i < 6; i++)
        watch_motion(&range, 0);
    for (int i = 0; i < 6; i++)
        watch_motion(&range, 1);

    /* the end names the thread the program ended in */
    snprintf(q, sizeof q, "z2,%llx,8", (unsigned long long)unlocked);
    cr_assert_str_eq(ask(q), "OK");
    cr_assert_str_eq(ask("c"), "T05thread:p1.1;replaylog:end;");
    cr_assert_str_eq(ask("D"), "OK");
    cr_assert_eq(server_stop(), CREC_OK);
    sample = "segv.crec";
}

Test(gdb, a_long_run_sees_the_interrupt_and_keeps_the_next_packet)
{
    int sv[2];
    gdb_conn *c;
    const char *body;
    size_t len;

    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    c = gdb_conn_new(sv[0], NULL);
    cr_assert_not_null(c);
    gdb_conn_no_ack(c);
    cr_assert_eq(gdb_conn_interrupted(c), 0, "nothing sent yet");
    /* ^C, then a packet gdb sent early: seen, and kept for recv */
    cr_assert_eq(write(sv[1], "\x03$g#67", 6), 6);
    cr_assert_eq(gdb_conn_interrupted(c), 1);
    cr_assert_eq(gdb_conn_recv(c, &body, &len), 2, "the interrupt first");
    cr_assert_eq(gdb_conn_recv(c, &body, &len), 1);
    cr_assert_str_eq(body, "g");
    /* a packet alone is no interrupt, and is not lost */
    cr_assert_eq(write(sv[1], "$?#3f", 5), 5);
    cr_assert_eq(gdb_conn_interrupted(c), 0);
    cr_assert_eq(gdb_conn_recv(c, &body, &len), 1);
    cr_assert_str_eq(body, "?");
    /* a peer that went away stops a run too */
    close(sv[1]);
    cr_assert_eq(gdb_conn_interrupted(c), 1);
    cr_assert_eq(gdb_conn_recv(c, &body, &len), 0);
    gdb_conn_free(c);
}
