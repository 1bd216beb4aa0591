/*
 * conn.c - the GDB remote serial protocol on a socket: packet framing
 * (`$body#xx`), checksums, `}` escapes, run-length encoding, acks and
 * QStartNoAckMode, ^C, and reading and writing a TCP socket that gdb may
 * close at any moment.  What a packet means is server.c's business.
 *
 * Everything gdb sends is untrusted: the parser is a byte-at-a-time state
 * machine that never stores more than GDB_PACKET_MAX bytes, whatever the
 * input (tests/fuzz/fuzz_gdb.c feeds it at random).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gdb/gdb_int.h"

/* ---- the parser -------------------------------------------------------------- */

enum { P_IDLE, P_BODY, P_SUM1, P_SUM2 };

void gdb_parser_init(gdb_parser *p)
{
    p->state = P_IDLE;
    p->len = 0;
    p->data[0] = 0;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static void body_start(gdb_parser *p)
{
    p->state = P_BODY;
    p->sum = 0;
    p->raw = 0;
    p->overflow = p->bad = p->escape = p->have_prev = p->rle = 0;
    p->len = 0;
}

static void body_put(gdb_parser *p, uint8_t b)
{
    if (p->len >= GDB_PACKET_MAX) {
        p->overflow = 1;
        return;
    }
    p->data[p->len++] = b;
    p->have_prev = 1;
}

/* One byte of a packet body, before the '#'. */
static void body_byte(gdb_parser *p, uint8_t b)
{
    p->sum = (uint8_t)(p->sum + b);
    if (++p->raw > GDB_PACKET_MAX)
        p->overflow = 1;
    if (p->escape) {
        p->escape = 0;
        body_put(p, b ^ 0x20);
    } else if (p->rle) {
        /* `X*c` repeats X c-29 more times (gdb's "Run-Length Encoding") */
        p->rle = 0;
        if (b < 29 + 3 || b > 126 || !p->have_prev) {
            p->bad = 1;
            return;
        }
        for (int i = 0; i < b - 29 && !p->overflow; i++)
            body_put(p, p->data[p->len - 1]);
    } else if (b == '}') {
        p->escape = 1;
    } else if (b == '*') {
        p->rle = 1;
    } else {
        body_put(p, b);
    }
}

size_t gdb_parser_feed(gdb_parser *p, const uint8_t *in, size_t n, int *ev)
{
    size_t i = 0;

    *ev = GDB_EV_NONE;
    while (i < n) {
        uint8_t b = in[i++];
        int v;
        switch (p->state) {
        case P_IDLE:
            if (b == '$') {
                body_start(p);
            } else if (b == '+' || b == '-' || b == 0x03) {
                *ev = b == '+' ? GDB_EV_ACK : b == '-' ? GDB_EV_NACK : GDB_EV_INTERRUPT;
                return i;
            }
            break; /* noise between packets is skipped, as gdb does */
        case P_BODY:
            if (b == '#') {
                p->state = P_SUM1;
            } else if (b == '$') {
                body_start(p); /* a packet cut short: resynchronise on the new one */
            } else {
                body_byte(p, b);
            }
            break;
        case P_SUM1:
            v = hexval(b);
            p->sum_hi = v < 0 ? 256 : v; /* 256: never matches */
            p->state = P_SUM2;
            break;
        case P_SUM2:
            v = hexval(b);
            p->state = P_IDLE;
            if (p->escape || p->rle)
                p->bad = 1; /* the body ended inside an escape or a repeat */
            if (v < 0 || p->sum_hi * 16 + v != p->sum)
                *ev = GDB_EV_BADSUM;
            else if (p->overflow)
                *ev = GDB_EV_TOOLONG;
            else if (p->bad)
                *ev = GDB_EV_MALFORMED;
            else
                *ev = GDB_EV_PACKET;
            if (*ev != GDB_EV_PACKET)
                p->len = 0;
            p->data[p->len] = 0;
            return i;
        }
    }
    return i;
}

/* ---- framing replies ------------------------------------------------------- */

/* A repeat count character must be printable and neither '#' nor '$'. */
static int rle_count_ok(size_t extra)
{
    size_t c = extra + 29;
    return c >= 32 && c <= 126 && c != '#' && c != '$';
}

size_t gdb_frame(const uint8_t *body, size_t len, int binary, uint8_t *out, size_t cap)
{
    size_t o = 0;
    uint8_t sum = 0;

#define PUT(b)                                                                                \
    do {                                                                                      \
        if (o >= cap)                                                                         \
            return 0;                                                                         \
        out[o++] = (uint8_t)(b);                                                              \
        sum = (uint8_t)(sum + (uint8_t)(b));                                                  \
    } while (0)

    if (cap < 4)
        return 0;
    out[o++] = '$';
    for (size_t i = 0; i < len;) {
        uint8_t b = body[i];
        if (binary) {
            if (b == '$' || b == '#' || b == '}' || b == '*') {
                PUT('}');
                PUT(b ^ 0x20);
            } else {
                PUT(b);
            }
            i++;
            continue;
        }
        size_t run = 1;
        while (i + run < len && body[i + run] == b && run < 98)
            run++;
        /* `b*c` stands for 1 + (c - 29) copies: worth it from 4 copies on */
        while (run >= 4 && !rle_count_ok(run - 1))
            run--;
        PUT(b);
        if (run >= 4) {
            PUT('*');
            PUT(run - 1 + 29);
            i += run;
        } else {
            i++;
        }
    }
#undef PUT
    if (o + 3 > cap)
        return 0;
    out[o++] = '#';
    out[o++] = "0123456789abcdef"[sum >> 4];
    out[o++] = "0123456789abcdef"[sum & 15];
    return o;
}

/* ---- hex ------------------------------------------------------------------- */

void gdb_hex_encode(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = "0123456789abcdef"[b[i] >> 4];
        out[2 * i + 1] = "0123456789abcdef"[b[i] & 15];
    }
    out[2 * n] = 0;
}

int gdb_hex_decode(const char *s, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval((unsigned char)s[2 * i]), lo;
        if (hi < 0)
            return -1;
        lo = hexval((unsigned char)s[2 * i + 1]);
        if (lo < 0)
            return -1;
        out[i] = (uint8_t)(hi * 16 + lo);
    }
    return 0;
}

int gdb_hex_u64(const char **s, uint64_t *v)
{
    const char *p = *s;
    uint64_t x = 0;
    int n = 0, d;

    while ((d = hexval((unsigned char)*p)) >= 0) {
        if (++n > 16)
            return -1;
        x = x << 4 | (uint64_t)d;
        p++;
    }
    if (n == 0)
        return -1;
    *s = p;
    *v = x;
    return 0;
}

/* ---- the connection --------------------------------------------------------- */

struct gdb_conn {
    int fd;
    int alive;
    int ack;             /* ack mode: '+' after each packet, both ways */
    int interrupted;     /* a ^C came while we were not reading packets */
    FILE *log;
    uint8_t in[4096];    /* bytes read and not yet parsed */
    size_t in_pos, in_len;
    uint8_t *out;        /* a framed reply */
    size_t out_cap;
    gdb_parser p;
};

gdb_conn *gdb_conn_new(int fd, FILE *log)
{
    gdb_conn *c = calloc(1, sizeof *c);

    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->alive = 1;
    c->ack = 1;
    c->log = log;
    c->out_cap = 2 * GDB_PACKET_MAX + 8;
    c->out = malloc(c->out_cap);
    if (!c->out) {
        close(fd);
        free(c);
        return NULL;
    }
    gdb_parser_init(&c->p);
    return c;
}

void gdb_conn_free(gdb_conn *c)
{
    if (!c)
        return;
    close(c->fd);
    free(c->out);
    free(c);
}

void gdb_conn_no_ack(gdb_conn *c)
{
    c->ack = 0;
}

int gdb_conn_alive(const gdb_conn *c)
{
    return c->alive;
}

static void conn_log(gdb_conn *c, const char *dir, const uint8_t *b, size_t n)
{
    struct timespec ts;

    if (!c->log)
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    fprintf(c->log, "%ld.%03ld %s ", (long)ts.tv_sec, ts.tv_nsec / 1000000, dir);
    for (size_t i = 0; i < n && i < 200; i++)
        fputc(b[i] >= 0x20 && b[i] < 0x7f ? b[i] : '.', c->log);
    fprintf(c->log, n > 200 ? "...\n" : "\n");
    fflush(c->log);
}

static int write_all(gdb_conn *c, const uint8_t *b, size_t n)
{
    while (n > 0 && c->alive) {
        /* MSG_NOSIGNAL: a gdb that went away is an error here, not SIGPIPE */
        ssize_t w = send(c->fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            c->alive = 0;
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return c->alive ? 0 : -1;
}

/* Read more bytes from the socket: wait up to timeout_ms (-1: forever).
 * @return 1 when bytes came, 0 on timeout, -1 when the connection is gone. */
static int fill(gdb_conn *c, int timeout_ms)
{
    struct pollfd pfd = {c->fd, POLLIN, 0};
    ssize_t r;
    int pr;

    if (!c->alive)
        return -1;
    do
        pr = poll(&pfd, 1, timeout_ms);
    while (pr < 0 && errno == EINTR && timeout_ms < 0);
    if (pr == 0 || (pr < 0 && errno == EINTR))
        return 0;
    if (pr < 0) {
        c->alive = 0;
        return -1;
    }
    do
        r = recv(c->fd, c->in, sizeof c->in, 0);
    while (r < 0 && errno == EINTR);
    if (r <= 0) {
        c->alive = 0;
        return -1;
    }
    c->in_pos = 0;
    c->in_len = (size_t)r;
    return 1;
}

/* The next event from buffered or new input (timeout_ms as fill). */
static int next_event(gdb_conn *c, int timeout_ms)
{
    for (;;) {
        int ev;
        if (c->in_pos < c->in_len) {
            c->in_pos += gdb_parser_feed(&c->p, c->in + c->in_pos, c->in_len - c->in_pos, &ev);
            if (ev != GDB_EV_NONE)
                return ev;
            continue;
        }
        int r = fill(c, timeout_ms);
        if (r <= 0)
            return r < 0 ? -1 : GDB_EV_NONE;
    }
}

static int send_framed(gdb_conn *c, size_t n)
{
    conn_log(c, "<-", c->out, n);
    for (int tries = 0;; tries++) {
        if (write_all(c, c->out, n) != 0)
            return -1;
        if (!c->ack)
            return 0;
        /* wait for gdb's verdict; a packet it sends meanwhile is an implicit
         * ack (it never sends one before acking ours, but a confused peer may) */
        for (;;) {
            int ev = next_event(c, -1);
            if (ev < 0)
                return -1;
            if (ev == GDB_EV_ACK)
                return 0;
            if (ev == GDB_EV_NACK)
                break;
            if (ev == GDB_EV_INTERRUPT)
                c->interrupted = 1;
            else if (ev == GDB_EV_PACKET)
                return 0; /* dropped: gdb will resend it after it sees no answer */
        }
        if (tries >= 5) { /* a peer that refuses everything: give up on it */
            c->alive = 0;
            return -1;
        }
    }
}

int gdb_conn_send(gdb_conn *c, const char *text)
{
    size_t n = gdb_frame((const uint8_t *)text, strlen(text), 0, c->out, c->out_cap);

    if (n == 0)
        n = gdb_frame((const uint8_t *)"E01", 3, 0, c->out, c->out_cap);
    return send_framed(c, n);
}

int gdb_conn_send_binary(gdb_conn *c, char prefix, const uint8_t *data, size_t len)
{
    uint8_t *body = malloc(len + 1);
    size_t n;

    if (!body)
        return gdb_conn_send(c, "E0c"); /* ENOMEM */
    body[0] = (uint8_t)prefix;
    memcpy(body + 1, data, len);
    n = gdb_frame(body, len + 1, 1, c->out, c->out_cap);
    free(body);
    if (n == 0)
        return gdb_conn_send(c, "E01");
    return send_framed(c, n);
}

int gdb_conn_sendf(gdb_conn *c, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return gdb_conn_send(c, buf);
}

int gdb_conn_recv(gdb_conn *c, const char **body, size_t *len)
{
    if (c->interrupted) {
        c->interrupted = 0;
        return 2;
    }
    for (;;) {
        int ev = next_event(c, -1);
        switch (ev) {
        case -1:
            return c->alive ? -1 : 0;
        case GDB_EV_INTERRUPT:
            return 2;
        case GDB_EV_BADSUM:
            conn_log(c, "-> (bad checksum)", c->p.data, 0);
            if (c->ack && write_all(c, (const uint8_t *)"-", 1) != 0)
                return 0;
            if (!c->ack && gdb_conn_send(c, "E01") != 0) /* no resend without acks: refuse it */
                return 0;
            break;
        case GDB_EV_TOOLONG:
        case GDB_EV_MALFORMED:
            conn_log(c, ev == GDB_EV_TOOLONG ? "-> (too long)" : "-> (malformed)", c->p.data, 0);
            if ((c->ack && write_all(c, (const uint8_t *)"+", 1) != 0) ||
                gdb_conn_send(c, "E01") != 0)
                return 0;
            break;
        case GDB_EV_PACKET:
            conn_log(c, "->", c->p.data, c->p.len);
            if (c->ack && write_all(c, (const uint8_t *)"+", 1) != 0)
                return 0;
            *body = (const char *)c->p.data;
            *len = c->p.len;
            return 1;
        default:
            break; /* stray acks */
        }
    }
}

int gdb_conn_interrupted(gdb_conn *c)
{
    /* look at what is waiting without blocking; stop at a packet start so
     * a request that came early stays for gdb_conn_recv */
    while (!c->interrupted && c->alive) {
        if (c->in_pos >= c->in_len && fill(c, 0) <= 0)
            break;
        while (c->in_pos < c->in_len && c->p.state == P_IDLE && c->in[c->in_pos] != '$') {
            if (c->in[c->in_pos] == 0x03)
                c->interrupted = 1;
            c->in_pos++;
        }
        if (c->in_pos < c->in_len)
            break; /* a packet is coming: leave it */
    }
    return c->interrupted || !c->alive;
}
