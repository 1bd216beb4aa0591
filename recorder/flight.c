/*
 * flight.c - the flight recorder (docs/USAGE.md, "The flight recorder"):
 * a ring that keeps the end of a run, --max-size, dumps on demand, and
 * recording that starts and stops on triggers.
 *
 * Everything happens at block starts (rec_flight_block, from the block
 * hook), where key frames are taken:
 *
 *  - A part of a conditional recording starts when a --start-at trigger
 *    hits: the memory hooks are added, the translated code is dropped so
 *    that it is translated again with them (the blocks then end where a
 *    replay's do), and the CPU enters the block again; there the part's
 *    first key frame is taken, with a full snapshot and a GAP mark for the
 *    instructions that ran unrecorded.  A --stop-at trigger takes the
 *    part's last key frame and removes the hooks: until the next part the
 *    program runs as fast as under `crec run`.
 *  - A ring starts a segment when the current one holds its share of the
 *    bound: every stream is flushed, the file rotated if it is full
 *    (format/ring.c), and a key frame and a snapshot begin the segment.
 *  - A dump forks the recorder: the copy writes the recording so far to a
 *    new file and ends it there (the writer copies what is on disk, then
 *    the copy's last key frame and EXIT follow), while the program runs on
 *    in the original.  fork costs a few milliseconds (page tables); the
 *    program stops for nothing else.
 *  - --max-size ends the recording while the file still has room for its
 *    end; the program is then stopped, or runs on unrecorded.
 *
 * A ring and a conditional recording hold one thread: a program that
 * starts a second one ends the recording there (the file is complete and
 * replays), and runs on unrecorded.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "recorder/recorder_int.h"

#define FL_MAX_KIDS 8                /* dumps being written at once */
#define FL_FULL_RESERVE (64u << 10)  /* what the end of a recording may take */
#define FL_THREAD_RESERVE (4u << 10) /* and per thread */
#define FL_FULL_GAP (16u << 10)      /* less than this left: the file is full */

struct fl_trig {
    int kind;          /* enum crec_trigger_kind */
    uint64_t value;    /* an address (once known), an instruction count or a syscall */
    uint64_t offset;   /* a symbol's +OFFSET */
    const char *symbol;
    int known;         /* an address trigger's address is known */
    int used;          /* an instruction count fires once */
};

struct rec_flight {
    struct fl_trig *start, *stop;
    size_t nstart, nstop;
    int start_next, stop_next; /* a trigger fired inside a block or a syscall:
                                  at the next block start */
    int part_pending;  /* the CPU enters again the block where a part starts */
    uint64_t part_end; /* where the last part ended */
    uint64_t parts;
    int threads_stop;  /* a second thread started */
    int process_stop;  /* the program forked: end at the next block start */
    char process_what[160]; /* ... what to say ("--ring records one process; ...") */
    int full_stop;     /* --max-size reached with --on-full stop */
    uint64_t segment;  /* a ring's segment */
    uint64_t dumps;
    pid_t kids[FL_MAX_KIDS];
    size_t nkids;
    char why[256];     /* why the recording ended before the program */
    int why_told;      /* ... and the log was told when it happened */
    int warned;        /* that the ring is mostly code */
};

static FILE *fl_log(const struct rec_session *rs)
{
    return rs->opt->log ? rs->opt->log : stderr;
}

int rec_mark(struct rec_session *rs, const crec_fmt_mark *m)
{
    crec_error err = {0};
    int rc;

    crec_fmt_buf_reset(&rs->scratch);
    rc = crec_fmt_mark_encode(&rs->scratch, m);
    if (rc == CREC_OK)
        rc = crec_fmt_write_buf(rs->w, CREC_FMT_S_MARKS, 0, &rs->scratch, &err);
    else
        crec_error_set(&err, rc, "out of memory encoding a mark");
    if (rc != CREC_OK)
        rec_fail(rs, &err);
    return rc;
}

/* ---- triggers ------------------------------------------------------------ */

static int copy_triggers(const crec_trigger *in, size_t n, struct fl_trig **out)
{
    *out = NULL;
    if (n == 0)
        return CREC_OK;
    if (!(*out = crec_calloc(n, sizeof **out)))
        return CREC_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        struct fl_trig *t = &(*out)[i];
        t->kind = in[i].kind;
        t->symbol = in[i].symbol;
        if (t->kind == CREC_TRIGGER_SYMBOL)
            t->offset = in[i].value;
        else
            t->value = in[i].value;
        t->known = t->kind == CREC_TRIGGER_ADDRESS;
    }
    return CREC_OK;
}

static void resolve(struct fl_trig *v, size_t n, const char *path, uint64_t file_off,
                    uint64_t addr)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t rel;
        if (v[i].kind == CREC_TRIGGER_SYMBOL && !v[i].known &&
            rec_symbol_find(path, file_off, v[i].symbol, &rel)) {
            v[i].value = addr + rel + v[i].offset;
            v[i].known = 1;
        }
    }
}

void rec_flight_image(struct rec_session *rs, const char *path, uint64_t file_off, uint64_t addr)
{
    rs->fl_calm = 0;
    resolve(rs->fl->start, rs->fl->nstart, path, file_off, addr);
    resolve(rs->fl->stop, rs->fl->nstop, path, file_off, addr);
}

void rec_flight_syscall(struct rec_session *rs, uint64_t nr)
{
    struct rec_flight *f = rs->fl;

    rs->fl_calm = 0;
    for (size_t i = 0; i < f->nstart; i++)
        if (f->start[i].kind == CREC_TRIGGER_SYSCALL && f->start[i].value == nr && !rs->active)
            f->start_next = 1;
    for (size_t i = 0; i < f->nstop; i++)
        if (f->stop[i].kind == CREC_TRIGGER_SYSCALL && f->stop[i].value == nr && rs->active)
            f->stop_next = 1;
}

void rec_flight_thread(struct rec_session *rs)
{
    rs->fl_calm = 0;
    /* a ring and a --start-at recording hold one thread (--stop-at alone,
     * --max-size and dumps end as any recording of threads does) */
    if (rs->opt->ring || rs->opt->n_start_at)
        rs->fl->threads_stop = 1;
}

/* The options that hold one process: a ring rewrites its file (other
 * processes could not write theirs to it), parts and --max-size are one
 * process's time and bytes.  NULL when none is given. */
static const char *one_process_option(const struct rec_session *rs)
{
    const crec_record_options *o = rs->opt;

    return o->ring ? "--ring" : o->n_start_at ? "--start-at" : o->n_stop_at ? "--stop-at"
         : o->max_size ? "--max-size" : NULL;
}

int rec_flight_one_process(const struct rec_session *rs)
{
    return rs->fl && one_process_option(rs) != NULL;
}

static void retranslate(struct rec_session *rs);

static const char *program_name(const struct rec_session *rs)
{
    const char *p = rs->path ? strrchr(rs->path, '/') : NULL;

    return p ? p + 1 : rs->path ? rs->path : "the program";
}

void rec_flight_forked(struct rec_session *rs, int phase, int pid)
{
    struct rec_flight *f = rs->fl;

    rs->fl_calm = 0;
    if (phase == CREC_EMU_FORK_BEFORE) {
        f->process_stop = 1; /* the parent ends at its next block start */
        return;
    }
    if (phase == CREC_EMU_FORK_PARENT) {
        snprintf(f->process_what, sizeof f->process_what, "%s records one process; %s forked "
                 "(pid %d)", one_process_option(rs), program_name(rs), pid);
        return;
    }
    /* the child: its copy of the writer is the parent's, which goes on
     * writing the file; it lets go of it unwritten and runs unrecorded */
    crec_fmt_writer_free(rs->w);
    rs->w = NULL;
    rs->ended = 1;
    f->why_told = 1;
    f->nkids = 0; /* the parent's dumps are the parent's */
    rec_remove_hooks(rs);
    retranslate(rs);
}

/* Does a trigger of v fire at the block [addr, addr+bytes) that starts
 * after `before` instructions?  An address inside the block fires at the
 * next block start (*next). */
static int hit(struct fl_trig *v, size_t n, uint64_t addr, uint64_t bytes, uint64_t before,
               int *next)
{
    int now = 0;

    if (*next) {
        *next = 0;
        now = 1;
    }
    for (size_t i = 0; i < n; i++) {
        struct fl_trig *t = &v[i];
        if (t->kind == CREC_TRIGGER_ICOUNT && !t->used && before >= t->value)
            t->used = now = 1;
        else if (t->known && t->value == addr)
            now = 1;
        else if (t->known && t->value > addr && t->value < addr + bytes)
            *next = 1;
    }
    return now;
}

/* ---- parts ------------------------------------------------------------------ */

static int flush_exec(void *ctx, const struct crec_emu_mapping *m)
{
    struct rec_session *rs = ctx;

    if (m->prot & CREC_PROT_EXEC)
        crec_emu_cpu_flush_code(rs->cpu, m->start, m->end - m->start);
    return 0;
}

/* The hooks were added or removed: code translated before must be
 * translated again, and the block about to run entered again. */
static void retranslate(struct rec_session *rs)
{
    crec_emu_mem_foreach(rs->cpu, flush_exec, rs);
    crec_emu_cpu_stop(rs->cpu);
}

static void activate(struct rec_session *rs)
{
    crec_error err = {0};

    if (rec_add_hooks(rs, &err) != CREC_OK) {
        rec_fail(rs, &err);
        return;
    }
    rs->active = 1;
    rs->fl->part_pending = 1;
    retranslate(rs);
}

/* The first block of a part: its key frame (taken by the caller) has a
 * full snapshot and names the code as a first key frame does. */
static void part_starts(struct rec_session *rs, uint64_t before, uint64_t tbefore)
{
    struct rec_flight *f = rs->fl;
    uint64_t from = f->parts ? f->part_end : 0;

    if (before > from) {
        crec_fmt_mark m = {.kind = CREC_FMT_K_GAP};
        m.u.gap.from = from;
        m.u.gap.to = before;
        m.u.gap.why = f->parts ? CREC_FMT_GAP_STOPPED : CREC_FMT_GAP_BEFORE_START;
        if (rec_mark(rs, &m) != CREC_OK)
            return;
    }
    if (f->parts == 0)
        rs->stats.recorded_from = before;
    f->parts++;
    rs->cur->next_kf = tbefore;
    rs->snap_full_due = rs->listing_code_due = 1;
    rec_code_hashes_forget(rs); /* stores went unseen in the gap */
}

/* Close the file now: the program runs on unrecorded. */
static void close_now(struct rec_session *rs)
{
    crec_error err = {0};

    rec_flight_stats(rs);
    if (!rs->failed && crec_fmt_writer_close(rs->w, &err) != CREC_OK) {
        rs->w = NULL;
        rec_fail(rs, &err);
        return;
    }
    if (rs->failed)
        crec_fmt_writer_free(rs->w);
    rs->w = NULL;
    rs->ended = 1;
    rec_remove_hooks(rs);
    retranslate(rs);
}

/* End the recording here, with the program still alive (why, the text
 * says why for the log). */
static void end_now(struct rec_session *rs, uint32_t why, const char *text, uint64_t addr,
                    uint64_t before, uint64_t tbefore)
{
    struct rec_flight *f = rs->fl;

    if (rec_end_here(rs, why, 0, addr, before, tbefore) != CREC_OK)
        return;
    snprintf(f->why, sizeof f->why, "%s: the recording ended at instruction %llu", text,
             (unsigned long long)before);
    rs->stats.recorded_to = before;
    close_now(rs);
    if (!rs->failed)
        fprintf(fl_log(rs), "crec: %s; the program runs on, unrecorded\n", f->why);
    f->why_told = 1;
}

/* The end of a recording that is in a gap: its last part's end is the
 * recording's (EXIT there), and the STOP mark says how the program ended,
 * when it did (ex NULL: it runs on). */
static int end_in_gap(struct rec_session *rs, const struct crec_emu_exit *ex, uint64_t icount,
                      uint32_t why, uint64_t number)
{
    struct rec_flight *f = rs->fl;
    crec_fmt_mark m = {.kind = CREC_FMT_K_STOP};
    crec_fmt_event ev = {.kind = CREC_FMT_K_EXIT};

    m.u.stop.why = f->parts ? why : CREC_FMT_STOP_NEVER;
    m.u.stop.at = f->parts ? f->part_end : 0;
    m.u.stop.number = number;
    if (ex && !rs->stopped) {
        m.u.stop.ended = 1;
        m.u.stop.end = icount;
        m.u.stop.how = ex->signo ? CREC_FMT_EXIT_SIGNAL : CREC_FMT_EXIT_STATUS;
        m.u.stop.value = ex->signo ? (uint64_t)ex->signo : (uint64_t)ex->status;
    }
    if (f->parts) { /* the last key frame is the last part's end */
        ev.u.exit.global_icount = f->part_end;
        ev.u.exit.how = CREC_FMT_EXIT_ENDED;
        if (rec_event(rs, &ev) != CREC_OK)
            return rs->err.code;
        rs->stats.instructions = f->part_end;
    }
    return rec_mark(rs, &m);
}

static void deactivate(struct rec_session *rs, uint64_t addr, uint64_t before, uint64_t tbefore)
{
    struct rec_flight *f = rs->fl;

    if (f->nstart == 0) { /* no part can follow: the file is complete now */
        end_now(rs, CREC_FMT_STOP_STOP_AT, "--stop-at", addr, before, tbefore);
        return;
    }
    if (rec_keyframe(rs, before, tbefore, addr, NULL) != CREC_OK)
        return;
    f->part_end = before;
    rs->stats.recorded_to = before;
    rs->active = 0;
    rec_remove_hooks(rs);
    retranslate(rs);
}

/* ---- dumps ------------------------------------------------------------------- */

static void reap(struct rec_session *rs, int wait)
{
    struct rec_flight *f = rs->fl;

    for (size_t i = 0; i < f->nkids;) {
        int st;
        pid_t p = waitpid(f->kids[i], &st, wait ? 0 : WNOHANG);
        if (p == 0 || (p < 0 && errno == EINTR)) {
            i++;
            continue;
        }
        if (p == f->kids[i] && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            rs->stats.dumps++;
        f->kids[i] = f->kids[--f->nkids];
    }
}

void rec_flight_wait_dumps(struct rec_session *rs)
{
    reap(rs, 1);
}

/* The file name of dump n: the pattern's %d replaced (the first only). */
static int dump_path(const struct rec_session *rs, uint64_t n, char *buf, size_t size)
{
    const char *pat = rs->opt->dump_to;
    const char *out = rs->opt->out_path;
    char num[24];
    size_t len = strlen(out);

    snprintf(num, sizeof num, "%llu", (unsigned long long)n);
    if (!pat) { /* OUT.crec -> OUT.dumpN.crec */
        if (len > 5 && strcmp(out + len - 5, ".crec") == 0)
            return snprintf(buf, size, "%.*s.dump%s.crec", (int)(len - 5), out, num) >=
                   (int)size;
        return snprintf(buf, size, "%s.dump%s", out, num) >= (int)size;
    }
    const char *pc = strstr(pat, "%d");
    if (!pc)
        return snprintf(buf, size, "%s.%s", pat, num) >= (int)size;
    return snprintf(buf, size, "%.*s%s%s", (int)(pc - pat), pat, num, pc + 2) >= (int)size;
}

/* In the forked copy: the recording so far into `path`, ended here. */
static void dump_child(struct rec_session *rs, uint64_t n, const char *path, uint64_t addr,
                       uint64_t before, uint64_t tbefore)
{
    crec_error err = {0};
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc;

    if (fd < 0) {
        fprintf(fl_log(rs), "crec: dump %llu: %s: %s\n", (unsigned long long)n, path,
                strerror(errno));
        _exit(1);
    }
    rc = crec_fmt_writer_copy_to(rs->w, fd, path, &err);
    if (rc == CREC_OK)
        rc = rs->active ? rec_end_here(rs, CREC_FMT_STOP_DUMP, n, addr, before, tbefore)
                        : end_in_gap(rs, NULL, before, CREC_FMT_STOP_DUMP, n);
    if (rc != CREC_OK && rs->failed)
        err = rs->err;
    if (rc == CREC_OK)
        rc = crec_fmt_writer_close(rs->w, &err);
    if (rc != CREC_OK) {
        fprintf(fl_log(rs), "crec: dump %llu: %s\n", (unsigned long long)n, err.msg);
        _exit(1);
    }
    fprintf(fl_log(rs), "crec: dump %llu written to %s: the run from instruction %llu to %llu\n",
            (unsigned long long)n, path, (unsigned long long)rs->stats.recorded_from,
            (unsigned long long)(rs->active ? before : rs->fl->part_end));
    _exit(0);
}

static void dump(struct rec_session *rs, uint64_t addr, uint64_t before, uint64_t tbefore)
{
    struct rec_flight *f = rs->fl;
    char path[4096];
    uint64_t n = f->dumps + 1;
    pid_t pid;

    if (rs->opt->out_fd >= 0) {
        fprintf(fl_log(rs), "crec: no dump: the recording goes to a pipe, not a file it can "
                            "be copied from\n");
        return;
    }
    if (rs->forks || rs->child) {
        fprintf(fl_log(rs), "crec: no dump: a dump holds one process, and the program has "
                            "forked (its processes write to the one file); the recording "
                            "goes on\n");
        return;
    }
    if (!rs->active && f->parts == 0) {
        fprintf(fl_log(rs), "crec: no dump: nothing is recorded yet (--start-at)\n");
        return;
    }
    reap(rs, 0);
    if (f->nkids == FL_MAX_KIDS) {
        fprintf(fl_log(rs), "crec: no dump: %d dumps are still being written\n", FL_MAX_KIDS);
        return;
    }
    if (dump_path(rs, n, path, sizeof path)) {
        fprintf(fl_log(rs), "crec: no dump: its file name is too long\n");
        return;
    }
    f->dumps = n;
    fflush(fl_log(rs));
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        dump_child(rs, n, path, addr, before, tbefore);
    if (pid < 0) {
        fprintf(fl_log(rs), "crec: no dump: fork failed: %s\n", strerror(errno));
        return;
    }
    f->kids[f->nkids++] = pid;
}

/* ---- the block hook ------------------------------------------------------------ */

int rec_ring_boundary(struct rec_session *rs, uint64_t icount)
{
    crec_error err = {0};

    if (rec_flush_reads(rs) != CREC_OK)
        return rs->err.code;
    crec_fmt_ring_stats st;

    if (crec_fmt_ring_boundary(rs->w, icount, &err) != CREC_OK) {
        rec_fail(rs, &err);
        return err.code;
    }
    if (crec_fmt_ring_stats_get(rs->w, &st) && st.rotations) {
        rs->stats.recorded_from = st.kept_from;
        if (!rs->fl->warned && st.fixed_bytes > rs->opt->ring / 2) {
            rs->fl->warned = 1;
            fprintf(fl_log(rs), "crec: --ring %llu: the program's code, symbols and memory take "
                    "%llu bytes of it, which leaves little for the run\n",
                    (unsigned long long)rs->opt->ring, (unsigned long long)st.fixed_bytes);
        }
    }
    return CREC_OK;
}

/* A recording of one process or one thread ends where the program made a
 * second: at once while recording (active_why), or where its gap began
 * when it was between parts (gap_why). */
static void end_one_process(struct rec_session *rs, uint32_t why_code, const char *active_why,
                            const char *gap_why, uint64_t addr, uint64_t before, uint64_t tbefore)
{
    struct rec_flight *f = rs->fl;

    if (rs->active) {
        end_now(rs, why_code, active_why, addr, before, tbefore);
    } else if (end_in_gap(rs, NULL, before, why_code, 0) == CREC_OK) {
        snprintf(f->why, sizeof f->why, "%s: the recording ended at instruction %llu", gap_why,
                 (unsigned long long)f->part_end);
        close_now(rs);
        if (!rs->failed)
            fprintf(fl_log(rs), "crec: %s; the program runs on, unrecorded\n", f->why);
        f->why_told = 1;
    }
}

/* Is the file about to outgrow --max-size?  Buffered bytes are counted as
 * if they could not be compressed: before saying yes, hand them to the
 * writer and let it compress them.  The file is full when what is left
 * below the bound, less what the end of the recording takes (a key frame
 * and the SEQ end of every thread, the directory), is under FL_FULL_GAP:
 * flushing again for the last few bytes would only add small chunks. */
static int full(struct rec_session *rs)
{
    uint64_t max = rs->opt->max_size, held = rs->reads.len, later, reserve, size;

    for (size_t i = 0; i < rs->nthreads; i++) {
        struct rec_thread *t = rs->threads[i];
        if (t && t->live && t != rs->cur)
            held += t->reads.len + t->seq.len;
    }
    later = rs->cur ? rs->cur->seq.len : 0; /* written at the block's end */
    reserve = FL_FULL_RESERVE + rs->nthreads * (uint64_t)FL_THREAD_RESERVE + 2 * later;
    if (crec_fmt_writer_size(rs->w) + 2 * held + reserve + FL_FULL_GAP < max)
        return 0;
    rec_flush_held(rs);
    if (rs->failed)
        return 0;
    size = crec_fmt_writer_size(rs->w);
    return size + reserve + FL_FULL_GAP >= max;
}

/* Is there nothing rec_flight_block must look at block by block, until
 * one of the other rec_flight_ functions is called (they clear fl_calm)? */
static int calm(const struct rec_session *rs)
{
    const struct rec_flight *f = rs->fl;

    return rs->active && !rs->ended && !f->nkids && !f->process_stop && !f->threads_stop &&
           !f->part_pending && !f->nstop && !f->stop_next && !f->segment && !rs->opt->max_size;
}

int rec_flight_block(struct rec_session *rs, uint64_t addr, uint64_t before, uint64_t tbefore,
                     int *boundary)
{
    struct rec_flight *f = rs->fl;

    if (f->nkids)
        reap(rs, 0);
    if (rs->ended)
        return 1;
    if (rs->opt->dump && *rs->opt->dump != rs->fl_dumps_seen) {
        rs->fl_dumps_seen = *rs->opt->dump;
        dump(rs, addr, before, tbefore);
    }
    if (f->process_stop) {
        const char *what = f->process_what[0] ? f->process_what : "the program forked";
        end_one_process(rs, CREC_FMT_STOP_PROCESS, what, what, addr, before, tbefore);
        return 1;
    }
    if (f->threads_stop) {
        end_one_process(rs, CREC_FMT_STOP_THREADS,
                        "the program started a second thread (a ring or --start-at recording "
                        "holds one)",
                        "the program started a second thread (a --start-at recording holds one)",
                        addr, before, tbefore);
        return 1;
    }
    if (!rs->active) {
        if (hit(f->start, f->nstart, addr, crec_emu_cpu_block_bytes(rs->cpu), before,
                &f->start_next))
            activate(rs);
        return 1;
    }
    if (f->part_pending) {
        f->part_pending = 0;
        part_starts(rs, before, tbefore);
        return rs->failed;
    }
    if ((f->nstop || f->stop_next) &&
        hit(f->stop, f->nstop, addr, crec_emu_cpu_block_bytes(rs->cpu), before, &f->stop_next)) {
        deactivate(rs, addr, before, tbefore);
        return 1;
    }
    if (rs->opt->max_size && full(rs)) {
        if (rs->opt->on_full == CREC_ON_FULL_CONTINUE) {
            end_now(rs, CREC_FMT_STOP_MAX_SIZE, "the file reached --max-size", addr, before,
                    tbefore);
        } else {
            f->full_stop = 1;
            crec_emu_stop(rs->emu);
        }
        return 1;
    }
    if (f->segment && crec_fmt_ring_segment_bytes(rs->w) + rs->reads.len >= f->segment)
        *boundary = 1;
    rs->fl_calm = calm(rs);
    return 0;
}

/* ---- set-up and the end ---------------------------------------------------------- */

int rec_flight_open(struct rec_session *rs, crec_error *err)
{
    const crec_record_options *o = rs->opt;
    struct rec_flight *f = crec_calloc(1, sizeof *f);

    if (!f || copy_triggers(o->start_at, o->n_start_at, &f->start) != CREC_OK ||
        copy_triggers(o->stop_at, o->n_stop_at, &f->stop) != CREC_OK) {
        if (f) {
            crec_free(f->start);
            crec_free(f);
        }
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for the flight recorder");
    }
    f->nstart = o->n_start_at;
    f->nstop = o->n_stop_at;
    rs->fl = f;
    for (size_t i = 0; i < rs->n_images; i++) /* what the loader mapped */
        rec_flight_image(rs, rs->images[i].path, rs->images[i].file_off, rs->images[i].addr);
    if (o->dump)
        rs->fl_dumps_seen = *o->dump;
    if (o->ring) {
        crec_fmt_ring_opts ro = {o->out_path, o->ring, 0};
        int rc;
        if (o->out_fd >= 0)
            return crec_error_set(err, CREC_ERR_ARG, "--ring writes a file, not a pipe: it "
                                  "rewrites the file as it drops segments");
        if ((rc = crec_fmt_ring_start(rs->w, &ro, err)) != CREC_OK)
            return rc;
        f->segment = o->ring / 16 > (16u << 10) ? o->ring / 16 : 16u << 10;
    }
    if (rs->active)
        rs->stats.recorded_from = 0;
    return CREC_OK;
}

int rec_flight_finish(struct rec_session *rs, const struct crec_emu_exit *ex, uint64_t icount)
{
    struct rec_flight *f = rs->fl;
    int rc;

    if (!rs->active) {
        rc = end_in_gap(rs, ex, icount, CREC_FMT_STOP_STOP_AT, 0);
        if (f->parts == 0)
            snprintf(f->why, sizeof f->why, "no --start-at trigger came: nothing was recorded");
        else
            snprintf(f->why, sizeof f->why, "--stop-at: the recording ended at instruction "
                     "%llu", (unsigned long long)f->part_end);
        return rc;
    }
    if (!f->full_stop)
        return CREC_ERR_NOTFOUND;
    rc = rec_end_here(rs, CREC_FMT_STOP_MAX_SIZE, 0, 0, icount, crec_emu_thread_icount(rs->emu));
    snprintf(f->why, sizeof f->why, "the file reached --max-size: the recording ended at "
             "instruction %llu", (unsigned long long)icount);
    return rc;
}

void rec_flight_exec(struct rec_session *rs)
{
    uint64_t icount = crec_emu_cpu_icount(rs->cpu);
    char what[200];

    rs->fl_calm = 0;
    snprintf(what, sizeof what, "%s records one process; %s called execve",
             one_process_option(rs), program_name(rs));
    end_one_process(rs, CREC_FMT_STOP_PROCESS, what, what, 0, icount,
                    crec_emu_thread_icount(rs->emu));
}

int rec_flight_full_stop(const struct rec_session *rs)
{
    return rs->fl->full_stop;
}

void rec_flight_stats(struct rec_session *rs)
{
    crec_fmt_ring_stats st;

    if (!rs->fl || !rs->w || !crec_fmt_ring_stats_get(rs->w, &st))
        return;
    rs->stats.rotations = st.rotations;
    rs->stats.dropped_bytes = st.dropped_bytes;
    rs->stats.copied_bytes = st.copied_bytes;
    rs->stats.rotate_seconds = st.seconds;
    if (st.kept_from > rs->stats.recorded_from)
        rs->stats.recorded_from = st.kept_from;
}

/* A symbol trigger that never named anything: say so, it is likely a typo. */
static void unresolved(const struct rec_session *rs, const struct fl_trig *v, size_t n,
                       const char *opt)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].kind == CREC_TRIGGER_SYMBOL && !v[i].known)
            fprintf(fl_log(rs), "crec: --%s %s: neither the program nor a library it mapped "
                    "has that symbol\n", opt, v[i].symbol);
}

void rec_flight_why(struct rec_session *rs, crec_exit *out)
{
    struct rec_flight *f = rs->fl;

    unresolved(rs, f->start, f->nstart, "start-at");
    unresolved(rs, f->stop, f->nstop, "stop-at");
    /* a recording that started at once is one part */
    rs->stats.parts = f->parts ? f->parts : f->nstart == 0;
    if (!rs->ended)
        rs->stats.recorded_to = rs->active ? rs->stats.instructions : f->part_end;
    if (f->why[0]) { /* (empty when the log was told as it happened) */
        out->ended = 1;
        snprintf(out->why, sizeof out->why, "%s", f->why_told ? "" : f->why);
    }
}

void rec_flight_free(struct rec_session *rs)
{
    if (!rs->fl)
        return;
    crec_free(rs->fl->start);
    crec_free(rs->fl->stop);
    crec_free(rs->fl);
    rs->fl = NULL;
}
