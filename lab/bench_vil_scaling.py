#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Vision-LSTM scaling: time per image at sequence lengths 256, 1024 and 4096 on one device, vkvit's chunked mLSTM
scan (docs/math.md 7.3, linear in S) next to the seed's quadratic PyTorch form (docs/math.md 7.1).

    /usr/bin/python3 lab/bench_vil_scaling.py                      # ViL-T width, depth 2, seed numerics
    /usr/bin/python3 lab/bench_vil_scaling.py --depth 4 --flavour nxai --json
    /usr/bin/python3 lab/bench_vil_scaling.py --lengths 256 1024 --vkvit build-vil/vkvit

For each S the image stays 128 x 128 and the patch shrinks (8, 4, 2 -> 16x16, 32x32, 64x64 tokens), so the patch
embedding costs the same everywhere and only the sequence grows. One random-weight VisionLSTM
(tools/reference/mlstm.py) per S is written as a vkvit file (tools/vkvit_file.py), then
  1. `vkvit bench --model ... --json`: median latency and GPU time per node kind (timestamp queries); the mLSTM
     kernels are the kinds mlstm_prep, mlstm_scan (the three scan phases), mlstm_norm and mlstm_out,
  2. `vkvit run` on one image, logits compared with PyTorch's (fp32, the quadratic form),
  3. PyTorch on the CPU: the whole network in the seed's quadratic form, and the quadratic scan alone
     (mlstm_parallel_seed / mlstm_parallel_official on the block's q, k, v shapes),
and prints t(S) and the growth factor t(4S)/t(S) of each; linear means ~4, quadratic ~16. The check
`t(4096)/t(1024) <= 4.5` for the mLSTM scan kernels is printed as PASS/FAIL (exit code 1 on FAIL unless
--no-check). Needs Debian's python3-torch (run with /usr/bin/python3) and a built vkvit binary.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "tools", "reference"))

import torch  # noqa: E402

import bench_common  # noqa: E402
import vkvit_file  # noqa: E402
from mlstm import VisionLSTM, mlstm_parallel_official, mlstm_parallel_seed  # noqa: E402

IMAGE = 128
PATCH_FOR_S = {256: 8, 1024: 4, 4096: 2, 16384: 1}
MLSTM_KINDS = ("mlstm_prep", "mlstm_chunk", "mlstm_carry", "mlstm_scan", "mlstm_norm", "mlstm_out")
SCAN_KINDS = ("mlstm_chunk", "mlstm_carry", "mlstm_scan")


def vil_config(S: int, dim: int, depth: int) -> dict:
    return {"image_size": [IMAGE, IMAGE], "patch_size": PATCH_FOR_S[S], "in_chans": 3, "dim": dim, "depth": depth,
            "inner_dim": math.ceil(2 * dim / 64) * 64, "num_heads": 4, "qkv_block_size": 4, "conv_kernel": 4,
            "pooling": "bilateral_avg", "norm_eps": 1e-5, "head_norm_eps": 1e-6, "num_classes": 1000}


def build(S: int, dim: int, depth: int, flavour: str, seed: int):
    cfg = vil_config(S, dim, depth)
    torch.manual_seed(seed)
    net = VisionLSTM(**{k: (tuple(v) if k == "image_size" else v) for k, v in cfg.items()}, numerics=flavour).eval()
    with torch.no_grad():  # make every term matter: position embedding, norms
        for name, p in net.named_parameters():
            if name == "pos_embed.embed":
                p.normal_(0.0, 0.02)
    meta = {"format_version": 1, "architecture": "vil", "flavour": flavour, "name": f"vil_d{dim}_depth{depth}_s{S}",
            "config": cfg, "preprocess": {"image_size": [IMAGE, IMAGE], "resize_shorter": IMAGE,
                                          "interpolation": "bicubic", "mean": [0.485, 0.456, 0.406],
                                          "std": [0.229, 0.224, 0.225]}}
    return net, meta


def time_it(fn, warmup: int, repeat: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run_vkvit(args, model_path: str, x: torch.Tensor, tmp: str):
    dev = ["--device", args.device] if args.device else []
    bench = subprocess.run([args.vkvit, "bench", "--model", model_path, "--repeat", str(args.repeat), "--warmup",
                            str(args.warmup), "--json"] + dev, capture_output=True, text=True)
    if bench.returncode != 0:
        raise RuntimeError(f"vkvit bench failed ({bench.returncode}): {bench.stderr.strip()}")
    vb = json.loads(bench.stdout)
    in_path, out_path = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
    vkvit_file.write_safetensors(in_path, {"input": x.contiguous()})
    run = subprocess.run([args.vkvit, "run", "--model", model_path, "--input", in_path, "--output", out_path] + dev,
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"vkvit run failed ({run.returncode}): {run.stderr.strip()}")
    return vb, vkvit_file.read_safetensors(out_path)[0]["logits"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lengths", type=int, nargs="+", default=[256, 1024, 4096], choices=sorted(PATCH_FOR_S))
    ap.add_argument("--dim", type=int, default=192, help="D (192 = ViL-T; E = 2D rounded to 64, 4 heads)")
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--flavour", choices=["seed", "nxai"], default="seed")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="PyTorch CPU threads")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch timings (keeps the logits check)")
    ap.add_argument("--vkvit", default=os.path.join(HERE, "..", "build", "vkvit"), help="path of the vkvit binary")
    ap.add_argument("--device", default=None, help="vkvit device (index or name substring)")
    ap.add_argument("--no-check", action="store_true", help="exit 0 even when the linearity check fails")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    rows = []
    tmp = bench_common.temp_folder("vkvit-vil-scaling-")     # removed at exit, with its models
    for S in args.lengths:
        net, meta = build(S, args.dim, args.depth, args.flavour, seed=S)
        model_path = os.path.join(tmp, f"vil_s{S}.vkvit")
        vkvit_file.write_model(model_path, {k: v.detach().float().contiguous() for k, v in net.state_dict().items()},
                               meta)
        x = torch.randn(1, IMAGE, IMAGE, 3, generator=torch.Generator().manual_seed(S))
        with torch.no_grad():
            want = net(x).float()
        vb, got = run_vkvit(args, model_path, x, tmp)
        kinds = vb["gpu_ms_by_kind"]
        row = {"S": S, "patch": PATCH_FOR_S[S], "vkvit_ms": vb["median_ms"], "vkvit_gpu_ms": vb["gpu_ms"],
               "vkvit_mlstm_ms": sum(kinds.get(k, 0.0) for k in MLSTM_KINDS),
               "vkvit_scan_ms": sum(kinds.get(k, 0.0) for k in SCAN_KINDS), "vkvit_gpu_ms_by_kind": kinds,
               "logits_max_rel_err": ((got - want).abs().max() / want.abs().max()).item()}
        if not args.no_torch:
            with torch.no_grad():
                row["torch_ms"] = time_it(lambda: net(x), args.warmup, args.repeat)
                E, NH = net.blocks[0].mlstm.inner_dim, 4
                g = torch.Generator().manual_seed(0)
                q, k, v = (torch.randn(1, NH, S, E // NH, generator=g) for _ in range(3))
                ip, fp = torch.randn(1, NH, S, generator=g), torch.randn(1, NH, S, generator=g) + 3.0
                scan = mlstm_parallel_seed if args.flavour == "seed" else mlstm_parallel_official
                row["torch_scan_ms"] = time_it(lambda: scan(q, k, v, ip, fp), args.warmup, args.repeat)
        rows.append(row)
        if not args.json:
            print(f"S={S:5d}  vkvit {row['vkvit_ms']:9.2f} ms (mLSTM kernels {row['vkvit_mlstm_ms']:8.2f}, scan "
                  f"{row['vkvit_scan_ms']:8.2f} GPU ms)" +
                  (f"   PyTorch quadratic: network {row['torch_ms']:9.2f} ms, scan {row['torch_scan_ms']:8.2f} ms"
                   if "torch_ms" in row else "") + f"   logits max rel err {row['logits_max_rel_err']:.2g}",
                  flush=True)

    growth = []
    for a, b in zip(rows, rows[1:]):
        r = {"from": a["S"], "to": b["S"]}
        for key in ("vkvit_ms", "vkvit_mlstm_ms", "vkvit_scan_ms", "torch_ms", "torch_scan_ms"):
            if key in a and a[key] > 0:
                r[key] = b[key] / a[key]
        growth.append(r)
    check = next((g for g in growth if g["from"] == 1024 and g["to"] == 4096), None)
    ok = check is None or check.get("vkvit_scan_ms", 0) <= 4.5
    result = {"device": vb["device"], "flavour": args.flavour, "dim": args.dim, "depth": args.depth,
              "torch_threads": args.threads, "rows": rows, "growth": growth,
              "linear_check": None if check is None else {"scan_t4096_over_t1024": check.get("vkvit_scan_ms"),
                                                          "limit": 4.5, "pass": ok}}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"device: {vb['device']}; PyTorch on the CPU with {args.threads} threads")
        for r in growth:
            print(f"t({r['to']})/t({r['from']}):  " +
                  ", ".join(f"{k} {v:.2f}" for k, v in r.items() if k not in ("from", "to")))
        if check is not None:
            print(f"linear check, mLSTM scan kernels t(4096)/t(1024) = {check.get('vkvit_scan_ms', float('nan')):.2f} "
                  f"<= 4.5: {'PASS' if ok else 'FAIL'}")
    return 0 if ok or args.no_check else 1


if __name__ == "__main__":
    sys.exit(main())
