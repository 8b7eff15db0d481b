"""The AMD build's switches a PyTorch extension passes from Python (`setup.py`, a `cpp_extension.load` loader), and
what they change: with `-DHIPBLAS_USE_HIP_HALF`, hipBLAS's `hipblasHalf` is `__half`, so `cublasHgemm`'s `half*`
arguments need no cast (exllamav2's two false `single-source` findings, issue 34)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hipport.audit.build_switches import build_defines, build_macros
from hipport.audit.py_switches import python_switches
from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "tests" / "fixtures" / "false-alarms" / "hipblas-half-project"

SCRIPT = b'''from torch.utils import cpp_extension
import torch
flags = ["-O3", "-DPLAIN", "-DCUDA_THING"]
if torch.version.hip:
    flags += ["-DAMD_ONLY"]
    if debug:
        flags.append("-DDEBUG_TRACE")
else:
    flags += ["-DNV_ONLY", "-DUSE_HIP_NOT"]
if torch.version.hip is None:
    flags += ["-DNV_TOO"]
if debug: flags += ["-DOPT_IN", "-DMY_HIP_OPTION"]
if not IS_ROCM: flags += ["-DNV_THREE"]
if torch.cuda.is_available():
    flags += ["-DANY_GPU"]
x = ["-DLEFT"] + (["-DCHOSEN"] if torch.version.hip else ["-DNOT_CHOSEN"])
y = "-DTERN" if IS_ROCM else "-DTERN_NV"
ext = cpp_extension.CUDAExtension("x", ["a.cu"], extra_compile_args={"nvcc": flags},
                                  define_macros=[("WITH_MACRO", None), ("LEVEL", "2"), ("COUNT", 3)])
'''


def test_python_switches_keep_what_the_rocm_build_gets():
    amd, named = python_switches(SCRIPT)
    # written by hand: unconditional ones (both builds; a CUDA-named one is the NVIDIA side's), ROCm branches and
    # arms, an AMD-named opt-in, define_macros pairs, and PyTorch's own `-DUSE_ROCM=1` for a CUDAExtension
    assert amd == {"PLAIN", "AMD_ONLY", "MY_HIP_OPTION", "LEFT", "CHOSEN", "TERN", "WITH_MACRO", "LEVEL=2",
                   "COUNT=3", "USE_ROCM=1"}
    # NVIDIA branches (`else` of a ROCm test, `is None`, `not`), opt-ins and `torch.cuda.is_available()` (ROCm's
    # PyTorch answers it too, but nothing says the flag is the AMD build's by default) are only named
    assert named - {n.partition("=")[0] for n in amd} == {"CUDA_THING", "DEBUG_TRACE", "NV_ONLY", "USE_HIP_NOT",
                                                         "NV_TOO", "OPT_IN", "NV_THREE", "ANY_GPU", "NOT_CHOSEN",
                                                         "TERN_NV"}


def test_python_that_builds_nothing_or_is_not_python_3_passes_nothing():
    assert python_switches(b'print("-DNOT_A_FLAG")\n') == (set(), set())
    assert python_switches(b'extra_compile_args = ["-DX"\n') == (set(), set())     # cut off: not read


def test_build_defines_reads_setup_py_and_a_jit_loader(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    (tmp_path / "pkg" / "ext.py").write_text(
        "import torch\nfrom torch.utils.cpp_extension import load\nextra_cuda_cflags = ['-O3']\n"
        "if torch.version.hip:\n    extra_cuda_cflags += ['-DHIPBLAS_USE_HIP_HALF']\n"
        "m = load(name='m', sources=['k.cu'], extra_cuda_cflags=extra_cuda_cflags)\n")
    (tmp_path / "pkg" / "util.py").write_text("FLAGS = ['-DUNRELATED']\n")   # builds nothing: not a build script
    assert build_defines(str(tmp_path)) == ("HIPBLAS_USE_HIP_HALF", "USE_ROCM=1")
    assert "UNRELATED" not in build_macros(str(tmp_path))
    # a virtual environment's PyTorch lists both builds' flags (`COMMON_HIP_FLAGS`): not the project's build
    torch_utils = tmp_path / "venv" / "lib" / "python3.12" / "site-packages" / "torch" / "utils"
    torch_utils.mkdir(parents=True)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (torch_utils / "cpp_extension.py").write_text("COMMON_HIP_FLAGS = ['-DUSE_ROCM=1', '-DHIPBLAS_V2']\n"
                                                  "def CUDAExtension(name, sources): pass\n")
    assert build_defines(str(tmp_path)) == ("HIPBLAS_USE_HIP_HALF", "USE_ROCM=1")


def test_a_changed_build_script_is_read_again(tmp_path, monkeypatch):
    import time
    project, cache = tmp_path / "p", str(tmp_path / "cache")
    project.mkdir()
    script = project / "setup.py"
    script.write_text("import torch\nextra_compile_args = {'nvcc': ['-DUSE_HIP_A'] if torch.version.hip else []}\n")
    later = time.time() + 3600
    monkeypatch.setattr(time, "time", lambda: later)
    assert build_defines(str(project), cache_dir=cache) == ("USE_HIP_A",)
    script.write_text("import torch\nextra_compile_args = {'nvcc': ['-DUSE_HIP_B'] if torch.version.hip else []}\n")
    assert build_defines(str(project), cache_dir=cache) == ("USE_HIP_B",)


GEMM = b"""#include <cuda_fp16.h>
#include <cublas_v2.h>
void f(cublasHandle_t h, int n, const half* a, half* c) {
  const half one = __float2half(1.0f);
  cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, a, n, &one, c, n);
}
"""


@pytest.mark.parametrize("defines, own, cast", [((), b"", True), (("HIPBLAS_USE_HIP_HALF",), b"", False),
                                                (("!HIPBLAS_USE_HIP_HALF",), b"", True),
                                                ((), b"#define HIPBLAS_USE_HIP_HALF\n", False)])
def test_the_half_cast_is_written_only_where_hipblas_half_is_not_half(defines, own, cast):
    options = ConvertOptions(rocm_version=(7, 2), defines=defines)
    out = convert_source(own + GEMM, load_rules([]), options, "k.cu").after
    assert b"hipblasHgemm(" in out
    assert (b"reinterpret_cast<const hipblasHalf*>(a)" in out) is cast
    again = convert_source(out, load_rules([]), options, "k.cu")   # a second run changes nothing
    assert again.after == out


def _audit(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hipport", "audit", "--no-cache", "--rocm-version", "7.2", "."],
                          capture_output=True, text=True, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_fixture_project_defining_hipblas_use_hip_half_is_silent_and_without_it_reported(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(PROJECT, project)
    (project / ".git").mkdir()   # the project's root: no settings above it
    r = _audit(project)
    assert r.returncode == 0 and "single-source" not in r.stdout, r.stdout + r.stderr
    # the look-alike: the same define given to the NVIDIA build only; hipblasHalf is uint16_t on AMD
    setup = project / "setup.py"
    setup.write_text(setup.read_text().replace("if torch_version.hip:", "if torch_version.cuda:"))
    r = _audit(project)
    assert r.returncode == 1 and "gemm.cu:20:1: warning single-source: `cublasHgemm`" in r.stdout, r.stdout
    setup.write_text(setup.read_text().replace('["-DHIPBLAS_USE_HIP_HALF"]', "[]"))
    r = _audit(project)
    assert r.returncode == 1 and "gemm.cu:20:1: warning single-source: `cublasHgemm`" in r.stdout, r.stdout


HIPBLAS_CALL = """#include <hip/hip_fp16.h>
#include <hipblas/hipblas.h>
hipblasStatus_t f(hipblasHandle_t h, int n, const __half* a, __half* c, const __half* one) {
  return hipblasHgemm(h, HIPBLAS_OP_N, HIPBLAS_OP_N, n, n, n, one, a, n, a, n, one, c, n);
}
"""


@pytest.mark.parametrize("release", ["7.2", "6.4"])
def test_hipblas_takes_half_pointers_only_with_hipblas_use_hip_half(tmp_path, release):
    from tests.hipcc import real_compile

    path = tmp_path / "call.hip"
    path.write_text(HIPBLAS_CALL)
    with_define = real_compile(path, release, ("gfx942",), "-DHIPBLAS_USE_HIP_HALF")
    assert with_define.returncode == 0, with_define.stderr[-2000:]
    without = real_compile(path, release, ("gfx942",))
    assert without.returncode != 0 and "hipblasHgemm" in without.stderr
