/*
 * dense.c - key frames on demand (`crec keyframes`, docs/QUERY.md): the
 * ranges where a user asked for denser restart points, kept in PATH.kf
 * beside the recording so that every build of the index (PATH.idx, a
 * cache) takes them again.
 *
 * PATH.kf is text, one request a line after a header that names the
 * recording it belongs to (its size and hash, as the index names it):
 *
 *   crec keyframes 1
 *   recording SIZE HASH
 *   FROM TO EVERY
 *   ...
 *
 * A file that is missing, can't be read, or names another recording asks
 * for nothing: the index is built as usual.  The key frames themselves
 * are the restart points the build takes in those ranges (build.c): like
 * a key frame, registers and stream positions, with the memory a replay
 * starting there needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "index/index.h"
#include "index/index_int.h"

#define DENSE_MAGIC "crec keyframes 1"
#define DENSE_MAX 256 /* requests kept */

int crec_idx_dense_read(const char *path, crec_idx_dense **out, size_t *n)
{
    char kpath[4200], line[256];
    uint64_t size, hash, rsize, rhash;
    crec_idx_dense *v = NULL;
    size_t k = 0;
    FILE *f;

    *out = NULL, *n = 0;
    snprintf(kpath, sizeof kpath, "%s.kf", path);
    /* never a FIFO or a device: a query must not hang on a planted name */
    int fd = open(kpath, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    struct stat st;
    if (fd < 0)
        return CREC_OK;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 64 * 1024 ||
        !(f = fdopen(fd, "r"))) {
        close(fd);
        return CREC_OK;
    }
    if (!fgets(line, sizeof line, f) || strcmp(line, DENSE_MAGIC "\n") != 0 ||
        !fgets(line, sizeof line, f) ||
        sscanf(line, "recording %" SCNu64 " %" SCNx64, &size, &hash) != 2 ||
        crec_idx_recording_id(path, &rsize, &rhash, NULL) != CREC_OK || rsize != size ||
        rhash != hash || !(v = crec_calloc(DENSE_MAX, sizeof *v))) {
        fclose(f);
        return CREC_OK;
    }
    while (k < DENSE_MAX && fgets(line, sizeof line, f)) {
        crec_idx_dense d;
        if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64, &d.from, &d.to, &d.every) == 3 &&
            d.from < d.to && d.every > 0)
            v[k++] = d;
    }
    fclose(f);
    if (k == 0)
        crec_free(v);
    else
        *out = v, *n = k;
    return CREC_OK;
}

int crec_idx_dense_add(const char *path, const crec_idx_dense *d, crec_error *err)
{
    char kpath[4200], tmp[4300];
    crec_idx_dense *v;
    uint64_t size, hash;
    size_t n;
    FILE *f;
    int fd, rc;

    if ((rc = crec_idx_recording_id(path, &size, &hash, err)) != CREC_OK)
        return rc;
    crec_idx_dense_read(path, &v, &n);
    snprintf(kpath, sizeof kpath, "%s.kf", path);
    snprintf(tmp, sizeof tmp, "%s.tmpXXXXXX", kpath);
    /* a new file of a name no one can guess, then renamed (as the index) */
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0 || fchmod(fd, 0644) != 0 || !(f = fdopen(fd, "w"))) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        crec_free(v);
        return crec_error_set(err, CREC_ERR_IO, "%s: %s", kpath, strerror(e));
    }
    fprintf(f, "%s\nrecording %" PRIu64 " %" PRIx64 "\n", DENSE_MAGIC, size, hash);
    for (size_t i = n >= DENSE_MAX ? 1 : 0; i < n; i++) /* the oldest goes when full */
        fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", v[i].from, v[i].to, v[i].every);
    fprintf(f, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", d->from, d->to, d->every);
    crec_free(v);
    if (fclose(f) != 0 || rename(tmp, kpath) != 0) {
        int e = errno;
        unlink(tmp);
        return crec_error_set(err, CREC_ERR_IO, "%s: %s", kpath, strerror(e));
    }
    return CREC_OK;
}

/* Restart points of the index in [from, to), and all of them. */
static void count_points(const crec_idx *ix, uint64_t from, uint64_t to, uint64_t *in,
                         uint64_t *all)
{
    *in = *all = 0;
    for (size_t i = 0; ix && i < ix->nspan; i++)
        if (ix->spans[i].at_point) {
            (*all)++;
            *in += ix->spans[i].start >= from && ix->spans[i].start < to;
        }
}

int crec_keyframes(const char *path, uint64_t from, uint64_t to, uint64_t every,
                   crec_progress_fn progress, void *pctx, crec_keyframes_result *res,
                   crec_error *err)
{
    crec_recording *rec = NULL;
    crec_idx *ix = NULL;
    crec_idx_dense d;
    int rc;

    memset(res, 0, sizeof *res);
    if (every < CREC_KEYFRAMES_MIN_EVERY)
        return crec_error_set(err, CREC_ERR_ARG, "--every %" PRIu64 ": key frames at least %d "
                              "instructions apart", every, CREC_KEYFRAMES_MIN_EVERY);
    /* the key frames from the file, registers and all: the build starts at them */
    if ((rc = crec_open(path, CREC_OPEN_NO_INDEX, &rec, err)) != CREC_OK)
        return rc;
    if (rec->nthr > 1)
        rc = crec_error_set(err, CREC_ERR_UNSUPPORTED, "a recording of %zu threads: crec "
                            "keyframes makes key frames for a recording of one thread",
                            rec->nthr);
    if (rc == CREC_OK && strcmp(rec->path, path) != 0)
        rc = crec_error_set(err, CREC_ERR_ARG, "%s is not a file: its key frames are kept "
                            "beside it", path);
    if (to > rec->end)
        to = rec->end;
    if (from < crec_start(rec))
        from = crec_start(rec);
    if (rc == CREC_OK && from >= to)
        rc = crec_error_set(err, CREC_ERR_ARG, "no instruction of the recording (%" PRIu64 " to %"
                            PRIu64 ") lies in [%" PRIu64 ", %" PRIu64 ")", crec_start(rec),
                            rec->end, from, to);
    d = (crec_idx_dense){from, to, every};
    if (rc == CREC_OK)
        rc = crec_idx_dense_add(path, &d, err);
    if (rc == CREC_OK)
        rc = crec_idx_rebuild(path, rec->proc, 0, rec->kfs, rec->nkf, 0, progress, pctx, &ix,
                              err);
    if (rc == CREC_OK) {
        struct stat st;
        char ipath[4200];
        count_points(ix, from, to, &res->points, &res->all_points);
        res->from = from, res->to = to;
        snprintf(ipath, sizeof ipath, "%s.idx", path);
        res->index_bytes = stat(ipath, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    crec_idx_free(ix);
    crec_close(rec);
    return rc;
}
