/*
 * rec_mem.c - the recorder's view of guest memory: changes to the memory
 * map, the bytes of executable code, dirty pages and snapshots.
 *
 * Replay must rebuild the same memory map (so that faults happen at the
 * same place) and must hold the same code (so that it executes the same
 * instructions).  Data needs nothing: the prediction cache makes the first
 * load of every byte after a map change miss, and the read stream carries it.
 */
#include <string.h>

#include "common/common.h"
#include "recorder/recorder_int.h"


/* ---- a set of page numbers (open addressing, linear probing) ------------- */

static int pageset_grow(struct rec_pageset *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *slots = crec_calloc(cap, sizeof *slots);

    if (!slots)
        return CREC_ERR_NOMEM;
    for (size_t i = 0; i < s->cap; i++) {
        size_t j;
        if (!s->slots[i])
            continue;
        for (j = (s->slots[i] * 0x9E3779B97F4A7C15ull) & (cap - 1); slots[j]; j = (j + 1) & (cap - 1))
            ;
        slots[j] = s->slots[i];
    }
    crec_free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return CREC_OK;
}

int rec_pageset_add(struct rec_pageset *s, uint64_t page)
{
    uint64_t key = page + 1;
    size_t j;

    if (2 * (s->used + 1) > s->cap && pageset_grow(s) != CREC_OK)
        return CREC_ERR_NOMEM;
    for (j = (key * 0x9E3779B97F4A7C15ull) & (s->cap - 1); s->slots[j]; j = (j + 1) & (s->cap - 1))
        if (s->slots[j] == key)
            return CREC_OK;
    s->slots[j] = key;
    s->used++;
    return CREC_OK;
}

static void pageset_clear(struct rec_pageset *s)
{
    if (s->slots)
        memset(s->slots, 0, s->cap * sizeof *s->slots);
    s->used = 0;
}

void rec_pageset_free(struct rec_pageset *s)
{
    crec_free(s->slots);
    memset(s, 0, sizeof *s);
}

static int pageset_has(const struct rec_pageset *s, uint64_t page)
{
    uint64_t key = page + 1;

    if (!s->cap)
        return 0;
    for (size_t j = (key * 0x9E3779B97F4A7C15ull) & (s->cap - 1); s->slots[j];
         j = (j + 1) & (s->cap - 1))
        if (s->slots[j] == key)
            return 1;
    return 0;
}

/* Drop pages [lo, hi] from the set (it is rebuilt: a few thousand slots). */
static void pageset_drop(struct rec_pageset *s, uint64_t lo, uint64_t hi)
{
    struct rec_pageset kept = {0};
    int any = 0;

    for (size_t i = 0; i < s->cap && !any; i++)
        any = s->slots[i] && s->slots[i] - 1 >= lo && s->slots[i] - 1 <= hi;
    if (!any)
        return;
    for (size_t i = 0; i < s->cap; i++)
        if (s->slots[i] && (s->slots[i] - 1 < lo || s->slots[i] - 1 > hi) &&
            rec_pageset_add(&kept, s->slots[i] - 1) != CREC_OK) {
            rec_pageset_free(&kept); /* no memory: forget them all, all are checked again */
            pageset_clear(s);
            return;
        }
    rec_pageset_free(s);
    *s = kept;
}

/* Bytes in [addr, addr+len) changed: forget the hash of code there. */
static void code_hashes_touch(struct rec_session *rs, uint64_t addr, uint64_t len)
{
    for (size_t i = 0; i < rs->n_code_hashes; i++) {
        struct rec_code_hash *c = &rs->code_hashes[i];
        if (addr < c->end && addr + len > c->start)
            c->valid = 0;
    }
}

/* Bytes changed on a page other than the last one stored to (see
 * rec_mark_dirty): note the pages, and forget the hash of code there. */
void rec_mark_dirty_pages(struct rec_session *rs, uint64_t addr, uint64_t len)
{
    uint64_t first = addr / CREC_PAGE_SIZE, last = (addr + len - 1) / CREC_PAGE_SIZE;

    if (len == 0)
        return;
    rs->last_dirty_page = first + 1;
    code_hashes_touch(rs, addr, len);
    if (last - first + 1 >= REC_DIRTY_BIG_PAGES && !rs->dirty_all) {
        struct rec_range *n = crec_grow(rs->dirty_big, &rs->cap_dirty_big, rs->n_dirty_big + 1,
                                        sizeof *n, 16);
        if (!n) {
            rs->dirty_all = 1;
            return;
        }
        rs->dirty_big = n;
        rs->dirty_big[rs->n_dirty_big++] = (struct rec_range){first * CREC_PAGE_SIZE, (last - first + 1) * CREC_PAGE_SIZE};
        return;
    }
    for (uint64_t p = first; p <= last && !rs->dirty_all; p++)
        if (rec_pageset_add(&rs->dirty, p) != CREC_OK)
            rs->dirty_all = 1; /* no memory to track pages: take them all */
}

/* ---- code blobs and memory-map events ------------------------------------ */

void rec_code_hashes_forget(struct rec_session *rs)
{
    for (size_t i = 0; i < rs->n_code_hashes; i++)
        rs->code_hashes[i].valid = 0;
}

/* The stored hash of code mapped at exactly [start, end), if still valid. */
static int code_hash_get(struct rec_session *rs, uint64_t start, uint64_t end, crec_fmt_hash *hash)
{
    for (size_t i = 0; i < rs->n_code_hashes; i++) {
        struct rec_code_hash *c = &rs->code_hashes[i];
        if (c->valid && c->start == start && c->end == end) {
            *hash = c->hash;
            return 1;
        }
    }
    return 0;
}

static void code_hash_put(struct rec_session *rs, uint64_t start, uint64_t end,
                          const crec_fmt_hash *hash)
{
    size_t i;

    for (i = 0; i < rs->n_code_hashes; i++)
        if (!rs->code_hashes[i].valid || rs->code_hashes[i].start == start)
            break;
    if (i == rs->n_code_hashes) {
        struct rec_code_hash *p = crec_grow(rs->code_hashes, &rs->cap_code_hashes, i + 1,
                                            sizeof *p, 16);
        if (!p)
            return; /* no memory: that code is simply hashed again next time */
        rs->code_hashes = p;
        rs->n_code_hashes++;
    }
    rs->code_hashes[i] = (struct rec_code_hash){start, end, *hash, 1};
}

/* Store the code at [addr, addr+len) (one piece, at most REC_CODE_PIECE
 * bytes, of protection prot) as a blob, read in place when its host memory
 * is contiguous: paged unless the program can write it (see rec_code_ran). */
static int rec_blob(struct rec_session *rs, uint64_t addr, uint64_t len, int prot,
                    crec_fmt_hash *hash)
{
    crec_error err = {0};
    const void *host = crec_emu_mem_host(rs->cpu, addr, len, CREC_PROT_READ);
    uint8_t *bytes = host ? NULL : crec_malloc(len);
    int rc;

    if (!host && !bytes) {
        crec_error_set(&err, CREC_ERR_NOMEM, "out of memory copying %llu bytes of code",
                       (unsigned long long)len);
        rec_fail(rs, &err);
        return CREC_ERR_NOMEM;
    }
    if (!host)
        crec_emu_mem_read(rs->cpu, bytes, addr, len);
    if (prot & CREC_PROT_WRITE)
        rc = crec_fmt_blob_put_pinned(rs->w, host ? host : bytes, len, hash, &err);
    else
        rc = crec_fmt_code_put_paged(rs->w, host ? host : bytes, len, hash, &err);
    crec_free(bytes);
    if (rc != CREC_OK)
        rec_fail(rs, &err);
    return rc;
}

/* The length of the piece of [start, end) that begins at `at`: code is
 * stored in pieces, so that executable memory of any size records with
 * bounded memory and within the size of a record. */
static uint64_t code_piece(uint64_t at, uint64_t end)
{
    return end - at < REC_CODE_PIECE ? end - at : REC_CODE_PIECE;
}

/* ---- code pages the program ran ---------------------------------------- */

/*
 * Code the program can't write is stored a page at a time: its PAGED
 * record (rec_blob) names it whole by hash, and a page's bytes go in the
 * file the first time a block on it runs, so a recording holds the part of
 * libc the program used, not all 1.7 MB of it.  The bytes it stores then
 * are those the record names: nothing writes code that is not writable, and
 * a mprotect that makes it writable stores all of it first
 * (rec_on_mem_event).  rs->ran holds the pages checked since the memory
 * map last changed there, and rs->ran_recent those of the last blocks, which
 * the block hook looks in first (rec_code_ran_known).
 */
static int store_code_page(struct rec_session *rs, uint64_t page)
{
    uint64_t addr = page * CREC_PAGE_SIZE;
    const void *host = crec_emu_mem_host(rs->cpu, addr, CREC_PAGE_SIZE, 0);
    uint8_t buf[CREC_PAGE_SIZE];
    crec_error err = {0};

    if (!host) {
        if (crec_emu_mem_read(rs->cpu, buf, addr, CREC_PAGE_SIZE) != 0)
            return CREC_OK; /* not mapped: the block faults, nothing ran there */
        host = buf;
    }
    if (crec_fmt_blob_put_pinned(rs->w, host, CREC_PAGE_SIZE, NULL, &err) != CREC_OK) {
        rec_fail(rs, &err);
        return err.code;
    }
    return CREC_OK;
}

void rec_code_ran(struct rec_session *rs, uint64_t addr, uint64_t bytes)
{
    uint64_t p = addr / CREC_PAGE_SIZE, q = (addr + (bytes ? bytes : 1) - 1) / CREC_PAGE_SIZE;

    for (; p <= q; p++) {
        if (rs->ran_recent[p % REC_RAN_RECENT] == p + 1)
            continue;
        if (!pageset_has(&rs->ran, p)) {
            if (!(crec_emu_mem_prot(rs->cpu, p * CREC_PAGE_SIZE) & CREC_PROT_WRITE) &&
                store_code_page(rs, p) != CREC_OK)
                return;
            (void)rec_pageset_add(&rs->ran, p); /* no memory: checked again next time */
        }
        rs->ran_recent[p % REC_RAN_RECENT] = p + 1;
    }
}

/* The memory map changed at [addr, addr+len): its pages are checked again. */
static void ran_forget(struct rec_session *rs, uint64_t addr, uint64_t len)
{
    if (len == 0)
        return;
    pageset_drop(&rs->ran, addr / CREC_PAGE_SIZE, (addr + len - 1) / CREC_PAGE_SIZE);
    memset(rs->ran_recent, 0, sizeof rs->ran_recent);
}

void rec_ran_clear(struct rec_session *rs)
{
    pageset_clear(&rs->ran);
    memset(rs->ran_recent, 0, sizeof rs->ran_recent);
}

/* Symbols once per code blob: the same library mapped twice is named once. */
static int rec_symbols_once(struct rec_session *rs, const char *path, uint64_t file_off,
                            const crec_fmt_hash *hash)
{
    for (size_t i = 0; i < rs->n_symbolized; i++)
        if (memcmp(&rs->symbolized[i], hash, sizeof *hash) == 0)
            return CREC_OK;
    if (rs->n_symbolized < REC_MAX_SYMBOLIZED)
        rs->symbolized[rs->n_symbolized++] = *hash;
    return rec_symbols(rs, path, file_off, hash);
}

/*
 * A CODE record (the global list of every piece of code that could run),
 * and the symbols of the file it came from.
 */
static int rec_code(struct rec_session *rs, uint64_t addr, uint64_t len, int prot,
                    const crec_fmt_hash *hash, const char *path, uint64_t file_off)
{
    crec_fmt_code c = {0};
    crec_error err = {0};
    struct rec_coded *k;
    int rc;

    if ((k = crec_grow(rs->coded, &rs->capcoded, rs->ncoded + 1, sizeof *k, 16)) != NULL) {
        rs->coded = k;
        rs->coded[rs->ncoded++] = (struct rec_coded){addr, *hash};
    }
    c.addr = addr;
    c.len = len;
    c.prot = (uint64_t)prot;
    c.blob = *hash;
    c.name = path ? path : "";
    c.name_len = strlen(c.name);
    c.file_off = file_off;
    crec_fmt_buf_reset(&rs->scratch);
    rc = crec_fmt_code_encode(&rs->scratch, &c);
    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_CODE, 0, &rs->scratch, &err);
    if (rc != CREC_OK) {
        rec_fail(rs, &err);
        return rc;
    }
    return path ? rec_symbols_once(rs, path, file_off, hash) : CREC_OK;
}

static uint32_t mem_op(enum crec_emu_mem_kind kind)
{
    switch (kind) {
    case CREC_MEM_MUNMAP:
        return CREC_FMT_MM_UNMAP;
    case CREC_MEM_MPROTECT:
        return CREC_FMT_MM_PROTECT;
    case CREC_MEM_BRK:
        return CREC_FMT_MM_BRK;
    case CREC_MEM_MREMAP:
        return CREC_FMT_MM_REMAP;
    case CREC_MEM_MMAP:
        break;
    }
    return CREC_FMT_MM_MAP;
}

/* A map change goes in the running thread's EVENTS and, with several
 * threads, a FOREIGN copy in each other's (record.c). */
static int mem_event_out(struct rec_session *rs, const crec_fmt_event *ev)
{
    if (rs->multi && rec_foreign_mmap(rs, ev) != CREC_OK)
        return rs->err.code;
    return rec_event(rs, ev);
}

int rec_on_mem_event(struct rec_session *rs, const struct crec_emu_mem_event *mev)
{
    crec_fmt_event ev = {.kind = CREC_FMT_K_MMAP};

    rec_note_image(rs, mev);
    ev.u.mmap.op = mem_op(mev->kind);
    ev.u.mmap.addr = mev->addr;
    ev.u.mmap.len = mev->len;
    ev.u.mmap.prot = (uint64_t)mev->prot;
    /* New or vanished bytes: the cache's knowledge of the range is void,
     * and new bytes go in the next snapshot (vanished ones can't). */
    if (mev->kind != CREC_MEM_MPROTECT) {
        crec_pcache_forget(rs->pc, mev->addr, mev->len);
        rec_ix_kernel(rs, mev->addr, mev->len); /* as a replay reports the change */
    }
    if (mev->kind != CREC_MEM_MPROTECT && mev->kind != CREC_MEM_MUNMAP)
        rec_mark_dirty(rs, mev->addr, mev->len);
    code_hashes_touch(rs, mev->addr, mev->len);
    ran_forget(rs, mev->addr, mev->len);
    /* paged code the program may now write: every page stored while it
     * still holds the bytes its PAGED record names */
    if (mev->kind == CREC_MEM_MPROTECT && !mev->became_exec &&
        (mev->prot & (CREC_PROT_WRITE | CREC_PROT_EXEC)) == (CREC_PROT_WRITE | CREC_PROT_EXEC))
        for (uint64_t p = mev->addr / CREC_PAGE_SIZE; p < (mev->addr + mev->len) / CREC_PAGE_SIZE; p++)
            if (store_code_page(rs, p) != CREC_OK)
                return rs->err.code;
    if (!mev->became_exec || mev->kind == CREC_MEM_MUNMAP)
        return mem_event_out(rs, &ev);
    /* New code of more than one piece: the change itself, then each piece's
     * code as a PROTECT to the same protection with its blob (replay then
     * changes the map once, not once per piece). */
    if (mev->len > REC_CODE_PIECE) {
        if (mem_event_out(rs, &ev) != CREC_OK)
            return rs->err.code;
        ev.u.mmap.op = CREC_FMT_MM_PROTECT;
    }
    ev.u.mmap.flags |= CREC_FMT_EV_HAS_HASH;
    for (uint64_t at = mev->addr, end = mev->addr + mev->len; at < end; at += ev.u.mmap.len) {
        ev.u.mmap.addr = at;
        ev.u.mmap.len = code_piece(at, end);
        if (rec_blob(rs, at, ev.u.mmap.len, mev->prot, &ev.u.mmap.blob) != CREC_OK)
            return rs->err.code;
        /* the file's symbols once, with its first piece */
        rec_code(rs, at, ev.u.mmap.len, mev->prot, &ev.u.mmap.blob,
                 at == mev->addr ? mev->path : NULL, mev->offset + (at - mev->addr));
        if (mem_event_out(rs, &ev) != CREC_OK)
            return rs->err.code;
    }
    return CREC_OK;
}

/* The first listing names the code the loader mapped, from its images:
 * the piece [at, at+len) of mapping m. */
static void listing_code(struct rec_session *rs, const struct crec_emu_mapping *m, uint64_t at,
                         uint64_t len, const crec_fmt_hash *hash)
{
    /* once per piece of code: the listing that starts a part after a gap
     * names again the code the parts before named */
    for (size_t i = 0; i < rs->ncoded; i++)
        if (rs->coded[i].addr == at && memcmp(&rs->coded[i].hash, hash, sizeof *hash) == 0)
            return;
    for (size_t i = 0; i < rs->n_images; i++) {
        const struct rec_image *im = &rs->images[i];
        if (m->start >= im->addr && m->start < im->addr + im->len) {
            rec_code(rs, at, len, m->prot, hash, at == m->start ? im->path : NULL,
                     im->file_off + (at - im->addr));
            return;
        }
    }
    rec_code(rs, at, len, m->prot, hash, NULL, 0);
}

/* Forget the files of code mapped at [addr, addr+len) (unmapped, or mapped anew). */
static void images_forget(struct rec_session *rs, uint64_t addr, uint64_t len)
{
    size_t j = 0;

    for (size_t i = 0; i < rs->n_images; i++) {
        struct rec_image *im = &rs->images[i];
        if (im->addr < addr + len && addr < im->addr + im->len)
            crec_free(im->path);
        else
            rs->images[j++] = *im;
    }
    rs->n_images = j;
}

/* Remember the file code at [addr, addr+len) came from (the loader's, and
 * mmap's), for the first listing of a process that a fork makes. */
void rec_note_image(struct rec_session *rs, const struct crec_emu_mem_event *mev)
{
    struct rec_image *im;

    if (mev->kind == CREC_MEM_MUNMAP || mev->kind == CREC_MEM_MMAP)
        images_forget(rs, mev->addr, mev->len);
    if (!mev->became_exec || !mev->path || rs->n_images == REC_MAX_IMAGES)
        return;
    im = crec_grow(rs->images, &rs->cap_images, rs->n_images + 1, sizeof *im, 16);
    if (!im)
        return; /* only the names are lost */
    rs->images = im;
    im = &rs->images[rs->n_images];
    im->path = crec_malloc(strlen(mev->path) + 1);
    if (!im->path)
        return; /* only the names are lost */
    strcpy(im->path, mev->path);
    im->addr = mev->addr;
    im->len = mev->len;
    im->file_off = mev->offset;
    rs->n_images++;
}

/*
 * After each key frame: the whole memory map as MMAP events flagged
 * LISTING, so a replay starting at this key frame can build it with no
 * earlier data.  A replay going through the key frame skips them.
 */
static int listing_one(void *ctx, const struct crec_emu_mapping *m)
{
    struct rec_session *rs = ctx;
    crec_fmt_event ev = {.kind = CREC_FMT_K_MMAP};

    ev.u.mmap.op = CREC_FMT_MM_MAP;
    ev.u.mmap.flags = CREC_FMT_EV_LISTING;
    ev.u.mmap.addr = m->start;
    ev.u.mmap.len = m->end - m->start;
    ev.u.mmap.prot = (uint64_t)m->prot;
    if (!(m->prot & CREC_PROT_EXEC))
        return rec_event(rs, &ev) != CREC_OK;
    ev.u.mmap.flags |= CREC_FMT_EV_HAS_HASH;
    for (uint64_t at = m->start; at < m->end; at += ev.u.mmap.len) { /* code: in pieces */
        ev.u.mmap.addr = at;
        ev.u.mmap.len = code_piece(at, m->end);
        if (!code_hash_get(rs, at, at + ev.u.mmap.len, &ev.u.mmap.blob)) {
            if (rec_blob(rs, at, ev.u.mmap.len, m->prot, &ev.u.mmap.blob) != CREC_OK)
                return 1;
            code_hash_put(rs, at, at + ev.u.mmap.len, &ev.u.mmap.blob);
        }
        if (rs->listing_code_due)
            listing_code(rs, m, at, ev.u.mmap.len, &ev.u.mmap.blob);
        if (rec_event(rs, &ev) != CREC_OK)
            return 1;
    }
    return 0;
}

int rec_write_listing(struct rec_session *rs)
{
    /* The next store goes through rec_mark_dirty's full path again, so
     * that a store to code hashed now is noticed. */
    rs->last_dirty_page = 0;
    crec_emu_mem_foreach(rs->cpu, listing_one, rs);
    rs->listing_code_due = 0;
    return rs->failed ? rs->err.code : CREC_OK;
}

/* ---- snapshots ----------------------------------------------------------- */

struct snap_build {
    struct rec_session *rs;
    crec_fmt_snapshot snap;
    size_t cap;
    int full;
};

static int snap_add_page(struct snap_build *b, uint64_t addr)
{
    crec_error err = {0};
    crec_fmt_hash hash;
    uint8_t page[CREC_PAGE_SIZE];

    /* Unmapped since it was written, or code: the listing after every key
     * frame already holds each executable mapping's bytes as a blob. */
    if (crec_emu_mem_prot(b->rs->cpu, addr) & CREC_PROT_EXEC ||
        crec_emu_mem_read(b->rs->cpu, page, addr, CREC_PAGE_SIZE) != 0)
        return CREC_OK;
    if (b->snap.npages == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        crec_fmt_snap_page *p = crec_realloc(b->snap.pages, cap * sizeof *p);
        if (!p) {
            crec_error_set(&err, CREC_ERR_NOMEM, "out of memory building a snapshot");
            rec_fail(b->rs, &err);
            return CREC_ERR_NOMEM;
        }
        b->snap.pages = p;
        b->cap = cap;
    }
    if (crec_fmt_blob_put(b->rs->w, page, CREC_PAGE_SIZE, &hash, &err) != CREC_OK) {
        rec_fail(b->rs, &err);
        return err.code;
    }
    b->snap.pages[b->snap.npages].addr = addr;
    b->snap.pages[b->snap.npages++].blob = hash;
    return CREC_OK;
}

static int snap_resident(void *ctx, uint64_t page)
{
    return snap_add_page(ctx, page) != CREC_OK;
}

static int snap_mapping(void *ctx, const struct crec_emu_mapping *m)
{
    struct snap_build *b = ctx;

    if (m->prot & CREC_PROT_EXEC)
        return 0; /* see snap_add_page */
    /* a big mapping: only what host memory holds (see REC_DIRTY_BIG_PAGES) */
    if ((m->end - m->start) / CREC_PAGE_SIZE >= REC_DIRTY_BIG_PAGES)
        return crec_emu_mem_resident(b->rs->cpu, m->start, m->end - m->start, snap_resident, b);
    for (uint64_t a = m->start; a < m->end; a += CREC_PAGE_SIZE)
        if (snap_add_page(b, a) != CREC_OK)
            return 1;
    return 0;
}

/* A page of a big dirty range that is also in the page set was taken
 * already. */
static int snap_big_page(void *ctx, uint64_t page)
{
    struct snap_build *b = ctx;
    struct rec_pageset *s = &b->rs->dirty;
    uint64_t key = page / CREC_PAGE_SIZE + 1;

    if (s->cap)
        for (size_t j = (key * 0x9E3779B97F4A7C15ull) & (s->cap - 1); s->slots[j];
             j = (j + 1) & (s->cap - 1))
            if (s->slots[j] == key)
                return 0;
    return snap_add_page(b, page) != CREC_OK;
}

void rec_mem_restart(struct rec_session *rs)
{
    /* a new process: its first listing writes the CODE records of its own
     * stream, whatever the process it came from wrote */
    rs->ncoded = 0;
    rs->listing_code_due = 1;
    rs->snap_full_due = 1; /* its first key frame's snapshot holds every page */
    rs->kfs_since_snap = 0;
    rs->n_code_hashes = 0;
    pageset_clear(&rs->dirty);
    rs->n_dirty_big = 0;
    rs->dirty_all = 1;
    rs->last_dirty_page = 0;
}

int rec_write_snapshot(struct rec_session *rs, uint64_t icount, int full)
{
    struct snap_build b = {rs, {icount, 0, NULL}, 0, full || rs->dirty_all};
    crec_error err = {0};
    int rc = CREC_OK;

    if (b.full) {
        crec_emu_mem_foreach(rs->cpu, snap_mapping, &b);
    } else {
        for (size_t i = 0; i < rs->dirty.cap && !rs->failed; i++)
            if (rs->dirty.slots[i])
                snap_add_page(&b, (rs->dirty.slots[i] - 1) * CREC_PAGE_SIZE);
        for (size_t i = 0; i < rs->n_dirty_big && !rs->failed; i++)
            crec_emu_mem_resident(rs->cpu, rs->dirty_big[i].addr, rs->dirty_big[i].len,
                                  snap_big_page, &b);
    }
    if (!rs->failed) {
        crec_fmt_buf_reset(&rs->scratch);
        rc = crec_fmt_snap_encode(&rs->scratch, &b.snap);
        if (rc == CREC_OK)
            rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_SNAPSHOTS, 0, &rs->scratch, &err);
        if (rc != CREC_OK)
            rec_fail(rs, &err);
    }
    crec_free(b.snap.pages);
    pageset_clear(&rs->dirty);
    rs->n_dirty_big = 0;
    rs->dirty_all = 0;
    rs->last_dirty_page = 0;
    rs->stats.snapshots++;
    return rs->failed ? (int)rs->err.code : rc;
}
