"""The hooks as a team uses them: the real `pre-commit` runs this repository's hooks in a scratch git repo."""

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from needs import need

ROOT = Path(__file__).resolve().parents[1]

HAZARD = b"""#include <hip/hip_runtime.h>
__global__ void count(const float *x, int *out) {
  unsigned lane = threadIdx.x & 31;
  if (lane == 0) atomicAdd(out, __popcll(__ballot(x[threadIdx.x] > 0)));
}
"""
FIXED = HAZARD.replace(b"threadIdx.x & 31", b"threadIdx.x % warpSize")
SUPPRESSED = HAZARD.replace(b"& 31;", b"& 31;  // hipport: ignore[lane-math-32]")
CUDA = b"#include <cuda_runtime.h>\nvoid f(float *p) { cudaFree(p); }\n"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"})


@pytest.fixture(scope="module")
def hook_source(tmp_path_factory):
    """This repository at a commit: pre-commit installs hooks from a repository and a revision. Uncommitted work
    is committed to a scratch clone so the test exercises the code under test, not the last commit."""
    need(shutil.which("git"), "git", "apt-get install git")
    src = tmp_path_factory.mktemp("hooksrc") / "hipport"
    junk = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis")

    def ignore(directory, names):
        # setuptools' top-level build/ is output; a package named build (hipport/convert/build) is source.
        return junk(directory, names) | ({"build"} if Path(directory) == ROOT else set())

    shutil.copytree(ROOT, src, ignore=ignore)
    _git(src, "init", "-q")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "hooks under test")
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True).stdout.strip()
    return src, rev


def _precommit(repo: Path, home: Path, *args: str):
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "HIPPORT_HIPIFY_PERL": "off"}
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, capture_output=True, text=True,
                          env=env, timeout=900)


@pytest.fixture(scope="module")
def project(tmp_path_factory, hook_source):
    need(importlib.util.find_spec("pre_commit"), "pre-commit", "pip install .[test]")
    src, rev = hook_source
    repo = tmp_path_factory.mktemp("team") / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {src}\n    rev: {rev}\n    hooks:\n      - id: hipport-audit\n"
        f"      - id: hipport-convert\n        files: ^hip/\n")
    (repo / "hip").mkdir()
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "start")
    return repo, tmp_path_factory.mktemp("pre-commit-home")


def test_audit_hook_fails_on_new_hazard_then_passes_after_fix_or_suppression(project):
    repo, home = project
    kernel = repo / "kernel.cu"
    kernel.write_bytes(HAZARD)
    _git(repo, "add", "kernel.cu")
    r = _precommit(repo, home, "run", "hipport-audit", "--files", "kernel.cu")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "lane-math-32" in r.stdout
    for good in (FIXED, SUPPRESSED):
        kernel.write_bytes(good)
        _git(repo, "add", "kernel.cu")
        r = _precommit(repo, home, "run", "hipport-audit", "--files", "kernel.cu")
        assert r.returncode == 0, r.stdout + r.stderr


def test_convert_hook_rewrites_and_fails_once_then_passes(project):
    repo, home = project
    path = repo / "hip" / "legacy.cu"
    path.write_bytes(CUDA)
    _git(repo, "add", "hip/legacy.cu")
    r = _precommit(repo, home, "run", "hipport-convert", "--files", "hip/legacy.cu")
    assert r.returncode == 1, r.stdout + r.stderr
    assert path.read_bytes() == b"#include <hip/hip_runtime.h>\nvoid f(float *p) { hipFree(p); }\n"
    _git(repo, "add", "hip/legacy.cu")
    r = _precommit(repo, home, "run", "hipport-convert", "--files", "hip/legacy.cu")
    assert r.returncode == 0, r.stdout + r.stderr
