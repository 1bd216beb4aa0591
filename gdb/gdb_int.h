/*
 * gdb_int.h - the gdb remote server's own header (docs/GDB.md).
 *
 * The module is split as rr splits its server: conn.c is the protocol
 * (packet framing, checksums, escapes, run-length encoding, acks, the
 * socket), server.c the debugger (registers, memory, breakpoints, stepping,
 * monitor commands), motion.c the searches forwards and backwards in time,
 * and tdesc.c the register layout and target description XML.  Everything
 * here is a client of include/crec.h only.
 */
#ifndef CREC_GDB_INT_H
#define CREC_GDB_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "crec.h"

/* ---- packets (conn.c) ------------------------------------------------------ */

/* The PacketSize we announce: gdb never sends more, and sizes its memory
 * reads to fit our replies into it. */
#define GDB_PACKET_SIZE 0x4000
/* The longest packet body we accept (decoded); a longer one is read to its
 * end and answered with an error, never stored. */
#define GDB_PACKET_MAX (4 * GDB_PACKET_SIZE)

enum gdb_event {
    GDB_EV_NONE = 0,   /* more input is needed */
    GDB_EV_PACKET,     /* a packet with a good checksum: p->data, p->len */
    GDB_EV_BADSUM,     /* a packet whose checksum did not match */
    GDB_EV_TOOLONG,    /* a packet longer than GDB_PACKET_MAX */
    GDB_EV_MALFORMED,  /* a packet whose escapes or run lengths are broken */
    GDB_EV_INTERRUPT,  /* ^C (0x03) outside a packet */
    GDB_EV_ACK,        /* '+' */
    GDB_EV_NACK,       /* '-' */
};

/* An incremental parser of the bytes gdb sends: fed any split of the
 * stream, it finds the same packets. */
typedef struct gdb_parser {
    int state;
    uint8_t sum;      /* running checksum of the raw body */
    int sum_hi;       /* first checksum digit, once read */
    size_t raw;       /* raw body bytes seen (for the limit) */
    int overflow;     /* the body went past GDB_PACKET_MAX */
    int bad;          /* a broken escape or run length */
    int escape;       /* the previous body byte was '}' */
    int have_prev;    /* data[len-1] may be repeated by a '*' */
    int rle;          /* the previous body byte was '*' */
    uint8_t data[GDB_PACKET_MAX + 1]; /* decoded body, NUL-terminated */
    size_t len;
} gdb_parser;

/*! gdb_parser_init() : an empty parser, between packets. */
void gdb_parser_init(gdb_parser *p);

/*! gdb_parser_feed() : parse in[0..n) until one event.
 *  @return the bytes consumed; *ev is the event (GDB_EV_NONE when all n
 *  bytes were consumed without completing one).  A GDB_EV_PACKET body is
 *  in p->data / p->len until the next call. */
size_t gdb_parser_feed(gdb_parser *p, const uint8_t *in, size_t n, int *ev);

/*! gdb_frame() : the packet `$body#xx` for a reply body, with run-length
 *  encoding of repeats (text) or with `$#}*` escaped (binary: the body of
 *  qXfer and other binary replies).  @return its length in out, or 0 when
 *  out (size cap) is too small. */
size_t gdb_frame(const uint8_t *body, size_t len, int binary, uint8_t *out, size_t cap);

/* A connection to one gdb. */
typedef struct gdb_conn gdb_conn;

/*! gdb_conn_new() : wrap a connected socket (owned from now on).
 *  @return NULL when out of memory (the socket is then closed). */
gdb_conn *gdb_conn_new(int fd, FILE *log);

/*! gdb_conn_free() : close the socket.  NULL is fine. */
void gdb_conn_free(gdb_conn *c);

/*! gdb_conn_no_ack() : stop sending and expecting '+' (QStartNoAckMode). */
void gdb_conn_no_ack(gdb_conn *c);

/*! gdb_conn_recv() : the next packet from gdb, acknowledged.
 *  @return 1 and *body, *len (valid until the next call; NUL-terminated),
 *  2 for an interrupt (^C), 0 when gdb closed the connection, -1 on a
 *  socket error.  Packets with a bad checksum are refused with '-' and
 *  never returned; an over-long or malformed one is answered with an error
 *  reply here and skipped. */
int gdb_conn_recv(gdb_conn *c, const char **body, size_t *len);

/*! gdb_conn_send() / gdb_conn_send_binary() / gdb_conn_sendf() : one reply
 *  packet (text is run-length encoded, binary escaped).  In ack mode, wait
 *  for gdb's '+' (resend on '-').  @return 0, or -1 when the connection is
 *  gone. */
int gdb_conn_send(gdb_conn *c, const char *text);
int gdb_conn_send_binary(gdb_conn *c, char prefix, const uint8_t *data, size_t len);
int gdb_conn_sendf(gdb_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*! gdb_conn_interrupted() : has gdb sent ^C since the last recv?  Reads
 *  what is waiting on the socket without blocking; a packet that came is
 *  kept for the next recv.  Long runs call it between pieces. */
int gdb_conn_interrupted(gdb_conn *c);

/*! gdb_conn_alive() : 0 once the connection is lost. */
int gdb_conn_alive(const gdb_conn *c);

/* ---- hex (conn.c) ------------------------------------------------------------ */

/* "0a1b..." for n bytes into out (2n+1 bytes). */
void gdb_hex_encode(const uint8_t *b, size_t n, char *out);
/* Decode exactly 2n hex digits of s.  @return 0, or -1 on a non-hex digit. */
int gdb_hex_decode(const char *s, size_t n, uint8_t *out);
/* A hex number at *s (at most 16 digits), advancing *s.  @return 0, or -1
 * when there is none or it overflows. */
int gdb_hex_u64(const char **s, uint64_t *v);

/* ---- registers and target description (tdesc.c) ------------------------------ */

/* gdb's register numbers for amd64 (its 64bit-* features, in order). */
enum {
    GDB_REG_RIP = 16,
    GDB_REG_EFLAGS = 17,
    GDB_REG_XMM0 = 40,
    GDB_REG_MXCSR = 56,
    GDB_REG_ORIG_RAX = 57,
    GDB_REG_FS_BASE = 58,
    GDB_REG_GS_BASE = 59,
    GDB_REG_YMM0H = 60,
};

/* Registers in the description: GDB_NREGS, or GDB_NREGS_AVX with the AVX
 * feature. */
#define GDB_NREGS 60
#define GDB_NREGS_AVX 76
/* Largest register, in bytes. */
#define GDB_REG_MAX 16

/*! gdb_tdesc_xml() : the target description (target.xml).
 *  @return a NUL-terminated string the caller frees, or NULL (no memory). */
char *gdb_tdesc_xml(int avx);

/*! gdb_reg_size() : bytes of register n (0: no such register). */
size_t gdb_reg_size(int n, int avx);

/*! gdb_reg_value() : register n of r into out (gdb_reg_size bytes, guest
 *  byte order).  @return 1 when the recording knows it, 0 when it does not
 *  (gdb is told it is unavailable), -1 for no such register. */
int gdb_reg_value(const crec_regs *r, int n, int avx, uint8_t *out);

/* ---- the server (server.c, motion.c) ----------------------------------------- */

/* Why the target stopped. */
enum gdb_stop_kind {
    GDB_STOP_STEP = 0,   /* a step ended: SIGTRAP, no reason */
    GDB_STOP_SWBREAK,    /* at a Z0 breakpoint */
    GDB_STOP_HWBREAK,    /* at a Z1 breakpoint */
    GDB_STOP_WATCH,      /* a Z2 (write), Z3 (read) or Z4 (access) watchpoint */
    GDB_STOP_BEGIN,      /* going backwards reached instruction 0 */
    GDB_STOP_END,        /* going forwards reached the end of the recording */
    GDB_STOP_INTERRUPT,  /* gdb's ^C: SIGINT */
};

typedef struct gdb_stop {
    int kind;            /* enum gdb_stop_kind */
    uint64_t t;          /* the time of the stop */
    uint32_t tid;        /* the thread that stopped */
    int watch_type;      /* GDB_STOP_WATCH: 2, 3 or 4 (Z2/Z3/Z4) */
    uint64_t watch_addr; /* GDB_STOP_WATCH: the watched address hit */
} gdb_stop;

/* A breakpoint or watchpoint as gdb set it with Z. */
typedef struct gdb_point {
    int type;            /* 0..4: the Z packet's type */
    uint64_t addr, len;  /* len: the watched bytes (watchpoints), kind (breakpoints) */
} gdb_point;

/* What searches learnt, kept for the later ones of a session (motion.c):
 * which breakpoints each stretch of the timeline runs, the hits of the last
 * backward window.  NULL where one is taken: nothing is remembered. */
typedef struct gdb_memo gdb_memo;
gdb_memo *gdb_memo_new(uint64_t end, unsigned shift); /* shift 0: the default */
void gdb_memo_free(gdb_memo *m);

/* What a search in time looks for, and where it may stop. */
typedef struct gdb_search {
    crec_recording *rec;
    const gdb_point *points;
    size_t npoints;
    gdb_conn *conn;      /* polled for ^C between pieces of a long run (NULL: never) */
    uint32_t tid;        /* the thread the motion is for */
    gdb_memo *memo;      /* kept between searches (NULL: none) */
} gdb_search;

/* A stretch of time around where gdb looks, known after one run (window.c). */
typedef struct gdb_window gdb_window;
gdb_window *gdb_window_new(void);
void gdb_window_free(gdb_window *w);

/*! gdb_window_regs() : thread tid's registers at t, from the window, which
 *  is refilled around t (leaning backward for dir < 0) when t is outside
 *  it.  @return 0, or -1 when the window can't answer (t is the end of the
 *  recording, the thread does not run in the window after t, or the run
 *  failed): ask the query API. */
int gdb_window_regs(gdb_window *w, crec_recording *rec, uint64_t t, uint32_t tid, int dir,
                    crec_regs *r, crec_error *err);

/*! gdb_window_line() : the 64-byte line holding addr at time t into b, and
 *  which of its bytes are known into k.  @return 0, or -1 when the window
 *  can't answer (t outside it, or the kernel wrote the line in it). */
int gdb_window_line(gdb_window *w, crec_recording *rec, uint64_t t, uint64_t addr, uint8_t *b,
                    uint8_t *k);

/* One gdb's session with a recording (server.c). */
typedef struct gdb_session gdb_session;

/*! gdb_session_new() : a session at time 0 that answers on c (not owned).
 *  @return NULL when out of memory. */
gdb_session *gdb_session_new(crec_recording *rec, gdb_conn *c, const crec_gdb_options *o);

/*! gdb_session_packet() : answer one packet's body (len bytes, NUL after).
 *  @return 0 while the session goes on, 1 once it has ended (gdb detached,
 *  killed, or the connection is gone). */
int gdb_session_packet(gdb_session *s, const char *body, size_t len);

/*! gdb_session_free() : NULL is fine. */
void gdb_session_free(gdb_session *s);

/*! gdb_forward() : continue from time t: the first breakpoint or
 *  watchpoint hit after t, or the end of the recording.
 *  @return CREC_OK and *stop, or an error. */
int gdb_forward(const gdb_search *s, uint64_t t, gdb_stop *stop, crec_error *err);

/*! gdb_backward() : reverse-continue from time t: the last breakpoint or
 *  watchpoint hit before t, or instruction 0.  @return CREC_OK and *stop,
 *  or an error. */
int gdb_backward(const gdb_search *s, uint64_t t, gdb_stop *stop, crec_error *err);

#endif /* CREC_GDB_INT_H */
