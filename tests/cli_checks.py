# SPDX-License-Identifier: Apache-2.0
"""Shared by the Python tests that drive the `vkvit` binary: where it is, a check counter, and how to run it."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("VKVIT_BINARY_DIR", os.path.join(ROOT, "build"))
CLI = os.path.join(BUILD, "vkvit")

_failures = []
_passed = [0]


def check(cond, what):
    if cond:
        _passed[0] += 1
    else:
        _failures.append(what)
        print("FAIL", what, flush=True)


def validation():
    """"1" (the validation layer on), unless the caller's environment says VKVIT_VALIDATION=0: the one opt-out, for
    reruns under a layer older than an extension being tested (tools/gpu_check.sh's KHR cooperative-matrix rerun)."""
    return "0" if os.environ.get("VKVIT_VALIDATION") == "0" else "1"


def run(args, timeout=900):
    """(exit code, stdout, stderr) of `vkvit ARGS` with the validation layer on and no pipeline cache."""
    p = subprocess.run([CLI] + args, capture_output=True, text=True, env=env(), timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def training_tools():
    """For the tests of lab/train_cifar.py and its helpers: exits 77 (skipped) where PyTorch is not importable, puts
    lab/, tools/ and tools/reference/ first on sys.path and leaves the training scripts an argv of their own (their
    argparse runs at import)."""
    import sys
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: PyTorch is not importable (run with /usr/bin/python3, Debian python3-torch)")
        sys.exit(77)
    sys.path[:0] = [os.path.join(ROOT, "lab"), os.path.join(ROOT, "tools"), os.path.join(ROOT, "tools", "reference")]
    sys.argv = sys.argv[:1]


def summary():
    """Prints the counts; the exit status of the test (0 all passed, 1 something failed)."""
    print(f"{_passed[0]} passed, {len(_failures)} failed")
    return 1 if _failures else 0


def env():
    """The environment `run` uses: validation layer on (see validation()), no pipeline cache."""
    e = dict(os.environ, VKVIT_VALIDATION=validation(), VKVIT_CACHE_DIR="")
    # Under AddressSanitizer, as .ci/run does: the Vulkan loader / driver leak a few bytes from modules they unload.
    e.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    return e


def run_bytes(args, stdin=None, timeout=900, shell=False, stdout=subprocess.PIPE):
    """(exit code, stdout bytes, stderr text) of `vkvit ARGS`; `stdin` is bytes fed to it. With shell=True, ARGS is
    a bash command line in which $VKVIT is the binary."""
    if shell:
        cmd = ["bash", "-c", args]
        e = dict(env(), VKVIT=CLI)
    else:
        cmd, e = [CLI] + args, env()
    p = subprocess.run(cmd, input=stdin, stdout=stdout, stderr=subprocess.PIPE, env=e, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")
