/*
 * replay_parts.c - crec_replay_run: a full replay, whose jobs may start at
 * the restart points of the recording's index (FILE.idx) as well as at its
 * key frames.  A program that goes through much memory has few key frames
 * (docs/ARCHITECTURE.md, "Key frames and check points"): cut only there,
 * `replay --jobs N` would have one part.  The replayer trusts nothing it
 * gets here: it checks every cut and replays again cut at key frames when
 * a part does not hold (replayer/session.c).
 */
#include <pthread.h>

#include "common/common.h"
#include "index/index.h"
#include "replayer/replayer.h"

/* The index the points come from, and what need() has filled. */
struct parts_kept {
    crec_idx *ix;
    pthread_mutex_t mu;      /* need() is called by every part's thread */
    uint64_t *times;
    size_t *span;            /* the index span each point starts */
    crec_replay_from *pts;
    uint64_t *span_start, *span_cost, *span_seed; /* every span's, for the plan */
};

/* k and what it holds (its index too); its lock is the caller's. */
static void kept_free(struct parts_kept *k)
{
    crec_idx_free(k->ix);
    crec_free(k->times);
    crec_free(k->span);
    crec_free(k->pts);
    crec_free(k->span_start);
    crec_free(k->span_cost);
    crec_free(k->span_seed);
    crec_free(k);
}

static void release_points(void *ctx, void *keep)
{
    struct parts_kept *k = keep;

    (void)ctx;
    pthread_mutex_destroy(&k->mu);
    kept_free(k);
}

/* The restart points of FILE.idx (of process proc), if it names this
 * recording: their times only, which the index's table holds; each part
 * reads the blocks of its own points (need_point). */
static int index_points(void *ctx, const char *path, uint32_t proc, const crec_fmt_keyframe *kfs,
                        size_t nkf, const uint64_t **times, crec_replay_from **out, size_t *n,
                        crec_replay_costs *costs, void **keep)
{
    struct parts_kept *k = NULL;
    crec_idx *ix = NULL;
    crec_error e = {0};
    size_t m = 0;
    int rc;

    (void)ctx;
    *times = NULL, *out = NULL, *n = 0, *keep = NULL;
    *costs = (crec_replay_costs){0, NULL, NULL, NULL};
    rc = crec_idx_load(path, proc, 0, kfs, nkf, &ix, &e);
    if (rc == CREC_OK && (!(k = crec_calloc(1, sizeof *k)) ||
                          !(k->times = crec_calloc(ix->nspan + 1, sizeof *k->times)) ||
                          !(k->span = crec_calloc(ix->nspan + 1, sizeof *k->span)) ||
                          !(k->pts = crec_calloc(ix->nspan + 1, sizeof *k->pts)) ||
                          !(k->span_start = crec_calloc(ix->nspan + 1, sizeof *k->span_start)) ||
                          !(k->span_cost = crec_calloc(ix->nspan + 1, sizeof *k->span_cost)) ||
                          !(k->span_seed = crec_calloc(ix->nspan + 1, sizeof *k->span_seed))))
        rc = CREC_ERR_NOMEM;
    if (rc != CREC_OK) {
        if (k) {
            k->ix = ix;
            kept_free(k);
        } else {
            crec_idx_free(ix);
        }
        return rc;
    }
    for (size_t i = 0; i < ix->nspan; i++) {
        if (ix->spans[i].at_point) {
            k->times[m] = ix->spans[i].start;
            k->span[m++] = i;
        }
        k->span_start[i] = ix->spans[i].start, k->span_cost[i] = ix->spans[i].cost;
        k->span_seed[i] = ix->spans[i].seed_bytes;
    }
    *costs = (crec_replay_costs){ix->nspan, k->span_start, k->span_cost, k->span_seed};
    k->ix = ix;
    pthread_mutex_init(&k->mu, NULL);
    *times = k->times, *out = k->pts, *n = m, *keep = k;
    return CREC_OK;
}

/* Point i with its seed, its block of the index read (once). */
static int need_point(void *ctx, void *keep, size_t i)
{
    struct parts_kept *k = keep;
    crec_error e = {0};
    int rc = CREC_OK;

    (void)ctx;
    pthread_mutex_lock(&k->mu);
    if (!k->pts[i].point && (rc = crec_idx_need_point(k->ix, k->span[i], &e)) == CREC_OK) {
        const crec_idx_span *s = &k->ix->spans[k->span[i]];
        k->pts[i] = (crec_replay_from){s->point, s->nlines, s->lines, s->values, s->masks};
    }
    pthread_mutex_unlock(&k->mu);
    return rc;
}

int crec_replay_run(const char *path, const crec_replay_options *o, crec_replay_result *res,
                    crec_error *err)
{
    const crec_replay_points pts = {index_points, need_point, release_points, NULL};

    /* one job never reads the index: it has nothing to cut */
    return crec_replay_run_points(path, o, o->jobs > 1 ? &pts : NULL, res, err);
}
