# SPDX-License-Identifier: Apache-2.0
"""One version everywhere (issue 57): project(vkvit VERSION ...) in CMakeLists.txt (the soname's major), the
VKVIT_VERSION_* macros of include/vkvit.h, python/pyproject.toml, vkvit.__version__, the newest release heading of
CHANGELOG.md, the built library's file name and SONAME, and the git tag v<version> where the clone has tags
(an annotated tag: `git tag -a`). CMake already refuses to configure when the first three disagree; this holds
the rest to them."""

import os
import re
import shutil
import subprocess

import pytest
import vkvit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def project_version():
    m = re.search(r"^project\(vkvit VERSION (\d+\.\d+\.\d+)", read("CMakeLists.txt"), re.M)
    assert m, "CMakeLists.txt: no project(vkvit VERSION x.y.z)"
    return m.group(1)


def test_sources_agree():
    version = project_version()
    header = read("include", "vkvit.h")
    parts = [re.search(rf"^#define VKVIT_VERSION_{p} (\d+)", header, re.M) for p in ("MAJOR", "MINOR", "PATCH")]
    assert all(parts), "include/vkvit.h: VKVIT_VERSION_MAJOR / _MINOR / _PATCH"
    assert ".".join(m.group(1) for m in parts) == version
    py = re.search(r'^version = "([^"]+)"', read("python", "pyproject.toml"), re.M)
    assert py and py.group(1) == version, f"python/pyproject.toml {py and py.group(1)} != {version}"
    assert vkvit.__version__ == version, f"vkvit.__version__ {vkvit.__version__} != {version}"


def test_changelog_names_the_version():
    """The newest release heading (`## x.y.z (date)`, below `## Unreleased`) is the version being built."""
    version = project_version()
    releases = re.findall(r"^## (\d+\.\d+\.\d+) \(\d{4}-\d{2}-\d{2}\)$", read("CHANGELOG.md"), re.M)
    assert releases, "CHANGELOG.md has no '## x.y.z (YYYY-MM-DD)' release heading"
    assert releases[0] == version, f"CHANGELOG.md's newest release is {releases[0]}, the version is {version}"
    assert "Releases are tagged `v<version>`" in read("CHANGELOG.md")


def test_library_soname():
    path = os.path.realpath(vkvit.library_path())
    version = project_version()
    major = version.split(".")[0]
    if os.path.basename(path).startswith("libvkvit.so."):
        assert os.path.basename(path) == f"libvkvit.so.{version}", path
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf to read the SONAME")
    dyn = subprocess.run([readelf, "-d", path], capture_output=True, text=True, check=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    assert m and m.group(1) == f"libvkvit.so.{major}", f"{path}: SONAME {m and m.group(1)}"


def test_git_tag_if_present():
    if shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    tag = "v" + project_version()
    tags = subprocess.run(["git", "-C", ROOT, "tag", "-l", "v*"], capture_output=True, text=True).stdout.split()
    if tag not in tags:
        pytest.skip(f"this clone has no tag {tag} (a shallow or tagless clone)")
    kind = subprocess.run(["git", "-C", ROOT, "cat-file", "-t", tag], capture_output=True, text=True).stdout.strip()
    assert kind == "tag", f"{tag} is a lightweight tag ({kind}); release tags are annotated (git tag -a)"
    for t in tags:  # every release tag names a version of the changelog
        if re.fullmatch(r"v\d+\.\d+\.\d+", t):
            assert f"## {t[1:]} (" in read("CHANGELOG.md"), f"tag {t} has no CHANGELOG.md heading"
