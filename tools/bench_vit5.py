#!/usr/bin/python3
"""ViT-5 on PyTorch and on vkvit, side by side in one run, with a correctness check of the same logits.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/bench_vit5.py   # ViT-5-S/16, 224, batch 1
    /usr/bin/python3 tools/bench_vit5.py --batch 8 --rounds 7
    /usr/bin/python3 tools/bench_vit5.py --flavour paper --json

Builds the reference ViT5ClassificationNet (tools/reference/vit5.py) with random weights, writes it as a vkvit
model file, then
  1. alternates --rounds rounds of (the PyTorch forward: eval, no_grad, median of --repeat after --warmup, on
     --torch-device; `vkvit bench --model ... --json`: median latency of vkvit_session_run) and reports the median
     and the minimum over the rounds of each, and their ratio; on cuda also eager bf16 autocast, and torch.compile
     when --compile is given (timed once, after the rounds),
  2. runs `vkvit run` on the same input and compares the logits with PyTorch's fp32 logits.
On the CPU, measure PyTorch at its best on a quiet machine: unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in this
command only (tools/bench_common.py); the report names the OpenBLAS kernel used. Needs Debian's python3-torch (run
it with /usr/bin/python3) and a built build/vkvit.
"""

import argparse
import copy
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "reference"))

import torch  # noqa: E402

import bench_common as bc  # noqa: E402
import vkvit_file  # noqa: E402
from flops import VIT5_S_NVSUBQ, VIT5_S_PAPER, VIT5_B_NVSUBQ  # noqa: E402
from vit5 import ViT5ClassificationNet  # noqa: E402

CONFIGS = {("s", "nvsubq"): VIT5_S_NVSUBQ, ("s", "paper"): VIT5_S_PAPER, ("b", "nvsubq"): VIT5_B_NVSUBQ}
PREPROCESS = {"image_size": [224, 224], "resize_shorter": 224, "interpolation": "bicubic",
              "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


def build_model(size: str, flavour: str, seed: int):
    cfg = copy.deepcopy(CONFIGS[(size, flavour)])
    torch.manual_seed(seed)
    net = ViT5ClassificationNet.from_config(cfg).eval()
    with torch.no_grad():  # LayerScale 1e-4 would hide every block; make all branches matter
        for name, p in net.named_parameters():
            if name.endswith(("ls_attn.gamma", "ls_mlp.gamma")):
                p.normal_(0.5, 0.1)
            elif name.endswith("norm.weight"):
                p.normal_(1.0, 0.1)
    vkvit = {"format_version": 1, "architecture": "vit5", "flavour": flavour,
             "name": f"vit5_{size}_patch16_224_{flavour}_random", "config": cfg, "preprocess": PREPROCESS}
    return net, vkvit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=["s", "b"], default="s")
    ap.add_argument("--flavour", choices=["nvsubq", "paper"], default="nvsubq")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds of the two engines")
    ap.add_argument("--repeat", type=int, default=5, help="runs per round (median)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="PyTorch CPU threads")
    ap.add_argument("--torch-device", default="cpu", help="cpu or cuda")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (cuda)")
    ap.add_argument("--vkvit", default=os.path.join(HERE, "..", "build", "vkvit"), help="path of the vkvit binary")
    ap.add_argument("--device", default=None, help="vkvit device (index or name substring)")
    ap.add_argument("--keep", default=None, help="write the model file here and keep it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    net, meta = build_model(args.size, args.flavour, seed=0)
    tmp = tempfile.mkdtemp(prefix="vkvit-bench-")
    model_path = args.keep or os.path.join(tmp, "model.vkvit")
    vkvit_file.write_model(model_path, {k: v.detach().float().contiguous() for k, v in net.state_dict().items()}, meta)

    g = torch.Generator().manual_seed(1)
    x = torch.randn(args.batch, 224, 224, 3, generator=g)
    with torch.no_grad():
        want = net(x).float()

    results = {"model": meta["name"], "batch": args.batch, "gflop_per_image": vkvit_file.flops(meta) / 1e9}
    dev = torch.device(args.torch_device)
    netd, xd = net.to(dev), x.to(dev)
    sync = (lambda: torch.cuda.synchronize()) if dev.type == "cuda" else (lambda: None)
    dev_args = ["--device", args.device] if args.device else []

    def torch_round():
        with torch.no_grad():
            return bc.time_ms(lambda: netd(xd), args.warmup, args.repeat, sync)

    def vkvit_round():
        return bc.vkvit_bench(args.vkvit, model_path, args.batch, args.repeat, args.warmup, dev_args)["median_ms"]

    samples = bc.alternate({"torch": torch_round, "vkvit": vkvit_round}, args.rounds)
    t, v = bc.summary(samples["torch"]), bc.summary(samples["vkvit"])
    results.update({"torch_fp32_ms": t, "vkvit_ms": v, "ratio_vkvit_over_torch_median": v["median"] / t["median"],
                    "ratio_vkvit_over_torch_min": v["min"] / t["min"]})
    with torch.no_grad():
        if dev.type == "cuda":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                results["torch_bf16_ms"] = bc.time_ms(lambda: netd(xd), args.warmup, args.repeat, sync)
            if args.compile:
                cnet = torch.compile(netd)
                results["torch_compile_ms"] = bc.time_ms(lambda: cnet(xd), args.warmup + 2, args.repeat, sync)
    results["torch_device"] = str(dev) + (f" ({args.threads} threads)" if dev.type == "cpu" else "")
    if dev.type == "cpu":
        results["blas"] = bc.blas_info()

    vb = bc.vkvit_bench(args.vkvit, model_path, args.batch, args.repeat, args.warmup, dev_args)
    results.update({"vkvit_device": vb["device"], "vkvit_gpu_ms_by_kind": vb["gpu_ms_by_kind"],
                    "vkvit_host_cpu_ms": vb["host_cpu_ms"], "vkvit_arena_bytes": vb["arena_bytes"],
                    "vkvit_sum_activation_bytes": vb["sum_activation_bytes"]})
    got = bc.vkvit_logits(args.vkvit, model_path, x, tmp, dev_args)
    err = ((got - want).abs().max() / want.abs().max()).item()
    results["logits_max_rel_err"] = err

    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{results['model']}, batch {args.batch}, {results['gflop_per_image']:.2f} GFLOP per image, "
              f"{args.rounds} alternating rounds of {args.repeat}")
        print(f"  PyTorch fp32 on {results['torch_device']}" +
              (f", {bc.blas_line(results['blas'])}" if "blas" in results else ""))
        print(f"    median {t['median']:9.2f} ms   min {t['min']:9.2f} ms")
        for k in ("torch_bf16_ms", "torch_compile_ms"):
            if k in results:
                print(f"  PyTorch {k[6:-3]:>12}: {results[k]:9.2f} ms")
        print(f"  vkvit on {results['vkvit_device']} (host CPU {results['vkvit_host_cpu_ms']:.2f} ms)")
        print(f"    median {v['median']:9.2f} ms   min {v['min']:9.2f} ms")
        print(f"  ratio vkvit / PyTorch fp32: median {results['ratio_vkvit_over_torch_median']:.2f}x, "
              f"min {results['ratio_vkvit_over_torch_min']:.2f}x")
        print(f"  vkvit GPU time by kind: " +
              ", ".join(f"{k} {v:.1f} ms" for k, v in results["vkvit_gpu_ms_by_kind"].items()))
        print(f"  arena {results['vkvit_arena_bytes'] / 2**20:.2f} MiB vs sum of intermediates "
              f"{results['vkvit_sum_activation_bytes'] / 2**20:.2f} MiB")
        print(f"  logits max rel err vs PyTorch fp32: {err:.3g}")
    return 0 if err <= 1e-4 else 2


if __name__ == "__main__":
    sys.exit(main())
