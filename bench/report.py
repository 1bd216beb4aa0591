#!/usr/bin/env python3
"""Summarise what bench/run.sh measured: medians, ratios, tables, charts.

usage: report.py DATA_DIR RESULTS_DIR [--quick 0|1] [--rounds N] [--crec CREC]

Reads DATA_DIR/{raw,sizes,gdb,gdb_reverse,scaling,index,failures,phases,flight}.tsv and
query.json; writes RESULTS_DIR/latest.md, latest.json, latest.png (the
ratios) and latest-scaling.png, and a copy of each in
RESULTS_DIR/runs/YYYYMMDD-HHMM[-quick]/ (report.md, report.json, ratios.png,
scaling.png) so that runs can be compared (bench/compare.py).  bench/README.md explains every figure.
"""
import argparse
import csv
import datetime
import json
import os
import shlex
import shutil
import statistics
import subprocess

MODES = ["native", "qemu", "crec-run", "crec-record", "crec-replay", "crec-replay-j2"]
MODE_LABEL = {"native": "native", "qemu": "qemu", "crec-run": "crec run",
              "crec-record": "crec record", "crec-replay": "crec replay",
              "crec-replay-j2": "replay -j2"}
# Ratios of median wall times, as (label, numerator mode, denominator mode).
RATIOS = [
    ("record / crec run", "crec-record", "crec-run"),
    ("record / native", "crec-record", "native"),
    ("record / qemu", "crec-record", "qemu"),
    ("replay / record", "crec-replay", "crec-record"),
    ("replay -j2 / record", "crec-replay-j2", "crec-record"),
    ("replay / replay -j2", "crec-replay", "crec-replay-j2"),
    ("crec run / native", "crec-run", "native"),
    ("crec run / qemu", "crec-run", "qemu"),
    ("qemu / native", "qemu", "native"),
]
# The issues' targets (8, 5 and 6) for these figures.
BITS_TARGET_WORKLOADS = ["sha256sum", "sort", "lua-fannkuch"]
# Issue 20's targets: bits per instruction (median over the workloads, and
# every one), record / crec run (median, and every one), the speed-up of
# replay -j2 over replay on workloads of more than J2_MIN_INSTRUCTIONS, and
# the first query after a recording of 1e9 instructions.
BITS_MEDIAN_MAX, BITS_MAX = 0.15, 0.5
RECORD_RUN_MEDIAN_MAX, RECORD_RUN_MAX = 2.0, 2.5
J2_SPEEDUP_MIN, J2_MIN_INSTRUCTIONS = 1.7, 1e8
FIRST_QUERY_MAX_S, FIRST_QUERY_MIN_INSTRUCTIONS = 1.0, 1e9


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def read_json(path):
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    with open(path) as f:
        return json.load(f)


def median_or_none(values):
    return statistics.median(values) if values else None


# --- summaries -------------------------------------------------------------

def summarise_modes(raw_rows):
    """{workload: {mode: {median_s, min_s, max_s, runs, max_rss_kb, instructions}}}"""
    groups = {}
    for r in raw_rows:
        groups.setdefault(r["workload"], {}).setdefault(r["mode"], []).append(r)
    out = {}
    for workload, modes in groups.items():
        for mode, rows in modes.items():
            secs = [float(r["seconds"]) for r in rows]
            insns = [int(r["instructions"]) for r in rows if r["instructions"]]
            out.setdefault(workload, {})[mode] = {
                "median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs),
                "runs": len(secs),
                "max_rss_kb": median_or_none([int(r["max_rss_kb"]) for r in rows if r["max_rss_kb"]]),
                "instructions": insns[0] if insns else None}
    return out


def guest_instructions(modes):
    """The workload's instruction count: what crec run counted, else record."""
    for m in ("crec-run", "crec-record", "crec-replay"):
        if modes.get(m, {}).get("instructions"):
            return modes[m]["instructions"]
    return None


def ratios(modes):
    res = {}
    for label, num, den in RATIOS:
        if num in modes and den in modes and modes[den]["median_s"] > 0:
            res[label] = modes[num]["median_s"] / modes[den]["median_s"]
    return res


def marginal_rate(rows, recorder):
    """Steady-state instructions/s of RECORDER from its runs at two sizes:
    (difference in instructions) / (difference in median wall time)."""
    by_size = {}
    for r in rows:
        if r["recorder"] == recorder and r["instructions"]:
            by_size.setdefault(int(r["size"]), []).append(r)
    if len(by_size) < 2:
        return None
    small, big = min(by_size), max(by_size)
    i0 = int(by_size[small][0]["instructions"])
    i1 = int(by_size[big][0]["instructions"])
    t0 = statistics.median(float(r["seconds"]) for r in by_size[small])
    t1 = statistics.median(float(r["seconds"]) for r in by_size[big])
    if t1 <= t0 or i1 <= i0:
        return None
    return {"sizes": [small, big], "instructions": [i0, i1], "seconds": [t0, t1],
            "delta_instructions": i1 - i0, "delta_seconds": t1 - t0,
            "instructions_per_element": (i1 - i0) / (big - small),
            "instructions_per_second": (i1 - i0) / (t1 - t0),
            "whole_run_instructions_per_second": i1 / t1}


def summarise_gdb(rows):
    gdb = marginal_rate(rows, "gdb record full")
    crec = marginal_rate(rows, "crec record")
    res = {"runs": rows, "gdb": gdb, "crec": crec}
    if gdb and crec:
        res["speedup"] = crec["instructions_per_second"] / gdb["instructions_per_second"]
    return res


def linear_fit(xs, ys):
    """Least squares y = a + b x; also the largest relative residual."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if n < 2 or sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    worst = max(abs(y - (a + b * x)) / y for x, y in zip(xs, ys) if y > 0)
    return {"intercept": a, "slope": b, "max_relative_residual": worst}


def summarise_scaling(rows):
    """One point per input size: the median time of its rounds."""
    by_size = {}
    for r in rows:
        if r["instructions"]:
            by_size.setdefault(int(r["bytes"]), []).append(r)
    pts = [{"bytes": size, "instructions": int(rs[-1]["instructions"]),
            "seconds": statistics.median(float(r["seconds"]) for r in rs),
            "min_s": min(float(r["seconds"]) for r in rs),
            "max_s": max(float(r["seconds"]) for r in rs), "runs": len(rs),
            "trace_bytes": int(rs[-1]["trace_bytes"])} for size, rs in sorted(by_size.items())]
    res = {"points": pts}
    if len(pts) >= 2:
        xs = [p["instructions"] for p in pts]
        res["time_fit"] = linear_fit(xs, [p["seconds"] for p in pts])
        res["size_fit"] = linear_fit(xs, [p["trace_bytes"] for p in pts])
    return res


# --- markdown --------------------------------------------------------------

def fmt_s(x):
    if x is None:
        return ""
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def fmt_bytes(x):
    if x is None:
        return ""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if x >= size:
            return f"{x / size:.1f} {unit}"
    return f"{x} B"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def md_times(doc, modes):
    lines = ["## Wall time", "",
             "Median (min-max) of the rounds, in seconds; modes alternate within each round.", ""]
    rows = []
    for w, m in doc["workloads"].items():
        rows.append([w] + [f"{m['modes'][x]['median_s']:.2f} ({m['modes'][x]['min_s']:.2f}-"
                           f"{m['modes'][x]['max_s']:.2f})" if x in m["modes"] else "failed"
                           if x in m.get("failed", {}) else "" for x in modes])
    lines += table(["workload"] + [MODE_LABEL[x] for x in modes], rows)
    lines += ["", "Guest instructions and MIPS (guest instructions / median wall time, "
                  "for every mode, so native and qemu are comparable):", ""]
    rows = []
    for w, m in doc["workloads"].items():
        ins = m["instructions"]
        rows.append([w, f"{ins:,}" if ins else ""] +
                    [f"{ins / m['modes'][x]['median_s'] / 1e6:.0f}" if ins and x in m["modes"] else ""
                     for x in modes])
    lines += table(["workload", "instructions"] + [MODE_LABEL[x] for x in modes], rows)
    return lines


def md_ratios(doc):
    labels = [l for l, _, _ in RATIOS if any(l in w["ratios"] for w in doc["workloads"].values())]
    rows = [[w] + [f"{m['ratios'][l]:.1f}x" if l in m["ratios"] else "" for l in labels]
            for w, m in doc["workloads"].items()]
    return ["", "## Ratios", "", "Of median wall times, measured in this run:", ""] + \
        table(["workload"] + labels, rows)


def md_recordings(doc):
    rows = []
    for w, m in doc["workloads"].items():
        rec, idx, mo = m.get("recording"), m.get("index") or {}, m["modes"]
        if not rec:
            continue
        ib = int(idx["index_bytes"]) if idx.get("index_bytes") else None
        idx_cell = (fmt_bytes(ib) if ib else idx.get("status", "")) or ""
        rss = [f"{mo[x]['max_rss_kb'] / 1024:.0f}" if mo.get(x, {}).get("max_rss_kb") else ""
               for x in ("crec-record", "crec-replay", "crec-replay-j2")]
        rows.append([w, f"{int(rec['instructions']):,}", f"{int(rec['file_bytes']):,}",
                     f"{float(rec['bits_per_instruction']):.3f}", idx_cell,
                     f"{ib / int(rec['file_bytes']):.2f}" if ib else "",
                     f"{float(idx['seconds']):.1f}" if idx.get("status") == "built" else ""] + rss)
    return ["", "## Recordings", "",
            "Trace bytes: the .crec file.  Index: FILE.idx, built by the first memory query "
            "(smallest recording first, within the index budget).  Peak RSS in MiB.", ""] + \
        table(["workload", "instructions", "trace bytes", "bits / instruction", "index",
               "index / trace", "index build s", "RSS record", "RSS replay", "RSS replay -j2"], rows)


def bits_of(m):
    rec = m.get("recording")
    return float(rec["bits_per_instruction"]) if rec else None


def record_rss_mib(m):
    kb = m["modes"].get("crec-record", {}).get("max_rss_kb")
    return kb / 1024 if kb else None


def md_issue20(doc):
    """Per workload, the figures issue 20 sets targets for, each marked
    against its target (the median targets are in Targets)."""
    def mark(x, ok, text):
        return "" if x is None else f"{text} {'ok' if ok else '**no**'}"
    rows = []
    for w, m in doc["workloads"].items():
        b, r = bits_of(m), m["ratios"]
        rr, rp, sp = r.get("record / crec run"), r.get("replay / record"), r.get("replay / replay -j2")
        ins = m.get("instructions")
        sp_cell = mark(sp, sp is not None and sp >= J2_SPEEDUP_MIN, f"{sp:.2f}x" if sp else "")
        if sp is not None and ins is not None and ins <= J2_MIN_INSTRUCTIONS:
            sp_cell = f"{sp:.2f}x (under 1e8 instructions)"
        rss = record_rss_mib(m)
        rows.append([w, f"{ins:,}" if ins else "",
                     mark(b, b is not None and b <= BITS_MAX, f"{b:.3f}" if b is not None else ""),
                     mark(rr, rr is not None and rr <= RECORD_RUN_MAX, f"{rr:.2f}x" if rr else ""),
                     mark(rp, rp is not None and rp <= 1, f"{rp:.2f}x" if rp else ""),
                     sp_cell, f"{rss:.0f}" if rss else ""])
    return ["", "## Issue 20, per workload", "",
            f"Bits / instruction (target: at most {BITS_MAX} on every workload, median at most "
            f"{BITS_MEDIAN_MAX}); record / crec run (at most {RECORD_RUN_MAX}x, median at most "
            f"{RECORD_RUN_MEDIAN_MAX}x); replay / record (at most 1); the speed-up of replay -j2 "
            f"over replay, replay / replay -j2 (at least {J2_SPEEDUP_MIN}x on every workload of "
            f"more than 1e8 instructions); peak RSS of record in MiB (median of the rounds).", ""] + \
        table(["workload", "instructions", "bits / instruction", "record / crec run",
               "replay / record", "replay / replay -j2", "RSS record MiB"], rows)


def md_rss(doc, modes):
    rows = [[w] + [f"{m['modes'][x]['max_rss_kb'] / 1024:.0f}"
                   if m["modes"].get(x, {}).get("max_rss_kb") else "" for x in modes]
            for w, m in doc["workloads"].items()]
    return ["", "Peak memory of every mode (max RSS, MiB, median of the rounds):", ""] + \
        table(["workload"] + [MODE_LABEL[x] for x in modes], rows)


def md_query(q):
    if not q:
        return ["", "## Query latency", "", "Not measured (see Failures)."]
    lines = ["", "## Query latency", "",
             f"On `{shlex.join(q['argv'])}`: {q['instructions']:,} instructions, "
             f"trace {fmt_bytes(q['trace_bytes'])} ({q['bits_per_instruction']:.3f} bits/instruction)"
             + (f", recorded in {q['record_seconds']:.1f} s "
                f"({q['instructions'] / q['record_seconds'] / 1e6:.0f} MIPS)" if q.get("record_seconds") else "")
             + ".  Index: " + (f"{fmt_bytes(q['index_bytes'])}, {q['index_fraction']:.3f} of the trace."
                               if q.get("index_bytes") else "not built (see cold below)."),
             f"Queries drawn with seed {q['seed']}; one `crec query` process per query.", ""]
    f = q.get("first")
    if f and f.get("status"):
        lines += [f"First query after the recording (`{f['query']}`, a {f['kind']} address, before "
                  f"any other query): {fmt_s(f['seconds']) if f['status'] == 'ok' else f['status']}; "
                  f"index {'present' if f['index_before'] else 'absent'} before it, "
                  f"{'present' if f['index_after'] else 'absent'} after it.", ""]
    rows = []
    for phase in ("cold", "warm"):
        p = q[phase]
        note = ""
        if phase == "cold":
            timed = [r for r in p["runs"] if r["status"] == "timed out"]
            unrun = [r for r in p["runs"] if r["status"].startswith("skipped")]
            if timed:
                note = f"{len(timed)} timed out after {timed[0]['seconds']:.0f} s (budget {p['budget_s']:.0f} s)"
            if unrun:
                note += f"; {len(unrun)} not run: budget spent"
        elif p.get("skipped"):
            note = p["skipped"]
        elif p.get("n", 0) < p["planned"]:
            note = f"{p['n']} of {p['planned']} ran within the {p['budget_s']:.0f} s budget"
        if phase == "warm" and (p.get("errors") or p.get("timed_out")):
            note += f"; {p.get('errors', 0)} errors, {p.get('timed_out', 0)} timed out"
        rows.append([phase, p.get("n", 0), fmt_s(p.get("median_s")), fmt_s(p.get("p99_s")),
                     fmt_s(p.get("min_s")), fmt_s(p.get("max_s")), note])
    lines += table(["", "queries", "median", "p99", "min", "max", "note"], rows)
    w = q["warm"]
    if w.get("n"):
        kinds = [f"{k} {fmt_s(s['median_s'])} (n={s['n']})" for k, s in w["by_kind"].items() if s["n"]]
        paths = [f"{p} {c}" for p, c in sorted(w["by_path"].items())]
        lines += ["", "Warm median by kind: " + ", ".join(kinds) + ".  Answered by: " + ", ".join(paths) + "."]
    for phase in ("cold", "warm"):
        errs = [r for r in q[phase]["runs"] if r["status"].startswith("error")]
        if errs:
            lines += ["", f"{phase} query errors ({len(errs)}), first: `{errs[0]['query']}`: "
                          f"{errs[0]['status']}"]
    return lines


def md_gdb(g):
    lines = ["", "## gdb record full against crec record", ""]
    if not g["gdb"] or not g["crec"]:
        return lines + ["Not measured (see Failures)."]
    rows = []
    for name, r in (("gdb record full", g["gdb"]), ("crec record", g["crec"])):
        rows.append([name, f"{r['sizes'][0]:,} / {r['sizes'][1]:,}",
                     f"{r['instructions'][0]:,} / {r['instructions'][1]:,}",
                     f"{r['seconds'][0]:.2f} / {r['seconds'][1]:.2f}",
                     f"{r['instructions_per_element']:.1f}",
                     f"{r['instructions_per_second']:,.0f}",
                     f"{r['whole_run_instructions_per_second']:,.0f}"])
    lines += ["The C kernel (bench_memkernel) at two sizes each; steady rate = difference in "
              "instructions / difference in wall time (start-up cancels out).", ""]
    lines += table(["recorder", "sizes", "instructions", "seconds", "instructions / element",
                    "steady instructions / s", "whole-run instructions / s"], rows)
    lines += ["", f"crec record's steady rate is **{g['speedup']:,.0f}x** gdb record full's."]
    return lines


def md_scaling(s):
    lines = ["", "## Scaling", "", "crec record of sha256sum at four input sizes "
             "(record s: median (min-max) of the rounds):", ""]
    rows = [[f"{p['bytes']:,}", f"{p['instructions']:,}",
             f"{p['seconds']:.2f} ({p['min_s']:.2f}-{p['max_s']:.2f})",
             f"{p['seconds'] / p['instructions'] * 1e9:.1f}", f"{p['trace_bytes']:,}",
             f"{p['trace_bytes'] * 8 / p['instructions']:.3f}"] for p in s["points"]]
    lines += table(["input bytes", "instructions", "record s", "ns / instruction",
                    "trace bytes", "bits / instruction"], rows)
    t, z = s.get("time_fit"), s.get("size_fit")
    if t and z:
        lines += ["", f"Least-squares fit: record time = {t['intercept']:.2f} s + "
                      f"{t['slope'] * 1e9:.2f} ns x instructions (largest deviation "
                      f"{t['max_relative_residual'] * 100:.0f}%); trace = {fmt_bytes(max(z['intercept'], 0))} + "
                      f"{z['slope'] * 8:.3f} bits x instructions (largest deviation "
                      f"{z['max_relative_residual'] * 100:.0f}%)."]
    return lines


def md_xinsn(doc):
    """The cost of an instruction crec executes itself: vex1 and sse1 run the
    same loop of 9 instructions an iteration, one of them VEX-encoded (crec
    executes it) or its SSE form (Unicorn's TCG does)."""
    w = doc["workloads"]
    if "vex1" not in w or "sse1" not in w:
        return []
    v, s_ = w["vex1"]["modes"], w["sse1"]["modes"]
    n = (w["vex1"].get("instructions") or 0) / 9
    rows = []
    for mode in ("crec-run", "crec-record", "crec-replay"):
        if mode in v and mode in s_ and n:
            cost = (v[mode]["median_s"] - s_[mode]["median_s"]) / n * 1e9
            rows.append([MODE_LABEL[mode], f"{cost:.0f} ns"])
    if not rows:
        return []
    return ["", "## Instructions crec executes itself", "",
            "One VEX instruction an iteration (vex1) against its SSE form (sse1), same loop: "
            "(wall time difference) / iterations.", ""] + table(["mode", "per instruction"], rows)


def md_targets(doc):
    rows = []
    for w, m in doc["workloads"].items():
        r = m["ratios"]
        if "record / crec run" in r:
            rows.append([f"record within 3x of crec run ({w})", f"{r['record / crec run']:.1f}x",
                         "yes" if r["record / crec run"] <= 3 else "no"])
    for w, m in doc["workloads"].items():
        r = m["ratios"]
        if "replay / record" in r:
            rows.append([f"replay no slower than record ({w})", f"{r['replay / record']:.2f}x",
                         "yes" if r["replay / record"] <= 1 else "no"])
    for w in BITS_TARGET_WORKLOADS:
        rec = doc["workloads"].get(w, {}).get("recording")
        if rec:
            b = float(rec["bits_per_instruction"])
            rows.append([f"under 1 bit / instruction ({w})", f"{b:.3f}", "yes" if b < 1 else "no"])
    g = doc["gdb_record_full"]
    if g.get("speedup"):
        rows.append(["crec record > 1000x gdb record full", f"{g['speedup']:,.0f}x",
                     "yes" if g["speedup"] > 1000 else "no"])
    q = doc.get("query")
    if q:
        warm = q["warm"].get("median_s")
        rows.append(["warm query median under 20 ms", fmt_s(warm) if warm is not None else "not measured",
                     "" if warm is None else "yes" if warm < 0.020 else "no"])
        frac = q.get("index_fraction")
        rows.append(["index under half the trace", f"{frac:.3f}" if frac else "not built",
                     "" if not frac else "yes" if frac < 0.5 else "no"])
    return ["", "## Targets (issues 5, 6 and 8)", ""] + table(["target", "measured", "met"], rows) + \
        ["", "## Targets (issue 20)", ""] + table(["target", "measured", "met"], issue20_targets(doc))


def issue20_targets(doc):
    """One row per target of issue 20, with the figure that decides it."""
    def yes(ok):
        return "yes" if ok else "no"
    ws = doc["workloads"]
    rows = []
    def median_and_most(label, values, median_max, most, fmt):
        """Two rows: the median over the workloads, and the largest."""
        if not values:
            return
        med = statistics.median(values.values())
        worst = max(values, key=values.get)
        over = [w for w, v in values.items() if v > most]
        rows.append([f"{label}: median at most {fmt(median_max)} ({len(values)} workloads)",
                     fmt(med), yes(med <= median_max)])
        rows.append([f"{label}: at most {fmt(most)} on every workload",
                     f"largest {fmt(values[worst])} ({worst}); over: {', '.join(over) or 'none'}",
                     yes(not over)])
    median_and_most("bits / instruction",
                    {w: bits_of(m) for w, m in ws.items() if bits_of(m) is not None},
                    BITS_MEDIAN_MAX, BITS_MAX, lambda x: f"{x:.3f}")
    median_and_most("record / crec run",
                    {w: m["ratios"]["record / crec run"] for w, m in ws.items()
                     if "record / crec run" in m["ratios"]},
                    RECORD_RUN_MEDIAN_MAX, RECORD_RUN_MAX, lambda x: f"{x:.2f}x")
    rp = {w: m["ratios"]["replay / record"] for w, m in ws.items() if "replay / record" in m["ratios"]}
    if rp:
        worst = max(rp, key=rp.get)
        over = [w for w, r in rp.items() if r > 1]
        rows.append(["replay no slower than record (every workload)",
                     f"largest {rp[worst]:.2f}x ({worst}); slower: {', '.join(over) or 'none'}",
                     yes(not over)])
    sp = {w: m["ratios"]["replay / replay -j2"] for w, m in ws.items()
          if "replay / replay -j2" in m["ratios"] and (m.get("instructions") or 0) > J2_MIN_INSTRUCTIONS}
    if not sp:
        rows.append([f"replay -j2 at least {J2_SPEEDUP_MIN}x faster than replay on every "
                     "workload over 1e8 instructions", "no workload over 1e8 instructions", ""])
    else:
        least = min(sp, key=sp.get)
        under = [w for w, r in sp.items() if r < J2_SPEEDUP_MIN]
        rows.append([f"replay -j2 at least {J2_SPEEDUP_MIN}x faster than replay "
                     f"({len(sp)} workloads over 1e8 instructions)",
                     f"least {sp[least]:.2f}x ({least}); under: {', '.join(under) or 'none'}",
                     yes(not under)])
    q = doc.get("query")
    if q:
        warm = q["warm"].get("median_s")
        rows.append(["warm query median still under 20 ms",
                     fmt_s(warm) if warm is not None else "not measured",
                     "" if warm is None else yes(warm < 0.020)])
        f = q.get("first") or {}
        big = q["instructions"] >= FIRST_QUERY_MIN_INSTRUCTIONS
        label = (f"first query after a recording of {q['instructions']:.2g} instructions "
                 f"under {FIRST_QUERY_MAX_S:.0f} s" + ("" if big else " (QUICK: not 1e9 instructions)"))
        if f.get("status") == "ok":
            rows.append([label, f"{fmt_s(f['seconds'])} (index {'ready' if f['index_before'] else 'not ready'})",
                         yes(f["seconds"] < FIRST_QUERY_MAX_S) if big else ""])
        else:
            rows.append([label, f.get("status") or f.get("skipped") or "not measured", "" if not big else "no"])
    rss = {w: record_rss_mib(m) for w, m in ws.items() if "crec-record" in m["modes"]}
    missing = [w for w, r in rss.items() if not r]
    if rss:
        worst = max((w for w in rss if rss[w]), key=lambda w: rss[w], default=None)
        rows.append(["peak memory of record stated for each workload",
                     (f"largest {rss[worst]:.0f} MiB ({worst})" if worst else "") +
                     (f"; missing: {', '.join(missing)}" if missing else ""), yes(not missing)])
    return rows


def md_footer(doc):
    lines = []
    if doc["failures"]:
        lines += ["", "## Failures", ""] + table(
            ["workload", "mode", "message"],
            [[f["workload"], f["mode"], f["message"].replace("|", "\\|")] for f in doc["failures"]])
    ph = doc["phases"]
    lines += ["", "## This run", "",
              f"{'QUICK=1' if doc['quick'] else 'full'}, {doc['rounds']} round(s); crec {doc['crec_commit']}; "
              f"{doc['host']['cpus']} CPUs ({doc['host']['cpu']}); load average "
              f"{doc['host']['load_start']} at the start, {doc['host']['load_end']} at the end.", "",
              "Time spent: " + ", ".join(f"{k} {float(v):.0f} s" for k, v in ph.items()) + "."]
    return lines


def md_gdb_reverse(rows):
    lines = ["", "## crec gdb: moving in time on a long recording", ""]
    if not rows:
        return lines + ["Not measured (see Failures)."]
    lines += ["tests/guests/gdb_loop (bench/gdb_reverse.sh): gdb in batch mode against `crec gdb`, "
              "each command timed by gdb's python.  cold: the first motion of a session, from the "
              "end; warm: after one continue from the start to the end.  find: `crec find` on "
              "the same recording, against a linear `crec replay` of it.", ""]
    body = [[r["session"], r["command"], f"{float(r['seconds']):.3f} s",
             f"{int(r['from']):,}", f"{int(r['to']):,}",
             f"{abs(int(r['from']) - int(r['to'])):,}"] for r in rows]
    return lines + table(["session", "command", "wall time", "from", "to", "instructions moved"],
                         body)


def md_flight(rows):
    lines = ["", "## The flight recorder", ""]
    if not rows:
        return lines + ["Not measured (see Failures)."]
    by = {}
    for r in rows:
        by.setdefault(r["figure"], []).append(float(r["value"]))
    med = {k: statistics.median(v) for k, v in by.items()}
    lines += ["bench/flight.sh, medians: `crec record` and `crec record --ring 8M` of "
              "tests/guests/flight_static `ring` (a loop reading /dev/urandom), one after the "
              "other in each round; 200 queries at random times of a range of a recording of "
              "flight_static `phases` (key frames every 1,000,000 or 20,000,000 instructions), "
              "with the index's restart points, then after `crec keyframes --every 5000` on "
              "that range.", ""]
    body = []
    if "record-s" in med and "ring-s" in med:
        body.append(["record, whole run", fmt_s(med["record-s"]),
                     fmt_bytes(med.get("full-bytes", 0))])
        body.append(["record --ring 8M", fmt_s(med["ring-s"]),
                     f"{fmt_bytes(med.get('ring-bytes', 0))}, {med.get('rotations', 0):.0f} "
                     f"rotations in {fmt_s(med.get('rotate-s', 0))}, "
                     f"{fmt_bytes(med.get('copied-bytes', 0))} written again"])
        body.append(["ring / whole", f"{med['ring-s'] / med['record-s']:.2f}x", ""])
    for k, every in (("kf1m", "1,000,000"), ("kf20m", "20,000,000")):
        if f"{k}-query-s" in med and f"{k}-query-kf-s" in med:
            body.append([f"200 queries, key frames every {every}", fmt_s(med[f"{k}-query-s"]),
                         "the index's default restart points"])
            body.append([f"200 queries, key frames every {every}",
                         fmt_s(med[f"{k}-query-kf-s"]),
                         f"after crec keyframes ({fmt_s(med.get(f'{k}-keyframes-s', 0))})"])
            body.append(["speed-up", f"{med[f'{k}-query-s'] / med[f'{k}-query-kf-s']:.1f}x", ""])
    return lines + table(["what", "time", "notes"], body)


def markdown(doc):
    modes = [m for m in MODES if any(m in w["modes"] or m in w.get("failed", {})
                                     for w in doc["workloads"].values())]
    lines = [f"# crec benchmarks, {doc['date']}", ""]
    lines += md_times(doc, modes) + md_ratios(doc) + md_issue20(doc) + md_recordings(doc)
    lines += md_rss(doc, modes)
    lines += md_query(doc.get("query")) + md_gdb(doc["gdb_record_full"])
    lines += md_gdb_reverse(doc.get("gdb_reverse")) + md_flight(doc.get("flight"))
    lines += md_scaling(doc["scaling"]) + md_xinsn(doc) + md_targets(doc) + md_footer(doc)
    return "\n".join(lines) + "\n"


# --- charts (gnuplot) ------------------------------------------------------

def gnuplot(script, path):
    if not shutil.which("gnuplot"):
        return False
    return subprocess.run(["gnuplot"], input=script, text=True, check=False).returncode == 0 \
        and os.path.exists(path)


def ratio_chart(doc, path):
    """Four panels: slowdown against native per mode; the ratios between
    crec's modes, with issue 20's targets; bits per instruction; peak RSS
    of record."""
    ws = [w for w, m in doc["workloads"].items() if m["modes"].get("native")]
    if not ws:
        return False
    slow_modes = [m for m in MODES[1:] if any(m in doc["workloads"][w]["modes"] for w in ws)]
    labels = ["record / crec run", "record / qemu", "replay / record", "replay -j2 / record",
              "replay / replay -j2"]
    dat1, dat2, dat3 = path + ".1.dat", path + ".2.dat", path + ".3.dat"
    with open(dat1, "w") as f:
        for w in ws:
            m = doc["workloads"][w]["modes"]
            f.write(w + " " + " ".join(f"{m[x]['median_s'] / m['native']['median_s']:.4f}"
                                       if x in m else "NaN" for x in slow_modes) + "\n")
    with open(dat2, "w") as f:
        for w in ws:
            r = doc["workloads"][w]["ratios"]
            f.write(w + " " + " ".join(f"{r[l]:.4f}" if l in r else "NaN" for l in labels) + "\n")
    with open(dat3, "w") as f:
        for w in ws:
            m = doc["workloads"][w]
            b, rss = bits_of(m), record_rss_mib(m)
            f.write(f"{w} {b if b else 'NaN'} {rss if rss else 'NaN'}\n")
    plot1 = ", ".join(f"'{dat1}' using {i + 2}:xtic(1) title '{MODE_LABEL[m]}'"
                      for i, m in enumerate(slow_modes))
    plot2 = ", ".join(f"'{dat2}' using {i + 2}:xtic(1) title '{l}'" for i, l in enumerate(labels))
    script = f"""
set terminal pngcairo size 1100,1500 font ',10'
set output '{path}'
set multiplot layout 4,1 title 'crec benchmarks, {doc["date"]} (median wall times)'
set style data histograms
set style histogram clustered gap 1
set style fill solid border -1
set boxwidth 0.9
set grid ytics
set key outside right top
set xtics rotate by -30
set logscale y
set title 'slowdown against native (log scale)'
set ylabel 'x native'
plot {plot1}
set title 'ratios between crec modes (log scale; 1 = as fast), with the targets of issue 20'
set ylabel 'ratio'
set yrange [0.1:*]
plot {plot2}, 1 with lines lc 'black' dt 2 notitle, \\
     {RECORD_RUN_MAX} with lines lc 'red' dt 3 title 'record / crec run, most', \\
     {RECORD_RUN_MEDIAN_MAX} with lines lc 'red' dt 2 title 'record / crec run, median', \\
     {J2_SPEEDUP_MIN} with lines lc 'blue' dt 3 title 'replay / replay -j2, least'
set title 'bits per instruction of the recording (log scale); issue 20: at most {BITS_MAX}, median at most {BITS_MEDIAN_MAX}'
set ylabel 'bits / instruction'
set yrange [0.01:*]
plot '{dat3}' using 2:xtic(1) title 'bits / instruction', \\
     {BITS_MAX} with lines lc 'red' dt 3 title 'every workload', \\
     {BITS_MEDIAN_MAX} with lines lc 'red' dt 2 title 'median'
unset logscale y
set yrange [0:*]
set title 'peak memory of crec record (max RSS, median of the rounds)'
set ylabel 'MiB'
plot '{dat3}' using 3:xtic(1) title 'RSS of record'
unset multiplot
"""
    ok = gnuplot(script, path)
    for d in (dat1, dat2, dat3):
        os.remove(d)
    return ok


def scaling_chart(doc, path):
    s = doc["scaling"]
    if len(s["points"]) < 2 or not s.get("time_fit"):
        return False
    dat = path + ".dat"
    with open(dat, "w") as f:
        for p in s["points"]:
            f.write(f"{p['instructions'] / 1e6} {p['seconds']} {p['trace_bytes'] / 1e6}\n")
    t, z = s["time_fit"], s["size_fit"]
    xmax = max(p["instructions"] for p in s["points"]) / 1e6 * 1.05
    script = f"""
set terminal pngcairo size 900,500 font ',10'
set output '{path}'
set title 'crec record of sha256sum at four sizes: time and trace size against instructions'
set xlabel 'million guest instructions'
set ylabel 'record wall time (s)'
set y2label 'trace size (MB)'
set y2tics
set ytics nomirror
set xrange [0:{xmax}]
set yrange [0:*]
set y2range [0:*]
set key top left
set grid
plot '{dat}' using 1:2 with points pt 7 ps 1.3 lc 1 title 'record time', \\
     {t['intercept']} + {t['slope'] * 1e6} * x with lines lc 1 dt 2 title 'linear fit (time)', \\
     '{dat}' using 1:3 axes x1y2 with points pt 5 ps 1.3 lc 2 title 'trace size', \\
     {z['intercept'] / 1e6} + {z['slope']} * x axes x1y2 with lines lc 2 dt 2 title 'linear fit (size)'
"""
    ok = gnuplot(script, path)
    os.remove(dat)
    return ok


# --- main ------------------------------------------------------------------

def host_facts(data_dir):
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    start = open(os.path.join(data_dir, "loadavg.start")).read().split()[:3] \
        if os.path.exists(os.path.join(data_dir, "loadavg.start")) else ["?"]
    return {"cpus": os.cpu_count(), "cpu": cpu, "load_start": " ".join(start),
            "load_end": " ".join(open("/proc/loadavg").read().split()[:3])}


def commit_of(crec):
    """The commit crec was built from, "-dirty" when a tracked file other
    than the bench's own results differs from it."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(crec)))
    git = ["git", "-C", top]
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
    changed = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no", "--",
                                    ".", ":(exclude)bench/results"],
                             capture_output=True, text=True, check=False).stdout.strip()
    return (head + "-dirty" if changed else head) or "unknown"


def started_at(data_dir):
    """When the run began (run.sh writes it), so that a report made again
    from the same data keeps its date."""
    path = os.path.join(data_dir, "started")
    if os.path.exists(path):
        return datetime.datetime.fromtimestamp(int(open(path).read().split()[0]))
    return datetime.datetime.now()


def build_doc(data_dir, args):
    modes = summarise_modes(read_tsv(os.path.join(data_dir, "raw.tsv")))
    sizes = {r["workload"]: r for r in read_tsv(os.path.join(data_dir, "sizes.tsv"))}
    index = {r["workload"]: r for r in read_tsv(os.path.join(data_dir, "index.tsv"))}
    failures = read_tsv(os.path.join(data_dir, "failures.tsv"))
    workloads = {}
    for line in open(os.path.join(data_dir, "workloads.tsv")):
        name = line.split("\t", 1)[0]
        m = modes.get(name, {})
        workloads[name] = {"modes": m, "instructions": guest_instructions(m), "ratios": ratios(m),
                           "recording": sizes.get(name), "index": index.get(name),
                           "failed": {f["mode"]: f["message"] for f in failures
                                      if f["workload"] == name}}
    return {"date": started_at(data_dir).strftime("%Y-%m-%d %H:%M"),
            "quick": args.quick == 1, "rounds": args.rounds, "crec_commit": commit_of(args.crec),
            "host": host_facts(data_dir), "workloads": workloads,
            "gdb_record_full": summarise_gdb(read_tsv(os.path.join(data_dir, "gdb.tsv"))),
            "gdb_reverse": read_tsv(os.path.join(data_dir, "gdb_reverse.tsv")),
            "scaling": summarise_scaling(read_tsv(os.path.join(data_dir, "scaling.tsv"))),
            "query": read_json(os.path.join(data_dir, "query.json")),
            "flight": read_tsv(os.path.join(data_dir, "flight.tsv")),
            "failures": failures,
            "phases": {r["phase"]: float(r["seconds"])
                       for r in read_tsv(os.path.join(data_dir, "phases.tsv"))}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir")
    ap.add_argument("results_dir")
    ap.add_argument("--quick", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--crec", default="build/crec")
    args = ap.parse_args()
    doc = build_doc(args.data_dir, args)
    md = markdown(doc)
    run_dir = os.path.join(args.results_dir, "runs", started_at(args.data_dir).strftime("%Y%m%d-%H%M")
                           + ("-quick" if doc["quick"] else ""))
    os.makedirs(run_dir, exist_ok=True)
    for d, prefix in ((args.results_dir, "latest"), (run_dir, "report")):
        with open(os.path.join(d, prefix + ".md"), "w") as f:
            f.write(md)
        with open(os.path.join(d, prefix + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
    for name, copy, draw in (("latest.png", "ratios.png", ratio_chart),
                             ("latest-scaling.png", "scaling.png", scaling_chart)):
        path = os.path.join(args.results_dir, name)
        if draw(doc, path):
            shutil.copy(path, os.path.join(run_dir, copy))
    print(md, end="")


if __name__ == "__main__":
    main()
