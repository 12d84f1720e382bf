#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command for a machine with a GPU (docs/gpu.md): the whole CTest suite with the validation layer on the default
# Vulkan device, then `vkvit info`, `vkvit bench gemm` and `vkvit bench --model` for every bundled model at batch 1
# and 8, then (with a Python that has PyTorch) vkvit side by side with PyTorch: GEMM against torch.matmul, ViT-5-S,
# ViT-5-B and ViL-S at batch 1, 64 and 256 against eager fp32 / bf16 autocast / torch.compile, 60 s of sustained
# ViT-5-S latency, cold and warm start-up; written to OUTDIR/report.json and OUTDIR/report.md (raw logs and JSON
# next to them).
#
#   tools/gpu_check.sh OUTDIR             the full check (expects a built tree: tools/setup.sh --test-deps)
#   tools/gpu_check.sh --dry-run OUTDIR   a small subset of tests, one tiny GEMM bench, a tiny side-by-side GEMM
#                                         (lavapipe, CI)
#   tools/gpu_check.sh --quick OUTDIR     the whole suite, then the benches that fit a lent machine's few minutes
#                                         (~4 min on an H100): GEMM at 4096^3 and ViT shapes, ViT-5-S at batch 1 and
#                                         256, ViT-5-B and ViL-S at batch 1, no torch.compile, 30 s sustained
#   tools/gpu_check.sh --parts P OUTDIR   only the parts P, comma-separated, of: tests, bench, torch (default all;
#                                         the device's per-command limit may ask for two calls)
#
# Environment:
#   BUILD_DIR        build tree (default build)
#   CTEST_JOBS       parallel tests (default 4; validation-heavy tests are memory hungry)
#   VKVIT_DEB_ROOT   a directory where Debian packages were unpacked (dpkg-deb -x X.deb DIR): its Vulkan loader
#                    and validation layer are used (LD_LIBRARY_PATH, VK_LAYER_PATH are set from it)
#   VK_DRIVER_FILES, VK_LAYER_PATH, LD_LIBRARY_PATH, VKVIT_DEVICE: passed through (recorded in the report)
#   PYTHON           the Python with PyTorch for the side-by-side part (default: the first of python3 and
#                    /usr/bin/python3 that imports torch; none: the part is skipped and the report says so)
# Exit status: 0 when every test passed and every command succeeded, 1 otherwise, 2 on a usage error.
set -uo pipefail
cd "$(dirname "$0")/.."

dry=0
quick=0
out=""
parts="tests,bench,torch"
want_parts=0
for arg in "$@"; do
    if [ "$want_parts" = 1 ]; then parts=$arg; want_parts=0; continue; fi
    case "$arg" in
        --dry-run) dry=1 ;;
        --quick) quick=1 ;;
        --parts) want_parts=1 ;;
        -h|--help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "gpu_check.sh: unknown option $arg" >&2; exit 2 ;;
        *) [ -z "$out" ] || { echo "gpu_check.sh: one OUTDIR only" >&2; exit 2; }; out=$arg ;;
    esac
done
[ -n "$out" ] || { echo "usage: tools/gpu_check.sh [--dry-run|--quick] [--parts tests,bench,torch] OUTDIR" >&2; exit 2; }
for p in ${parts//,/ }; do
    case "$p" in tests|bench|torch) ;; *) echo "gpu_check.sh: unknown part '$p' (tests, bench, torch)" >&2; exit 2 ;; esac
done
has_part() { case ",$parts," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
BUILD_DIR=${BUILD_DIR:-build}
cli="$BUILD_DIR/vkvit"
if [ ! -x "$cli" ] || [ ! -f "$BUILD_DIR/CTestTestfile.cmake" ]; then
    echo "gpu_check.sh: no built tree with tests in '$BUILD_DIR' (run tools/setup.sh --test-deps first)" >&2
    exit 2
fi
mkdir -p "$out" || exit 2

if [ -n "${VKVIT_DEB_ROOT:-}" ]; then
    for d in "$VKVIT_DEB_ROOT/usr/lib/x86_64-linux-gnu" "$VKVIT_DEB_ROOT/usr/lib/aarch64-linux-gnu" "$VKVIT_DEB_ROOT/usr/lib"; do
        [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
    layers="$VKVIT_DEB_ROOT/usr/share/vulkan/explicit_layer.d"
    [ -d "$layers" ] && export VK_LAYER_PATH="$layers${VK_LAYER_PATH:+:$VK_LAYER_PATH}"
fi
# Validation for the tests only: the benches run without the layer (it costs CPU time per call).
unset VKVIT_VALIDATION

status=0
cmds="$out/commands.tsv"
: > "$cmds"
# run NAME OUTFILE CMD...: runs CMD with stdout to OUTFILE, stderr to OUTFILE.err; records name, status, seconds.
run() {
    local name=$1 file=$2; shift 2
    local t0=$SECONDS
    "$@" > "$file" 2> "$file.err"
    local rc=$?
    printf '%s\t%d\t%d\t%s\n' "$name" "$rc" $((SECONDS - t0)) "$*" >> "$cmds"
    [ "$rc" = 0 ] || status=1
    return 0
}

# 1. Tests (validation + synchronization validation on: any message fails a test).
jobs=${CTEST_JOBS:-4}
[ "$quick" = 1 ] && [ -z "${CTEST_JOBS:-}" ] && jobs=$(( $(nproc) < 14 ? $(nproc) : 14 ))  # a lent machine's cores
if ! has_part tests; then
    :
elif [ "$dry" = 1 ]; then
    run ctest "$out/ctest.log" env VKVIT_VALIDATION=1 ctest --test-dir "$BUILD_DIR" -j2 --output-on-failure \
        --test-output-size-passed 4000000 --output-junit "$(realpath "$out")/ctest.xml" \
        -R '^(test_plan|test_topk|test_spirv)$'
else
    # the whole output of passing tests in the JUnit file too (test_gemm's "coopmat-nv" lines), not the first 1 KiB
    run ctest "$out/ctest.log" env VKVIT_VALIDATION=1 ctest --test-dir "$BUILD_DIR" -j"$jobs" --output-on-failure \
        --test-output-size-passed 4000000 --output-junit "$(realpath "$out")/ctest.xml" \
        -E '^test_gpu_check'
    # A build with the KHR cooperative-matrix kernel (glslang >= 13) on a device that can run both: the NV kernel is
    # the default there, so the tests of the tensor-core GEMM run again on the KHR one (VKVIT_COOPMAT_KHR=1). Without
    # the validation layer (VKVIT_VALIDATION=0 is the tests' one opt-out): the bundled one (Debian 12's 1.3.239)
    # predates VK_KHR_cooperative_matrix, flags its feature struct and SPIR-V capability, and drops the struct from
    # the device it creates (vkvit then keeps the KHR kernel off under it); the tests still compare every result
    # with their references.
    if grep -q COOPMAT_KHR "$BUILD_DIR/generated/spirv.h" 2> /dev/null; then
        run ctest_khr "$out/ctest_khr.log" env VKVIT_VALIDATION=0 VKVIT_COOPMAT_KHR=1 ctest --test-dir "$BUILD_DIR" \
            -j"$jobs" --output-on-failure -R '^(test_gemm_.*|test_coopmat|test_fp16_math_py|test_caps)$'
    fi
fi

# 2. The device and what vkvit uses on it.
run info "$out/info.txt" "$cli" info

# 3. Benchmarks (JSON lines).
if ! has_part bench; then
    :
elif [ "$dry" = 1 ]; then
    run bench_gemm "$out/bench_gemm.jsonl" "$cli" bench gemm --shape 64x64x64 --repeat 2 --warmup 1 --json
else
    run bench_gemm "$out/bench_gemm.jsonl" "$cli" bench gemm --json
    # Tile tuning of the shared-memory kernel (fp32 and fp16-weight GEMMs on GPUs; its tiles by shape in
    # src/ops/gemm.c): larger register tiles against the 64x64x16 / 4x4 one, alternated in one process (`bench gemm
    # --versus`). The full run only: measured on an H100 on 2026-11-27 (docs/gpu.md).
    i=0
    for t in bm=128,bn=128,bk=16,tm=8,tn=8 bm=64,bn=128,bk=16,tm=4,tn=8 bm=128,bn=64,bk=16,tm=8,tn=4; do
        [ "$quick" = 1 ] && break
        i=$((i + 1))
        run "bench_gemm_tile $t" "$out/bench_gemm_tile_$i.jsonl" "$cli" bench gemm --json --rounds 4 \
            --shape 4096x4096x4096 --shape 201x1536x384 --shape 12864x1152x384 --config kernel=shared,bm=64,bn=64 \
            --versus "kernel=shared,$t"
    done
    # fp16 arithmetic (cooperative matrices where in use: the "cooperative_matrix" field) at the issue's 4096^3 too,
    # and ViT-5-S's shapes at batch 1, 64 and 256 (201, 12864 and 51456 rows)
    run bench_gemm_f16 "$out/bench_gemm_f16.jsonl" "$cli" bench gemm --precision fp16-math --json \
        --shape 4096x4096x4096 --shape 1024x1024x1024 --shape 201x1152x384 --shape 201x384x1536 --shape 201x1536x384 \
        --shape 12864x1152x384 --shape 51456x1152x384 --shape 51456x384x1536
    for m in assets/models/*.vkvit; do
        [ -f "$m" ] || continue
        for b in 1 8; do
            run "bench $(basename "$m" .vkvit) b$b" "$out/bench_$(basename "$m" .vkvit)_b$b.json" \
                "$cli" bench --model "$m" --batch "$b" --json
        done
    done
fi

# 4. Side by side with PyTorch, same device, same run (tools/bench_gemm.py, bench_vit5.py, bench_vil.py: alternating
#    rounds, medians and minima), sustained latency and start-up.
py=${PYTHON:-}
if [ -z "$py" ]; then
    for c in python3 /usr/bin/python3; do
        if command -v "$c" > /dev/null && "$c" -c 'import torch' 2> /dev/null; then py=$c; break; fi
    done
fi
if has_part torch && [ -n "$py" ]; then
    tdev=$("$py" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
    bench_help=$("$cli" bench --help 2>&1 || true)
    if [[ $bench_help == *fp16-math* ]]; then precisions=fp32,fp16,fp16-math; else precisions=fp32,fp16; fi
    if [ "$dry" = 1 ]; then
        run "torch gemm" "$out/torch_gemm.json" "$py" tools/bench_gemm.py --torch-device "$tdev" --vkvit "$cli" \
            --shape 64x64x64 --rounds 1 --repeat 2 --warmup 1 --json
        # lab/profile_nodes.py loads the library into Python: not an AddressSanitizer build's (its runtime must
        # come first in the process), which CI's sanitizer pass runs this dry run with
        # (ldd's output taken whole first: under pipefail, `ldd | grep -q` fails when grep's early exit makes ldd's
        # next write a SIGPIPE)
        deps=$(ldd "$BUILD_DIR/libvkvit.so" 2> /dev/null || true)
        if [[ $deps == *libasan* ]]; then
            echo "gpu_check.sh: $BUILD_DIR/libvkvit.so is an AddressSanitizer build: profile_nodes.py skipped" \
                > "$out/profile_vit5_cifar10_b1.txt"
        else
            run "profile vit5_cifar10 b1" "$out/profile_vit5_cifar10_b1.txt" env VKVIT_LIBRARY="$BUILD_DIR/libvkvit.so" \
                "$py" lab/profile_nodes.py assets/models/vit5_cifar10.vkvit --runs 2
        fi
    elif [ "$quick" = 1 ]; then
        run "torch gemm" "$out/torch_gemm.json" "$py" tools/bench_gemm.py --torch-device "$tdev" --vkvit "$cli" \
            --rounds 3 --shape 4096x4096x4096 --shape 201x384x1536 --shape 51456x1152x384 --json
        run "torch vit5_s b1" "$out/torch_vit5_s_b1.json" "$py" tools/bench_vit5.py --size s --batch 1 \
            --torch-device "$tdev" --precision "$precisions" --rounds 3 --vkvit "$cli" --keep "$out/vit5_s.vkvit" --json
        run "torch vit5_s b256" "$out/torch_vit5_s_b256.json" "$py" tools/bench_vit5.py --size s --batch 256 \
            --torch-device "$tdev" --precision fp32,fp16-math --rounds 2 --vkvit "$cli" --json
        run "torch vit5_b b1" "$out/torch_vit5_b_b1.json" "$py" tools/bench_vit5.py --size b --batch 1 \
            --torch-device "$tdev" --precision fp32,fp16-math --rounds 2 --vkvit "$cli" --json
        run "torch vil_s b1" "$out/torch_vil_s_b1.json" "$py" tools/bench_vil.py --batch 1 \
            --torch-device "$tdev" --precision fp32,fp16-math --rounds 2 --vkvit "$cli" --json
        if [ -f "$out/vit5_s.vkvit" ]; then
            run "sustained vit5_s fp16-math" "$out/sustained_vit5_s_fp16-math.json" "$cli" bench --model \
                "$out/vit5_s.vkvit" --precision fp16-math --duration 30 --json
            # GPU time per node kind (timestamps) at batch 1 and 256, and per node at batch 1: where the next
            # kernel work should go
            for b in 1 256; do
                run "bench vit5_s fp16-math b$b" "$out/bench_vit5_s_fp16-math_b$b.json" "$cli" bench --model \
                    "$out/vit5_s.vkvit" --precision fp16-math --batch "$b" --json
            done
            run "profile vit5_s fp16-math b1" "$out/profile_vit5_s_fp16-math_b1.txt" \
                env VKVIT_LIBRARY="$BUILD_DIR/libvkvit.so" "$py" lab/profile_nodes.py "$out/vit5_s.vkvit" \
                --precision fp16-math --runs 50
            run "startup vit5_s" "$out/startup_vit5_s.md" lab/startup_bench.sh --bin "$BUILD_DIR" \
                --phases "$out/startup_phases.txt" "$out/vit5_s.vkvit"
            case ",$precisions," in *,fp16-math,*)   # the tensor-core path's start-up (its self-check included)
                run "startup vit5_s fp16-math" "$out/startup_vit5_s_fp16-math.md" lab/startup_bench.sh \
                    --bin "$BUILD_DIR" --precision fp16-math --phases "$out/startup_phases.txt" "$out/vit5_s.vkvit" ;;
            esac
            rm -f "$out/vit5_s.vkvit"
        fi
    else
        run "torch gemm" "$out/torch_gemm.json" "$py" tools/bench_gemm.py --torch-device "$tdev" --vkvit "$cli" --json
        for b in 1 64 256; do
            compile=""
            [ "$b" = 1 ] && compile=--compile        # the issue's target: torch.compile at batch 1
            run "torch vit5_s b$b" "$out/torch_vit5_s_b$b.json" "$py" tools/bench_vit5.py --size s --batch "$b" \
                --torch-device "$tdev" $compile --precision "$precisions" --rounds 3 --vkvit "$cli" \
                --keep "$out/vit5_s.vkvit" --json
            run "torch vit5_b b$b" "$out/torch_vit5_b_b$b.json" "$py" tools/bench_vit5.py --size b --batch "$b" \
                --torch-device "$tdev" --precision "$precisions" --rounds 3 --vkvit "$cli" --json
            run "torch vil_s b$b" "$out/torch_vil_s_b$b.json" "$py" tools/bench_vil.py --batch "$b" \
                --torch-device "$tdev" --precision "$precisions" --rounds 3 --vkvit "$cli" --json
        done
        if [ -f "$out/vit5_s.vkvit" ]; then
            for p in ${precisions//,/ }; do
                run "profile vit5_s $p b1" "$out/profile_vit5_s_${p}_b1.txt" env VKVIT_LIBRARY="$BUILD_DIR/libvkvit.so" \
                    "$py" lab/profile_nodes.py "$out/vit5_s.vkvit" --precision "$p" --runs 50
                run "sustained vit5_s $p" "$out/sustained_vit5_s_$p.json" "$cli" bench --model "$out/vit5_s.vkvit" \
                    --precision "$p" --duration 60 --json
            done
            run "startup vit5_s" "$out/startup_vit5_s.md" lab/startup_bench.sh --bin "$BUILD_DIR" \
                --phases "$out/startup_phases.txt" "$out/vit5_s.vkvit"
            case ",$precisions," in *,fp16-math,*)   # the tensor-core path's start-up (its self-check included)
                run "startup vit5_s fp16-math" "$out/startup_vit5_s_fp16-math.md" lab/startup_bench.sh \
                    --bin "$BUILD_DIR" --precision fp16-math --phases "$out/startup_phases.txt" "$out/vit5_s.vkvit" ;;
            esac
            rm -f "$out/vit5_s.vkvit"
        fi
    fi
elif has_part torch; then
    echo "gpu_check.sh: no Python with PyTorch (set PYTHON): side-by-side part skipped" | tee "$out/torch_skipped.txt" >&2
fi

# 5. report.json + report.md
/usr/bin/python3 - "$out" "$dry" "$parts" <<'EOF' || status=1
import glob, json, os, subprocess, sys, xml.etree.ElementTree as ET
out, dry, parts = sys.argv[1], sys.argv[2] == "1", sys.argv[3].split(",")

def text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""

commands = []
for line in text(os.path.join(out, "commands.tsv")).splitlines():
    name, rc, secs, cmd = line.split("\t", 3)
    commands.append({"name": name, "exit_status": int(rc), "seconds": int(secs), "command": cmd})

tests = {"total": 0, "passed": 0, "failed": 0, "skipped": 0, "failing": [], "skipped_names": []}
try:
    for case in ET.parse(os.path.join(out, "ctest.xml")).getroot().iter("testcase"):
        tests["total"] += 1
        st = case.get("status", "")
        if case.find("skipped") is not None or st in ("disabled", "notrun"):
            tests["skipped"] += 1
            tests["skipped_names"].append(case.get("name"))
        elif case.find("failure") is not None or case.find("error") is not None or st == "fail":
            tests["failed"] += 1
            tests["failing"].append(case.get("name"))
        else:
            tests["passed"] += 1
except (OSError, ET.ParseError) as e:
    tests["error"] = "no CTest JUnit output: %s" % e

def json_lines(path):
    rows = []
    for line in text(path).splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows

gemm = json_lines(os.path.join(out, "bench_gemm.jsonl")) + json_lines(os.path.join(out, "bench_gemm_f16.jsonl"))
tiles = [r for p in sorted(glob.glob(os.path.join(out, "bench_gemm_tile_*.jsonl"))) for r in json_lines(p)]
models = []
for p in sorted(glob.glob(os.path.join(out, "bench_*_b*.json"))):
    models.extend(json_lines(p))

def json_file(path):
    try:
        return json.loads(text(path))
    except ValueError:
        return None

torch_gemm = json_file(os.path.join(out, "torch_gemm.json"))
side = {os.path.basename(p)[6:-5]: json_file(p) for p in sorted(glob.glob(os.path.join(out, "torch_*_b*.json")))}
sustained = {os.path.basename(p)[10:-5]: json_file(p) for p in sorted(glob.glob(os.path.join(out, "sustained_*.json")))}
startup = text(os.path.join(out, "startup_vit5_s.md"))
startup_f16 = text(os.path.join(out, "startup_vit5_s_fp16-math.md"))
if startup_f16:   # the same table for fp16-math sessions: its rows only, labelled
    rows = [l for l in startup_f16.splitlines() if l.startswith("| ") and not l.startswith("| model")]
    startup = startup.rstrip() + "\n" + "\n".join(l.replace("| vit5_s |", "| vit5_s (fp16-math) |", 1) for l in rows)
startup_phases = text(os.path.join(out, "startup_phases.txt"))
skipped_torch = text(os.path.join(out, "torch_skipped.txt")).strip()
info = text(os.path.join(out, "info.txt"))
device = next((r["device"] for r in gemm + models if r.get("device")), None)
if device is None:
    device = next((l.split(":", 1)[1].strip() for l in info.splitlines() if l.startswith("device ")), "unknown")
try:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
except OSError:
    commit = ""
env = {k: os.environ.get(k) for k in ("VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_LAYER_PATH", "LD_LIBRARY_PATH",
                                      "VKVIT_DEVICE", "VKVIT_DEB_ROOT") if os.environ.get(k)}
report = {"dry_run": dry, "parts": parts, "device": device, "commit": commit, "environment": env, "tests": tests,
          "commands": commands, "bench_gemm": gemm, "bench_gemm_tiles": tiles, "bench_models": models, "torch_gemm": torch_gemm,
          "side_by_side": side, "sustained": sustained, "startup": startup, "startup_phases": startup_phases,
          "info": info}
tests_ok = tests["failed"] == 0 and tests["total"] > 0 and "error" not in tests
ok = (tests_ok or "tests" not in parts) and all(c["exit_status"] == 0 for c in commands)
report["ok"] = ok
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(report, f, indent=2)

md = ["# vkvit GPU check%s" % (" (dry run)" if dry else ""), "",
      "- device: %s" % device, "- commit: %s" % (commit or "?"),
      "- result: **%s**" % ("pass" if ok else "FAIL"),
      "- tests: %d total, %d passed, %d failed, %d skipped" % (tests["total"], tests["passed"], tests["failed"],
                                                               tests["skipped"])]
if tests["failing"]:
    md.append("- failing: " + ", ".join(tests["failing"]))
if tests.get("error"):
    md.append("- " + tests["error"])
md += ["", "## Commands", "", "| command | status | s |", "|---|---|---|"]
md += ["| `%s` | %d | %d |" % (c["command"].replace("|", "\\|"), c["exit_status"], c["seconds"]) for c in commands]
if gemm:
    md += ["", "## GEMM (`vkvit bench gemm`)", "",
           "| M x N x K | precision | cooperative matrix | median ms | GFLOP/s |", "|---|---|---|---|---|"]
    md += ["| %sx%sx%s | %s | %s | %s | %s |" % (r.get("M"), r.get("N"), r.get("K"), r.get("precision"),
                                               r.get("cooperative_matrix"), r.get("median_ms"), r.get("gflops"))
           for r in gemm]
if tiles:
    md += ["", "## Shared-kernel tiles (`vkvit bench gemm --versus`, medians of 4 alternated rounds)", "",
           "| M x N x K | A tile | A GFLOP/s | B tile | B GFLOP/s | B / A |", "|---|---|---|---|---|---|"]
    tile = lambda t: "%(bm)sx%(bn)sx%(bk)s/%(tm)sx%(tn)s" % t if t else "?"
    md += ["| %sx%sx%s | %s | %s | %s | %s | %s |" % (r.get("M"), r.get("N"), r.get("K"), tile(r["a"].get("tile")),
                                                     r["a"].get("gflops"), tile(r["b"].get("tile")),
                                                     r["b"].get("gflops"), r.get("ratio"))
           for r in tiles if r.get("a") and r.get("b")]
if models:
    md += ["", "## Models (`vkvit bench --model`)", "",
           "| model | batch | precision | median ms | images/s | GFLOP/s | GPU ms |", "|---|---|---|---|---|---|---|"]
    md += ["| %s | %s | %s | %s | %s | %s | %s |" % (os.path.basename(str(r.get("model"))), r.get("batch"),
           r.get("precision"), r.get("median_ms"), r.get("images_per_s"), r.get("gflops"), r.get("gpu_ms"))
           for r in models]
if skipped_torch:
    md += ["", "## Side by side with PyTorch", "", skipped_torch]
if torch_gemm:
    # the measured columns are the dict entries ("vkvit fp32", "torch fp16", ...); the rest are ratios and flags
    names = [k for k, v in torch_gemm["shapes"][0].items() if isinstance(v, dict)]
    md += ["", "## GEMM against torch.matmul (%s, median GFLOP/s of %d rounds)" % (torch_gemm["torch_device"],
           torch_gemm["rounds"]), "", "| M x N x K | " + " | ".join(names) +
           " | vkvit / torch fp32 | vkvit fp16-math / torch fp16 |", "|---" * (len(names) + 3) + "|"]
    ratio = lambda r, k: "%.2fx" % r[k] if isinstance(r.get(k), (int, float)) else "-"
    md += ["| %s | %s | %s | %s |" % (r["shape"], " | ".join("%.1f" % r[n]["median_gflops"] if n in r else "-"
                                                           for n in names),
           ratio(r, "ratio_vkvit_over_torch_fp32"), ratio(r, "ratio_vkvit_f16_over_torch_f16"))
           for r in torch_gemm["shapes"]]
if any(side.values()):
    md += ["", "## Networks against PyTorch (median ms over alternating rounds; x = PyTorch fp32 / vkvit)", "",
           "| model | batch | torch fp32 | torch bf16 | torch.compile | vkvit precision: ms (speed-up) | max rel err |",
           "|---|---|---|---|---|---|---|"]
    for r in side.values():
        if not r:
            continue
        tf = r["torch_fp32_ms"]["median"]
        vk = ", ".join("%s %.2f (%.2fx)" % (p, v["ms"]["median"], tf / v["ms"]["median"]) for p, v in r["vkvit"].items())
        err = ", ".join("%s %.2g" % (p, v["logits_max_rel_err"]) for p, v in r["vkvit"].items())
        md.append("| %s | %s | %.2f | %s | %s | %s | %s |" % (r["model"], r["batch"], tf,
                  "%.2f" % r["torch_bf16_ms"] if "torch_bf16_ms" in r else "-",
                  "%.2f" % r["torch_compile_ms"] if "torch_compile_ms" in r else "-", vk, err))
if any(sustained.values()):
    md += ["", "## Sustained ViT-5-S latency (`vkvit bench --duration 60`)", "", "```"]
    md += ["%s: %s" % (k, json.dumps({x: v.get(x) for x in ("p50_ms", "p99_ms", "max_ms", "runs", "drift")
                                          if isinstance(v, dict)})) for k, v in sustained.items()]
    md += ["```"]
if startup:
    md += ["", "## Start-up (lab/startup_bench.sh)", "", startup.rstrip()]
if startup_phases:
    md += ["", "Where the time goes (`startup_time --log`, each run):", "", "```", startup_phases.rstrip(), "```"]
md += ["", "## vkvit info", "", "```", info.rstrip(), "```", ""]
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(md))
sys.exit(0 if ok else 1)
EOF
echo "gpu_check.sh: $( [ "$status" = 0 ] && echo pass || echo FAIL ), report in $out/report.md"
exit "$status"
