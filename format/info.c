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
};

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
}

static void copy_summary(crec_info *i, const crec_fmt_summary *s)
{
    i->file_bytes = s->file_bytes;
    i->chunks = s->nchunks;
    i->threads = s->nthreads;
    i->instructions = s->instructions;
    i->keyframes = s->nkeyframes;
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
}

_Static_assert((int)CREC_EXIT_STATUS == (int)CREC_FMT_EXIT_STATUS &&
                   (int)CREC_EXIT_SIGNAL == (int)CREC_FMT_EXIT_SIGNAL &&
                   (int)CREC_EXIT_STOPPED == (int)CREC_FMT_EXIT_STOPPED,
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
    if (!o->cpuid || !o->streams) {
        crec_info_free(&o->info);
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory describing a recording");
    }
    copy_header(&o->info, h, o->cpuid);
    copy_summary(&o->info, &s);
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
    crec_free(o);
}
