#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two vkvit builds side by side: which one is faster, on a machine whose speed drifts between runs.

    python3 lab/bench_ab.py OLD/vkvit NEW/vkvit --model M.vkvit [--rounds 8] [--batch N] [--precision P]
    python3 lab/bench_ab.py OLD/vkvit NEW/vkvit --gemm [--shape MxNxK ...] [--rounds 8]

A previous build to compare with: `git worktree add /tmp/old REV && cmake -S /tmp/old -B /tmp/old/build
-DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/old/build -j2`.

Runs `vkvit bench --model M --json` (or `vkvit bench gemm --json`) with each build in turn, --rounds times,
alternating which goes first, and prints per build the median and the minimum over the rounds of the median latency
(GFLOP/s for GEMM shapes: median and maximum) and, for a model, the smallest GPU time per node kind seen (one
profiled run per round), then the ratios new / old. On a shared virtual machine a run's speed can move by 30 % or
more for seconds at a time: alternating puts both builds under the same drift, and minima (maxima) are the runs
least disturbed. Only the vkvit CLI is needed (no PyTorch).
"""

import argparse
import json
import statistics
import subprocess
import sys


def run_json(binary: str, args: list) -> list:
    """The JSON objects a `vkvit bench ... --json` run prints, one per line."""
    try:
        out = subprocess.run([binary, "bench"] + args + ["--json"], capture_output=True, text=True)
    except OSError as e:
        sys.exit(f"bench_ab: cannot run {binary}: {e.strerror}")
    if out.returncode != 0:
        sys.exit(f"bench_ab: {binary} bench {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", help="the vkvit CLI of the reference build")
    ap.add_argument("new", help="the vkvit CLI of the build under test")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--model", help="a vkvit model file: end-to-end latency")
    what.add_argument("--gemm", action="store_true", help="GEMM shapes (vkvit bench gemm)")
    ap.add_argument("--shape", action="append", default=[], help="with --gemm: MxNxK (repeatable)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per vkvit call")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--precision", default="fp32")
    args = ap.parse_args()
    if args.rounds < 1 or args.repeat < 1:
        ap.error("--rounds and --repeat must be at least 1")

    builds = {"old": args.old, "new": args.new}
    if args.gemm:
        cmd = ["gemm", "--repeat", str(args.repeat), "--precision", args.precision]
        for s in args.shape:
            cmd += ["--shape", s]
    else:
        cmd = ["--model", args.model, "--repeat", str(args.repeat), "--batch", str(args.batch),
               "--precision", args.precision]
    values = {k: {} for k in builds}    # build -> key (shape or "latency") -> list over rounds
    kinds = {k: {} for k in builds}     # build -> node kind -> smallest GPU ms
    for r in range(args.rounds):
        order = list(builds) if r % 2 == 0 else list(reversed(list(builds)))
        for k in order:
            for o in run_json(builds[k], cmd):
                if args.gemm:
                    values[k].setdefault(f"{o['M']}x{o['N']}x{o['K']}", []).append(o["gflops"])
                else:
                    values[k].setdefault("latency ms", []).append(o["p50_ms"])
                    for kind, ms in (o.get("gpu_ms_by_kind") or {}).items():
                        kinds[k][kind] = min(kinds[k].get(kind, float("inf")), ms)

    best = max if args.gemm else min
    unit = "GFLOP/s" if args.gemm else "ms"
    print(f"{args.rounds} alternating rounds of {args.repeat}; old {args.old}, new {args.new}")
    for key in values["old"]:
        o, n = values["old"][key], values["new"].get(key, [])
        if not n:
            continue
        mo, mn, bo, bn = statistics.median(o), statistics.median(n), best(o), best(n)
        print(f"  {key:18s} old median {mo:8.2f} {best.__name__} {bo:8.2f}   new median {mn:8.2f} "
              f"{best.__name__} {bn:8.2f} {unit}   new/old {mn / mo:.3f} (median) {bn / bo:.3f} ({best.__name__})")
    if kinds["old"]:
        print("  smallest GPU ms per node kind (one profiled run per round):")
        for kind, ms in kinds["old"].items():
            n = kinds["new"].get(kind)
            print(f"    {kind:16s} old {ms:8.2f}   new {n:8.2f}" if n is not None else f"    {kind:16s} old {ms:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
