# SPDX-License-Identifier: Apache-2.0
"""tools/convert.py without PyTorch (issue 57): --help and usage errors answer without importing torch, and a
conversion on a Python that has no torch says so in a sentence (exit 2), not with a traceback. A file that is not
a checkpoint gets a sentence too (with torch: tests/format/test_convert.py covers text, empty and junk files; here
a zip archive and a plain pickle, which reach torch's own loader).

torch is blocked by sys.modules["torch"] = None, which makes `import torch` raise ImportError whether or not it is
installed; each run also reports whether torch (or tools/vkvit_file.py, which imports it) was imported at all."""

import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONVERT = os.path.join(ROOT, "tools", "convert.py")

# Runs convert.py as __main__ with torch blocked, then prints whether torch / vkvit_file got imported.
_BLOCKED = r"""
import runpy, sys
sys.modules["torch"] = None
sys.argv = [sys.argv[1]] + sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    code = e.code
else:
    code = 0
sys.stderr.write("\nIMPORTED torch=%s vkvit_file=%s\n" % (sys.modules.get("torch") is not None,
                                                           "vkvit_file" in sys.modules))
sys.exit(code)
"""


def run_blocked(*args):
    p = subprocess.run([sys.executable, "-c", _BLOCKED, CONVERT, *map(str, args)], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_help_without_torch():
    rc, out, err = run_blocked("--help")
    assert rc == 0, err
    assert "usage: convert.py" in out and "Sources" in out and "docs/model-format.md" in out, out
    assert "IMPORTED torch=False vkvit_file=False" in err, err
    assert "Traceback" not in err, err


def test_usage_error_without_torch():
    rc, _, err = run_blocked("model.pth", "-o", "out.vkvit", "--frobnicate")
    assert rc == 1 and "unrecognized arguments" in err and "Traceback" not in err, err
    rc, _, err = run_blocked("model.pth")
    assert rc == 1 and "-o/--output" in err and "Traceback" not in err, err


def test_conversion_without_torch_is_a_sentence(tmp_path):
    src = tmp_path / "model.pth"
    src.write_bytes(b"not really a checkpoint")
    rc, _, err = run_blocked(src, "-o", tmp_path / "out.vkvit")
    assert rc == 2, err
    assert "converting a checkpoint needs PyTorch" in err and "Traceback" not in err, err
    assert not (tmp_path / "out.vkvit").exists()


def _torch_python():
    """/usr/bin/python3 when it has torch (Debian's python3-torch), else None."""
    try:
        p = subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return "/usr/bin/python3" if p.returncode == 0 else None


def test_not_a_checkpoint_with_torch(tmp_path):
    py = _torch_python()
    if py is None:
        pytest.skip("no Python with PyTorch (/usr/bin/python3 + python3-torch)")
    zipped = tmp_path / "photos.pth"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("cat.txt", "meow")
    import pickle
    pickled = tmp_path / "numbers.pkl"
    pickled.write_bytes(pickle.dumps({"lr": 0.1, "epoch": 3}))
    for src, expect in ((zipped, "is not a PyTorch checkpoint"), (pickled, "is not a PyTorch checkpoint")):
        p = subprocess.run([py, CONVERT, str(src), "-o", str(tmp_path / "out.vkvit")], capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 2, (src, p.stderr)
        assert expect in p.stderr and "Traceback" not in p.stderr, (src, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
