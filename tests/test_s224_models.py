#!/usr/bin/python3
"""The full-size models at 224, random weights, through `vkvit run` against PyTorch fp32 (tools/bench_vit5.py and
tools/bench_vil.py with one round): ViT-5-S/16 (nvsubq and paper flavours) and ViL-S/16 (seed and NX-AI numerics).
Each must give logits within 1e-4 relative and an activation arena of at most 3x its largest activation (issue 15's
memory target; the planner's packing is deterministic, so this is a plain check, not a benchmark). Exit 77
(skipped) without PyTorch or without a Vulkan device."""
import os
import subprocess
import sys

try:
    import torch  # noqa: F401
except ImportError:
    print("SKIP: PyTorch is not importable (run with /usr/bin/python3, Debian python3-torch)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(os.environ.get("VKVIT_BINARY_DIR", os.path.join(ROOT, "build")), "vkvit")

info = subprocess.run([BIN, "info"], capture_output=True, text=True)
if info.returncode == 3:
    print("SKIP: no Vulkan device")
    sys.exit(77)

RUNS = [("bench_vit5.py", "nvsubq"), ("bench_vit5.py", "paper"), ("bench_vil.py", "seed"), ("bench_vil.py", "nxai")]
failed = 0
for tool, flavour in RUNS:
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", tool), "--flavour", flavour, "--rounds", "1",
                        "--repeat", "1", "--warmup", "0", "--max-arena-ratio", "3", "--vkvit", BIN],
                       capture_output=True, text=True)
    print(f"{tool} --flavour {flavour}: exit {r.returncode}")
    print(r.stdout, r.stderr, sep="")
    if r.returncode != 0:
        failed += 1
print(f"{len(RUNS) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
