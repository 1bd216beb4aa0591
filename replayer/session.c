/*
 * session.c - crec_replay_run: load the key frames, cut the recording into
 * runs of segments, replay them (in parallel with --jobs) and merge what
 * each found.
 *
 * Every segment between two key frames replays alone, because the recorder
 * flushed its prediction cache at each key frame and listed the memory map
 * after it.  So N threads can each take a contiguous run of segments, with
 * their own reader and CPU, and check their last key frame; the run that
 * reaches the end of the recording also checks how it ended.
 */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"
#include "replayer/replayer_int.h"

#define REP_MAX_JOBS 64

/* Every KEYFRAME record, in order.  *out is crec_malloc'd. */
int rep_load_keyframes(crec_fmt_reader *r, crec_fmt_keyframe **out, size_t *n,
                       crec_error *err)
{
    crec_fmt_cursor *c;
    crec_fmt_keyframe *kfs = NULL;
    size_t cap = 0, len = 0;
    const uint8_t *body;
    size_t blen;
    int kind, rc;

    rc = crec_fmt_cursor_open(r, CREC_FMT_S_KEYFRAMES, 0, 0, &c, err);
    if (rc != CREC_OK)
        return rc;
    while ((rc = crec_fmt_cursor_next(c, &kind, &body, &blen, err)) == CREC_OK) {
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            crec_fmt_keyframe *p = crec_realloc(kfs, ncap * sizeof *p);
            if (!p) {
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory loading key frames");
                break;
            }
            kfs = p, cap = ncap;
        }
        if (kind != CREC_FMT_K_KEYFRAME) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the KEYFRAMES stream", kind);
            break;
        }
        rc = crec_fmt_kf_decode(body, blen, &kfs[len], err);
        if (rc != CREC_OK)
            break;
        if (len > 0 && kfs[len].global_icount < kfs[len - 1].global_icount) {
            rc = crec_error_corrupt(err, "key frame %zu goes back in time", len);
            break;
        }
        len++;
    }
    crec_fmt_cursor_free(c);
    /* In a file cut short, KEYFRAMES may end inside the record its last
     * chunk began (a chunk is cut when it is full): the key frames before
     * it are the recording's. */
    if (rc == CREC_ERR_TRUNCATED)
        rc = CREC_ERR_NOTFOUND;
    if (rc == CREC_ERR_NOTFOUND && len == 0 && crec_fmt_reader_truncated(r, NULL, NULL))
        rc = crec_error_set(err, CREC_ERR_TRUNCATED, "the recording was cut short before its "
                            "first key frame: nothing to verify");
    else if (rc == CREC_ERR_NOTFOUND && len == 0)
        rc = crec_error_corrupt(err, "the recording has no key frame");
    else if (rc == CREC_ERR_NOTFOUND)
        rc = CREC_OK;
    if (rc != CREC_OK) {
        crec_free(kfs);
        return rc;
    }
    *out = kfs;
    *n = len;
    return CREC_OK;
}

static void *job_main(void *arg)
{
    struct rep_seg *s = arg;

    rep_seg_run(s);
    __atomic_store_n(&s->finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Instructions the runs have replayed so far (read while they run). */
static uint64_t jobs_done(struct rep_seg *segs, unsigned jobs)
{
    uint64_t done = 0;

    for (unsigned j = 0; j < jobs; j++) {
        uint64_t at = __atomic_load_n(&segs[j].at, __ATOMIC_RELAXED);
        uint64_t start = segs[j].kfs[segs[j].first].global_icount;
        done += at > start ? at - start : 0;
    }
    return done;
}

static int jobs_finished(struct rep_seg *segs, unsigned jobs)
{
    for (unsigned j = 0; j < jobs; j++)
        if (!__atomic_load_n(&segs[j].finished, __ATOMIC_ACQUIRE))
            return 0;
    return 1;
}

/* While the runs go on, tell o->progress how far they have got. */
static void watch_jobs(struct rep_seg *segs, unsigned jobs, const crec_replay_options *o,
                       uint64_t total)
{
    const struct timespec tenth = {0, 100 * 1000 * 1000};

    while (!jobs_finished(segs, jobs)) {
        nanosleep(&tenth, NULL);
        o->progress(o->progress_ctx, jobs_done(segs, jobs), total);
    }
}

/*
 * Run every job on a thread of its own and wait for them all: the calling
 * thread is left free to report progress.  A job whose thread can't be
 * created runs on the calling thread instead.
 */
static void run_threads(struct rep_seg *segs, unsigned jobs, const crec_replay_options *o,
                        uint64_t total)
{
    pthread_t threads[REP_MAX_JOBS];
    int started[REP_MAX_JOBS];

    for (unsigned j = 0; j < jobs; j++) {
        started[j] = pthread_create(&threads[j], NULL, job_main, &segs[j]) == 0;
        if (!started[j])
            job_main(&segs[j]);
    }
    if (o->progress)
        watch_jobs(segs, jobs, o, total);
    for (unsigned j = 0; j < jobs; j++)
        if (started[j])
            pthread_join(threads[j], NULL);
}

/* The first key frame to start from: the last one at or before `from`. */
static size_t start_index(const crec_fmt_keyframe *kfs, size_t nkf, size_t nblocks,
                          uint64_t from)
{
    size_t i = 0;

    while (i + 1 < nblocks && kfs[i + 1].global_icount <= from)
        i++;
    (void)nkf;
    return i;
}

/* Cut key frames [first, last] into `jobs` runs of about equal length. */
static void plan_jobs(struct rep_seg *segs, unsigned jobs, size_t first, size_t last)
{
    size_t span = last - first;

    for (unsigned j = 0; j < jobs; j++) {
        segs[j].first = first + span * j / jobs;
        segs[j].end_kf = first + span * (j + 1) / jobs;
        segs[j].is_last = j + 1 == jobs;
    }
}

static void merge(struct rep_seg *segs, unsigned jobs, crec_replay_result *res)
{
    for (unsigned j = 0; j < jobs; j++) {
        struct rep_seg *s = &segs[j];
        res->keyframes_checked += s->keyframes_checked;
        res->syscalls += s->syscalls;
        res->writes_checked += s->writes_checked;
        res->replayed += crec_emu_cpu_icount(s->cpu) - s->kfs[s->first].global_icount;
        if (s->diverged && (!res->diverged || s->div.icount < res->div.icount)) {
            res->diverged = 1;
            res->div = s->div;
        }
    }
}

static int run_jobs(const char *path, crec_fmt_reader *r0, const crec_fmt_keyframe *kfs,
                    size_t nkf, int truncated, const crec_replay_options *o,
                    crec_replay_result *res, crec_error *err)
{
    struct rep_seg *segs;
    size_t nblocks = truncated ? nkf : nkf - 1;
    size_t first = start_index(kfs, nkf, nblocks ? nblocks : 1, o->from);
    size_t last = nkf - 1;
    unsigned jobs = o->jobs ? o->jobs : 1;
    int rc = CREC_OK;

    if (jobs > REP_MAX_JOBS)
        jobs = REP_MAX_JOBS;
    if (jobs > last - first)
        jobs = last - first ? (unsigned)(last - first) : 1;
    segs = crec_calloc(jobs, sizeof *segs);
    if (!segs)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %u replay jobs", jobs);
    plan_jobs(segs, jobs, first, last);
    for (unsigned j = 0; j < jobs && rc == CREC_OK; j++) {
        struct rep_seg *s = &segs[j];
        s->kfs = kfs;
        s->nkf = nkf;
        s->start = &kfs[s->first];
        s->truncated = truncated;
        s->stop_at = kfs[s->end_kf].global_icount;
        s->nkf_blocks = s->is_last && !truncated ? nkf - 1 : s->end_kf + 1;
        s->r = r0;
        s->at = kfs[s->first].global_icount;
        if (j > 0)
            rc = crec_fmt_reader_open(path, &s->r, err);
    }
    res->start_icount = kfs[first].global_icount;
    res->instructions = kfs[nkf - 1].global_icount;
    if (rc == CREC_OK) {
        run_threads(segs, jobs, o, res->instructions - res->start_icount);
        merge(segs, jobs, res);
        for (unsigned j = 0; j < jobs && rc == CREC_OK; j++)
            if (segs[j].failed) {
                *err = segs[j].err;
                rc = err->code;
            }
        if (segs[jobs - 1].have_exit) {
            res->exited_by_signal = segs[jobs - 1].exit.u.exit.how == CREC_FMT_EXIT_SIGNAL;
            res->exit_value = segs[jobs - 1].exit.u.exit.value;
        }
    }
    for (unsigned j = 0; j < jobs; j++) {
        rep_seg_close(&segs[j]);
        if (j > 0)
            crec_fmt_reader_free(segs[j].r);
    }
    crec_free(segs);
    return rc;
}

/* Does the EVENTS stream hold the EXIT event after key frame `kf`? */
static int has_exit(crec_fmt_reader *r, const crec_fmt_keyframe *kf)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t len;
    int kind, found = 0;

    if (crec_fmt_cursor_open(r, CREC_FMT_S_EVENTS, kf->tid, kf->events_off, &c, NULL) != CREC_OK)
        return 0;
    while (!found && crec_fmt_cursor_next(c, &kind, &body, &len, NULL) == CREC_OK)
        found = kind == CREC_FMT_K_EXIT;
    crec_fmt_cursor_free(c);
    return found;
}

size_t crec_replay_reachable_keyframes(crec_fmt_reader *r, const crec_fmt_keyframe *kfs,
                                       size_t nkf, int *cut)
{
    uint64_t at;
    size_t n = 0;

    *cut = 0;
    if (!crec_fmt_reader_truncated(r, &at, NULL))
        return nkf;
    while (n < nkf && crec_fmt_kf_reached(r, &kfs[n]))
        n++;
    *cut = n < nkf || !has_exit(r, &kfs[nkf - 1]);
    return n;
}

int crec_replay_run(const char *path, const crec_replay_options *o, crec_replay_result *res,
                    crec_error *err)
{
    crec_fmt_reader *r = NULL;
    crec_fmt_keyframe *kfs = NULL;
    char spooled[PATH_MAX];
    size_t nkf = 0;
    int truncated = 0, spool_fd, rc;

    memset(res, 0, sizeof *res);
    /* each job opens the file again: a pipe or FIFO is read once, kept */
    rc = crec_fmt_reader_spool(path, spooled, sizeof spooled, &spool_fd, err);
    path = spooled;
    if (rc == CREC_OK)
        rc = crec_fmt_reader_open(path, &r, err);
    /* every chunk, also of streams a replay never reads (SYMBOLS): a file
     * that is damaged anywhere is not "verified" */
    if (rc == CREC_OK)
        rc = crec_fmt_reader_verify(r, err);
    if (rc == CREC_OK)
        rc = rep_load_keyframes(r, &kfs, &nkf, err);
    if (rc == CREC_OK) {
        nkf = crec_replay_reachable_keyframes(r, kfs, nkf, &truncated);
        if (nkf == 0)
            rc = crec_error_corrupt(err, "the recording was cut short before its first key "
                                         "frame's data");
    }
    if (rc == CREC_OK && kfs[nkf - 1].global_icount == 0) /* never "verified" */
        rc = truncated ? crec_error_set(err, CREC_ERR_TRUNCATED, "the recording was cut short "
                                        "before its first complete segment: nothing to verify")
                       : crec_error_set(err, CREC_ERR_NOTFOUND, "the recording holds 0 "
                                        "instructions: nothing to verify");
    if (rc == CREC_OK) {
        res->truncated = truncated;
        if (o->from > kfs[nkf - 1].global_icount)
            rc = crec_error_set(err, CREC_ERR_ARG,
                                "--from %" PRIu64 " is past the end of the recording (%" PRIu64
                                " instructions)", o->from, kfs[nkf - 1].global_icount);
        else
            rc = run_jobs(path, r, kfs, nkf, truncated, o, res, err);
    }
    crec_free(kfs);
    crec_fmt_reader_free(r);
    if (spool_fd >= 0)
        close(spool_fd);
    return rc;
}
