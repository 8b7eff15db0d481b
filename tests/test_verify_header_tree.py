"""`--verify` without ROCm installed (issue 22): against a ROCm include tree with a clang the user names
(`--hip-include DIR --clang PATH`), or with a hipcc named by path (`--hipcc PATH`), each also a setting; `doctor`
says what `--verify` would use. The real checks run against `../shared/rocm-6.2.2` (ROCm 6.2.2's headers) and
Debian's clang++-15."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from needs import need

from hipport.convert.verify import ToolchainError, find_toolchain, tree_version

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT.parent / "shared" / "rocm-6.2.2"
INCLUDE = TREE / "include"


def _need_tree() -> str:
    need((INCLUDE / "hip" / "hip_runtime.h").is_file(), "the ROCm 6.2.2 include tree ../shared/rocm-6.2.2",
         "place the ROCm 6.2.2 headers in ../shared/rocm-6.2.2/include")
    clang = shutil.which("clang++-15") or shutil.which("clang++")
    need(clang, "clang++ (clang-15)", "apt-get install clang-15 (Debian's hipcc pulls it in)")
    return clang


def hipport(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


GOOD = "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\nint main() { cudaDeviceSynchronize(); }\n"
# hipDeviceProp_t's `uuid` field is declared by ROCm 6's headers, not by Debian's HIP 5.2.
NEWER = ("#include <cstdio>\nint main() { cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);\n"
         "  std::printf(\"%d\\n\", p.uuid.bytes[0]); bogus_name(); }\n")


@pytest.fixture
def project(tmp_path):
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "good.cu").write_text(GOOD)
    (tree / "bad.cu").write_text(NEWER)
    return tree


def test_header_tree_toolchain_reads_the_release_and_probes_targets():
    clang = _need_tree()
    tc = find_toolchain(("gfx90a", "gfx942"), hip_include=INCLUDE, clang=clang)
    assert tc.hip_version == tree_version(INCLUDE) == (6, 2)
    assert "gfx90a" in tc.targets
    assert "-nogpuinc" in tc.flags and str(INCLUDE.resolve()) in tc.flags
    assert "syntax only" in tc.described


def test_convert_verify_against_the_6_2_2_tree_compiles_and_reports(project):
    clang = _need_tree()
    r = hipport("convert", project, "--check", "--verify", "--rocm-version", "6.2", "--offload-arch", "gfx90a",
                "--hip-include", INCLUDE, "--clang", clang, cwd=project)
    assert r.returncode == 4, r.stderr
    assert f"over the headers of {INCLUDE.resolve()} (HIP 6.2; syntax only)" in r.stderr
    assert "1 of 2 do not compile" in r.stderr
    assert "FAILED" in r.stderr and "bogus_name" in r.stderr and "uuid" not in r.stderr.split("FAILED", 1)[1]
    assert (project / "good.cu").read_text() == GOOD  # --check: nothing written


def test_settings_name_the_tree_and_doctor_says_so(project):
    clang = _need_tree()
    (project / ".hipport.toml").write_text(f'verify-hip-include = "{INCLUDE}"\nverify-clang = "{clang}"\n')
    (project / "bad.cu").unlink()
    r = hipport("convert", ".", "--diff", "--verify", "--rocm-version", "6.2", "--offload-arch", "gfx90a", cwd=project)
    assert r.returncode == 0, r.stderr
    assert "it compiles" in r.stderr and "HIP 6.2" in r.stderr
    d = hipport("doctor", "--json", cwd=project)
    assert d.returncode == 0, d.stderr
    assert json.loads(d.stdout)["verify"].startswith(f"{clang} over the headers of {INCLUDE}")


def test_hipcc_by_path_the_stand_in(project):
    _need_tree()
    (project / "bad.cu").unlink()
    r = hipport("convert", project, "--diff", "--verify", "--rocm-version", "6.2", "--offload-arch", "gfx90a",
                "--hipcc", TREE / "bin" / "hipcc", cwd=project)
    assert r.returncode == 0, r.stderr
    assert "hipcc (HIP 6.2, HIP_PLATFORM=amd) for gfx90a: it compiles" in r.stderr


def test_audit_verify_takes_the_tree_too(project):
    clang = _need_tree()
    r = hipport("audit", project / "bad.cu", "--verify", "--rocm-version", "6.2", "--offload-arch", "gfx90a",
                "--hip-include", INCLUDE, "--clang", clang, cwd=project)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "bogus_name" in r.stdout + r.stderr


# -- usage errors: one line, exit 2, nothing written -------------------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    (["--hipcc", "/x"], "--hipcc only applies with --verify"),
    (["--verify", "--hip-include", "{tmp}"], "has no hip/hip_runtime.h; name a ROCm include folder"),
    (["--verify", "--hipcc", "{tmp}/nothing"], "is not an executable file"),
    (["--verify", "--clang", "clang++"], "--clang needs --hip-include DIR"),
    (["--verify", "--hipcc", "/x", "--hip-include", "{tmp}"], "cannot be combined"),
])
def test_toolchain_usage_errors(project, tmp_path, args, message):
    r = hipport("convert", project, *[a.format(tmp=tmp_path) for a in args], cwd=project)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0]
    assert (project / "good.cu").read_text() == GOOD


def test_a_clang_without_hip_support_is_refused(tmp_path):
    fake = tmp_path / "clang++"
    fake.write_text(f"#!/bin/sh\necho {tmp_path}/res\n")
    fake.chmod(0o755)
    (tmp_path / "inc" / "hip").mkdir(parents=True)
    (tmp_path / "inc" / "hip" / "hip_runtime.h").write_text("")
    with pytest.raises(ToolchainError, match="has no HIP support"):
        find_toolchain(("gfx90a",), hip_include=tmp_path / "inc", clang=str(fake))
