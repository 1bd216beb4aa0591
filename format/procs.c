/*
 * procs.c - the processes of a recording (version 3): what each PROCESS
 * stream says of its process, for `crec info`, `crec replay --pid` and the
 * queries of one process.  No layout of its own: the records are
 * records.c's.
 */
#include "format/format_int.h"

/* A process with no end: its instructions up to its last key frame whose
 * data reached the file (where a replay of it can get). */
static int last_reached(crec_fmt_reader *r, crec_fmt_proc_sum *p, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t len;
    int kind, rc = crec_fmt_cursor_open(r, CREC_FMT_S_KEYFRAMES, 0, 0, &c, err);

    while (rc == CREC_OK && (rc = crec_fmt_cursor_next(c, &kind, &body, &len, err)) == CREC_OK) {
        crec_fmt_keyframe kf;
        if (kind == CREC_FMT_K_CHECKPOINT) /* not where a replay can start */
            continue;
        if (kind != CREC_FMT_K_KEYFRAME || crec_fmt_kf_decode(body, len, &kf, NULL) != CREC_OK ||
            !crec_fmt_kf_reached(r, &kf))
            break;
        if (kf.global_icount > p->instructions)
            p->instructions = kf.global_icount;
    }
    crec_fmt_cursor_free(c);
    return rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED || rc == CREC_OK ? CREC_OK : rc;
}

/* Read the PROCESS stream of the selected process into *p. */
static int read_one(crec_fmt_reader *r, crec_fmt_proc_sum *p, crec_error *err)
{
    crec_fmt_cursor *c;
    const uint8_t *body;
    size_t len;
    int kind, rc = crec_fmt_cursor_open(r, CREC_FMT_S_PROCESS, 0, 0, &c, err);

    while (rc == CREC_OK && (rc = crec_fmt_cursor_next(c, &kind, &body, &len, err)) == CREC_OK) {
        crec_fmt_process rec;
        if (kind != CREC_FMT_K_PROCESS) {
            rc = crec_error_corrupt(err, "record kind 0x%02x in the PROCESS stream of process %u",
                                    kind, p->proc);
            break;
        }
        if ((rc = crec_fmt_proc_decode(body, len, &rec, err)) != CREC_OK)
            break;
        if (rec.proc != p->proc) {
            rc = crec_error_corrupt(err, "the PROCESS stream of process %u names process %u",
                                    p->proc, rec.proc);
            break;
        }
        if (rec.op == CREC_FMT_PR_START && !p->started) {
            p->started = 1;
            p->how = rec.how;
            p->parent = rec.parent;
            p->parent_tid = rec.parent_tid;
            p->parent_icount = rec.parent_icount;
            p->pid = rec.pid;
            p->ppid = rec.ppid;
            if (!(p->path = crec_malloc(rec.path_len + 1)) ||
                crec_fmt_process_argv(&rec, &p->argv) != CREC_OK) {
                rc = crec_error_set(err, CREC_ERR_NOMEM, "out of memory reading process %u",
                                    p->proc);
                break;
            }
            memcpy(p->path, rec.path, rec.path_len);
            p->path[rec.path_len] = '\0';
        } else if (rec.op == CREC_FMT_PR_END) {
            p->ended = 1;
            p->end_how = rec.end_how;
            p->value = rec.value;
            p->instructions = rec.instructions;
        }
    }
    crec_fmt_cursor_free(c);
    /* a process whose recorder was killed ends where its stream does */
    if (rc == CREC_ERR_NOTFOUND || rc == CREC_ERR_TRUNCATED)
        rc = CREC_OK;
    return rc == CREC_OK && !p->ended ? last_reached(r, p, err) : rc;
}

void crec_fmt_processes_free(crec_fmt_proc_sum *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        crec_free(v[i].path);
        crec_free(v[i].argv);
    }
    crec_free(v);
}

int crec_fmt_processes(crec_fmt_reader *r, crec_fmt_proc_sum **out, size_t *n, crec_error *err)
{
    const uint32_t *procs;
    size_t np = crec_fmt_reader_procs(r, &procs);
    uint32_t sel = crec_fmt_reader_selected(r);
    crec_fmt_proc_sum *v = crec_calloc(np, sizeof *v);
    int rc = CREC_OK;

    *out = NULL, *n = 0;
    if (!v)
        return crec_error_set(err, CREC_ERR_NOMEM, "out of memory for %zu processes", np);
    for (size_t i = 0; i < np && rc == CREC_OK; i++) {
        v[i].proc = procs[i];
        if ((rc = crec_fmt_reader_select(r, procs[i], err)) == CREC_OK)
            rc = read_one(r, &v[i], err);
    }
    if (crec_fmt_reader_select(r, sel, rc == CREC_OK ? err : NULL) != CREC_OK && rc == CREC_OK)
        rc = err ? (int)err->code : CREC_ERR_NOTFOUND;
    if (rc != CREC_OK) {
        crec_fmt_processes_free(v, np);
        return rc;
    }
    *out = v, *n = np;
    return CREC_OK;
}

int crec_fmt_pick_processes(const crec_fmt_proc_sum *v, size_t n, uint32_t pid, uint32_t image,
                            size_t *which, size_t *np, crec_error *err)
{
    size_t k = 0, seen = 0;

    *np = 0;
    for (size_t i = 0; i < n; i++) {
        if (pid == 0 || (v[i].started && v[i].pid == pid)) {
            seen++;
            if (!image || image == seen)
                which[k++] = i;
        }
    }
    if (seen == 0)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "no process with pid %u in the recording",
                              pid);
    if (k == 0)
        return crec_error_set(err, CREC_ERR_NOTFOUND, "pid %u ran %zu program%s, not %u", pid,
                              seen, seen == 1 ? "" : "s", image);
    *np = k;
    return CREC_OK;
}
