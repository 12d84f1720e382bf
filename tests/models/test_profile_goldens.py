#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every golden model under a device profile (VKVIT_DEVICE_PROFILE, docs/gpu.md "Device profiles"), through
`vkvit run`: the portability sweep of issue 55 across the real families' limits and features.

For each profile (CTest runs one entry per profile, test_profile_goldens_<profile>):
  - fp32: every golden (tests/golden/models/<stem>.vkvit with its .io.safetensors: PyTorch float64 logits rounded to
    float32) runs through the kernels that profile's device would get (GPU kernels, workgroups within its
    invocation limit, packed bindings where it has 4 storage buffers per stage) and its logits agree with the
    golden's within max |got - want| <= 1e-4 * max |want| (the goldens' fp32 tolerance, as test_cli_models), every
    row with the golden's top-1 class;
  - fp16 (fp16 weights, fp32 arithmetic) on the first golden of each architecture (FP16_GOLDENS: the sanitizer
    pass's choice; the fp16 kernels are the same for every golden of an architecture, and each costs a second
    compilation of every pipeline), where the profile has 16-bit storage: within 1e-2, the fp16-weight tolerance of
    test_vit5 / test_vil / test_resnet (measured under mali-valhall on every golden: at most 1.06e-3); where it has
    not, the session is refused (exit 2) with a sentence that names storageBuffer16BitAccess, and nothing is
    written;
  - refusals: a profile that cannot run a model must refuse it at session creation (exit 2) with a sentence naming
    the limit; REFUSED below lists every such (profile, golden) pair, so a new refusal fails the test and so does a
    listed refusal that runs.
Every command runs with VKVIT_VALIDATION=1 (synchronization validation on) and must print no validation message.
The known-profile list is checked against the one `vkvit info` prints for an unknown name, so a profile added to
src/policy/profiles.c without an entry here fails.

Run from the repository root:  /usr/bin/python3 tests/models/test_profile_goldens.py [PROFILE] [GOLDEN_SUBSTRING...]
(no PROFILE: every profile, one after the other).
Exit status: 0 passed, 1 failed, 77 skipped (no Vulkan device, or the CLI is not built).
"""

import glob
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, env, summary
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))  # the safetensors helpers
from test_cli_models import st_read  # noqa: E402
from test_fp16_math import compare  # noqa: E402  (logits within a tolerance of the largest, top-1 per row)

GOLDEN = os.path.join(ROOT, "tests", "golden", "models")
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2}
FP16_GOLDENS = ("resnet_all_glu_global_c48", "vil_nxai", "vit5_nvsubq_cls_r4")

# The profiles of src/policy/profiles.c ("gpu", the device itself in GPU mode, is the *_gpu_lp* entries' job), and
# whether each has 16-bit storage (storageBuffer16BitAccess; docs/gpu.md's table, column "fp16 storage").
PROFILES = {
    "vulkan-1.1-minimum": False,
    "android-baseline-2022": False,
    "mali-valhall": True,
    "adreno-7xx": True,
    "intel-xe": True,
    "amd-rdna3": True,
    "apple-m1": True,
}
# (profile, golden stem) pairs refused at session creation, with a word their sentence must contain.
REFUSED = {}


def vkvit(args, what, extra_env):
    e = env()
    e.update(extra_env)
    p = subprocess.run([CLI] + args, capture_output=True, text=True, env=e, timeout=900)
    clean = "Validation" not in p.stderr and "warning:" not in p.stderr
    check(clean, f"{what}: validation message or warning:\n{p.stderr[-3000:]}")
    return p.returncode, p.stdout, p.stderr


def known_profiles():
    """The names `vkvit info` lists for an unknown profile (its sentence: "no such profile (a, b, ...)")."""
    p = subprocess.run([CLI, "info"], capture_output=True, text=True,
                       env=dict(env(), VKVIT_DEVICE_PROFILE="no-such-profile"))
    s = p.stderr
    if "(" not in s:
        return None
    return [n.strip() for n in s[s.rindex("(") + 1:s.rindex(")")].split(",")]


def run_golden(profile, stem, tmp):
    """fp32 (and fp16 where FP16_GOLDENS has it) of one golden under one profile."""
    model = os.path.join(GOLDEN, f"{stem}.vkvit")
    io_path = os.path.join(GOLDEN, f"{stem}.io.safetensors")
    want = st_read(io_path)[0]["logits"]
    for precision in ("fp32", "fp16"):
        if precision == "fp16" and stem not in FP16_GOLDENS:
            continue
        what = f"{profile} {stem} {precision}"
        out = os.path.join(tmp, f"{profile}.{stem}.{precision}.safetensors")
        rc, _, err = vkvit(["run", "--model", model, "--input", io_path, "--output", out, "--precision", precision],
                           what, {"VKVIT_DEVICE_PROFILE": profile})
        sentence = err.strip().splitlines()[-1] if err.strip() else "no sentence"
        if precision == "fp16" and not PROFILES[profile]:
            print(f"  {what}: refused ({sentence})")
            check(rc == 2 and "storageBuffer16BitAccess" in err and not os.path.exists(out),
                  f"{what}: want exit 2 with a sentence naming storageBuffer16BitAccess and no output, got exit "
                  f"{rc}:\n{err[-2000:]}")
            continue
        refused_word = REFUSED.get((profile, stem))
        if refused_word is not None:
            print(f"  {what}: refused ({sentence})")
            check(rc == 2 and refused_word in err and not os.path.exists(out),
                  f"{what}: listed as refused (a sentence with '{refused_word}'), got exit {rc}:\n{err[-2000:]}")
            continue
        if rc != 0:
            check(False, f"{what}: exit {rc}:\n{err[-3000:]}")
            continue
        compare(what, st_read(out)[0].get("logits"), want, TOLERANCE[precision])


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    p = subprocess.run([CLI, "info"], capture_output=True, text=True, env=env())
    if p.returncode == 3:
        print(f"SKIP: no Vulkan device: {p.stderr.strip()}")
        return 77
    args = sys.argv[1:]
    profiles = [args.pop(0)] if args and args[0] in PROFILES else list(PROFILES)
    filters = args
    known = known_profiles()
    check(known is not None and sorted(known) == sorted(list(PROFILES) + ["gpu"]),
          f"vkvit knows the profiles {known}; this test covers {sorted(PROFILES)} and gpu")
    stems = sorted(os.path.basename(m)[:-len(".vkvit")] for m in glob.glob(os.path.join(GOLDEN, "*.vkvit")))
    if not filters:
        check(len(stems) >= 13 and all(g in stems for g in FP16_GOLDENS),
              f"found {len(stems)} golden models, want >= 13 with {', '.join(FP16_GOLDENS)}")
    stems = [s for s in stems if not filters or any(f in s for f in filters)]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vkvit_profile_goldens_") as tmp:
        for profile in profiles:
            for stem in stems:
                run_golden(profile, stem, tmp)
    print(f"time: {time.monotonic() - t0:.1f} s for {len(stems)} goldens under {', '.join(profiles)}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
