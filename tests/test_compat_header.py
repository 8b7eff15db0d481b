"""`hipport compat` (issue 33, single-source mode): one compatibility header, forwarding headers and build glue, so
that a CUDA tree builds for AMD unchanged; the hazards no header can fix, with patches as AMD branches.

The fixture (tests/fixtures/compat/tree, CUDA only) has a header of checks, a unit with shuffles, a constant
table, events, streams and a `__CUDA_ARCH__` test (reduce.cu), a host-only cuBLAS unit (gemm.cpp), a cuRAND device
unit (random.cu) and a call HIP has no counterpart for (l2.cu). `expected/hipport_compat.h` is the header for ROCm
7.2 and `expected/reduce.patched.cu` reduce.cu with the audit's patches applied, both written by hand. The units
compile with the real ROCm 7.2 (and 6.4) compiler for gfx942 and gfx1100 given the header (`-include`) and the
forwarding folder (`-I`), as the glue compiles them, and with nvcc (the header is `<cuda_runtime.h>` there).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc import nvcc_compile, real_compile, real_hipcc
from needs import need

from hipport.amd_branches import as_amd_branches
from hipport.model import Edit, apply_edits

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "compat"
COMMAND = ["--rocm-version", "7.2", "--offload-arch", "gfx942,gfx1100"]
UNITS = ("reduce.cu", "gemm.cpp", "random.cu")


def hipport(*args, cwd):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd)


@pytest.fixture
def tree(tmp_path):
    dest = tmp_path / "proj"
    shutil.copytree(FIXTURES / "tree", dest)
    return dest


def write(tree, *extra):
    r = hipport("compat", ".", "-o", "hipport-compat", *COMMAND, *extra, cwd=tree)
    assert r.returncode == 0, r.stderr
    return r


def test_header_is_the_reviewed_one(tree):
    r = write(tree)
    out = tree / "hipport-compat"
    assert (out / "hipport_compat.h").read_text() == (FIXTURES / "expected" / "hipport_compat.h").read_text()
    assert "`cudaCtxResetPersistingL2Cache`" in r.stderr  # not mapped: reported too
    assert "31 names mapped, 4 calls by macro, 2 warp built-ins, 4 CUDA headers forwarded" in r.stderr


def test_forwarding_headers_include_the_compatibility_header(tree):
    write(tree)
    out = tree / "hipport-compat"
    assert sorted(p.name for p in out.glob("*.h") if p.name != "hipport_compat.h") == [
        "cublas_v2.h", "cuda_fp16.h", "cuda_runtime.h", "curand_kernel.h"]
    assert (out / "cublas_v2.h").read_text() == (
        "// cublas_v2.h: // written by `hipport compat`: the AMD build's stand-in for this CUDA header "
        "(HIP: <hipblas/hipblas.h>, included by hipport_compat.h)\n#pragma once\n#include <hipport_compat.h>\n")


def test_build_glue_names_the_units_targets_and_libraries(tree):
    write(tree)
    out = tree / "hipport-compat"
    cmake = (out / "hipport_compat.cmake").read_text()
    assert "  set(CMAKE_HIP_ARCHITECTURES gfx942;gfx1100)\n" in cmake
    assert "enable_language(HIP)\n" in cmake
    for unit in ("gemm.cpp", "l2.cu", "random.cu", "reduce.cu"):
        assert f'  "${{CMAKE_CURRENT_LIST_DIR}}/../{unit}"\n' in cmake
    assert "set_source_files_properties(${HIPPORT_COMPAT_SOURCES} PROPERTIES LANGUAGE HIP)\n" in cmake
    assert "find_package(hipblas REQUIRED)\nfind_package(hiprand REQUIRED)\n" in cmake
    assert "-include ${HIPPORT_COMPAT_DIR}/hipport_compat.h" in cmake
    assert "  target_link_libraries(${target} PRIVATE roc::hipblas hip::hiprand)\n" in cmake
    make = (out / "hipport_compat.mk").read_text()
    assert "HIPPORT_SOURCES := gemm.cpp \\\n    l2.cu \\\n    random.cu \\\n    reduce.cu\n" in make
    assert "HIPPORT_LIBS := -lhipblas -lhiprand\n" in make
    assert "HIPPORT_ARCHS ?= gfx942 gfx1100\n" in make
    assert "-include $(HIPPORT_COMPAT_DIR)/hipport_compat.h" in make
    assert "HIPPORT_SOURCE_DIR ?= $(HIPPORT_COMPAT_DIR)/..\n" in make


def test_second_run_changes_nothing_and_check_says_so(tree):
    write(tree)
    first = {p.name: p.read_bytes() for p in (tree / "hipport-compat").iterdir()}
    r = write(tree)
    assert "0 files written" in r.stderr
    assert {p.name: p.read_bytes() for p in (tree / "hipport-compat").iterdir()} == first
    assert hipport("compat", ".", "-o", "hipport-compat", *COMMAND, "--check", cwd=tree).returncode == 0
    # The tree uses one more name: the header is out of date.
    (tree / "more.cu").write_text("#include <cuda_runtime.h>\nvoid reset() { cudaDeviceReset(); }\n")
    r = hipport("compat", ".", "-o", "hipport-compat", *COMMAND, "--check", cwd=tree)
    assert r.returncode == 1, r.stderr
    assert "would change: hipport-compat/hipport_compat.h" in r.stderr
    assert {p.name: p.read_bytes() for p in (tree / "hipport-compat").iterdir()} == first  # nothing written
    write(tree)
    assert "#define cudaDeviceReset hipDeviceReset\n" in (tree / "hipport-compat" / "hipport_compat.h").read_text()


def test_user_section_is_kept(tree):
    write(tree)
    head = tree / "hipport-compat" / "hipport_compat.h"
    mine = "#define CUDART_VERSION 11060  // mine\n\n\ntypedef int my_t;\n"
    text = head.read_text()
    begin = text.index("\n", text.index("// hipport: user section begin")) + 1
    end = text.index("// hipport: user section end")
    head.write_text(text[:begin] + mine + text[end:].replace("#define cudaFree hipFree\n", ""))
    write(tree)
    again = head.read_text()
    assert again == text[:begin] + mine + text[end:]  # the user's lines as they were, the mapping back
    write(tree)
    assert head.read_text() == again


def test_a_header_hipport_did_not_write_is_never_overwritten(tree):
    out = tree / "hipport-compat"
    out.mkdir()
    (out / "hipport_compat.h").write_text("// mine\n")
    r = hipport("compat", ".", "-o", "hipport-compat", *COMMAND, cwd=tree)
    assert r.returncode == 2
    assert "not written by `hipport compat`" in r.stderr and "Traceback" not in r.stderr
    assert (out / "hipport_compat.h").read_text() == "// mine\n"


def test_forwarding_headers_no_longer_needed_are_removed(tree):
    write(tree)
    (tree / "random.cu").unlink()
    r = write(tree)
    out = tree / "hipport-compat"
    assert not (out / "curand_kernel.h").exists()
    assert (out / "cublas_v2.h").exists()
    assert "curand" not in (out / "hipport_compat.h").read_text()
    assert "hiprand" not in (out / "hipport_compat.mk").read_text(), r.stderr


def test_usage_errors_are_one_line(tree):
    for args, words in ((["--rocm-version", "8.0"], "--rocm-version"), (["--offload-arch", "gfx9999"], "gfx9999"),
                        (["--build", "ninja"], "--build")):
        r = hipport("compat", ".", *args, cwd=tree)
        assert r.returncode == 2, (args, r.stderr)
        assert words in r.stderr and "Traceback" not in r.stderr
    r = hipport("compat", "missing", cwd=tree)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = hipport("compat", ".", "-o", ".", cwd=tree)  # the output folder is never read: it cannot be the tree
    assert r.returncode == 2 and "holds the input" in r.stderr and not (tree / "hipport_compat.h").exists()


def test_a_plain_tree_maps_nothing(tmp_path):
    (tmp_path / "util.cpp").write_text("// cudaMalloc in a comment, \"cudaFree\" in a string\nint cudaish = 1;\n")
    r = hipport("compat", ".", *COMMAND, "--build", "none", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "hipport-compat"
    assert sorted(p.name for p in out.iterdir()) == ["hipport_compat.h"]
    text = (out / "hipport_compat.h").read_text()
    assert "#define " not in text.replace("#define HIPPORT_COMPAT_H", "")
    assert "0 names mapped" in r.stderr


def test_rocm_6_4_gets_the_mask_free_forms_and_stand_ins(tree):
    write(tree, "--rocm-version", "6.4")
    text = (tree / "hipport-compat" / "hipport_compat.h").read_text()
    assert "#define __shfl_xor_sync(mask, ...) __shfl_xor(__VA_ARGS__)\n" in text
    assert "hipport_mask64" not in text
    assert "#if !defined(HIPPORT_SHIM___syncwarp) && defined(__HIP_PLATFORM_AMD__) && HIP_VERSION_MAJOR < 7\n" in text


def test_hazards_become_amd_branches(tree):
    r = write(tree)
    assert "hazards no header can fix: 2 (atomic-float-add 1, warp-loop-32 1)" in r.stderr
    assert "warp-mask-32bit" not in r.stderr  # the header widens the mask
    patch = shutil.which("patch")
    need(patch, "patch", "apt-get install patch")
    subprocess.run([patch, "-p1", "-i", "hipport-compat/hipport_hazards.diff"], cwd=tree, check=True,
                   capture_output=True)
    assert (tree / "reduce.cu").read_text() == (FIXTURES / "expected" / "reduce.patched.cu").read_text()
    r = write(tree)
    assert "hazards no header can fix" not in r.stderr
    assert not (tree / "hipport-compat" / "hipport_hazards.diff").exists()


@pytest.mark.parametrize("release", ["7.2", "6.4"])
def test_units_compile_for_amd_with_the_header(tree, release):
    real_hipcc(release)
    write(tree, "--rocm-version", release)
    out = tree / "hipport-compat"
    for unit in UNITS:
        r = real_compile(tree / unit, release, ("gfx942", "gfx1100"), f"-I{out}", "-include",
                         str(out / "hipport_compat.h"))
        assert r.returncode == 0, (unit, r.stderr[-3000:])
    # What is not mapped does not build, as the header and the summary say.
    r = real_compile(tree / "l2.cu", release, ("gfx942",), f"-I{out}", "-include", str(out / "hipport_compat.h"))
    assert r.returncode != 0 and "cudaCtxResetPersistingL2Cache" in r.stderr


def test_patched_unit_compiles_for_amd_and_nvidia(tree):
    real_hipcc("7.2")
    write(tree)
    shutil.copy(FIXTURES / "expected" / "reduce.patched.cu", tree / "reduce.cu")
    out = tree / "hipport-compat"
    r = real_compile(tree / "reduce.cu", "7.2", ("gfx942", "gfx1100"), f"-I{out}", "-include",
                     str(out / "hipport_compat.h"))
    assert r.returncode == 0, r.stderr[-3000:]
    r = nvcc_compile(tree / "reduce.cu", "-include", str(out / "hipport_compat.h"))
    assert r.returncode == 0, r.stderr[-3000:]


def test_nvidia_build_sees_cuda_only(tree):
    write(tree)
    out = tree / "hipport-compat"
    r = nvcc_compile(tree / "reduce.cu", "-include", str(out / "hipport_compat.h"))
    assert r.returncode == 0, r.stderr[-3000:]


def test_make_glue_builds_a_unit(tree):
    exe = real_hipcc("7.2")
    make = shutil.which("make")
    need(make, "make", "apt-get install make")
    write(tree)
    r = subprocess.run([make, "-f", "hipport-compat/hipport_compat.mk", "hipport-amd-objects", f"HIPCC={exe}",
                        "HIPPORT_ARCHS=gfx942", "HIPPORT_SOURCES=random.cu", "HIPPORT_CXXFLAGS=-std=c++17 -w"],
                       cwd=tree, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert (tree / "hipport-build" / "random.cu.o").is_file()


# -- patches as AMD branches ----------------------------------------------------------------------------------

def test_branch_covers_whole_lines_and_merges_neighbours():
    src = b"int a = f(1);\nint b = f(2);\n\nint c = f(3);\n"
    edits = [Edit(8, 12, b"g(1)"), Edit(22, 26, b"g(2)"), Edit(37, 41, b"g(3)")]
    branches, skipped = as_amd_branches(src, edits)
    assert skipped == []
    assert apply_edits(src, branches) == (
        b"#if defined(__HIP_PLATFORM_AMD__)\nint a = g(1);\nint b = g(2);\n#else\nint a = f(1);\nint b = f(2);\n"
        b"#endif\n\n"
        b"#if defined(__HIP_PLATFORM_AMD__)\nint c = g(3);\n#else\nint c = f(3);\n#endif\n")


def test_branch_takes_a_continued_define_whole():
    src = b"#define SUM(v) \\\n  v += shfl(v, 16); \\\n  v += shfl(v, 8)\nint x;\n"
    at = src.index(b"16")
    branches, _ = as_amd_branches(src, [Edit(at, at + 2, b"32")])
    assert apply_edits(src, branches) == (
        b"#if defined(__HIP_PLATFORM_AMD__)\n#define SUM(v) \\\n  v += shfl(v, 32); \\\n  v += shfl(v, 8)\n#else\n"
        b"#define SUM(v) \\\n  v += shfl(v, 16); \\\n  v += shfl(v, 8)\n#endif\nint x;\n")


def test_no_branch_inside_a_block_comment():
    src = b"/* an example:\n   x = f(1);\n*/\nint y;\n"
    at = src.index(b"f(1)")
    branches, skipped = as_amd_branches(src, [Edit(at, at + 1, b"g")])
    assert branches == [] and len(skipped) == 1


def test_last_line_without_newline_and_crlf():
    src = b"int a;\r\nint b = f(1);"
    at = src.index(b"f(1)")
    branches, _ = as_amd_branches(src, [Edit(at, at + 1, b"g")])
    assert apply_edits(src, branches) == (b"int a;\r\n#if defined(__HIP_PLATFORM_AMD__)\r\nint b = g(1);\r\n#else\r\n"
                                          b"int b = f(1);\r\n#endif\r\n")


def test_audit_leaves_out_a_header_only_the_nvidia_branch_includes():
    """ggml's layout: `vendors/cuda.h` is reached only from the `#else` of `#if defined(PROJ_USE_HIP)`; the AMD build
    never compiles it, so its `CUDART_VERSION` test is no finding (it was one before)."""
    tree = ROOT / "tests" / "fixtures" / "single_source" / "vendor_headers" / "input"
    r = hipport("audit", ".", "--rocm-version", "7.2", "--no-cache", cwd=tree)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vendors/cuda.h" not in r.stdout
    assert "left out: 1 file only the other platform's branches include" in r.stderr
    assert "(first: vendors/cuda.h: common.cuh includes it under `#if defined(PROJ_USE_HIP)`)" in r.stderr
