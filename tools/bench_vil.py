#!/usr/bin/python3
"""Vision-LSTM (ViL-S: D 384, depth 24, 224 x 224, patch 16) on PyTorch and on vkvit, side by side in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/bench_vil.py      # seed numerics, batch 1
    /usr/bin/python3 tools/bench_vil.py --flavour nxai --batch 8 --rounds 7 --json

Builds the reference VisionLSTM (tools/reference/mlstm.py) with random weights and writes it as a vkvit model file;
then
  1. picks PyTorch's fastest exact form of the mLSTM: the quadratic parallel form or the chunkwise scan at chunk
     16, 32 or 64 (each checked against the parallel form's logits to 1e-4 relative, then timed once),
  2. alternates --rounds rounds of (PyTorch forward: median of --repeat; `vkvit bench`: median of --repeat),
     and reports the median and the minimum over the rounds of each, and their ratio,
  3. runs `vkvit run` on the same input and compares the logits with PyTorch's fp32 logits (1e-4 relative).
Measure PyTorch at its best on a quiet machine: unset OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in this command only
(see tools/bench_common.py); the report names the OpenBLAS kernel used. Needs Debian's python3-torch (run with
/usr/bin/python3) and a built build/vkvit.
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
from flops import VIL_S  # noqa: E402
from mlstm import VisionLSTM  # noqa: E402

FORMS = (None, 16, 32, 64)                    # mLSTM chunk size; None = the quadratic parallel form


def build_model(flavour: str, seed: int):
    cfg = copy.deepcopy(VIL_S)
    torch.manual_seed(seed)
    net = VisionLSTM.from_config(cfg, numerics=flavour).eval()
    with torch.no_grad():  # make every term matter: the position embedding is zero-initialised
        net.pos_embed.embed.normal_(0.0, 0.02)
    meta = {"format_version": 1, "architecture": "vil", "flavour": flavour, "name": f"vil_s_patch16_224_{flavour}_random",
            "config": cfg, "preprocess": {"image_size": [224, 224], "resize_shorter": 224, "interpolation": "bicubic",
                                          "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}
    return net, meta


def set_form(net, chunk):
    for block in net.blocks:
        block.mlstm.chunk_size = chunk


def form_name(chunk) -> str:
    return "parallel" if chunk is None else f"chunkwise {chunk}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flavour", choices=["seed", "nxai"], default="seed")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds of the two engines")
    ap.add_argument("--repeat", type=int, default=5, help="runs per round (median)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="PyTorch CPU threads")
    ap.add_argument("--vkvit", default=os.path.join(HERE, "..", "build", "vkvit"), help="path of the vkvit binary")
    ap.add_argument("--device", default=None, help="vkvit device (index or name substring)")
    ap.add_argument("--keep", default=None, help="write the model file here and keep it")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    net, meta = build_model(args.flavour, seed=0)
    tmp = tempfile.mkdtemp(prefix="vkvit-bench-vil-")
    model_path = args.keep or os.path.join(tmp, "model.vkvit")
    vkvit_file.write_model(model_path, {k: v.detach().float().contiguous() for k, v in net.state_dict().items()}, meta)
    dev_args = ["--device", args.device] if args.device else []

    x = torch.randn(args.batch, 224, 224, 3, generator=torch.Generator().manual_seed(1))
    forms = {}
    with torch.no_grad():
        set_form(net, None)
        want = net(x).float()
        for chunk in FORMS:
            set_form(net, chunk)
            err = ((net(x).float() - want).abs().max() / want.abs().max()).item()
            if err <= 1e-4:
                forms[form_name(chunk)] = (chunk, bc.time_ms(lambda: net(x), args.warmup, 2))
        best = min(forms, key=lambda name: forms[name][1])
        set_form(net, forms[best][0])

        def torch_round():
            return bc.time_ms(lambda: net(x), args.warmup, args.repeat)

        def vkvit_round():
            return bc.vkvit_bench(args.vkvit, model_path, args.batch, args.repeat, args.warmup, dev_args)["median_ms"]

        samples = bc.alternate({"torch": torch_round, "vkvit": vkvit_round}, args.rounds)

    vb = bc.vkvit_bench(args.vkvit, model_path, args.batch, args.repeat, args.warmup, dev_args)
    got = bc.vkvit_logits(args.vkvit, model_path, x, tmp, dev_args)
    err = ((got - want).abs().max() / want.abs().max()).item()
    t, v = bc.summary(samples["torch"]), bc.summary(samples["vkvit"])
    results = {"model": meta["name"], "batch": args.batch, "gflop_per_image": vkvit_file.flops(meta) / 1e9,
               "blas": bc.blas_info(), "torch_forms_ms": {k: round(f[1], 3) for k, f in forms.items()},
               "torch_form": best, "torch_ms": t, "vkvit_ms": v, "vkvit_device": vb["device"],
               "vkvit_gpu_ms_by_kind": vb["gpu_ms_by_kind"], "ratio_vkvit_over_torch_median": v["median"] / t["median"],
               "ratio_vkvit_over_torch_min": v["min"] / t["min"], "logits_max_rel_err": err}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"{results['model']}, batch {args.batch}, {results['gflop_per_image']:.2f} GFLOP per image, "
              f"{args.rounds} alternating rounds of {args.repeat}")
        print(f"  PyTorch fp32, {bc.blas_line(results['blas'])}")
        print("    mLSTM forms (ms, one median of 2): " +
              ", ".join(f"{k} {ms:.1f}" for k, ms in results["torch_forms_ms"].items()) + f" -> {best}")
        print(f"    median {t['median']:9.2f} ms   min {t['min']:9.2f} ms")
        print(f"  vkvit on {vb['device']}")
        print(f"    median {v['median']:9.2f} ms   min {v['min']:9.2f} ms")
        print(f"  ratio vkvit / PyTorch: median {results['ratio_vkvit_over_torch_median']:.2f}x, "
              f"min {results['ratio_vkvit_over_torch_min']:.2f}x")
        print("  vkvit GPU time by kind: " + ", ".join(f"{k} {ms:.1f} ms" for k, ms in vb["gpu_ms_by_kind"].items()))
        print(f"  logits max rel err vs PyTorch fp32: {err:.3g}")
    return 0 if err <= 1e-4 else 2


if __name__ == "__main__":
    sys.exit(main())
