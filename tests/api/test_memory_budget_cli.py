#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`vkvit info` and `vkvit bench` report the memory heaps and budgets (VK_EXT_memory_budget; include/vkvit.h
vkvit_memory_heap):
  - `info --json`: every device has "memory_budget" (a bool) and "memory_heaps", at least one, each with index,
    size > 0, device_local, budget in (0, size] and usage (a number with the extension, null without it, and then
    budget == size); the largest device-local heap is device_local_bytes;
  - `info` (text): one "memory heap N" line per heap, with "budget ... in use" or "budget: not reported by the
    driver";
  - `bench --json` on a golden model: the same heaps with their budget and usage before and after the sessions;
    with the extension usage_after >= usage_before + weight_bytes + arena_bytes; text mode prints a "heap" line.

Run from the repository root:  /usr/bin/python3 tests/api/test_memory_budget_cli.py
Exit status: 0 passed, 1 failed, 77 skipped (the CLI is not built, or no Vulkan device).
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/: cli_checks
from cli_checks import CLI, ROOT, check, run, summary

GOLDEN = os.path.join(ROOT, "tests", "golden", "models", "vil_seed.vkvit")


def check_heaps(where, d):
    check(isinstance(d.get("memory_budget"), bool), f"{where}: memory_budget {d.get('memory_budget')!r}")
    heaps = d.get("memory_heaps") or []
    check(len(heaps) >= 1, f"{where}: no memory_heaps")
    for i, h in enumerate(heaps):
        check(h.get("index") == i and h.get("size", 0) > 0 and isinstance(h.get("device_local"), bool),
              f"{where}: heap {i}: {h}")
    return heaps


def test_info():
    rc, out, err = run(["info", "--json"])
    check(rc == 0, f"info --json: exit {rc}: {err}")
    doc = json.loads(out)
    for dev in doc["devices"]:
        where = f"info device {dev['index']}"
        heaps = check_heaps(where, dev)
        for h in heaps:
            check(0 < h["budget"] <= h["size"], f"{where}: heap {h['index']} budget {h['budget']} size {h['size']}")
            if dev["memory_budget"]:
                check(isinstance(h["usage"], (int, float)) and h["usage"] >= 0, f"{where}: usage {h['usage']!r}")
            else:
                check(h["usage"] is None and h["budget"] == h["size"], f"{where}: without the extension: {h}")
        local = [h["size"] for h in heaps if h["device_local"]]
        check(not local or max(local) == dev["device_local_bytes"],
              f"{where}: largest device-local heap {max(local) if local else 0} != {dev['device_local_bytes']}")
        print(f"{where}: memory_budget {dev['memory_budget']}, heaps {heaps}")
    rc, out, err = run(["info"])
    check(rc == 0, f"info: exit {rc}: {err}")
    lines = [l for l in out.splitlines() if l.strip().startswith("memory heap ")]
    n_heaps = sum(len(d["memory_heaps"]) for d in doc["devices"])
    check(len(lines) == n_heaps, f"info: {len(lines)} heap lines, want {n_heaps}: {lines}")
    for l in lines:
        check("in use" in l or "budget: not reported by the driver" in l, f"info heap line: {l!r}")


def test_bench():
    rc, out, err = run(["bench", "--model", GOLDEN, "--repeat", "1", "--warmup", "0", "--json"])
    check(rc == 0, f"bench --json: exit {rc}: {err}")
    if rc != 0:
        return
    doc = json.loads(out)
    heaps = check_heaps("bench", doc)
    for h in heaps:
        for k in ("budget_before", "budget_after"):
            check(0 < h[k] <= h["size"], f"bench heap {h['index']}: {k} {h[k]} size {h['size']}")
        if not doc["memory_budget"]:
            check(h["usage_before"] is None and h["usage_after"] is None, f"bench heap without the extension: {h}")
    if doc["memory_budget"]:
        grew = sum(h["usage_after"] - h["usage_before"] for h in heaps)
        want = doc["weight_bytes"] + doc["arena_bytes"]
        check(grew >= want, f"bench: usage grew by {grew} bytes, the session holds {want}")
    print(f"bench: memory_budget {doc['memory_budget']}, heaps {heaps}")
    rc, out, err = run(["bench", "--model", GOLDEN, "--repeat", "1", "--warmup", "0"])
    check(rc == 0 and any(l.startswith("heap ") for l in out.splitlines()), f"bench text: exit {rc}: {out}{err}")


def main():
    if not os.path.exists(CLI):
        print(f"SKIP: {CLI} is not built")
        return 77
    rc, out, err = run(["info"])
    if rc == 3:
        print(f"SKIP: no Vulkan device: {err.strip()}")
        return 77
    test_info()
    test_bench()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
