#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""GEMM side by side: `vkvit bench gemm` against torch.matmul on the same shapes, alternating rounds.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/bench_gemm.py        # CPU PyTorch
    python3 tools/bench_gemm.py --torch-device cuda --shape 4096x4096x4096 --shape 201x1152x384

Y = X W^T (nn.Linear layout): X [M, K], W [N, K], 2*M*N*K FLOP. Each round runs `vkvit bench gemm --json` (median
of --repeat, GPU timestamps) and then torch.matmul (median of --repeat wall times, synchronised) in fp32, and on
cuda also in fp16 (with TF32 off for the fp32 figure, so it is the same arithmetic), against vkvit's fp16-math GEMM
(cooperative matrices where the device uses them: the report says which). Reports per shape the median
and best GFLOP/s over the rounds and the ratio vkvit / PyTorch. Default shapes: 1024^3 and ViT-5-S's
(201x1152x384, 201x384x1536, 201x1536x384); 4096^3 on cuda.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_common as bc  # noqa: E402  (before torch: it sets PyTorch's OpenMP wait policy)
import torch  # noqa: E402

CPU_SHAPES = ["1024x1024x1024", "201x1152x384", "201x384x1536", "201x1536x384"]
GPU_SHAPES = ["4096x4096x4096"] + CPU_SHAPES


COOPMAT_SEEN = {}  # shape -> whether vkvit's fp16-math GEMM ran on cooperative matrices


def vkvit_gemm(args, shape: str, precision: str = "fp32", vkvit: str = None) -> float:
    """GFLOP/s at the median of one `vkvit bench gemm` call (of --vkvit, or of the CLI given)."""
    cmd = [vkvit or args.vkvit, "bench", "gemm", "--shape", shape, "--repeat", str(args.repeat), "--warmup", str(args.warmup),
           "--precision", precision, "--json"] + (["--device", args.device] if args.device else [])
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    row = json.loads(res.stdout.strip().splitlines()[-1])
    if precision == "fp16-math":
        COOPMAT_SEEN[shape] = bool(row.get("cooperative_matrix"))
    return row["gflops"]


def torch_gemm(args, shape: str, dtype) -> float:
    M, N, K = (int(v) for v in shape.split("x"))
    dev = torch.device(args.torch_device)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(M, K, generator=g).to(dev, dtype)
    w = torch.randn(N, K, generator=g).to(dev, dtype)
    sync = (lambda: torch.cuda.synchronize()) if dev.type == "cuda" else (lambda: None)
    ms = bc.time_ms(lambda: torch.matmul(x, w.t()), args.warmup, args.repeat, sync)
    return 2.0 * M * N * K / (ms * 1e6)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", help="MxNxK (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="PyTorch CPU threads")
    ap.add_argument("--torch-device", default="cpu")
    ap.add_argument("--vkvit", default=os.path.join(HERE, "..", "build", "vkvit"))
    ap.add_argument("--vkvit-also", action="append", default=[], metavar="LABEL=CLI",
                    help="another vkvit CLI timed in the same rounds (repeatable), e.g. another build, or "
                         "mesa26=lab/debian13_vkvit.sh for Mesa 26's lavapipe")
    ap.add_argument("--device", default=None, help="vkvit device (index or name substring)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    others = bc.parse_also(args.vkvit_also)
    torch.set_num_threads(args.threads)
    cuda = args.torch_device.startswith("cuda")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
    shapes = args.shape or (GPU_SHAPES if cuda else CPU_SHAPES)

    rows = []
    for shape in shapes:
        runners = {"vkvit fp32": lambda: vkvit_gemm(args, shape),
                   "torch fp32": lambda: torch_gemm(args, shape, torch.float32)}
        for label, cli in others.items():
            runners[f"vkvit[{label}] fp32"] = lambda cli=cli: vkvit_gemm(args, shape, vkvit=cli)
        if cuda:  # fp16 against fp16: vkvit's fp16-math GEMM (cooperative matrices where in use) and torch's
            runners["vkvit fp16-math"] = lambda: vkvit_gemm(args, shape, "fp16-math")
            runners["torch fp16"] = lambda: torch_gemm(args, shape, torch.float16)
        samples = bc.alternate(runners, args.rounds)
        row = {"shape": shape}
        for name, values in samples.items():
            row[name] = {"median_gflops": statistics.median(values), "best_gflops": max(values),
                         "rounds": [round(v, 2) for v in values]}
        row["ratio_vkvit_over_torch_fp32"] = row["vkvit fp32"]["median_gflops"] / row["torch fp32"]["median_gflops"]
        for label in others:
            row[f"ratio_{label}_over_torch_fp32"] = (row[f"vkvit[{label}] fp32"]["median_gflops"] /
                                                     row["torch fp32"]["median_gflops"])
            row[f"ratio_{label}_over_vkvit_fp32"] = (row[f"vkvit[{label}] fp32"]["median_gflops"] /
                                                     row["vkvit fp32"]["median_gflops"])
        if cuda:
            row["ratio_vkvit_f16_over_torch_f16"] = (row["vkvit fp16-math"]["median_gflops"] /
                                                     row["torch fp16"]["median_gflops"])
            row["vkvit_cooperative_matrix"] = COOPMAT_SEEN.get(shape)
        rows.append(row)

    report = {"torch_device": args.torch_device, "rounds": args.rounds, "repeat": args.repeat, "shapes": rows,
              "vkvit_also": others}
    if not cuda:
        report["blas"] = bc.blas_info()
    else:
        report["torch_gpu"] = torch.cuda.get_device_name()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"GEMM Y = X W^T, {args.rounds} alternating rounds of {args.repeat}; PyTorch on {args.torch_device}" +
          (f", {bc.blas_line(report['blas'])}" if "blas" in report else f", {report['torch_gpu']}"))
    names = [k for k in rows[0] if k != "shape" and not k.startswith("ratio_") and k != "vkvit_cooperative_matrix"]
    print(f"  {'M x N x K':>16} " + " ".join(f"{n + ' GFLOP/s':>22}" for n in names) + "   vkvit/torch fp32")
    for r in rows:
        cells = " ".join(f"{r[n]['median_gflops']:>10.1f} (best {r[n]['best_gflops']:>6.1f})" for n in names)
        f16 = (f"   fp16: {r['ratio_vkvit_f16_over_torch_f16']:.2f}x"
               f" ({'cooperative matrices' if r['vkvit_cooperative_matrix'] else 'tiled kernel'})"
               if "ratio_vkvit_f16_over_torch_f16" in r else "")
        also = "".join(f"   {label}: {r[f'ratio_{label}_over_torch_fp32']:.2f}x of torch, "
                       f"{r[f'ratio_{label}_over_vkvit_fp32']:.2f}x of vkvit" for label in others)
        print(f"  {r['shape']:>16} {cells}   {r['ratio_vkvit_over_torch_fp32']:.2f}x{f16}{also}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
