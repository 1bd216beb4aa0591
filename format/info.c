/*
 * info.c - crec_info_read (include/crec.h): the header and the summary of
 * a recording, in the public API's own types, for `crec info`.  The work
 * is crec_fmt_summarize(); this only copies its answer out.
 */
#include "format/format_int.h"

/* The public struct first, so a crec_info * is one of these. */
struct info_owner {
    crec_info info;
    crec_fmt_reader *r;       /* owns the header's strings */
    crec_cpuid_leaf *cpuid;
    crec_stream_info *streams;
    crec_thread_info *threads;
    crec_gap *gaps;
    crec_process_info *procs;
    crec_fmt_proc_sum *sums;  /* owns the processes' strings */
    size_t nsums;
};

/* ---- processes ----------------------------------------------------------------- */

_Static_assert((int)CREC_EXIT_EXEC == (int)CREC_FMT_EXIT_EXEC &&
                   (int)CREC_PROCESS_ROOT == (int)CREC_FMT_PR_ROOT &&
                   (int)CREC_PROCESS_FORK == (int)CREC_FMT_PR_FORK &&
                   (int)CREC_PROCESS_EXEC == (int)CREC_FMT_PR_EXEC,
               "the public process kinds are the file's");

/* The public view of the processes of r (strings owned by sums). */
static int copy_processes(crec_fmt_reader *r, const crec_fmt_proc_sum *v, size_t n,
                          crec_process_info **out, crec_error *err)
{
    const crec_fmt_header *h = crec_fmt_reader_header(r);
    crec_process_info *p = crec_calloc(n ? n : 1, sizeof *p);

    *out = NULL;
    if (!p)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %zu processes", n);
    for (size_t i = 0; i < n; i++) {
        const crec_fmt_proc_sum *s = &v[i];
        crec_process_info *o = &p[i];
        o->proc = s->proc;
        o->pid = s->pid;
        o->ppid = s->ppid;
        o->image = 1;
        for (size_t k = 0; k < i; k++)
            o->image += v[k].started && s->started && v[k].pid == s->pid;
        o->how = (int)s->how;
        o->parent = s->started ? s->parent : s->proc;
        o->parent_tid = s->parent_tid;
        o->parent_icount = s->parent_icount;
        if (s->started) {
            o->path = s->path;
            o->argv = s->argv;
            while (s->argv[o->argc])
                o->argc++;
        } else { /* an older file: the header's command */
            o->path = h->argc ? h->argv[0] : "";
            o->argv = h->argv;
            o->argc = h->argc;
        }
        o->ended = s->ended || !s->started;
        o->exit_how = (int)s->end_how;
        o->exit_value = s->value;
        o->instructions = s->instructions;
    }
    *out = p;
    return CREC_OK;
}

/* Bytes to round up to, for an array of pointers in a block. */
#define ALIGN_UP(x) (((x) + 7) & ~(size_t)7)

/* One block: the array, then each process's argv array and strings. */
static crec_process_info *pack_processes(const crec_process_info *p, size_t n)
{
    size_t bytes = ALIGN_UP(n * sizeof *p), off;
    uint8_t *blk;
    crec_process_info *q;

    for (size_t i = 0; i < n; i++) {
        size_t b = (p[i].argc + 1) * sizeof(char *) + strlen(p[i].path) + 1;
        for (size_t k = 0; k < p[i].argc; k++)
            b += strlen(p[i].argv[k]) + 1;
        bytes += ALIGN_UP(b);
    }
    if (!(blk = crec_malloc(bytes ? bytes : 1)))
        return NULL;
    q = (crec_process_info *)(void *)blk;
    memcpy(q, p, n * sizeof *p);
    off = ALIGN_UP(n * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        char **av = (char **)(void *)(blk + off);
        size_t l;
        off += (q[i].argc + 1) * sizeof(char *);
        for (size_t k = 0; k < q[i].argc; k++) {
            l = strlen(p[i].argv[k]) + 1;
            memcpy(blk + off, p[i].argv[k], l);
            av[k] = (char *)(blk + off);
            off += l;
        }
        av[q[i].argc] = NULL;
        q[i].argv = av;
        l = strlen(p[i].path) + 1;
        memcpy(blk + off, p[i].path, l);
        q[i].path = (const char *)(blk + off);
        off = ALIGN_UP(off + l);
    }
    return q;
}

int crec_list_processes(const char *path, crec_process_info **out, size_t *n, crec_error *err)
{
    crec_fmt_reader *r = NULL;
    crec_fmt_proc_sum *v = NULL;
    crec_process_info *p = NULL;
    size_t nv = 0;
    int rc = crec_fmt_reader_open(path, &r, err);

    *out = NULL, *n = 0;
    if (rc == CREC_OK)
        rc = crec_fmt_processes(r, &v, &nv, err);
    if (rc == CREC_OK)
        rc = copy_processes(r, v, nv, &p, err);
    if (rc == CREC_OK && !(*out = pack_processes(p, nv)))
        rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory listing %zu processes", nv);
    if (rc == CREC_OK)
        *n = nv;
    crec_free(p);
    crec_fmt_processes_free(v, nv);
    crec_fmt_reader_free(r);
    return rc;
}

void crec_processes_free(crec_process_info *p, size_t n)
{
    (void)n;
    crec_free(p);
}

static void copy_header(crec_info *i, const crec_fmt_header *h, crec_cpuid_leaf *cpuid)
{
    i->format_version = h->version;
    i->crec_version = h->crec_version ? h->crec_version : "";
    i->big_endian_host = h->host_order == CREC_FMT_ORDER_BIG;
    i->page_size = h->page_size;
    i->cache_entries = h->cache_entries;
    i->cache_granule = h->cache_granule;
    i->keyframe_interval = h->keyframe_interval;
    i->snapshot_interval = h->snapshot_interval;
    i->checkpoint_interval = h->checkpoint_interval;
    i->start_sec = h->start_sec;
    i->start_nsec = h->start_nsec;
    i->argc = h->argc;
    i->argv = h->argv;
    i->envc = h->envc;
    i->envp = h->envp;
    for (size_t k = 0; k < h->ncpuid; k++)
        cpuid[k] = (crec_cpuid_leaf){h->cpuid[k].leaf, h->cpuid[k].subleaf, h->cpuid[k].eax,
                                     h->cpuid[k].ebx, h->cpuid[k].ecx, h->cpuid[k].edx};
    i->ncpuid = h->ncpuid;
    i->cpuid = cpuid;
    i->time_slice = h->time_slice;
    i->cpus = h->cpus;
    i->chaos = h->chaos;
    i->chaos_seed = h->chaos_seed;
}

/* The threads, with the compressed size of their streams. */
static void copy_threads(crec_thread_info *out, const crec_fmt_summary *s,
                         const crec_fmt_reader *r)
{
    for (size_t k = 0; k < s->nthread_sums; k++) {
        const crec_fmt_thread_sum *t = &s->thread_sums[k];
        crec_thread_info *o = &out[k];
        *o = (crec_thread_info){t->tid, t->parent, t->guest_tid, t->start, t->end,
                                t->instructions, t->keyframes,
                                t->exited && t->how == CREC_FMT_TH_EXITED, t->status,
                                t->ended_program, 0};
        for (size_t i = 0; i < crec_fmt_reader_nstreams(r); i++) {
            crec_fmt_stream_info si;
            if (crec_fmt_reader_stream(r, i, &si, NULL) == CREC_OK && si.tid == t->tid &&
                crec_fmt_stream_per_thread(si.type))
                o->stream_bytes += si.compressed_bytes;
        }
    }
}

static void copy_summary(crec_info *i, const crec_fmt_summary *s)
{
    i->file_bytes = s->file_bytes;
    i->chunks = s->nchunks;
    i->threads = s->nthreads;
    i->instructions = s->instructions;
    i->keyframes = s->nkeyframes;
    i->checkpoints = s->ncheckpoints;
    i->snapshots = s->nsnapshots;
    i->events = s->nevents;
    i->code_mappings = s->ncode;
    i->symbols = s->nsymbols;
    i->blobs = s->nblobs;
    i->raw_bytes = s->raw_bytes;
    i->compressed_bytes = s->compressed_bytes;
    i->exited = s->exited;
    i->exit_how = (int)s->exit_how;
    i->exit_value = s->exit_value;
    i->truncated = s->truncated;
    i->truncated_at = s->truncated_at;
    i->truncated_why = s->truncated_why;
    i->recorded_from = s->first;
    if (s->marks.ring.kind) {
        i->ring = 1;
        i->ring_size = s->marks.ring.u.ring.size;
        i->ring_dropped_segments = s->marks.ring.u.ring.dropped_segments;
        i->ring_dropped_bytes = s->marks.ring.u.ring.dropped_bytes;
        i->ring_rotations = s->marks.ring.u.ring.rotations;
    }
    if (s->marks.stop.kind) {
        i->stop_why = (int)s->marks.stop.u.stop.why;
        i->stop_at = s->marks.stop.u.stop.at;
        i->dump_number = s->marks.stop.u.stop.number;
        i->program_ended = s->marks.stop.u.stop.ended;
        i->program_end = s->marks.stop.u.stop.end;
        i->program_how = (int)s->marks.stop.u.stop.how;
        i->program_value = s->marks.stop.u.stop.value;
    }
}

_Static_assert((int)CREC_EXIT_STATUS == (int)CREC_FMT_EXIT_STATUS &&
                   (int)CREC_EXIT_SIGNAL == (int)CREC_FMT_EXIT_SIGNAL &&
                   (int)CREC_EXIT_STOPPED == (int)CREC_FMT_EXIT_STOPPED &&
                   (int)CREC_EXIT_ENDED == (int)CREC_FMT_EXIT_ENDED &&
                   (int)CREC_GAP_STOPPED == (int)CREC_FMT_GAP_STOPPED &&
                   (int)CREC_STOP_NEVER == (int)CREC_FMT_STOP_NEVER &&
                   (int)CREC_STOP_PROCESS == (int)CREC_FMT_STOP_PROCESS,
               "the public exit kinds are the file's");

int crec_info_read(const char *path, crec_info **out, crec_error *err)
{
    struct info_owner *o = crec_calloc(1, sizeof *o);
    const crec_fmt_header *h;
    crec_fmt_summary s;
    size_t n;
    int rc;

    *out = NULL;
    if (!o)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory describing a recording");
    rc = crec_fmt_reader_open(path, &o->r, err);
    if (rc == CREC_OK)
        rc = crec_fmt_summarize(o->r, &s, err);
    if (rc != CREC_OK) {
        crec_info_free(&o->info);
        return rc;
    }
    h = crec_fmt_reader_header(o->r);
    n = crec_fmt_reader_nstreams(o->r);
    o->cpuid = crec_calloc(h->ncpuid ? h->ncpuid : 1, sizeof *o->cpuid);
    o->streams = crec_calloc(n ? n : 1, sizeof *o->streams);
    o->threads = crec_calloc(s.nthread_sums ? s.nthread_sums : 1, sizeof *o->threads);
    o->gaps = crec_calloc(s.marks.ngaps ? s.marks.ngaps : 1, sizeof *o->gaps);
    if (!o->cpuid || !o->streams || !o->threads || !o->gaps) {
        crec_fmt_summary_clear(&s);
        crec_info_free(&o->info);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory describing a recording");
    }
    copy_header(&o->info, h, o->cpuid);
    copy_summary(&o->info, &s);
    copy_threads(o->threads, &s, o->r);
    o->info.nthread_list = s.nthread_sums;
    o->info.thread_list = o->threads;
    for (size_t k = 0; k < s.marks.ngaps; k++)
        o->gaps[k] = (crec_gap){s.marks.gaps[k].u.gap.from, s.marks.gaps[k].u.gap.to,
                                (int)s.marks.gaps[k].u.gap.why};
    o->info.ngaps = s.marks.ngaps;
    o->info.gaps = o->gaps;
    crec_fmt_summary_clear(&s);
    for (size_t k = 0; k < n; k++) {
        crec_fmt_stream_info si;
        if ((rc = crec_fmt_reader_stream(o->r, k, &si, err)) != CREC_OK) {
            crec_info_free(&o->info);
            return rc;
        }
        o->streams[k] = (crec_stream_info){crec_fmt_stream_name(si.type), si.tid, si.nchunks,
                                           si.raw_bytes, si.compressed_bytes};
    }
    o->info.nstreams = n;
    o->info.streams = o->streams;
    if ((rc = crec_fmt_processes(o->r, &o->sums, &o->nsums, err)) != CREC_OK ||
        (rc = copy_processes(o->r, o->sums, o->nsums, &o->procs, err)) != CREC_OK) {
        crec_info_free(&o->info);
        return rc;
    }
    o->info.nprocesses = o->nsums;
    o->info.processes = o->procs;
    crec_fmt_reader_totals(o->r, &o->info.chunks, &o->info.raw_bytes,
                           &o->info.compressed_bytes);
    *out = &o->info;
    return CREC_OK;
}

void crec_info_free(crec_info *info)
{
    struct info_owner *o = (struct info_owner *)info;

    if (!o)
        return;
    crec_fmt_reader_free(o->r);
    crec_free(o->cpuid);
    crec_free(o->streams);
    crec_free(o->threads);
    crec_free(o->gaps);
    crec_free(o->procs);
    crec_fmt_processes_free(o->sums, o->nsums);
    crec_free(o);
}
