#!/usr/bin/env python3
"""Summarise bench/run.sh's raw timings: medians, ratios, a chart.

usage: report.py RAW.tsv RESULTS_DIR [SIZES.tsv [GDB.tsv [SCALING.tsv]]]

Writes RESULTS_DIR/latest.md, latest.json and latest.png, and a dated copy
of the markdown and JSON so that runs can be compared over time.
"""
import csv
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys

# Ratios worth reading, as (label, numerator mode, denominator mode).
RATIOS = [
    ("qemu / native", "qemu", "native"),
    ("crec run / native", "crec-run", "native"),
    ("crec run / qemu", "crec-run", "qemu"),
    ("record / crec run", "crec-record", "crec-run"),
    ("record / native", "crec-record", "native"),
    ("record / qemu", "crec-record", "qemu"),
    ("replay / record", "crec-replay", "crec-record"),
    ("replay -j2 / record", "crec-replay-j2", "crec-record"),
]


def load(path):
    runs = {}
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            runs.setdefault((row["workload"], row["mode"]), []).append(row)
    return runs


def summarise(runs):
    out = {}
    for (workload, mode), rows in runs.items():
        secs = [float(r["seconds"]) for r in rows]
        rss = [int(r["max_rss_kb"]) for r in rows if r["max_rss_kb"]]
        insns = [int(r["instructions"]) for r in rows if r["instructions"]]
        med = statistics.median(secs)
        entry = {
            "median_s": med, "min_s": min(secs), "max_s": max(secs), "runs": len(secs),
            "max_rss_kb": statistics.median(rss) if rss else None,
        }
        if insns:
            entry["instructions"] = insns[0]
            entry["mips"] = insns[0] / med / 1e6 if med > 0 else None
        out.setdefault(workload, {})[mode] = entry
    return out


def ratios(modes):
    res = {}
    for label, num, den in RATIOS:
        if num in modes and den in modes and modes[den]["median_s"] > 0:
            res[label] = modes[num]["median_s"] / modes[den]["median_s"]
    return res


def load_sizes(path):
    if not path or not os.path.exists(path):
        return {}
    with open(path) as f:
        return {r["workload"]: r for r in csv.DictReader(f, delimiter="\t")}


def load_tsv(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def gdb_lines(rows, summary, sizes):
    if len(rows) < 2:
        return []
    rate = {r["recorder"]: int(r["instructions"]) / float(r["seconds"])
            for r in rows if float(r["seconds"]) > 0 and int(r["instructions"]) > 0}
    lines = ["", "Against gdb's record full (small input, instructions per second, whole run):", "",
             "| recorder | instructions | seconds | instructions / s |", "|---|---|---|---|"]
    for r in rows:
        ips = rate.get(r["recorder"])
        lines.append(f"| {r['recorder']} | {int(r['instructions']):,} | {float(r['seconds']):.2f} | "
                     + (f"{ips:,.0f}" if ips else "failed") + " |")
    if len(rate) == 2:
        lines += ["", f"On this small input crec record is {rate['crec record'] / rate['gdb record full']:,.0f}x "
                      "faster than gdb's record full (crec's time is mostly start-up here)."]
    # The same program at bench size: crec's steady recording rate.
    rec = summary.get("memkernel", {}).get("crec-record", {}).get("median_s")
    ins = int(sizes.get("memkernel", {}).get("instructions", 0) or 0)
    if rec and ins and rate.get("gdb record full"):
        steady = ins / rec
        lines += [f"At bench size (memkernel, {ins:,} instructions) crec records {steady:,.0f} "
                  f"instructions/s: {steady / rate['gdb record full']:,.0f}x gdb's rate."]
    return lines


def scaling_lines(rows):
    if not rows:
        return []
    lines = ["", "Scaling (sha256sum, crec record): is the cost linear in instructions?", "",
             "| input bytes | instructions | record s | ns / instruction | trace bytes | bits / instruction |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        ins, sec, tb = int(r["instructions"] or 0), float(r["seconds"]), int(r["trace_bytes"])
        lines.append(f"| {int(r['bytes']):,} | {ins:,} | {sec:.2f} | "
                     + (f"{sec / ins * 1e9:.1f} | {tb:,} | {tb * 8 / ins:.3f} |" if ins else "| | |"))
    return lines


def scaling_chart(rows, path):
    if not rows or not shutil.which("gnuplot"):
        return
    dat = path + ".dat"
    with open(dat, "w") as f:
        for r in rows:
            f.write(f"{int(r['instructions'] or 0) / 1e6} {r['seconds']} {int(r['trace_bytes']) / 1e6}\n")
    script = (f"set terminal pngcairo size 900,500; set output '{path}';"
              "set title 'crec record of sha256sum at four sizes';"
              "set xlabel 'million instructions'; set ylabel 'record seconds';"
              "set y2label 'trace MB'; set y2tics; set yrange [0:*]; set y2range [0:*]; set key top left; set grid;"
              f"plot '{dat}' using 1:2 with linespoints title 'record time',"
              f" '{dat}' using 1:3 axes x1y2 with linespoints title 'trace size'")
    subprocess.run(["gnuplot", "-e", script], check=False)
    os.remove(dat)


def markdown(summary, stamp, sizes, gdb=(), scaling=()):
    lines = [f"# crec benchmarks, {stamp}", "",
             "Wall time in seconds: median (min-max) of the rounds, measured in one run,",
             "modes alternating within each round.", ""]
    modes = sorted({m for w in summary.values() for m in w},
                   key=lambda m: ["native", "qemu", "crec-run", "crec-record",
                                  "crec-replay", "crec-replay-j2"].index(m)
                   if m in ["native", "qemu", "crec-run", "crec-record",
                            "crec-replay", "crec-replay-j2"] else 99)
    lines.append("| workload | " + " | ".join(modes) + " | instructions | MIPS (crec run) |")
    lines.append("|---" * (len(modes) + 3) + "|")
    for w, m in summary.items():
        cells = [f"{m[x]['median_s']:.2f} ({m[x]['min_s']:.2f}-{m[x]['max_s']:.2f})"
                 if x in m else "" for x in modes]
        cr = m.get("crec-run", {})
        ins = f"{cr['instructions']:,}" if cr.get("instructions") else ""
        mips = f"{cr['mips']:.0f}" if cr.get("mips") else ""
        lines.append(f"| {w} | " + " | ".join(cells) + f" | {ins} | {mips} |")
    labels = [l for l, _, _ in RATIOS if any(l in ratios(m) for m in summary.values())]
    lines += ["", "Ratios of median wall times:", ""]
    lines.append("| workload | " + " | ".join(labels) + " |")
    lines.append("|---" * (len(labels) + 1) + "|")
    for w, m in summary.items():
        r = ratios(m)
        lines.append(f"| {w} | " + " | ".join(f"{r[l]:.1f}x" if l in r else "" for l in labels) + " |")
    if sizes:
        lines += ["", "Recordings:", "",
                  "| workload | instructions | trace bytes | bits / instruction | record MIPS | replay MIPS |",
                  "|---|---|---|---|---|---|"]
        for w, z in sizes.items():
            m = summary.get(w, {})
            ins = int(z["instructions"])
            rec = m.get("crec-record", {}).get("median_s")
            rep = m.get("crec-replay", {}).get("median_s")
            lines.append(f"| {w} | {ins:,} | {int(z['file_bytes']):,} | {float(z['bits_per_instruction']):.3f} | "
                         + (f"{ins / rec / 1e6:.0f}" if rec else "") + " | "
                         + (f"{ins / rep / 1e6:.0f}" if rep else "") + " |")
    lines += gdb_lines(list(gdb), summary, sizes)
    lines += scaling_lines(list(scaling))
    lines += ["", "Peak memory (max RSS, MiB, median):", ""]
    lines.append("| workload | " + " | ".join(modes) + " |")
    lines.append("|---" * (len(modes) + 1) + "|")
    for w, m in summary.items():
        lines.append(f"| {w} | " + " | ".join(
            f"{m[x]['max_rss_kb'] / 1024:.0f}" if x in m and m[x]["max_rss_kb"] else ""
            for x in modes) + " |")
    return "\n".join(lines) + "\n"


def chart(summary, path):
    """Bar chart of each mode's median time relative to native, log scale."""
    if not shutil.which("gnuplot"):
        return
    modes = [m for m in ["qemu", "crec-run", "crec-record", "crec-replay"]
             if any(m in w for w in summary.values())]
    dat = path + ".dat"
    with open(dat, "w") as f:
        for w, m in summary.items():
            base = m.get("native", {}).get("median_s")
            vals = [f"{m[x]['median_s'] / base:.3f}" if base and x in m else "NaN" for x in modes]
            f.write(w + " " + " ".join(vals) + "\n")
    plot = ", ".join(f"'{dat}' using {i + 2}:xtic(1) title '{m}'" for i, m in enumerate(modes))
    script = (f"set terminal pngcairo size 900,500; set output '{path}';"
              "set title 'slowdown against native (median wall time, log scale)';"
              "set style data histograms; set style fill solid; set logscale y;"
              "set key outside right top; set ylabel 'x native'; set grid ytics;"
              f"plot {plot}")
    subprocess.run(["gnuplot", "-e", script], check=False)
    os.remove(dat)


def main():
    raw, results = sys.argv[1], sys.argv[2]
    summary = summarise(load(raw))
    sizes = load_sizes(sys.argv[3] if len(sys.argv) > 3 else None)
    gdb = load_tsv(sys.argv[4] if len(sys.argv) > 4 else None)
    scaling = load_tsv(sys.argv[5] if len(sys.argv) > 5 else None)
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    doc = {"date": stamp, "workloads": {w: {"modes": m, "ratios": ratios(m),
                                             "recording": sizes.get(w)}
                                         for w, m in summary.items()},
           "gdb_record_full": gdb, "scaling": scaling}
    os.makedirs(results, exist_ok=True)
    md = markdown(summary, stamp, sizes, gdb, scaling)
    day = datetime.datetime.now().strftime("%Y%m%d-%H%M")
    for name in ("latest", day):
        with open(os.path.join(results, name + ".md"), "w") as f:
            f.write(md)
        with open(os.path.join(results, name + ".json"), "w") as f:
            json.dump(doc, f, indent=2)
    chart(summary, os.path.join(results, "latest.png"))
    scaling_chart(scaling, os.path.join(results, "scaling.png"))
    sys.stdout.write(md)


if __name__ == "__main__":
    main()
