#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The full-size models at 224, random weights, through `vkvit run` against PyTorch fp32 (tools/bench_vit5.py and
tools/bench_vil.py with one round): ViT-5-S/16 (nvsubq and paper flavours) and ViL-S/16 (seed and NX-AI numerics).
Each must give logits within 1e-4 relative and an activation arena of at most 3x its largest activation (issue 15's
memory target; the planner's packing is deterministic, so this is a plain check, not a benchmark). The scripts only
measure: this test reads their JSON reports and gives the verdict itself. Exit 77
(skipped) without PyTorch or without a Vulkan device."""
import json
import os
import subprocess
import sys

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: PyTorch is not importable (run with /usr/bin/python3, Debian python3-torch)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(os.environ.get("VKVIT_BINARY_DIR", os.path.join(ROOT, "build")), "vkvit")

info = subprocess.run([BIN, "info"], capture_output=True, text=True)
if info.returncode == 3:
    print("SKIP: no Vulkan device")
    sys.exit(77)

RUNS = [("bench_vit5.py", "nvsubq"), ("bench_vil.py", "seed"), ("bench_vit5.py", "paper"), ("bench_vil.py", "nxai")]
# This test's own verdict, not the scripts' exit status: the largest relative logit error (max |d| / max |want|)
# against PyTorch fp32 per precision the scripts ran, and the activation arena against its largest activation.
TOLERANCE = {"fp32": 1e-4, "fp16": 2e-2, "fp16-math": 5e-2}
MAX_ARENA_RATIO = 3.0
failed = 0
for tool, flavour in RUNS:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", tool), "--flavour", flavour, "--rounds", "1",
                        "--repeat", "1", "--warmup", "0", "--vkvit", BIN, "--json"], capture_output=True, text=True)
    name = f"{tool} --flavour {flavour}"
    try:
        results = json.loads(r.stdout)
    except ValueError:
        print(f"FAIL {name}: exit {r.returncode}, no JSON report\n{r.stdout}{r.stderr}")
        failed += 1
        continue
    runs = results.get("vkvit", {})
    problems = [] if runs else ["no vkvit precision ran"]
    for precision, v in runs.items():
        err, ratio = v["logits_max_rel_err"], v["arena_ratio"]
        print(f"{name} {precision}: logits max rel err {err:.3g} (tolerance {TOLERANCE.get(precision, 5e-2):g}), "
              f"arena {ratio:.2f}x its largest activation (at most {MAX_ARENA_RATIO:g})")
        if not err <= TOLERANCE.get(precision, 5e-2):
            problems.append(f"{precision}: logits max rel err {err:.3g}")
        if not ratio <= MAX_ARENA_RATIO:
            problems.append(f"{precision}: arena {ratio:.2f}x")
    if problems:
        print(f"FAIL {name}: " + "; ".join(problems))
        failed += 1
print(f"{len(RUNS) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
