#!/usr/bin/env bash
# One command for a machine with a GPU (docs/gpu.md): the whole CTest suite with the validation layer on the default
# Vulkan device, then `vkvit info`, `vkvit bench gemm` and `vkvit bench --model` for every bundled model at batch 1
# and 8, written to OUTDIR/report.json and OUTDIR/report.md (raw logs and JSON lines next to them).
#
#   tools/gpu_check.sh OUTDIR             the full check (expects a built tree: tools/setup.sh --test-deps)
#   tools/gpu_check.sh --dry-run OUTDIR   a small subset of tests and one tiny GEMM bench (lavapipe, CI)
#
# Environment:
#   BUILD_DIR        build tree (default build)
#   CTEST_JOBS       parallel tests (default 4; validation-heavy tests are memory hungry)
#   VKVIT_DEB_ROOT   a directory where Debian packages were unpacked (dpkg-deb -x X.deb DIR): its Vulkan loader
#                    and validation layer are used (LD_LIBRARY_PATH, VK_LAYER_PATH are set from it)
#   VK_DRIVER_FILES, VK_LAYER_PATH, LD_LIBRARY_PATH, VKVIT_DEVICE: passed through (recorded in the report)
# Exit status: 0 when every test passed and every command succeeded, 1 otherwise, 2 on a usage error.
set -uo pipefail
cd "$(dirname "$0")/.."

dry=0
out=""
for arg in "$@"; do
    case "$arg" in
        --dry-run) dry=1 ;;
        -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "gpu_check.sh: unknown option $arg" >&2; exit 2 ;;
        *) [ -z "$out" ] || { echo "gpu_check.sh: one OUTDIR only" >&2; exit 2; }; out=$arg ;;
    esac
done
[ -n "$out" ] || { echo "usage: tools/gpu_check.sh [--dry-run] OUTDIR" >&2; exit 2; }
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
if [ "$dry" = 1 ]; then
    run ctest "$out/ctest.log" env VKVIT_VALIDATION=1 ctest --test-dir "$BUILD_DIR" -j2 --output-on-failure --output-junit "$(realpath "$out")/ctest.xml" \
        -R '^(test_plan|test_topk|test_spirv)$'
else
    run ctest "$out/ctest.log" env VKVIT_VALIDATION=1 ctest --test-dir "$BUILD_DIR" -j"$jobs" --output-on-failure --output-junit "$(realpath "$out")/ctest.xml" \
        -E '^test_gpu_check'
fi

# 2. The device and what vkvit uses on it.
run info "$out/info.txt" "$cli" info

# 3. Benchmarks (JSON lines).
if [ "$dry" = 1 ]; then
    run bench_gemm "$out/bench_gemm.jsonl" "$cli" bench gemm --shape 64x64x64 --repeat 2 --warmup 1 --json
else
    run bench_gemm "$out/bench_gemm.jsonl" "$cli" bench gemm --json
    for m in assets/models/*.vkvit; do
        [ -f "$m" ] || continue
        for b in 1 8; do
            run "bench $(basename "$m" .vkvit) b$b" "$out/bench_$(basename "$m" .vkvit)_b$b.json" \
                "$cli" bench --model "$m" --batch "$b" --json
        done
    done
fi

# 4. report.json + report.md
/usr/bin/python3 - "$out" "$dry" <<'EOF' || status=1
import glob, json, os, subprocess, sys, xml.etree.ElementTree as ET
out, dry = sys.argv[1], sys.argv[2] == "1"

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

gemm = json_lines(os.path.join(out, "bench_gemm.jsonl"))
models = []
for p in sorted(glob.glob(os.path.join(out, "bench_*_b*.json"))):
    models.extend(json_lines(p))

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
report = {"dry_run": dry, "device": device, "commit": commit, "environment": env, "tests": tests,
          "commands": commands, "bench_gemm": gemm, "bench_models": models, "info": info}
ok = tests["failed"] == 0 and tests["total"] > 0 and "error" not in tests and \
     all(c["exit_status"] == 0 for c in commands)
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
    md += ["", "## GEMM (`vkvit bench gemm`)", "", "| M x N x K | median ms | GFLOP/s |", "|---|---|---|"]
    md += ["| %sx%sx%s | %s | %s |" % (r.get("M"), r.get("N"), r.get("K"), r.get("median_ms"), r.get("gflops"))
           for r in gemm]
if models:
    md += ["", "## Models (`vkvit bench --model`)", "",
           "| model | batch | precision | median ms | images/s | GFLOP/s | GPU ms |", "|---|---|---|---|---|---|---|"]
    md += ["| %s | %s | %s | %s | %s | %s | %s |" % (os.path.basename(str(r.get("model"))), r.get("batch"),
           r.get("precision"), r.get("median_ms"), r.get("images_per_s"), r.get("gflops"), r.get("gpu_ms"))
           for r in models]
md += ["", "## vkvit info", "", "```", info.rstrip(), "```", ""]
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(md))
sys.exit(0 if ok else 1)
EOF
echo "gpu_check.sh: $( [ "$status" = 0 ] && echo pass || echo FAIL ), report in $out/report.md"
exit "$status"
