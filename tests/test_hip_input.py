"""HIP code as input (issue 32): `.hip` files and HIP code in C++ files go through the engine, whose passes bring
HIP written for an older ROCm forward; the summary counts such files apart (brought forward, not ported); the
audit reads `.hip` files as it reads CUDA ones. The engine's fast path (`convert/quick.py`) sends plain C++ back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hipport.convert import ConvertOptions, convert_source
from hipport.convert import quick
from hipport.convert.hip_input import is_hip_input

ROOT = Path(__file__).resolve().parents[1]

# hipBLAS 2 code (ROCm 6): `hipblasDatatype_t` and its `HIPBLAS_R_*` values are gone from hipBLAS 3 (ROCm 7.0+),
# where the data types are `hipDataType` (`HIP_R_32F`): ../shared/reference/porting-facts.md, "ROCm 7".
HIPBLAS2 = b"#include <hipblas/hipblas.h>\n\nhipblasDatatype_t pick() { return HIPBLAS_R_32F; }\n"
HIPBLAS3 = b"#include <hipblas/hipblas.h>\n\nhipDataType pick() { return HIP_R_32F; }\n"
# HIP already current for 7.2: nothing to change.
CURRENT = (b"#include <hip/hip_runtime.h>\n\nint main() {\n  float* d;\n  hipMalloc(&d, 4);\n  hipFree(d);\n"
           b"  return 0;\n}\n")
CUDA = b"#include <cuda_runtime.h>\nint main() { float* d; cudaMalloc(&d, 4); cudaFree(d); }\n"
CUDA_AS_HIP = b"#include <hip/hip_runtime.h>\nint main() { float* d; hipMalloc(&d, 4); hipFree(d); }\n"
PLAIN = b"// The relationship between chips and ships: no GPU code here.\nint add(int a, int b) { return a + b; }\n"
# A header for both platforms: its CUDA is the NVIDIA build's branch, left as it is (docs/convert.md, "Projects that
# already build for AMD"); it names HIP and has nothing to port, so it counts as HIP input.
COMPAT = (b"#pragma once\n#ifdef __HIP_PLATFORM_AMD__\n#include <hip/hip_runtime.h>\ntypedef hipStream_t stream_t;\n"
          b"#else\ntypedef cudaStream_t stream_t;\n#endif\n")
COMPAT_AS_HIP = COMPAT
HIP_LINE = "HIP input, brought forward (not ported): "


def hipport(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


# -- the fast path ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("src", [
    b"#include <hip/hip_runtime.h>\n",                      # a HIP header alone
    b"void f() { void* p; hipMalloc(&p, 4); }\n",           # host-only HIP: no `__` word, no CUDA
    b"int t = HIPBLAS_R_32F;\n",
    b"namespace hip_impl { int x; }\n",
])
def test_hip_code_goes_through_the_passes(rules, src):
    assert quick.may_need_work(src, rules)


@pytest.mark.parametrize("src", [
    PLAIN,
    b"int chip_count(); int shipHIP;\n",                    # `hip` inside a word is no HIP name
    b"// Ported to HIP one day.\nint x;\n",
])
def test_plain_cpp_is_sent_straight_back(rules, src):
    assert not quick.may_need_work(src, rules)
    result = convert_source(src, rules, ConvertOptions(rocm_version=(7, 2)))
    assert result.after is src  # untouched: no lexing, no pass


def test_a_pass_wakes_the_engine_with_its_words(rules):
    src = b"int lanes() { return myWaveWidth + ROCX_LANES; }\n"
    assert not quick.may_need_work(src, rules)
    before = list(quick._SOURCES)
    try:
        quick.wake_on(["myWaveWidth"])
        assert quick.may_need_work(src, rules)
        quick._SOURCES[:] = before
        quick._made.clear()
        quick.wake_on(lambda r: ["ROCX_*"])  # a prefix, from a function of the rule set (rule data)
        assert quick.may_need_work(src, rules)
        assert not quick.may_need_work(b"int XROCX_LANES;\n", rules)  # a prefix starts a word
    finally:
        quick._SOURCES[:] = before
        quick._made.clear()
    assert not quick.may_need_work(src, rules)


# -- which files are HIP input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, src, hip", [
    ("g.hip", HIPBLAS2, True),
    ("h.cpp", CURRENT, True),
    ("e.hip", b"int main() { return 0; }\n", True),   # a .hip file is HIP whatever it holds
    ("k.cu", CUDA, False),
    ("c.h", COMPAT, True),
    ("p.cpp", PLAIN, False),
    ("n.cu", b"// see hipMalloc\n" + CUDA, False),     # CUDA that mentions HIP is CUDA
])
def test_hip_input_is_told_from_cuda(rules, path, src, hip):
    result = convert_source(src, rules, ConvertOptions(rocm_version=(7, 2)), path)
    assert is_hip_input(result, src, rules) is hip


# -- the command line ------------------------------------------------------------------------------------------------

def _mixed_tree(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "gemm.hip").write_bytes(HIPBLAS2)
    (root / "src" / "host.cpp").write_bytes(CURRENT)
    (root / "src" / "k.cu").write_bytes(CUDA)
    (root / "src" / "plain.cpp").write_bytes(PLAIN)
    (root / "src" / "compat.h").write_bytes(COMPAT)
    return root


def test_a_mixed_tree_converts_cuda_and_brings_hip_forward(tmp_path):
    tree = _mixed_tree(tmp_path / "proj")
    r = hipport("convert", "--rocm-version", "7.2", "--no-cache", tree / "src", "-o", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    assert (out / "gemm.hip").read_bytes() == HIPBLAS3
    assert (out / "host.cpp").read_bytes() == CURRENT
    assert (out / "k.cu").read_bytes() == CUDA_AS_HIP
    assert (out / "plain.cpp").read_bytes() == PLAIN
    assert (out / "compat.h").read_bytes() == COMPAT_AS_HIP
    lines = r.stderr.splitlines()
    assert lines[0] == "hipport: 5 files scanned, 2 changed, 5 references converted"
    # gemm.hip, host.cpp and compat.h (whose CUDA is the NVIDIA branch) are HIP; k.cu is CUDA: ported, not counted here
    assert f"  {HIP_LINE}3 files, 1 changed (forward 2), 0 findings left for a person" in lines
    # compat.h tests the platform, gemm.hip is built for AMD only: both already have a HIP path
    assert any(line.startswith("  already builds for AMD: 2 files with a HIP path (first: ") and
               "compat.h: `#ifdef __HIP_PLATFORM_AMD__` at line 2)" in line for line in lines), lines
    again = hipport("convert", "--rocm-version", "7.2", "--no-cache", "--check", out)
    assert again.returncode == 0, again.stderr  # converted code converts to itself


def test_a_hip_file_in_a_folder_is_converted_in_place(tmp_path):
    (tmp_path / "gemm.hip").write_bytes(HIPBLAS2)
    r = hipport("convert", "--rocm-version", "7.2", tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "gemm.hip").read_bytes() == HIPBLAS3
    assert f"{HIP_LINE}1 file, 1 changed (forward 2), 0 findings left for a person" in r.stderr
    # The result cache remembers the file as unchanged now; it is still counted as HIP input.
    r = hipport("convert", "--rocm-version", "7.2", tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"{HIP_LINE}1 file, 0 changed, 0 findings left for a person" in r.stderr


def test_a_hip_file_named_on_the_command_line(tmp_path):
    hip = tmp_path / "gemm.hip"
    hip.write_bytes(HIPBLAS2)
    r = hipport("convert", "--rocm-version", "7.2", "--check", "-v", "--no-cache", hip)
    assert r.returncode == 1, r.stderr  # would change
    assert f"would change: {hip}" in r.stderr
    assert hip.read_bytes() == HIPBLAS2
    r = hipport("convert", "--rocm-version", "7.2", "--stdout", "--no-cache", hip)
    assert r.returncode == 0, r.stderr
    assert r.stdout.encode() == HIPBLAS3
    r = hipport("convert", "--rocm-version", "6.4", "--check", "--no-cache", hip)
    assert r.returncode == 0, r.stderr  # hipBLAS 2 is ROCm 6.4's: nothing to bring forward
    assert f"{HIP_LINE}1 file, 0 would change, 0 findings left for a person" in r.stderr


def test_a_summary_without_hip_input_says_nothing_of_it(tmp_path):
    (tmp_path / "k.cu").write_bytes(CUDA)
    r = hipport("convert", "--rocm-version", "7.2", "--check", "--no-cache", tmp_path)
    assert r.returncode == 1, r.stderr
    assert "HIP input" not in r.stderr


# -- the audit -------------------------------------------------------------------------------------------------------

LANE_MATH = (b"#include <hip/hip_runtime.h>\n"
             b"__global__ void k(int *o) { int lane = threadIdx.x & 31; o[lane] = __shfl(1, lane); }\n")


def test_audit_reads_hip_files_named_and_in_folders(tmp_path):
    (tmp_path / "k.hip").write_bytes(LANE_MATH)
    (tmp_path / "notes.txt").write_bytes(LANE_MATH)
    for target in ("k.hip", "."):
        r = hipport("audit", "--rocm-version", "7.2", "--no-cache", target, cwd=tmp_path)
        assert r.returncode == 1, r.stderr
        assert r.stdout.startswith("k.hip:2:52: warning lane-math-32: `threadIdx.x & 31`"), r.stdout
        assert r.stderr.strip() == "1 finding (1 warning) in 1 file"
