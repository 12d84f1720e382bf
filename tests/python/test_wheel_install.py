# SPDX-License-Identifier: Apache-2.0
"""`pip install ./python` in a fresh venv gives an importable vkvit that carries its own libvkvit.so.

The wheel is built by python/_vkvit_build/backend.py (pip's build isolation on, --no-index: nothing may be
downloaded), installed into a venv made in a temporary folder (--system-site-packages, for numpy), and imported by
the venv's python from another folder with VKVIT_LIBRARY and PYTHONPATH unset: it must load the bundled library and
list the Vulkan devices. The library put into the wheel is $VKVIT_LIBRARY (CTest's build/libvkvit.so) so that the
test does not compile vkvit a second time; VKVIT_TEST_WHEEL_CMAKE=1 makes the backend build it with CMake instead
(a few minutes on 2 cores). Skipped, with the reason, when venv / ensurepip is missing.
"""

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY_DIR = os.path.join(ROOT, "python")
sys.path.insert(0, PY_DIR)

from _vkvit_build import backend  # noqa: E402


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("VKVIT_LIBRARY", "PYTHONPATH", "PYTHONHOME")}
    env.update(extra)
    return env


def _run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(cmd)} exited with {r.returncode}:\n{r.stdout[-4000:]}"
    return r.stdout


def test_toml_subset_reader_agrees_with_tomllib():
    """The backend's fallback reader (Python < 3.11) reads python/pyproject.toml as tomllib does."""
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(PY_DIR, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    assert backend._parse_toml_subset(text) == tomllib.loads(text)


def test_wheel_installs_and_loads_its_own_library():
    with tempfile.TemporaryDirectory(prefix="vkvit-wheel-test-") as tmp:
        venv = os.path.join(tmp, "venv")
        r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot make a venv with pip ({sys.executable} -m venv: python3-venv missing?): "
                        f"{r.stdout.strip()[-300:]}")
        vpy = os.path.join(venv, "bin", "python")
        if subprocess.run([vpy, "-c", "import numpy"], capture_output=True).returncode != 0:
            pytest.skip("numpy is not importable in a --system-site-packages venv, and the wheel needs it "
                        "(nothing may be downloaded)")

        lib = os.environ.get("VKVIT_LIBRARY")
        env = _clean_env()
        if os.environ.get("VKVIT_TEST_WHEEL_CMAKE") == "1" or not lib:
            env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
            print("wheel: libvkvit.so built by the backend with CMake")
        else:
            env["VKVIT_WHEEL_LIBRARY"] = lib
            print(f"wheel: libvkvit.so from VKVIT_LIBRARY={lib}")
        before = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--ignored", "python"],
                                capture_output=True, text=True).stdout
        wheels = os.path.join(tmp, "wheels")
        _run([vpy, "-m", "pip", "wheel", "--no-index", "--no-deps", "-w", wheels, PY_DIR], env=env, cwd=tmp)
        after = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--ignored", "python"],
                               capture_output=True, text=True).stdout
        assert before == after, f"building the wheel wrote into python/:\n{after}"

        (whl,) = [os.path.join(wheels, f) for f in os.listdir(wheels)]
        project = backend._project()
        with zipfile.ZipFile(whl) as z:
            names = set(z.namelist())
            dist_info = f"vkvit-{project['version']}.dist-info"
            for want in ("vkvit/__init__.py", "vkvit/_lib.py", "vkvit/py.typed", "vkvit/libvkvit.so",
                         f"{dist_info}/METADATA", f"{dist_info}/WHEEL", f"{dist_info}/RECORD",
                         f"{dist_info}/LICENSE"):
                assert want in names, f"{whl} has no {want}"
            assert z.read("vkvit/libvkvit.so")[:4] == b"\x7fELF"
            meta = z.read(f"{dist_info}/METADATA").decode()
            assert f"Version: {project['version']}\n" in meta and "License: Apache-2.0\n" in meta
            rows = list(csv.reader(io.StringIO(z.read(f"{dist_info}/RECORD").decode())))
            for name, digest, size in rows:
                if name.endswith("/RECORD"):
                    continue
                data = z.read(name)
                want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert digest == want and int(size) == len(data), f"RECORD is wrong for {name}"
            assert {r[0] for r in rows} == names

        _run([vpy, "-m", "pip", "install", "--no-index", "--no-deps", whl], env=env, cwd=tmp)
        probe = ("import json, vkvit, vkvit._lib as l\n"
                 "lib = l.load()\n"
                 "print(json.dumps({'file': vkvit.__file__, 'lib': lib.path,"
                 " 'devices': [d['name'] for d in vkvit.devices()]}))\n")
        elsewhere = os.path.join(tmp, "elsewhere")
        os.mkdir(elsewhere)
        for extra in ({}, {"VKVIT_LIBRARY": os.path.join(tmp, "no-such-libvkvit.so")}):
            out = json.loads(_run([vpy, "-c", probe], env=_clean_env(**extra), cwd=elsewhere).splitlines()[-1])
            site = os.path.realpath(venv)
            assert os.path.realpath(out["file"]).startswith(site), f"vkvit imported from {out['file']}, not the venv"
            assert os.path.realpath(out["lib"]) == os.path.join(os.path.realpath(os.path.dirname(out["file"])),
                                                                 "libvkvit.so"), out
            print(f"installed vkvit ({extra or 'VKVIT_LIBRARY unset'}): {out}")
            assert isinstance(out["devices"], list)
