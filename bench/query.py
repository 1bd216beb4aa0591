#!/usr/bin/env python3
"""Query latency for make bench: cold and warm `crec query` on one recording.

usage: query.py --crec CREC --recording FILE --program PROG --strace LOG
                [--record-seconds S] [--seed N] [--cold N] [--cold-budget S]
                [--warm N] [--warm-budget S]  > query.json

The queries are drawn with a fixed seed, so every run asks the same ones
of the same recording:
  stack     the stack pointer at one of three random times (a register
            query), plus 0..2047 bytes, 8-aligned;
  heap      a random 8-aligned address in the brk heap or an anonymous
            writable mmap, as the recorder's --strace log shows them;
  global    a random 8-aligned address in the program's .data or .bss;
  register  a random general-purpose or SSE register;
each at a random instruction count (T uniform over the recording).

First: one memory query (a global, else a heap address, drawn with seed
N + 1 so that the other draws stay the same) run before any other query
of the recording, right after `crec record` finished, with whatever index
the recorder left: what a user's first query after a recording costs.
Cold: the index FILE.idx is removed before each query, so the query
builds it (which is what a user's first query pays).  Warm: the index is
built and the file is in the OS cache (one untimed query first); every
query is its own `crec query` process, as a user or script would run it.
Each phase stops when its budget (seconds) is spent; a query still running
then is killed and counted as timed out.  The JSON says how many ran.
"""
import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time

# crec loads a PIE at this address (docs/EMU.md).
PIE_BASE = 0x555555554000
REGISTERS = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
             "r10", "r11", "r12", "r13", "r14", "r15", "rip", "rflags", "xmm0", "xmm1"]
KINDS = ["stack", "heap", "global", "register"]
PROT_WRITE, MAP_ANONYMOUS = 0x2, 0x20


def crec_json(crec, *args):
    out = subprocess.run([crec, *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def heap_regions(strace_path):
    """(start, length) of the brk heap and of anonymous writable mmaps."""
    brks, regions = [], []
    mmap_re = re.compile(r"^mmap\((\S+), (0x[0-9a-f]+|\d+), (0x[0-9a-f]+|\d+), "
                         r"(0x[0-9a-f]+|\d+), (-?\d+), \S+\) = (0x[0-9a-f]+)$")
    with open(strace_path, errors="replace") as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^brk\(\S+\) = (0x[0-9a-f]+)$", line)
            if m:
                brks.append(int(m.group(1), 16))
                continue
            m = mmap_re.match(line)
            if m and int(m.group(3), 0) & PROT_WRITE and int(m.group(4), 0) & MAP_ANONYMOUS:
                regions.append((int(m.group(6), 16), int(m.group(2), 0)))
    if brks and max(brks) > min(brks):
        regions.append((min(brks), max(brks) - min(brks)))
    return regions


def global_regions(program):
    """(start, length) of the program's .data and .bss, as crec loads it."""
    header = subprocess.run(["readelf", "-hW", program], check=True,
                            capture_output=True, text=True).stdout
    base = PIE_BASE if re.search(r"Type:\s+DYN", header) else 0
    sections = subprocess.run(["readelf", "-SW", program], check=True,
                              capture_output=True, text=True).stdout
    regions = []
    for m in re.finditer(r"\]\s+(\.data|\.bss)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)",
                         sections):
        regions.append((base + int(m.group(2), 16), int(m.group(3), 16)))
    return [r for r in regions if r[1] >= 8]


def stack_pointers(crec, recording, rng, instructions):
    times = [rng.randrange(1, instructions) for _ in range(3)]
    answers = crec_json(crec, "query", "--json", recording, *[f"rsp@{t}" for t in times])
    return [int(a["value"], 16) for a in answers]


def address_in(rng, regions):
    start, length = rng.choice(regions)
    return start + 8 * rng.randrange(0, length // 8)


def draw(rng, kind, candidates, instructions):
    """One query of KIND at a random time, as crec query's WHAT@WHEN."""
    t = rng.randrange(1, instructions)
    if kind == "register":
        return f"{rng.choice(REGISTERS)}@{t}"
    if kind == "stack":
        return f"0x{rng.choice(candidates['stack']) + 8 * rng.randrange(0, 256):x}@{t}"
    return f"0x{address_in(rng, candidates[kind]):x}@{t}"


def draw_queries(rng, n, kinds, candidates, instructions):
    return [(kinds[i % len(kinds)], draw(rng, kinds[i % len(kinds)], candidates, instructions))
            for i in range(n)]


def run_query(crec, recording, query, timeout):
    """Time one `crec query` process: (seconds, status, path)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([crec, "query", "--json", recording, query],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.monotonic() - t0, "timed out", None
    secs = time.monotonic() - t0
    if p.returncode != 0:
        return secs, "error: " + (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1], None
    return secs, "ok", json.loads(p.stdout)[0]["path"]


def stats(seconds):
    """Median and p99 (nearest rank: the largest when there are under 100)."""
    if not seconds:
        return {"n": 0}
    s = sorted(seconds)
    return {"n": len(s), "median_s": statistics.median(s),
            "p99_s": s[max(0, math.ceil(0.99 * len(s)) - 1)], "min_s": s[0], "max_s": s[-1]}


def first_phase(args, rng, candidates, instructions, idx):
    """The first query after the recording, before anything else has read
    it or built its index."""
    kind = "global" if candidates.get("global") else "heap"
    if not candidates.get(kind):
        return {"skipped": "no global or heap address to ask for"}
    q = draw(rng, kind, candidates, instructions)
    index_before = os.path.exists(idx)
    secs, status, path = run_query(args.crec, args.recording, q, args.cold_budget)
    return {"kind": kind, "query": q, "seconds": secs, "status": status, "path": path,
            "index_before": index_before, "index_after": os.path.exists(idx),
            "budget_s": args.cold_budget}


def cold_phase(args, queries, idx):
    """Each query with the index removed first, until the budget is spent."""
    runs, start = [], time.monotonic()
    keep = idx + ".keep"
    for kind, q in queries:
        left = args.cold_budget - (time.monotonic() - start)
        if left <= 0:
            runs.append({"kind": kind, "query": q, "status": "skipped: budget spent"})
            continue
        if os.path.exists(idx):
            os.replace(idx, keep)
        secs, status, path = run_query(args.crec, args.recording, q, left)
        runs.append({"kind": kind, "query": q, "seconds": secs, "status": status, "path": path})
        if os.path.exists(idx):
            if os.path.exists(keep):
                os.remove(keep)
        elif os.path.exists(keep):
            os.replace(keep, idx)
    ok = [r["seconds"] for r in runs if r["status"] == "ok"]
    return {"planned": len(queries), "budget_s": args.cold_budget, **stats(ok), "runs": runs}


def warm_phase(args, queries, idx):
    if not os.path.exists(idx):
        return {"planned": len(queries), "budget_s": args.warm_budget, "n": 0,
                "skipped": "no index: no cold query finished within its budget", "runs": []}
    run_query(args.crec, args.recording, queries[0][1], None)  # the file into the OS cache
    runs, start = [], time.monotonic()
    for kind, q in queries:
        left = args.warm_budget - (time.monotonic() - start)
        if left <= 0:
            break
        secs, status, path = run_query(args.crec, args.recording, q, left)
        runs.append({"kind": kind, "query": q, "seconds": secs, "status": status, "path": path})
    ok = [r for r in runs if r["status"] == "ok"]
    by_kind = {k: stats([r["seconds"] for r in ok if r["kind"] == k]) for k in KINDS}
    by_path = {}
    for r in ok:
        by_path[r["path"]] = by_path.get(r["path"], 0) + 1
    return {"planned": len(queries), "budget_s": args.warm_budget,
            **stats([r["seconds"] for r in ok]), "by_kind": by_kind, "by_path": by_path,
            "errors": sum(1 for r in runs if r["status"].startswith("error")),
            "timed_out": sum(1 for r in runs if r["status"] == "timed out"), "runs": runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crec", required=True)
    ap.add_argument("--recording", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--strace", required=True)
    ap.add_argument("--record-seconds", type=float)
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--cold", type=int, default=3)
    ap.add_argument("--cold-budget", type=float, default=240)
    ap.add_argument("--warm", type=int, default=100)
    ap.add_argument("--warm-budget", type=float, default=120)
    args = ap.parse_args()

    info = crec_json(args.crec, "info", "--json", args.recording)
    n = info["instructions"]
    idx = args.recording + ".idx"
    candidates = {"heap": heap_regions(args.strace), "global": global_regions(args.program)}
    first = first_phase(args, random.Random(args.seed + 1), candidates, n, idx)
    rng = random.Random(args.seed)
    candidates["stack"] = stack_pointers(args.crec, args.recording, rng, n)
    kinds = [k for k in KINDS if k == "register" or candidates[k]]
    memory_kinds = [k for k in kinds if k != "register"]
    cold = draw_queries(rng, args.cold, memory_kinds, candidates, n)
    warm = draw_queries(rng, args.warm, kinds, candidates, n)

    doc = {"argv": info["argv"], "instructions": n, "trace_bytes": info["file_bytes"],
           "bits_per_instruction": info["bits_per_instruction"],
           "keyframe_interval": info["keyframe_interval"], "seed": args.seed,
           "record_seconds": args.record_seconds,
           "candidates": {"stack_pointers": [hex(x) for x in candidates["stack"]],
                          "heap_regions": len(candidates["heap"]),
                          "global_regions": [[hex(s), l] for s, l in candidates["global"]]}}
    doc["first"] = first
    doc["cold"] = cold_phase(args, cold, idx)
    doc["index_bytes"] = os.path.getsize(idx) if os.path.exists(idx) else None
    doc["index_fraction"] = doc["index_bytes"] / info["file_bytes"] if doc["index_bytes"] else None
    doc["warm"] = warm_phase(args, warm, idx)
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
