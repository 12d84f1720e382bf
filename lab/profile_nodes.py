#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a model's GPU time goes, node by node: the GPU timestamps of a profiled session (vkvit_session_profile).

    lab/profile_nodes.py MODEL [--precision fp16-math] [--batch 1] [--runs 20] [--json]

Runs MODEL on random input --runs times (after 3 warm-up runs) in a session created with profile=True. Nodes of
the same kind at the same place in every block ("blocks.7.attn.qkv" -> "attn.qkv") are summed per run; each line
gives the minimum over the runs of that sum in microseconds, how many nodes it covers, and its share of the total.
The end of the table compares the summed GPU time with the wall time of a run of an unprofiled session of the same
model (the median of --runs): their difference is what the GPU spends between nodes (barriers, launches) and the
host spends submitting and waiting. Timestamps between nodes make the profiled session itself a little slower.

Uses python/vkvit (the library at $VKVIT_LIBRARY, else the tree's build/libvkvit.so).
"""
import argparse
import collections
import json
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402

import vkvit  # noqa: E402


def node_key(label):
    """'blocks.7.attn.qkv' -> 'attn.qkv'; labels outside the blocks stay as they are."""
    return re.sub(r"^(blocks|layers|stages\.\d+\.blocks)\.\d+\.", "", label)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "fp16-math"])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = ap.parse_args()
    if not 1 <= args.runs <= 10000 or not 1 <= args.batch <= 4096:
        ap.error("--runs 1..10000, --batch 1..4096")

    ctx = vkvit.Context()
    model = vkvit.Model(ctx, args.model)
    rng = np.random.default_rng(0)
    per_run = []            # [{key: ms}] per run
    kinds, counts = {}, {}
    with vkvit.Session(model, batch=args.batch, precision=args.precision, profile=True) as s:
        x = rng.random(s.input_shape, dtype=np.float32)
        for _ in range(3):
            s.run(x)
        for _ in range(args.runs):
            s.run(x)
            agg, n = collections.defaultdict(float), collections.Counter()
            for label, kind, ms in s.profile():
                key = node_key(label)
                agg[key] += ms
                n[key] += 1
                kinds.setdefault(key, kind)
            counts = dict(n)
            per_run.append(agg)
    with vkvit.Session(model, batch=args.batch, precision=args.precision) as s:
        x = rng.random(s.input_shape, dtype=np.float32)
        for _ in range(3):
            s.run(x)
        wall = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            s.run(x)
            wall.append((time.perf_counter() - t0) * 1e3)

    keys = list(per_run[0])
    best = {k: min(r.get(k, 0.0) for r in per_run) for k in keys}
    gpu_sum = min(sum(r.values()) for r in per_run)
    result = {
        "model": args.model, "precision": args.precision, "batch": args.batch, "runs": args.runs,
        "device": ctx.device_info().get("name", "?"),
        "nodes": [{"node": k, "kind": kinds[k], "count": counts.get(k, 0), "us": round(best[k] * 1e3, 2)}
                  for k in keys],
        "gpu_sum_ms": round(gpu_sum, 4), "wall_median_ms": round(statistics.median(wall), 4),
        "wall_min_ms": round(min(wall), 4),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"{args.model}: {args.precision}, batch {args.batch}, minimum of {args.runs} runs per node")
    print(f"{'node':32s} {'kind':12s} {'count':>5s} {'us':>10s} {'share':>6s}")
    for k in sorted(keys, key=lambda k: -best[k]):
        print(f"{k:32s} {kinds[k]:12s} {counts.get(k, 0):5d} {best[k] * 1e3:10.1f} {100 * best[k] / gpu_sum:5.1f}%")
    print(f"GPU time, nodes summed: {gpu_sum:.3f} ms; unprofiled run, wall: median {result['wall_median_ms']:.3f} ms,"
          f" minimum {result['wall_min_ms']:.3f} ms")


if __name__ == "__main__":
    main()
