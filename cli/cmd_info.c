/*
 * cmd_info.c - `crec info FILE [--json]`: describe a recording.  All the
 * reading is crec_info_read(); this file only parses and prints.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: crec info FILE [--json]\n\n"
                 "Describe a recording: its header, threads, instruction count, key frames,\n"
                 "snapshots, chunks, the size of each stream (compressed and raw) and the\n"
                 "bits per instruction.  A recording whose end is missing (the recorder was\n"
                 "killed) is read up to its last complete chunk, and info says where it ends.\n"
                 "FILE '-' reads standard input in one pass.\n\n"
                 "Options:\n"
                 "  --json     print the same as one JSON object\n"
                 "  -h, --help print this help\n\n"
                 "Exit status: 0 success, 1 bad or corrupt file, 2 bad command line.\n");
}

/* ---- text --------------------------------------------------------------- */

static const char *exit_text(int how)
{
    switch (how) {
    case CREC_EXIT_SIGNAL:
        return "killed by signal";
    case CREC_EXIT_STOPPED:
        return "recording stopped by signal";
    case CREC_EXIT_EXEC:
        return "execve, going on as process";
    case CREC_EXIT_ENDED:
        return "the recording ended before the program";
    }
    return "status";
}

static const char *stop_text(int why)
{
    switch (why) {
    case CREC_STOP_STOP_AT:
        return "at --stop-at";
    case CREC_STOP_MAX_SIZE:
        return "the file reached --max-size";
    case CREC_STOP_DUMP:
        return "a dump, taken while the program ran on";
    case CREC_STOP_THREADS:
        return "the program started a second thread (a ring or --start-at recording holds one)";
    case CREC_STOP_NEVER:
        return "no --start-at trigger came: nothing was recorded";
    case CREC_STOP_PROCESS:
        return "the program forked or called execve (this recording holds one process)";
    }
    return "?";
}

/* What a ring kept, the gaps of a --start-at recording, an early end. */
static void print_flight(FILE *out, const crec_info *s)
{
    if (s->ring || s->recorded_from || s->ngaps)
        fprintf(out, "recorded:      instructions %llu to %llu", (unsigned long long)s->recorded_from,
                (unsigned long long)s->instructions);
    if (s->ring)
        fprintf(out, " (a ring of %llu bytes; it dropped %llu segments, %llu bytes, in %llu "
                "rotations)\n", (unsigned long long)s->ring_size,
                (unsigned long long)s->ring_dropped_segments,
                (unsigned long long)s->ring_dropped_bytes, (unsigned long long)s->ring_rotations);
    else if (s->recorded_from || s->ngaps)
        fprintf(out, ", in %zu part%s\n", s->ngaps + (s->ngaps && s->gaps[0].from == 0 ? 0 : 1),
                s->ngaps + (s->ngaps && s->gaps[0].from == 0 ? 0 : 1) == 1 ? "" : "s");
    for (size_t i = 0; i < s->ngaps; i++)
        fprintf(out, "%s%llu to %llu (%s)\n", i ? "               " : "not recorded:  ",
                (unsigned long long)s->gaps[i].from, (unsigned long long)s->gaps[i].to,
                s->gaps[i].why == CREC_GAP_BEFORE_START ? "before --start-at"
                                                        : "from --stop-at to --start-at");
    if (!s->stop_why)
        return;
    fprintf(out, "ended:         at instruction %llu: %s", (unsigned long long)s->stop_at,
            stop_text(s->stop_why));
    if (s->stop_why == CREC_STOP_DUMP)
        fprintf(out, " (dump %llu)", (unsigned long long)s->dump_number);
    if (s->program_ended)
        fprintf(out, "; the program ran on, unrecorded, and %s %llu at instruction %llu",
                s->program_how == CREC_EXIT_SIGNAL ? "was killed by signal" : "exited with status",
                (unsigned long long)s->program_value, (unsigned long long)s->program_end);
    fputc('\n', out);
}

/* Instructions of every process (the first's alone for a recording of one). */
static uint64_t all_instructions(const crec_info *s)
{
    uint64_t n = 0;

    if (s->nprocesses < 2)
        return s->instructions;
    for (size_t i = 0; i < s->nprocesses; i++)
        n += s->processes[i].instructions;
    return n;
}

static double bits_per_instr(const crec_info *s)
{
    uint64_t n = all_instructions(s);

    return n ? (double)s->compressed_bytes * 8.0 / (double)n : 0.0;
}

static void print_time(FILE *out, int64_t sec)
{
    time_t t = (time_t)sec;
    struct tm tm;
    char buf[64];
    if (gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm))
        fputs(buf, out);
    else
        fprintf(out, "%lld", (long long)sec);
}

/* One argument, shell-quoted when it is empty or holds a special character,
 * so the command line reads as one could type it. */
static void print_arg(FILE *out, const char *a)
{
    if (*a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "%+,-./:=@_") == strlen(a)) {
        fprintf(out, " %s", a);
        return;
    }
    fputs(" '", out);
    for (; *a; a++) {
        if (*a == '\'')
            fputs("'\\''", out);
        else if ((unsigned char)*a < 0x20 || *a == 0x7f)
            fprintf(out, "\\x%02x", (unsigned char)*a);
        else
            fputc(*a, out);
    }
    fputc('\'', out);
}

static void print_header(FILE *out, const char *name, const crec_info *h)
{
    fprintf(out, "file:          %s (%llu bytes)\n", name, (unsigned long long)h->file_bytes);
    fprintf(out, "format:        version %u, written by crec %s\n", h->format_version,
            h->crec_version);
    fprintf(out, "guest:         x86-64, recorded on a %s-endian host, page size %llu\n",
            h->big_endian_host ? "big" : "little", (unsigned long long)h->page_size);
    fprintf(out, "started:       ");
    print_time(out, h->start_sec);
    fprintf(out, "\ncommand:      ");
    for (size_t i = 0; i < h->argc; i++)
        print_arg(out, h->argv[i]);
    fprintf(out, "\nenvironment:   %zu variables\n", h->envc);
    fprintf(out, "cpuid:         %zu leaves shown to the guest\n", h->ncpuid);
    fprintf(out, "cache:         %llu entries of %llu bytes\n",
            (unsigned long long)h->cache_entries, (unsigned long long)h->cache_granule);
}

/* Every thread: its number, its creator, its tid in the guest, where it
 * ran (global times), its instructions, key frames and stream bytes. */
static void print_threads(FILE *out, const crec_info *s)
{
    fprintf(out, "               %6s %6s %8s %12s %12s %12s %5s %10s  %s\n", "thread", "parent",
            "tid", "from", "to", "instr", "kf", "bytes", "end");
    for (size_t i = 0; i < s->nthread_list; i++) {
        const crec_thread_info *t = &s->thread_list[i];
        char parent[16] = "-";
        if (t->parent)
            snprintf(parent, sizeof parent, "%u", t->parent);
        fprintf(out, "               %6u %6s %8u %12llu %12llu %12llu %5llu %10llu  ", t->tid,
                parent, t->guest_tid, (unsigned long long)t->start, (unsigned long long)t->end,
                (unsigned long long)t->instructions, (unsigned long long)t->keyframes,
                (unsigned long long)t->stream_bytes);
        if (t->exited)
            fprintf(out, "exit %llu\n", (unsigned long long)t->status);
        else if (t->ended_program)
            fprintf(out, "ended the program\n");
        else
            fprintf(out, "ran to the end\n");
    }
}

/* How deep process i is in the tree (its parents, fork or execve). */
static size_t depth(const crec_info *s, size_t i)
{
    size_t d = 0;

    for (uint32_t p = s->processes[i].proc; d < s->nprocesses;) {
        size_t k = 0;
        while (k < s->nprocesses && s->processes[k].proc != p)
            k++;
        if (k == s->nprocesses || s->processes[k].parent == p)
            break;
        p = s->processes[k].parent;
        d++;
    }
    return d;
}

static void print_end(FILE *out, const crec_process_info *p)
{
    char buf[48];

    if (!p->ended)
        snprintf(buf, sizeof buf, "cut short");
    else if (p->exit_how == CREC_EXIT_EXEC)
        snprintf(buf, sizeof buf, "execve -> %llu", (unsigned long long)p->exit_value);
    else if (p->exit_how == CREC_EXIT_SIGNAL)
        snprintf(buf, sizeof buf, "SIG%s",
                 sigabbrev_np((int)p->exit_value) ? sigabbrev_np((int)p->exit_value) : "?");
    else if (p->exit_how == CREC_EXIT_STOPPED)
        snprintf(buf, sizeof buf, "stopped");
    else
        snprintf(buf, sizeof buf, "exit %llu", (unsigned long long)p->exit_value);
    fprintf(out, "  %-14s", buf);
}

static void print_process(FILE *out, const crec_info *s, size_t i)
{
    const crec_process_info *p = &s->processes[i];
    char parent[16] = "-";

    if (p->how != CREC_PROCESS_ROOT)
        snprintf(parent, sizeof parent, "%s%u", p->how == CREC_PROCESS_EXEC ? "x" : "",
                 p->parent);
    fprintf(out, "               %7u %8u %8s %12llu", p->proc, p->pid, parent,
            (unsigned long long)p->instructions);
    print_end(out, p);
    fprintf(out, " %*s", (int)(2 * depth(s, i)), "");
    for (size_t k = 0; k < p->argc; k++)
        print_arg(out, p->argv[k]);
    fputc('\n', out);
}

/* Process i, then the processes that came from it, depth first. */
static void print_subtree(FILE *out, const crec_info *s, size_t i, size_t level)
{
    print_process(out, s, i);
    if (level > s->nprocesses)
        return;
    for (size_t k = 0; k < s->nprocesses; k++)
        if (k != i && s->processes[k].parent == s->processes[i].proc &&
            s->processes[k].how != CREC_PROCESS_ROOT)
            print_subtree(out, s, k, level + 1);
}

/* Every process, as a tree: a child under the process it came from (by
 * fork, or execve: the same pid going on as a new program, "x" in the
 * parent column). */
static void print_processes(FILE *out, const crec_info *s)
{
    fprintf(out, "processes:     %zu (each one program of one pid: execve goes on as a new "
                 "process)\n", s->nprocesses);
    fprintf(out, "               %7s %8s %8s %12s  %-14s %s\n", "process", "pid", "parent",
            "instr", "end", "command");
    for (size_t i = 0; i < s->nprocesses; i++) {
        const crec_process_info *p = &s->processes[i];
        int orphan = p->how != CREC_PROCESS_ROOT;
        for (size_t k = 0; k < s->nprocesses && orphan; k++)
            orphan = k == i || s->processes[k].proc != p->parent;
        if (p->how == CREC_PROCESS_ROOT || orphan) /* a parent not in the file: at the top */
            print_subtree(out, s, i, 0);
    }
}

/* A crash: the signal, the faulting instruction and address, and where
 * to look next. */
static void print_crash(FILE *out, const char *name)
{
    crec_recording *rec = NULL;
    crec_symbol s;
    crec_crash c;
    crec_end e;
    char where[300] = "", thread[32] = "";
    const char *sig;

    if (crec_open(name, 0, &rec, NULL) != CREC_OK || crec_crash_info(rec, &c, NULL) != CREC_OK) {
        crec_close(rec);
        return;
    }
    sig = sigabbrev_np(c.signo);
    if (crec_symbolize(rec, c.rip, &s, NULL) == CREC_OK && s.name)
        snprintf(where, sizeof where, s.offset ? " %s+0x%llx" : " %s", s.name,
                 (unsigned long long)s.offset);
    if (crec_threads(rec) > 1 && crec_ending(rec, &e, NULL) == CREC_OK)
        snprintf(thread, sizeof thread, " in thread %u", e.tid);
    fprintf(out, "crash:         SIG%s at instruction %llu%s, 0x%llx%s: %s\n", sig ? sig : "?",
            (unsigned long long)c.t, thread, (unsigned long long)c.rip, where, c.insn);
    if (c.has_addr)
        fprintf(out, "               faulting address 0x%llx\n", (unsigned long long)c.addr);
    fprintf(out, "               'crec backtrace %s' shows how it got there\n", name);
    crec_close(rec);
}

/* "LABEL N (every E UNIT)", or with E 0 (format 4) where the recorder
 * placed them by what they cost. */
static void print_placed(FILE *out, const char *label, uint64_t n, uint64_t every,
                         const char *unit)
{
    if (every)
        fprintf(out, "%s %llu (every %llu %s)\n", label, (unsigned long long)n,
                (unsigned long long)every, unit);
    else
        fprintf(out, "%s %llu (where they cost little)\n", label, (unsigned long long)n);
}

static void print_text(FILE *out, const char *name, const crec_info *s)
{
    print_header(out, name, s);
    print_placed(out, "key frames:   ", s->keyframes, s->keyframe_interval, "instructions");
    if (s->format_version >= 4)
        print_placed(out, "check points: ", s->checkpoints, s->checkpoint_interval,
                     "instructions");
    print_placed(out, "snapshots:    ", s->snapshots, s->snapshot_interval, "key frames");
    if (s->format_version >= 2) {
        fprintf(out, "schedule:      time slices of %llu instructions, %llu CPU%s shown",
                (unsigned long long)s->time_slice, (unsigned long long)s->cpus,
                s->cpus == 1 ? "" : "s");
        if (s->chaos)
            fprintf(out, ", chaos seed %llu", (unsigned long long)s->chaos_seed);
        fputc('\n', out);
    }
    if (s->nprocesses > 1) {
        print_processes(out, s);
        fprintf(out, "process 0:     the program crec started, as the lines below describe\n");
    }
    fprintf(out, "threads:       %llu\n", (unsigned long long)s->threads);
    if (s->nthread_list > 1)
        print_threads(out, s);
    fprintf(out, "instructions:  %llu\n", (unsigned long long)s->instructions);
    print_flight(out, s);
    if (s->exited && s->exit_how == CREC_EXIT_ENDED)
        fprintf(out, "exit:          %s\n", exit_text(s->exit_how));
    else if (s->exited)
        fprintf(out, "exit:          %s %llu\n", exit_text(s->exit_how),
                (unsigned long long)s->exit_value);
    if (s->nprocesses > 1)
        fprintf(out, "all processes: %llu instructions\n",
                (unsigned long long)all_instructions(s));
    if (s->exited && s->exit_how == CREC_EXIT_SIGNAL && strcmp(name, "-") != 0)
        print_crash(out, name);
    fprintf(out, "records:       %llu events, %llu code mappings, %llu symbols, %llu blobs\n",
            (unsigned long long)s->events, (unsigned long long)s->code_mappings,
            (unsigned long long)s->symbols, (unsigned long long)s->blobs);
    fprintf(out, "chunks:        %llu in %zu streams%s\n", (unsigned long long)s->chunks,
            s->nstreams, s->nprocesses > 1 ? " (of the first process, and shared; the "
                                             "chunks and totals are of all)" : "");
    fprintf(out, "streams:       %-10s %8s %8s %14s %14s\n", "type", "thread", "chunks", "raw",
            "compressed");
    for (size_t i = 0; i < s->nstreams; i++) {
        const crec_stream_info *si = &s->streams[i];
        fprintf(out, "               %-10s %8u %8llu %14llu %14llu\n", si->type, si->tid,
                (unsigned long long)si->chunks, (unsigned long long)si->raw_bytes,
                (unsigned long long)si->compressed_bytes);
    }
    fprintf(out, "total:         %llu bytes raw, %llu compressed\n",
            (unsigned long long)s->raw_bytes, (unsigned long long)s->compressed_bytes);
    fprintf(out, "bits/instr:    %.3f\n", bits_per_instr(s));
    if (s->truncated)
        fprintf(out, "truncated:     yes, valid data ends at byte %llu (%s)\n",
                (unsigned long long)s->truncated_at, s->truncated_why);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_strings(FILE *out, char *const *v, size_t n)
{
    fputc('[', out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", out);
        cli_json_str(out, v[i]);
    }
    fputc(']', out);
}

static void json_u64(FILE *out, const char *key, uint64_t v)
{
    fprintf(out, "  \"%s\": %llu,\n", key, (unsigned long long)v);
}

static void json_header(FILE *out, const char *name, const crec_info *h)
{
    fputs("{\n  \"file\": ", out);
    cli_json_str(out, name);
    fprintf(out, ",\n  \"format_version\": %u,\n  \"crec_version\": ", h->format_version);
    cli_json_str(out, h->crec_version);
    fprintf(out, ",\n  \"arch\": \"x86-64\",\n  \"host_byte_order\": \"%s\",\n",
            h->big_endian_host ? "big" : "little");
    json_u64(out, "page_size", h->page_size);
    json_u64(out, "cache_entries", h->cache_entries);
    json_u64(out, "cache_granule", h->cache_granule);
    json_u64(out, "keyframe_interval", h->keyframe_interval);
    json_u64(out, "snapshot_interval", h->snapshot_interval);
    if (h->format_version >= 4)
        json_u64(out, "checkpoint_interval", h->checkpoint_interval);
    fprintf(out, "  \"start_time\": %lld.%09u,\n", (long long)h->start_sec, h->start_nsec);
    fputs("  \"argv\": ", out);
    json_strings(out, h->argv, h->argc);
    fputs(",\n  \"env\": ", out);
    json_strings(out, h->envp, h->envc);
    fputs(",\n  \"cpuid\": [", out);
    for (size_t i = 0; i < h->ncpuid; i++) {
        const crec_cpuid_leaf *c = &h->cpuid[i];
        fprintf(out, "%s[%u, %u, %u, %u, %u, %u]", i ? ", " : "", c->leaf, c->subleaf, c->eax,
                c->ebx, c->ecx, c->edx);
    }
    fputs("],\n", out);
}

static void json_flight(FILE *out, const crec_info *s)
{
    json_u64(out, "recorded_from", s->recorded_from);
    if (s->ring)
        fprintf(out, "  \"ring\": {\"size\": %llu, \"dropped_segments\": %llu, "
                "\"dropped_bytes\": %llu, \"rotations\": %llu},\n",
                (unsigned long long)s->ring_size, (unsigned long long)s->ring_dropped_segments,
                (unsigned long long)s->ring_dropped_bytes, (unsigned long long)s->ring_rotations);
    fputs("  \"gaps\": [", out);
    for (size_t i = 0; i < s->ngaps; i++)
        fprintf(out, "%s{\"from\": %llu, \"to\": %llu, \"why\": \"%s\"}", i ? ", " : "",
                (unsigned long long)s->gaps[i].from, (unsigned long long)s->gaps[i].to,
                s->gaps[i].why == CREC_GAP_BEFORE_START ? "before start" : "stopped");
    fputs("],\n", out);
    if (s->stop_why) {
        fprintf(out, "  \"ended\": {\"at\": %llu, \"why\": ", (unsigned long long)s->stop_at);
        cli_json_str(out, stop_text(s->stop_why));
        if (s->stop_why == CREC_STOP_DUMP)
            fprintf(out, ", \"dump\": %llu", (unsigned long long)s->dump_number);
        if (s->program_ended)
            fprintf(out, ", \"program_end\": %llu, \"program_%s\": %llu",
                    (unsigned long long)s->program_end,
                    s->program_how == CREC_EXIT_SIGNAL ? "signal" : "status",
                    (unsigned long long)s->program_value);
        fputs("},\n", out);
    }
}

static void print_json(FILE *out, const char *name, const crec_info *s)
{
    json_header(out, name, s);
    json_u64(out, "file_bytes", s->file_bytes);
    if (s->format_version >= 2) {
        json_u64(out, "time_slice", s->time_slice);
        json_u64(out, "cpus", s->cpus);
        if (s->chaos)
            json_u64(out, "chaos_seed", s->chaos_seed);
    }
    json_u64(out, "threads", s->threads);
    if (s->nthread_list > 1) {
        fputs("  \"thread_list\": [", out);
        for (size_t i = 0; i < s->nthread_list; i++) {
            const crec_thread_info *t = &s->thread_list[i];
            fprintf(out, "%s\n    {\"thread\": %u, \"parent\": %u, \"tid\": %u, \"from\": %llu, "
                         "\"to\": %llu, \"instructions\": %llu, \"keyframes\": %llu, "
                         "\"stream_bytes\": %llu, \"ended_program\": %s, \"exited\": %s",
                    i ? "," : "", t->tid, t->parent, t->guest_tid, (unsigned long long)t->start,
                    (unsigned long long)t->end, (unsigned long long)t->instructions,
                    (unsigned long long)t->keyframes, (unsigned long long)t->stream_bytes,
                    t->ended_program ? "true" : "false", t->exited ? "true" : "false");
            if (t->exited)
                fprintf(out, ", \"status\": %llu", (unsigned long long)t->status);
            fputc('}', out);
        }
        fputs("\n  ],\n", out);
    }
    json_u64(out, "instructions", s->instructions);
    if (s->nprocesses > 1) {
        fputs("  \"processes\": [", out);
        for (size_t i = 0; i < s->nprocesses; i++) {
            const crec_process_info *p = &s->processes[i];
            static const char *const start[] = {"root", "fork", "execve"};
            fprintf(out, "%s\n    {\"process\": %u, \"pid\": %u, \"ppid\": %u, \"image\": %u, "
                         "\"start\": \"%s\", \"parent\": %u, \"parent_thread\": %u, "
                         "\"parent_instruction\": %llu, \"instructions\": %llu, \"path\": ",
                    i ? "," : "", p->proc, p->pid, p->ppid, p->image,
                    p->how >= 0 && p->how <= 2 ? start[p->how] : "?", p->parent, p->parent_tid,
                    (unsigned long long)p->parent_icount, (unsigned long long)p->instructions);
            cli_json_str(out, p->path);
            fputs(", \"argv\": ", out);
            json_strings(out, p->argv, p->argc);
            if (p->ended)
                fprintf(out, ", \"end\": {\"how\": \"%s\", \"value\": %llu}}",
                        p->exit_how == CREC_EXIT_SIGNAL    ? "signal"
                        : p->exit_how == CREC_EXIT_STOPPED ? "stopped"
                        : p->exit_how == CREC_EXIT_EXEC    ? "execve"
                                                           : "status",
                        (unsigned long long)p->exit_value);
            else
                fputs(", \"end\": null}", out);
        }
        fputs("\n  ],\n", out);
    }
    json_u64(out, "keyframes", s->keyframes);
    json_u64(out, "snapshots", s->snapshots);
    if (s->format_version >= 4)
        json_u64(out, "checkpoints", s->checkpoints);
    json_u64(out, "events", s->events);
    json_u64(out, "code_mappings", s->code_mappings);
    json_u64(out, "symbols", s->symbols);
    json_u64(out, "blobs", s->blobs);
    json_u64(out, "chunks", s->chunks);
    json_u64(out, "raw_bytes", s->raw_bytes);
    json_u64(out, "compressed_bytes", s->compressed_bytes);
    fprintf(out, "  \"bits_per_instruction\": %.3f,\n", bits_per_instr(s));
    if (s->exited)
        fprintf(out, "  \"exit\": {\"how\": \"%s\", \"value\": %llu},\n",
                s->exit_how == CREC_EXIT_SIGNAL    ? "signal"
                : s->exit_how == CREC_EXIT_STOPPED ? "stopped"
                : s->exit_how == CREC_EXIT_ENDED   ? "ended"
                                                   : "status",
                (unsigned long long)s->exit_value);
    if (s->format_version >= 3)
        json_flight(out, s);
    fputs("  \"streams\": [", out);
    for (size_t i = 0; i < s->nstreams; i++) {
        const crec_stream_info *si = &s->streams[i];
        fprintf(out,
                "%s\n    {\"type\": \"%s\", \"thread\": %u, \"chunks\": %llu, \"raw_bytes\": "
                "%llu, \"compressed_bytes\": %llu}",
                i ? "," : "", si->type, si->tid, (unsigned long long)si->chunks,
                (unsigned long long)si->raw_bytes, (unsigned long long)si->compressed_bytes);
    }
    fputs("\n  ],\n  \"truncated\": ", out);
    if (s->truncated) {
        fprintf(out, "{\"at\": %llu, \"why\": ", (unsigned long long)s->truncated_at);
        cli_json_str(out, s->truncated_why);
        fputs("}\n}\n", out);
    } else {
        fputs("false\n}\n", out);
    }
}

/* ---- main ----------------------------------------------------------------- */

int cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return EXIT_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return cli_usage_error("info", "unknown option '%s'", argv[i]);
        } else if (path) {
            return cli_usage_error("info", "more than one FILE");
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return cli_usage_error("info", "missing FILE");
    const char *name = strcmp(path, "-") == 0 ? "<stdin>" : path;
    crec_error e = {0};
    crec_info *info;
    if (crec_info_read(path, &info, &e) != CREC_OK)
        return cli_fail_file(name, &e);
    if (json)
        print_json(stdout, name, info);
    else
        print_text(stdout, name, info);
    crec_info_free(info);
    if (fflush(stdout) != 0)
        return cli_fail(EXIT_FAIL, "write error on standard output");
    return EXIT_OK;
}
