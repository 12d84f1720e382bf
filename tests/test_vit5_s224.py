#!/usr/bin/python3
"""ViT-5-S/16 at 224 (nvsubq and paper flavours, random weights) through `vkvit run` against PyTorch fp32:
logits within 1e-4 relative. Exit 77 (skipped) without PyTorch or without a Vulkan device."""
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

failed = 0
for flavour in ("nvsubq", "paper"):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "bench_vit5.py"), "--flavour", flavour,
                        "--rounds", "1", "--repeat", "1", "--warmup", "0", "--vkvit", BIN], capture_output=True, text=True)
    print(r.stdout, r.stderr, sep="")
    if r.returncode != 0:
        failed += 1
print(f"{2 - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
