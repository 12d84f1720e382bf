# SPDX-License-Identifier: Apache-2.0
"""PEP 517 build backend of the vkvit Python package, in-tree (python/pyproject.toml: backend-path).

`pip install ./python` must work offline, in a fresh venv, with pip's build isolation on: a backend such as
setuptools would be installed into the isolated build environment from the index (and setuptools < 70 needs the
`wheel` package besides), so this one needs nothing but the standard library. It writes the wheel itself: the
binding's modules (python/vkvit/*.py, py.typed), libvkvit.so, the licence, METADATA from pyproject.toml's
[project] table, WHEEL and RECORD.

libvkvit.so comes from, in order:
  - $VKVIT_WHEEL_LIBRARY: an already-built libvkvit.so (e.g. build/libvkvit.so: tests/python/test_wheel_install.py
    uses it so as not to build the library a second time);
  - a CMake build of the source tree this package sits in (python/..), in a temporary folder removed afterwards:
    only the library target, no tests, tools or examples; nothing is written into the source tree.
    $CMAKE_BUILD_PARALLEL_LEVEL sets the jobs (default: the CPU count), $VKVIT_WHEEL_CMAKE_ARGS adds configure
    options (split on spaces).

The wheel is tagged py3-none-<platform> (libvkvit.so is native code; the modules are version-independent).
`pip install -e ./python` (PEP 660) installs a .pth file naming python/, so the binding is imported from the tree
and finds build/libvkvit.so there (vkvit/_lib.py). The sdist holds the binding only: building a wheel from it needs
$VKVIT_WHEEL_LIBRARY.
"""

from __future__ import annotations

import base64
import csv
import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

_PY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # python/
_REPO_DIR = os.path.dirname(_PY_DIR)


class BuildError(RuntimeError):
    pass


# ------------------------------------------------------------------------------------------------------------
# pyproject.toml's [project] table: tomllib where Python has it (3.11+); else a reader of the subset the file uses
# (strings, arrays of strings, inline tables of strings, [table] headers).
# ------------------------------------------------------------------------------------------------------------

def _parse_toml_subset(text: str) -> dict:
    doc: dict = {}
    table = doc
    pending = ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if pending:
            line, pending = pending + " " + line, ""
        if not line:
            continue
        if line.startswith("[") and "=" not in line:
            table = doc
            for part in re.findall(r'"[^"]*"|[^.\[\]\s]+', line.strip("[]")):
                table = table.setdefault(part.strip('"'), {})
            continue
        if line.count("[") > line.count("]") or line.count("{") > line.count("}"):
            pending = line
            continue
        key, _, value = line.partition("=")
        table[key.strip().strip('"')] = _toml_value(value.strip())
    return doc


def _toml_value(v: str):
    if v.startswith('"'):
        return v[1:-1]
    if v.startswith("["):
        return [s[1:-1] for s in re.findall(r'"[^"]*"', v)]
    if v.startswith("{"):
        return {k: s for k, s in re.findall(r'(\w[\w-]*)\s*=\s*"([^"]*)"', v)}
    raise BuildError(f"python/pyproject.toml: value {v!r} is not one this backend reads (string, array, table)")


def _project() -> dict:
    path = os.path.join(_PY_DIR, "pyproject.toml")
    with open(path, "rb") as f:
        data = f.read()
    try:
        import tomllib
        doc = tomllib.loads(data.decode("utf-8"))
    except ImportError:
        doc = _parse_toml_subset(data.decode("utf-8"))
    project = doc.get("project")
    if not project or "name" not in project or "version" not in project:
        raise BuildError(f"{path} has no [project] table with a name and a version")
    return project


def _dist_name(project: dict) -> str:
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project: dict) -> str:
    out = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if "description" in project:
        out.append(f"Summary: {project['description']}")
    lic = project.get("license")
    if isinstance(lic, dict) and "text" in lic:
        out.append(f"License: {lic['text']}")
    out.append("License-File: LICENSE")
    if "requires-python" in project:
        out.append(f"Requires-Python: {project['requires-python']}")
    for req in project.get("dependencies", []):
        out.append(f"Requires-Dist: {req}")
    for extra, reqs in project.get("optional-dependencies", {}).items():
        out.append(f"Provides-Extra: {extra}")
        for req in reqs:
            out.append(f'Requires-Dist: {req}; extra == "{extra}"')
    body = ""
    readme = project.get("readme")
    if isinstance(readme, str) and os.path.exists(os.path.join(_PY_DIR, readme)):
        out.append("Description-Content-Type: text/markdown")
        with open(os.path.join(_PY_DIR, readme), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(out) + "\n" + body


def _licence_bytes() -> bytes:
    for path in (os.path.join(_REPO_DIR, "LICENSE"), os.path.join(_PY_DIR, "LICENSE")):
        if os.path.exists(path):
            with open(path, "rb") as f:
                return f.read()
    return b"Apache-2.0: https://www.apache.org/licenses/LICENSE-2.0\n"


# ------------------------------------------------------------------------------------------------------------
# libvkvit.so
# ------------------------------------------------------------------------------------------------------------

def _built_library(tmp: str) -> str:
    given = os.environ.get("VKVIT_WHEEL_LIBRARY")
    if given:
        if not os.path.isfile(given):
            raise BuildError(f"VKVIT_WHEEL_LIBRARY={given} is not a file")
        return given
    if not (os.path.exists(os.path.join(_REPO_DIR, "CMakeLists.txt"))
            and os.path.exists(os.path.join(_REPO_DIR, "include", "vkvit.h"))):
        raise BuildError(f"{_PY_DIR} is not inside a vkvit source tree (no ../CMakeLists.txt), so libvkvit.so "
                         "cannot be built: set VKVIT_WHEEL_LIBRARY to a built libvkvit.so")
    cmake = shutil.which("cmake")
    if cmake is None:
        raise BuildError("cmake not found: it builds libvkvit.so for the wheel (or set VKVIT_WHEEL_LIBRARY to a "
                         "built libvkvit.so)")
    build = os.path.join(tmp, "cmake-build")
    configure = [cmake, "-S", _REPO_DIR, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DVKVIT_BUILD_TESTS=OFF",
                 "-DVKVIT_BUILD_TOOLS=OFF", "-DVKVIT_BUILD_EXAMPLES=OFF", "-DVKVIT_INSTALL=OFF"]
    configure += os.environ.get("VKVIT_WHEEL_CMAKE_ARGS", "").split()
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    for cmd in (configure, [cmake, "--build", build, "--target", "vkvit", "-j", jobs]):
        print("vkvit wheel: " + " ".join(cmd), file=sys.stderr)
        r = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0:
            raise BuildError(f"{' '.join(cmd)} failed (exit {r.returncode}); see its output above")
    lib = os.path.join(build, "libvkvit.so")
    if not os.path.exists(lib):
        raise BuildError(f"the CMake build made no {lib}")
    return lib


# ------------------------------------------------------------------------------------------------------------
# Wheel writing
# ------------------------------------------------------------------------------------------------------------

def _platform_tag() -> str:
    return re.sub(r"[-.]", "_", sysconfig.get_platform())


def _wheel_file(tag: str) -> str:
    return "\n".join(["Wheel-Version: 1.0", "Generator: vkvit _vkvit_build.backend", "Root-Is-Purelib: false",
                      f"Tag: {tag}", ""])


class _WheelWriter:
    def __init__(self, path: str, dist_info: str):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.dist_info = dist_info
        self.records = []

    def add(self, arcname: str, data: bytes, executable: bool = False):
        info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))   # reproducible: no build-time date
        info.external_attr = (0o755 if executable else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
        self.records.append((arcname, f"sha256={digest}", str(len(data))))

    def close(self):
        record = f"{self.dist_info}/RECORD"
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        for row in self.records:
            w.writerow(row)
        w.writerow((record, "", ""))
        info = zipfile.ZipInfo(record, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        self.zip.writestr(info, buf.getvalue())
        self.zip.close()


def _package_files() -> list:
    pkg = os.path.join(_PY_DIR, "vkvit")
    files = sorted(glob.glob(os.path.join(pkg, "*.py"))) + [os.path.join(pkg, "py.typed")]
    return [f for f in files if os.path.exists(f)]


def _write_dist_info(add, project: dict, dist_info: str, tag: str):
    add(f"{dist_info}/METADATA", _metadata(project).encode("utf-8"))
    add(f"{dist_info}/WHEEL", _wheel_file(tag).encode("utf-8"))
    add(f"{dist_info}/LICENSE", _licence_bytes())
    add(f"{dist_info}/top_level.txt", b"vkvit\n")


def _build(wheel_directory: str, editable: bool) -> str:
    project = _project()
    name, version = _dist_name(project), project["version"]
    tag = "py3-none-any" if editable else f"py3-none-{_platform_tag()}"
    dist_info = f"{name}-{version}.dist-info"
    filename = f"{name}-{version}-{tag}.whl"
    path = os.path.join(wheel_directory, filename)
    with tempfile.TemporaryDirectory(prefix="vkvit-wheel-") as tmp:
        w = _WheelWriter(path, dist_info)
        try:
            if editable:
                w.add(f"__editable__.{name}.pth", (_PY_DIR + "\n").encode("utf-8"))
            else:
                for f in _package_files():
                    with open(f, "rb") as fh:
                        w.add("vkvit/" + os.path.basename(f), fh.read())
                with open(_built_library(tmp), "rb") as fh:          # the real file behind any symlink
                    w.add("vkvit/libvkvit.so", fh.read(), executable=True)
            _write_dist_info(w.add, project, dist_info, tag)
        except BaseException:
            w.zip.close()
            os.unlink(path)
            raise
        w.close()
    return filename


# ------------------------------------------------------------------------------------------------------------
# PEP 517 / 660 hooks
# ------------------------------------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    dist_info = f"{_dist_name(project)}-{project['version']}.dist-info"

    def add(arcname, data, executable=False):
        target = os.path.join(metadata_directory, *arcname.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)

    _write_dist_info(add, project, dist_info, f"py3-none-{_platform_tag()}")
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = f"{_dist_name(project)}-{project['version']}"
    path = os.path.join(sdist_directory, base + ".tar.gz")

    def add(tar, arcname, data):
        info = tarfile.TarInfo(f"{base}/{arcname}")
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in ["pyproject.toml", "README.md", "_vkvit_build/__init__.py", "_vkvit_build/backend.py"]:
            full = os.path.join(_PY_DIR, rel)
            if os.path.exists(full):
                with open(full, "rb") as f:
                    add(tar, rel, f.read())
        for f in _package_files():
            with open(f, "rb") as fh:
                add(tar, "vkvit/" + os.path.basename(f), fh.read())
        add(tar, "LICENSE", _licence_bytes())
        add(tar, "PKG-INFO", _metadata(project).encode("utf-8"))
    return os.path.basename(path)
