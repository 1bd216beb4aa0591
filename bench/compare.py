#!/usr/bin/env python3
"""Compare two bench runs: the ratios and sizes that should be compared.

usage: compare.py OLD.json NEW.json

OLD and NEW are report.json files from bench/results/runs/*/ (or
latest.json).  Absolute times from two runs on a shared machine are not
comparable; ratios measured within each run, instruction counts and sizes
are, and that is what this prints, with NEW / OLD.
"""
import json
import sys

# Figures per workload, as (label, function of the workload's entry).
FIGURES = [
    ("record / crec run", lambda w: w["ratios"].get("record / crec run")),
    ("record / native", lambda w: w["ratios"].get("record / native")),
    ("record / qemu", lambda w: w["ratios"].get("record / qemu")),
    ("replay / record", lambda w: w["ratios"].get("replay / record")),
    ("replay -j2 / record", lambda w: w["ratios"].get("replay -j2 / record")),
    ("replay / replay -j2", lambda w: w["ratios"].get("replay / replay -j2")),
    ("instructions", lambda w: w.get("instructions")),
    ("RSS record KiB", lambda w: w["modes"].get("crec-record", {}).get("max_rss_kb")),
    ("trace bytes", lambda w: int(w["recording"]["file_bytes"]) if w.get("recording") else None),
    ("bits / instruction",
     lambda w: float(w["recording"]["bits_per_instruction"]) if w.get("recording") else None),
]


def query_figures(doc):
    q = doc.get("query") or {}
    gdb = doc.get("gdb_record_full")  # a list in runs before 2026-11-23
    first = q.get("first") or {}
    return {"first query s": first.get("seconds") if first.get("status") == "ok" else None,
            "cold median s": q.get("cold", {}).get("median_s"),
            "warm median s": q.get("warm", {}).get("median_s"),
            "warm p99 s": q.get("warm", {}).get("p99_s"),
            "index / trace": q.get("index_fraction"),
            "gdb speedup": gdb.get("speedup") if isinstance(gdb, dict) else None}


def fmt(x):
    if x is None:
        return "-"
    if isinstance(x, int) or x >= 1000:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def row(label, old, new):
    change = f"{new / old:.2f}x" if old and new is not None else ""
    return f"| {label} | {fmt(old)} | {fmt(new)} | {change} |"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    old, new = (json.load(open(p)) for p in sys.argv[1:])
    print(f"Comparing {old['date']} (crec {old.get('crec_commit', '?')}) with "
          f"{new['date']} (crec {new.get('crec_commit', '?')}).\n")
    if old.get("quick") != new.get("quick"):
        print("Note: the runs differ in QUICK=1 (or one does not say): the inputs may differ.\n")
    print("| figure | old | new | new / old |\n|---|---|---|---|")
    for name in new["workloads"]:
        if name not in old["workloads"]:
            continue
        for label, get in FIGURES:
            print(row(f"{name}: {label}", get(old["workloads"][name]), get(new["workloads"][name])))
    qo, qn = query_figures(old), query_figures(new)
    for label in qn:
        print(row(label, qo[label], qn[label]))


if __name__ == "__main__":
    main()
