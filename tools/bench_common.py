"""What the side-by-side benchmarks (tools/bench_vit5.py, tools/bench_vil.py) share: which BLAS kernel PyTorch
runs, alternating rounds of the two engines, medians and minima, and the vkvit CLI calls.

Measure PyTorch at its best: these machines set OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (for old OpenBLAS bugs);
unset them in the benchmark command alone, e.g.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/bench_vit5.py

and the report says which kernel OpenBLAS picked (openblas_get_corename) and what the environment held.
"""

import ctypes
import json
import os
import statistics
import subprocess
import time

import torch


def blas_info() -> dict:
    """The BLAS PyTorch links (Debian: OpenBLAS through libblas.so.3), the core kernel it chose and the
    environment variables that steer that choice (None = unset)."""
    info = {"OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
            "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE"),
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
    env = ", ".join(f"{k}={info[k] if info[k] is not None else 'unset'}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"))
    kernel = f"OpenBLAS kernel {info['corename']}" if info["corename"] else "BLAS not OpenBLAS"
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
