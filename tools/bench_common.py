# SPDX-License-Identifier: Apache-2.0
"""What the side-by-side benchmarks (tools/bench_vit5.py, tools/bench_vil.py) share: which BLAS kernel PyTorch
runs, alternating rounds of the two engines, medians and minima, and the vkvit CLI calls.

Measure PyTorch at its best: these machines set OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (for old OpenBLAS bugs);
unset them in the benchmark command alone, e.g.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/bench_vit5.py

and the report says which kernel OpenBLAS picked (openblas_get_corename) and what the environment held.

Debian's PyTorch runs its own operators on OpenMP (libgomp) threads and its matrix products on OpenBLAS's pthreads.
With libgomp's default wait policy its idle threads spin after every parallel region on the cores that OpenBLAS is
computing on: on a 2-core machine ViT-5-S batch 1 then takes 150-620 ms per forward instead of 83-115 ms (measured
2026-11-25, one process, the two settings one after the other). This module sets OMP_WAIT_POLICY=PASSIVE unless the
caller set it, before torch (and so libgomp) is loaded: the benchmark scripts import it before torch.
"""

import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

if "torch" in sys.modules and "OMP_WAIT_POLICY" not in os.environ:
    print("bench_common: imported after torch; OMP_WAIT_POLICY=PASSIVE comes too late to apply", file=sys.stderr)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402


# The fp32 figures are fp32 arithmetic on a GPU too: no TF32 in cuDNN's convolutions (the patch embedding; on by
# default) or in matmuls (off by default). With TF32 the ViL's batch-64 logits missed bench_vil.py's 1e-4 check.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False

def blas_info() -> dict:
    """The BLAS PyTorch links (Debian: OpenBLAS through libblas.so.3), the core kernel it chose and the
    environment variables that steer that choice (None = unset)."""
    info = {"OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
            "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE"),
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
            "torch_threads": torch.get_num_threads(), "corename": None, "config": None}
    for lib in ("libblas.so.3", "libopenblas.so.0"):
        try:
            blas = ctypes.CDLL(lib)
            blas.openblas_get_corename.restype = ctypes.c_char_p
            blas.openblas_get_config.restype = ctypes.c_char_p
        except (OSError, AttributeError):
            continue
        info["corename"] = blas.openblas_get_corename().decode()
        info["config"] = blas.openblas_get_config().decode().strip()
        break
    return info


def blas_line(info: dict) -> str:
    env = ", ".join(f"{k}={info[k] if info[k] is not None else 'unset'}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                                                                 "OMP_WAIT_POLICY"))
    # Without OpenBLAS, Debian's PyTorch falls back to the reference BLAS (libblas3), about 30x slower for ViT-5-S
    # (4.6 s against 0.15 s on a Zen 3): a ratio against that says nothing, so the line says so.
    kernel = (f"OpenBLAS kernel {info['corename']}" if info["corename"] else
              "BLAS not OpenBLAS: NOT PyTorch at its best, install libopenblas0-pthread (tools/setup.sh does)")
    return f"{kernel} ({env}; {info['torch_threads']} threads)"


def time_ms(fn, warmup: int, repeat: int, sync=lambda: None) -> float:
    """Median wall time of `repeat` calls of fn after `warmup` calls, in ms."""
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def alternate(runners: dict, rounds: int) -> dict:
    """Calls each runner (name -> function returning one figure in ms) once per round, in the given order, for
    `rounds` rounds, so that a change of machine load affects both engines alike. Returns name -> [ms per round]."""
    samples = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            samples[name].append(run())
    return samples


def summary(values: list) -> dict:
    return {"median": statistics.median(values), "min": min(values), "rounds": [round(v, 3) for v in values]}


def vkvit_bench(vkvit: str, model: str, batch: int, repeat: int, warmup: int, dev_args: list,
                extra: list = ()) -> dict:
    """`vkvit bench --json` on one model: its median latency, GPU time per node kind, arena size ..."""
    cmd = [vkvit, "bench", "--model", model, "--batch", str(batch), "--repeat", str(repeat), "--warmup",
           str(warmup), "--json"] + list(dev_args) + list(extra)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return json.loads(res.stdout)


def vkvit_logits(vkvit: str, model: str, x: torch.Tensor, tmp: str, dev_args: list) -> torch.Tensor:
    """`vkvit run` on the input tensor x (the network input, [B, H, W, 3]); returns the logits."""
    import vkvit_file
    in_path, out_path = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
    vkvit_file.write_safetensors(in_path, {"input": x.contiguous()})
    cmd = [vkvit, "run", "--model", model, "--input", in_path, "--output", out_path] + list(dev_args)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()}")
    return vkvit_file.read_safetensors(out_path)[0]["logits"]


# ------------------------------------------------------------------------------------------------------------------
# One network, PyTorch against vkvit: what tools/bench_vit5.py and tools/bench_vil.py share
# ------------------------------------------------------------------------------------------------------------------

# Largest relative logit error (max |d| / max |want|) accepted per vkvit precision: fp32 is exact up to summation
# order; fp16 weights round every weight to 11 bits; fp16 math also sums products in fp16 over short K chunks.
LOGIT_TOLERANCE = {"fp32": 1e-4, "fp16": 2e-2, "fp16-math": 5e-2}


def add_common_args(ap, default_repeat: int = 5):
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds of the two engines")
    ap.add_argument("--repeat", type=int, default=default_repeat, help="runs per round (median)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="PyTorch CPU threads")
    ap.add_argument("--torch-device", default="cpu", help="cpu or cuda")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile (cuda; mode max-autotune, "
                    "which includes CUDA graphs)")
    ap.add_argument("--precision", default="fp32", help="vkvit precisions, comma-separated (fp32, fp16, fp16-math)")
    ap.add_argument("--vkvit", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "vkvit"),
                    help="path of the vkvit binary")
    ap.add_argument("--vkvit-also", action="append", default=[], metavar="LABEL=CLI",
                    help="another vkvit CLI timed in the same rounds (repeatable), e.g. another build, or "
                         "mesa26=lab/debian13_vkvit.sh for Mesa 26's lavapipe")
    ap.add_argument("--device", default=None, help="vkvit device (index or name substring)")
    ap.add_argument("--keep", default=None, help="write the model file here and keep it")
    ap.add_argument("--max-arena-ratio", type=float, default=None,
                    help="also fail (exit 2) when vkvit's activation arena exceeds this many times its largest "
                    "activation (issue 15's memory target: 3)")
    ap.add_argument("--json", action="store_true")


def parse_also(values: list) -> dict:
    """--vkvit-also LABEL=CLI values as {label: cli}: other vkvit CLIs (another build, or Mesa 26's lavapipe through
    lab/debian13_vkvit.sh) timed in the same alternating rounds as --vkvit."""
    others = {}
    for v in values:
        label, sep, cli = v.partition("=")
        if not sep or not label or not cli or label in others:
            sys.exit(f"--vkvit-also {v!r}: give LABEL=CLI, each label once")
        others[label] = cli
    return others


def temp_folder(prefix: str) -> str:
    """A new temporary folder, removed with its contents when the script exits (normally, by sys.exit or by an
    uncaught exception)."""
    import atexit
    import shutil
    import tempfile
    tmp = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    return tmp


def write_model(net, meta: dict, args, prefix: str):
    """Writes the PyTorch network as a vkvit model file (--keep PATH, else a temporary folder); returns (folder for
    the run's other files, model path). The folder goes when the script exits (an S-size model is 88 MB)."""
    import vkvit_file
    tmp = temp_folder(prefix)
    model_path = args.keep or os.path.join(tmp, "model.vkvit")
    vkvit_file.write_model(model_path, {k: v.detach().float().contiguous() for k, v in net.state_dict().items()}, meta)
    return tmp, model_path


def finish(results: dict, args) -> int:
    """Prints the results (--json: the dict, else print_report) and returns the exit status: 0, or 2 when a
    precision's logits exceeded its tolerance or its arena --max-arena-ratio."""
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_report(results)
    return 0 if results["ok"] else 2


def side_by_side(net, x, want, meta: dict, model_path: str, tmp: str, args) -> dict:
    """Alternates PyTorch fp32 (eval, no_grad, on --torch-device) and vkvit at each --precision for --rounds rounds;
    then, on cuda, eager bf16 autocast and (--compile) torch.compile once; then checks vkvit's logits per precision
    against `want` (PyTorch fp32 on the CPU). Returns the results dict (print_report prints it)."""
    import vkvit_file
    precisions = [p for p in args.precision.split(",") if p]
    dev = torch.device(args.torch_device)
    netd, xd = net.to(dev), x.to(dev)
    sync = (lambda: torch.cuda.synchronize()) if dev.type == "cuda" else (lambda: None)
    dev_args = ["--device", args.device] if args.device else []

    def torch_round():
        with torch.no_grad():
            return time_ms(lambda: netd(xd), args.warmup, args.repeat, sync)

    def vkvit_round(cli, precision):
        return lambda: vkvit_bench(cli, model_path, args.batch, args.repeat, args.warmup, dev_args,
                                   ["--precision", precision])["median_ms"]

    # (results key, CLI, precision): --vkvit's under the precision's name, each --vkvit-also as "[LABEL] precision"
    engines = [(p, args.vkvit, p) for p in precisions]
    engines += [(f"[{label}] {p}", cli, p) for label, cli in parse_also(args.vkvit_also).items() for p in precisions]
    runners = {"torch": torch_round}
    runners.update({f"vkvit {key}": vkvit_round(cli, p) for key, cli, p in engines})
    samples = alternate(runners, args.rounds)
    results = {"model": meta["name"], "batch": args.batch, "gflop_per_image": vkvit_file.flops(meta) / 1e9,
               "rounds": args.rounds, "repeat": args.repeat,
               "torch_device": str(dev) + (f" ({args.threads} threads)" if dev.type == "cpu" else ""),
               "torch_fp32_ms": summary(samples["torch"]), "vkvit": {}}
    if dev.type == "cpu":
        results["blas"] = blas_info()
    else:
        results["torch_gpu"] = torch.cuda.get_device_name(dev)
    with torch.no_grad():
        if dev.type == "cuda":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                results["torch_bf16_ms"] = time_ms(lambda: netd(xd), args.warmup, args.repeat, sync)
            if args.compile:
                cnet = torch.compile(netd, mode="max-autotune")    # CUDA graphs included in this mode
                results["torch_compile_mode"] = "max-autotune"
                results["torch_compile_ms"] = time_ms(lambda: cnet(xd), args.warmup + 3, args.repeat, sync)
    ok = True
    for key, cli, p in engines:
        vb = vkvit_bench(cli, model_path, args.batch, args.repeat, args.warmup, dev_args, ["--precision", p])
        got = vkvit_logits(cli, model_path, x, tmp, dev_args + ["--precision", p])
        err = ((got - want).abs().max() / want.abs().max()).item()
        ok = ok and err <= LOGIT_TOLERANCE.get(p, 5e-2)
        arena_ratio = vb["arena_bytes"] / vb["largest_activation_bytes"]
        ok = ok and (args.max_arena_ratio is None or arena_ratio <= args.max_arena_ratio)
        t, v = results["torch_fp32_ms"], summary(samples[f"vkvit {key}"])
        results["vkvit"][key] = {
            "cli": cli, "precision": p, "ms": v, "ratio_over_torch_fp32_median": v["median"] / t["median"],
            "ratio_over_torch_fp32_min": v["min"] / t["min"], "logits_max_rel_err": err,
            "device": vb["device"], "gpu_ms_by_kind": vb["gpu_ms_by_kind"],
            "host_cpu_ms": vb["host_cpu_ms"], "arena_bytes": vb["arena_bytes"],
            "sum_activation_bytes": vb["sum_activation_bytes"],
            "largest_activation_bytes": vb["largest_activation_bytes"], "arena_ratio": arena_ratio}
    results["max_arena_ratio"] = args.max_arena_ratio
    results["ok"] = ok
    return results


def print_report(results: dict):
    t = results["torch_fp32_ms"]
    print(f"{results['model']}, batch {results['batch']}, {results['gflop_per_image']:.2f} GFLOP per image, "
          f"{results['rounds']} alternating rounds of {results['repeat']}")
    print(f"  PyTorch fp32 on {results['torch_device']}" +
          (f", {blas_line(results['blas'])}" if "blas" in results else f", {results.get('torch_gpu', '')}"))
    if "torch_forms_ms" in results:
        print("    forms (ms): " + ", ".join(f"{k} {ms:.1f}" for k, ms in results["torch_forms_ms"].items()) +
              f" -> {results['torch_form']}")
    print(f"    median {t['median']:9.2f} ms   min {t['min']:9.2f} ms")
    for k in ("torch_bf16_ms", "torch_compile_ms"):
        if k in results:
            print(f"  PyTorch {k[6:-3]}: {results[k]:9.2f} ms")
    for key, r in results["vkvit"].items():
        v, p = r["ms"], r.get("precision", key)
        print(f"  vkvit {key} on {r['device']} (host CPU {r['host_cpu_ms']:.2f} ms)")
        print(f"    median {v['median']:9.2f} ms   min {v['min']:9.2f} ms   ratio vkvit / PyTorch fp32: median "
              f"{r['ratio_over_torch_fp32_median']:.2f}x, min {r['ratio_over_torch_fp32_min']:.2f}x")
        print("    GPU time by kind: " + ", ".join(f"{k} {ms:.1f} ms" for k, ms in r["gpu_ms_by_kind"].items()))
        limit = results.get("max_arena_ratio")
        print(f"    arena {r['arena_bytes'] / 2**20:.2f} MiB = {r['arena_ratio']:.2f}x the largest activation" +
              (f" (limit {limit:g}x)" if limit is not None else "") +
              f", sum of intermediates {r['sum_activation_bytes'] / 2**20:.2f} MiB; logits max rel err vs PyTorch "
              f"fp32 {r['logits_max_rel_err']:.3g} (tolerance {LOGIT_TOLERANCE.get(p, 5e-2):g})")
