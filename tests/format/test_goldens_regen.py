# SPDX-License-Identifier: Apache-2.0
"""CTest: the committed goldens under tests/golden/ are exactly what tools/reference/make_goldens.py writes.

Run from the repository root as `/usr/bin/python3 tests/format/test_goldens_regen.py`.
Exit codes: 0 identical, 1 different (or the generator failed), 77 skipped (PyTorch is not importable).
"""

import importlib
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATOR = os.path.join(REPO, "tools", "reference", "make_goldens.py")


def main() -> int:
    try:
        importlib.import_module("torch")
    except ImportError:
        print("SKIP: torch is not importable by this interpreter; goldens not checked")
        return 77
    result = subprocess.run([sys.executable, GENERATOR, "--check"], cwd=REPO)
    if result.returncode == 0:
        print("goldens are up to date")
        return 0
    print(f"FAIL: make_goldens.py --check exited with {result.returncode}; regenerate with "
          f"`/usr/bin/python3 tools/reference/make_goldens.py` and review the diff")
    return 1


if __name__ == "__main__":
    sys.exit(main())
