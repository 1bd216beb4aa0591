/*
 * marks.c - the MARKS stream (format version 3, docs/FORMAT.md §10): what
 * a reader needs to know of a recording that does not hold the whole run.
 *
 *   RING 0x60  varint size, varint kept from, varint dropped segments,
 *              varint dropped bytes, varint rotations
 *   GAP  0x61  varint from, varint to (from < to), u8 why (1..2)
 *   STOP 0x62  varint at, u8 why (1..5), varint number, u8 ended (0 or 1);
 *              ended 1: varint end, u8 how (0 status, 1 signal), varint value
 *
 * Framed like every other record; a body must be consumed exactly.
 */
#include "format/format_int.h"

#define RC(x)                                                                                  \
    do {                                                                                       \
        int rc_ = (x);                                                                         \
        if (rc_)                                                                               \
            return rc_;                                                                        \
    } while (0)

int crec_fmt_mark_encode(crec_fmt_buf *b, const crec_fmt_mark *m)
{
    size_t f;

    if (m->kind != CREC_FMT_K_RING && m->kind != CREC_FMT_K_GAP && m->kind != CREC_FMT_K_STOP)
        return CREC_ERR_ARG;
    f = fmt_frame_begin(b, m->kind);
    switch (m->kind) {
    case CREC_FMT_K_RING:
        fmt_buf_varint(b, m->u.ring.size);
        fmt_buf_varint(b, m->u.ring.kept_from);
        fmt_buf_varint(b, m->u.ring.dropped_segments);
        fmt_buf_varint(b, m->u.ring.dropped_bytes);
        fmt_buf_varint(b, m->u.ring.rotations);
        break;
    case CREC_FMT_K_GAP:
        fmt_buf_varint(b, m->u.gap.from);
        fmt_buf_varint(b, m->u.gap.to);
        fmt_buf_u8(b, (uint8_t)m->u.gap.why);
        break;
    default:
        fmt_buf_varint(b, m->u.stop.at);
        fmt_buf_u8(b, (uint8_t)m->u.stop.why);
        fmt_buf_varint(b, m->u.stop.number);
        fmt_buf_u8(b, m->u.stop.ended ? 1 : 0);
        if (m->u.stop.ended) {
            fmt_buf_varint(b, m->u.stop.end);
            fmt_buf_u8(b, (uint8_t)m->u.stop.how);
            fmt_buf_varint(b, m->u.stop.value);
        }
        break;
    }
    fmt_frame_end(b, f);
    return b->nomem ? CREC_ERR_NOMEM : CREC_OK;
}

static int stop_decode(crec_fmt_cur *c, crec_fmt_mark *m, crec_error *err)
{
    uint8_t why, ended, how;

    RC(fmt_cur_varint(c, &m->u.stop.at, "stop mark time", err));
    RC(fmt_cur_u8(c, &why, "stop mark reason", err));
    if (why < 1 || why > CREC_FMT_STOP_WHY_MAX)
        return crec_error_corrupt(err, "stop mark reason %u out of range (1 to %d)", why,
                                  CREC_FMT_STOP_WHY_MAX);
    m->u.stop.why = why;
    RC(fmt_cur_varint(c, &m->u.stop.number, "stop mark number", err));
    RC(fmt_cur_u8(c, &ended, "stop mark end flag", err));
    if (ended > 1)
        return crec_error_corrupt(err, "stop mark end flag %u (0 or 1)", ended);
    m->u.stop.ended = ended;
    if (!ended)
        return CREC_OK;
    RC(fmt_cur_varint(c, &m->u.stop.end, "stop mark end time", err));
    RC(fmt_cur_u8(c, &how, "stop mark end kind", err));
    if (how > CREC_FMT_EXIT_SIGNAL)
        return crec_error_corrupt(err, "stop mark end kind %u (0 status or 1 signal)", how);
    m->u.stop.how = how;
    RC(fmt_cur_varint(c, &m->u.stop.value, "stop mark end value", err));
    if (m->u.stop.end < m->u.stop.at)
        return crec_error_corrupt(err, "the program ends at %llu, before the recording (%llu)",
                                  (unsigned long long)m->u.stop.end,
                                  (unsigned long long)m->u.stop.at);
    return CREC_OK;
}

int crec_fmt_mark_decode(int kind, const uint8_t *body, size_t len, crec_fmt_mark *m,
                         crec_error *err)
{
    crec_fmt_cur c = {body, len, 0};
    uint8_t why;

    memset(m, 0, sizeof *m);
    m->kind = kind;
    switch (kind) {
    case CREC_FMT_K_RING:
        RC(fmt_cur_varint(&c, &m->u.ring.size, "ring size", err));
        RC(fmt_cur_varint(&c, &m->u.ring.kept_from, "ring kept time", err));
        RC(fmt_cur_varint(&c, &m->u.ring.dropped_segments, "ring dropped segments", err));
        RC(fmt_cur_varint(&c, &m->u.ring.dropped_bytes, "ring dropped bytes", err));
        RC(fmt_cur_varint(&c, &m->u.ring.rotations, "ring rotations", err));
        break;
    case CREC_FMT_K_GAP:
        RC(fmt_cur_varint(&c, &m->u.gap.from, "gap start", err));
        RC(fmt_cur_varint(&c, &m->u.gap.to, "gap end", err));
        RC(fmt_cur_u8(&c, &why, "gap reason", err));
        if (why < CREC_FMT_GAP_BEFORE_START || why > CREC_FMT_GAP_STOPPED)
            return crec_error_corrupt(err, "gap reason %u out of range (1 to 2)", why);
        m->u.gap.why = why;
        if (m->u.gap.from >= m->u.gap.to)
            return crec_error_corrupt(err, "gap from %llu to %llu is empty or backwards",
                                      (unsigned long long)m->u.gap.from,
                                      (unsigned long long)m->u.gap.to);
        break;
    case CREC_FMT_K_STOP:
        RC(stop_decode(&c, m, err));
        break;
    default:
        return crec_error_corrupt(err, "record kind 0x%02x in the MARKS stream", kind);
    }
    return fmt_cur_end(&c, "mark", err);
}

void crec_fmt_marks_clear(crec_fmt_marks *m)
{
    if (!m)
        return;
    crec_free(m->gaps);
    memset(m, 0, sizeof *m);
}

int crec_fmt_marks_read(struct crec_fmt_reader *r, crec_fmt_marks *m, crec_error *err)
{
    crec_fmt_cursor *c;
    size_t cap = 0;
    int rc;

    memset(m, 0, sizeof *m);
    if (crec_fmt_reader_header(r)->version < 3)
        return CREC_OK;
    if ((rc = crec_fmt_cursor_open(r, CREC_FMT_S_MARKS, 0, 0, &c, err)) != CREC_OK)
        return rc;
    for (;;) {
        const uint8_t *body;
        size_t len;
        int kind;
        crec_fmt_mark k;
        if ((rc = crec_fmt_cursor_next(c, &kind, &body, &len, err)) != CREC_OK ||
            (rc = crec_fmt_mark_decode(kind, body, len, &k, err)) != CREC_OK)
            break;
        if (kind == CREC_FMT_K_RING) {
            m->ring = k;
        } else if (kind == CREC_FMT_K_STOP) {
            m->stop = k;
        } else {
            crec_fmt_mark *g;
            if (m->ngaps && k.u.gap.from < m->gaps[m->ngaps - 1].u.gap.to) {
                rc = crec_error_corrupt(err, "gap at %llu overlaps or comes before the one "
                                        "ending at %llu", (unsigned long long)k.u.gap.from,
                                        (unsigned long long)m->gaps[m->ngaps - 1].u.gap.to);
                break;
            }
            if (!(g = crec_grow(m->gaps, &cap, m->ngaps + 1, sizeof *g, 8))) {
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading the marks");
                break;
            }
            m->gaps = g;
            m->gaps[m->ngaps++] = k;
        }
    }
    crec_fmt_cursor_free(c);
    /* a file cut short may end inside its last mark */
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = CREC_OK;
    if (rc != CREC_OK)
        crec_fmt_marks_clear(m);
    return rc;
}
