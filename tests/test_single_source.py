"""Projects that keep CUDA as their main source and build for AMD from the same files (issue 33): `convert` must
do them no harm. Each class of harm measured on such projects has a tree in tests/fixtures/single_source/<class>/,
`input/` and `expected/` written by hand; the converted tree must equal `expected/` file for file, a second run
must change nothing, and the converted files must compile in every configuration they had: the AMD one with the
real ROCm 7.2 compiler (code generation for gfx942 and gfx1100, the project's switch given as -D), the NVIDIA one
with nvcc, a plain C file with cc.

* compat_header: a compatibility header (`#define cudaStreamNonBlocking hipStreamNonBlocking`, a function-like
  `#define cudaMallocHost(ptr, size) hipHostMalloc(...)`, the CUDA include in `#else`) and a kernel using it:
  nothing changes (the left side of a mapping, a macro's parameters, the names it maps, the NVIDIA branch).
* branches: `#ifdef USE_HIP` / `#else` includes, typedefs and macros, an `X_HIP`/`X_CUDA` project switch pair,
  `#ifndef __HIP_PLATFORM_AMD__`, a `CUDART_VERSION` test: the NVIDIA side stays; `register`, which ROCm's C++17
  rejects and nvcc does not need, goes.
* vendor_headers: ggml's layout (`vendors/hip.h` and `vendors/cuda.h` picked by `PROJ_USE_HIP`): the CUDA vendor
  header is left alone, tests of `__CUDA_ARCH__` (which hip.h defines) stay, no stand-in for the `__vsub4` and
  `__vcmpne4` hip.h defines, a guarded stand-in for `__dp4a`, which it lacks.
* plain_files: a public C header with a `#ifdef __CUDACC__` corner, included by a GPU backend that builds for
  both (`backend.cu`), a C file of a CPU backend whose `register` binds an `asm` register, another backend's
  `struct __nv_fp8_e4m3`: left alone; a CUDA-only `.cu` of the same tree (the look-alike) converts as before.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc import REAL_ARCHS, nvcc_compile, real_compile, require_cc

from hipport.convert import ConvertOptions, convert_source
from hipport.platforms import classify, lines_of, tree_facts

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "single_source"
CLASSES = sorted(p.name for p in FIXTURES.iterdir() if (p / "input").is_dir())
OPTIONS = ConvertOptions(rocm_version=(7, 2))

# (class, converted file, configuration, extra flags): every configuration each file had before conversion.
BUILDS = [
    ("compat_header", "scale.cu", "amd", ("-DUSE_HIP",)),
    ("compat_header", "scale.cu", "nvidia", ()),
    ("branches", "branches.cu", "amd", ("-DUSE_HIP",)),
    ("branches", "branches.cu", "nvidia", ()),
    ("vendor_headers", "ops.cu", "amd", ("-DPROJ_USE_HIP",)),
    ("vendor_headers", "ops.cu", "nvidia", ()),
    ("plain_files", "cpu.c", "cpu", ()),
    ("plain_files", "backend.cu", "amd", ("-DUSE_HIP",)),
    ("plain_files", "backend.cu", "nvidia", ()),
    ("plain_files", "gpu.cu", "amd", ()),  # the CUDA-only file, ported: it builds for AMD now
]


def hipport(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


def files_of(tree: Path) -> dict[str, bytes]:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Each class's input converted with `-o` (for ROCm 7.2), once for the module: class -> output tree."""
    out = {}
    for name in CLASSES:
        target = tmp_path_factory.mktemp(name) / "out"
        r = hipport("convert", "--rocm-version", "7.2", "--no-cache", FIXTURES / name / "input", "-o", target)
        assert r.returncode == 0, r.stderr
        out[name] = (target, r)
    return out


@pytest.mark.parametrize("name", CLASSES)
def test_the_converted_tree_is_the_expected_one(converted, name):
    target, _ = converted[name]
    expected = files_of(FIXTURES / name / "expected")
    got = files_of(target)
    assert sorted(got) == sorted(expected)
    for rel, data in expected.items():
        assert got[rel] == data, f"{name}/{rel} differs from its expected form"


@pytest.mark.parametrize("name", CLASSES)
def test_a_second_run_changes_nothing(name):
    r = hipport("convert", "--rocm-version", "7.2", "--no-cache", "--check", FIXTURES / name / "expected")
    assert r.returncode == 0, r.stderr + r.stdout


def test_the_summary_says_the_tree_already_builds_for_amd(converted):
    _, r = converted["vendor_headers"]
    lines = r.stderr.splitlines()
    line = next(line for line in lines if line.startswith("  already builds for AMD: "))
    assert "3 files with a HIP path (first: " in line and "common.cuh: `#if defined(PROJ_USE_HIP)` at line 4)" in line
    assert line.endswith("; 1 file only the other platform's branches include, left alone")
    _, plain = converted["plain_files"]
    line = next(line for line in plain.stderr.splitlines() if "already builds for AMD" in line)
    assert line.startswith("  already builds for AMD: 1 file with a HIP path (first: ")
    assert "backend.cu: `#ifdef USE_HIP` at line 2)" in line  # proj.h and cpu.c are not counted: no HIP of their own


@pytest.mark.parametrize("name, rel, config, flags", BUILDS, ids=[f"{c}-{f}-{k}" for c, f, k, _ in BUILDS])
def test_the_converted_file_builds_in_every_configuration_it_had(converted, name, rel, config, flags):
    path = converted[name][0] / rel
    if config == "amd":
        r = real_compile(path, "7.2", REAL_ARCHS, *flags)
    elif config == "nvidia":
        r = nvcc_compile(path, *flags)
    else:
        r = subprocess.run([require_cc(), "-c", str(path), "-o", os.devnull], capture_output=True, text=True,
                           cwd=path.parent, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]


# -- one file at a time ----------------------------------------------------------------------------------------

def test_a_name_the_compat_header_does_not_map_is_kept_and_reported(rules, tmp_path):
    (tmp_path / "gpu.h").write_text("#pragma once\n#ifdef USE_HIP\n#include <hip/hip_runtime.h>\n"
                                    "#define cudaMalloc hipMalloc\n#else\n#include <cuda_runtime.h>\n#endif\n")
    src = b'#include "gpu.h"\nint f(void** p) { cudaMalloc(p, 4); return cudaDeviceSynchronize(); }\n'
    result = convert_source(src, rules, OPTIONS, str(tmp_path / "k.cu"))
    assert result.after == src
    found = [(f.rule_id, f.subject, f.line) for f in result.findings]
    assert found == [("single-source", "cudaDeviceSynchronize", 2)]  # cudaMalloc: the header maps it
    message = result.findings[0].message
    assert message == ("`cudaDeviceSynchronize` left: this file also builds for NVIDIA (includes `gpu.h`, which maps "
                       "CUDA names for AMD); for AMD, map it where the project does: "
                       "`#define cudaDeviceSynchronize hipDeviceSynchronize`")
    assert result.hip_path == "includes `gpu.h`, which maps CUDA names for AMD"


def test_a_cuda_only_file_keeps_its_conversion(rules):
    src = b"#include <cuda_runtime.h>\n#ifdef __CUDA_ARCH__\n#define ON_DEVICE 1\n#endif\nint f() { return cudaDeviceSynchronize(); }\n"
    result = convert_source(src, rules, OPTIONS, "k.cu")
    assert result.after == (b"#include <hip/hip_runtime.h>\n#ifdef __HIP_DEVICE_COMPILE__\n#define ON_DEVICE 1\n"
                            b"#endif\nint f() { return hipDeviceSynchronize(); }\n")
    assert result.hip_path == ""


@pytest.mark.parametrize("src, kept", [
    (b"#define cudaStreamNonBlocking hipStreamNonBlocking\n", True),
    (b"#define cudaMallocHost(ptr, size) hipHostMalloc(ptr, size, hipHostMallocDefault)\n", True),
    (b"#undef cudaMalloc\n#define cudaMalloc my_malloc\n", True),
    (b"#define CUB_STDERR\n", False),  # a switch with no body maps nothing: CUB's, renamed to hipCUB's
])
def test_the_name_a_define_defines_is_never_renamed(rules, src, kept):
    result = convert_source(b"#include <cuda_runtime.h>\n" + src, rules, OPTIONS, "compat.h")
    assert result.after.endswith(src) is kept


def test_register_binding_an_asm_register_stays_in_cuda_code(rules):
    src = (b"#include <cuda_runtime.h>\n__global__ void k(int* p) { register int i = threadIdx.x; p[i] = i; }\n"
           b"long f(long v) { register long r __asm__(\"rbx\") = v; register long s asm(\"rcx\"); return r; }\n")
    result = convert_source(src, rules, OPTIONS, "k.cu")
    assert result.after == (b"#include <hip/hip_runtime.h>\n__global__ void k(int* p) { int i = threadIdx.x; p[i] = i; }\n"
                            b"long f(long v) { register long r __asm__(\"rbx\") = v; register long s asm(\"rcx\"); "
                            b"return r; }\n")


def test_a_cuda_only_projects_header_corner_is_cuda_to_port(rules):
    # miniFE's Box.hpp: with `__CUDACC__` (which hipcc does not define) the member is host-only on AMD
    src = (b"struct Box {\n  int r[6];\n#ifdef __CUDACC__\n__host__ __device__ __inline__\n#endif\n"
           b"  int* operator[](int i) { return &r[i * 2]; }\n};\n")
    result = convert_source(src, rules, OPTIONS, "Box.hpp")
    assert result.after == b"#include <hip/hip_runtime.h>\n" + src.replace(b"__CUDACC__", b"__HIPCC__")


@pytest.mark.parametrize("path, dropped", [("getopt.cpp", True), ("getopt.c", False), ("getopt.h", False)])
def test_register_in_plain_cpp_goes_and_in_c_stays(rules, path, dropped):
    # HeCBench's kmeans builds getopt.cpp with hipcc (C++17: `register` is an error); C allows it
    src = b"int count(const char* s) { register int i = 0; while (s[i]) ++i; return i + __LINE__; }\n"
    result = convert_source(src, rules, OPTIONS, path)
    assert result.after == (src.replace(b"register ", b"") if dropped else src)


def test_a_stand_in_the_file_defines_is_neither_added_nor_reported(rules):
    src = (b"#include <cuda_runtime.h>\n#ifdef __HIP_PLATFORM_AMD__\n"
           b"static __device__ unsigned int __vsub4(unsigned int a, unsigned int b) { return a - b; }\n#endif\n"
           b"__global__ void k(unsigned int* p) { p[0] = __vsub4(p[1], p[2]); }\n")
    result = convert_source(src, rules, OPTIONS, "k.cu")
    assert b"HIPPORT_SHIM___vsub4" not in result.after
    assert not [f for f in result.findings if f.subject == "__vsub4"]


def test_a_call_only_the_nvidia_branch_makes_needs_no_stand_in(rules):
    src = (b"#include <cuda_runtime.h>\n__device__ int dot(int a, int b, int c) {\n#ifdef USE_HIP\n"
           b"  return __builtin_amdgcn_sdot4(a, b, c, false);\n#else\n  return __dp4a(a, b, c);\n#endif\n}\n")
    result = convert_source(src, rules, OPTIONS, "k.cuh")
    # no compatibility layer: the shared code is CUDA to port (its include), the NVIDIA branch stays as it is
    assert result.after == src.replace(b"<cuda_runtime.h>", b"<hip/hip_runtime.h>")
    assert result.hip_path == "`#ifdef USE_HIP` at line 3"


# -- the platform of each branch ---------------------------------------------------------------------------------

def _ranges(src: bytes):
    b = classify(lines_of(src))
    return [src[s:e] for s, e in b.other], [src[s:e] for s, e in b.amd]


@pytest.mark.parametrize("src, other, amd", [
    (b"#ifdef USE_HIP\nA\n#else\nB\n#endif\n", [b"B\n"], [b"A\n"]),
    (b"#ifndef __HIP_PLATFORM_AMD__\nB\n#endif\n", [b"B\n"], []),
    (b"#if defined(GGML_USE_HIP)\nA\n#elif defined(GGML_USE_MUSA)\nM\n#else\nB\n#endif\n", [b"M\n", b"B\n"], [b"A\n"]),
    # a chain offering X_CUDA beside X_HIP: the CUDA one is the NVIDIA build's
    (b"#if defined(D_C)\nC\n#elif defined(D_CUDA)\nB\n#elif defined(D_HIP)\nA\n#endif\n", [b"B\n"], [b"A\n"]),
    # an option of the HIP build is no switch; neither is `#if 0`
    (b"#ifdef GGML_HIP_NO_VMM\nA\n#else\nB\n#endif\n#if 0\nZ\n#endif\n", [], []),
    (b"#if defined(USE_ROCM) && defined(FOO)\nA\n#else\nB\n#endif\n", [], [b"A\n"]),
    # nested: the enclosing branch decides (the ranges are merged)
    (b"#ifdef USE_HIP\n#ifdef FOO\nA\n#endif\n#else\n#ifdef FOO\nB\n#endif\n#endif\n", [b"#ifdef FOO\nB\n#endif\n"],
     [b"#ifdef FOO\nA\n#endif\n"]),
])
def test_branches_are_told_apart(src, other, amd):
    got_other, got_amd = _ranges(src)
    assert sorted(got_other) == sorted(other) and sorted(got_amd) == sorted(amd)


def test_the_tree_knows_the_headers_only_the_nvidia_branch_includes(tmp_path):
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "cuda.h").write_text('#include <cuda_runtime.h>\n#include "cuda_extra.h"\n')
    (tmp_path / "vendors" / "cuda_extra.h").write_text("#define EXTRA 1\n")
    (tmp_path / "vendors" / "hip.h").write_text("#include <hip/hip_runtime.h>\n#define __CUDA_ARCH__ 1300\n"
                                                "#define cudaStream_t hipStream_t\n")
    (tmp_path / "common.cuh").write_text('#ifdef PROJ_USE_HIP\n#include "vendors/hip.h"\n#else\n'
                                         '#include "vendors/cuda.h"\n#endif\n')
    (tmp_path / "mine.cuh").write_text("__device__ int one() { return 1; }\n")
    (tmp_path / "k.cu").write_text('#include "common.cuh"\n#include "mine.cuh"\n')
    paths = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    facts = tree_facts(paths, frozenset({"__CUDA_ARCH__"}))
    other = {Path(p).relative_to(tmp_path).as_posix() for p in facts.other_platform}
    assert other == {"vendors/cuda.h", "vendors/cuda_extra.h"}
    assert facts.other_platform[str(tmp_path / "vendors" / "cuda.h")] == \
        "common.cuh includes it under `#ifdef PROJ_USE_HIP`"  # the test whose `#else` it is
    assert facts.other_platform[str(tmp_path / "vendors" / "cuda_extra.h")] == \
        "only cuda.h includes it, which is the other platform's"
    assert {Path(p).name for p in facts.inherited} == {"mine.cuh"}  # compiled within k.cu, after common.cuh
    assert facts.amd_only == {str(tmp_path / "vendors" / "hip.h"): "common.cuh includes it under `#ifdef PROJ_USE_HIP`"}
    assert facts.macros == {"__CUDA_ARCH__"}
    assert repr(facts).startswith("TreeFacts(") and hash(facts) == hash(tree_facts(paths, frozenset({"__CUDA_ARCH__"})))


# -- `-o` ---------------------------------------------------------------------------------------------------------

def test_output_dir_gets_the_whole_tree(tmp_path):
    src = tmp_path / "proj"
    (src / "data").mkdir(parents=True)
    (src / "scripts").mkdir()
    (src / "k.cu").write_text("#include <cuda_runtime.h>\nint f() { return cudaDeviceSynchronize(); }\n")
    (src / "config.h.in").write_text("#define PROJ_VERSION @VERSION@\n")
    (src / "kernels.def").write_text("KERNEL(scale)\n")
    (src / "data" / "table.bin").write_bytes(bytes(range(256)) * 4)
    (src / "scripts" / "run.sh").write_text("#!/bin/sh\necho run\n")
    (src / "scripts" / "run.sh").chmod(0o755)
    (src / "Makefile").write_text("all:\n\tnvcc -c k.cu\n")
    (src / "latest").symlink_to("data/table.bin")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    out = tmp_path / "out"
    r = hipport("convert", "--rocm-version", "7.2", "--no-cache", "--no-build-files", src, "-o", out)
    assert r.returncode == 0, r.stderr
    assert (out / "k.cu").read_text().startswith("#include <hip/hip_runtime.h>\n")
    for rel in ("config.h.in", "kernels.def", "data/table.bin", "scripts/run.sh", "Makefile"):
        assert (out / rel).read_bytes() == (src / rel).read_bytes(), rel
    assert stat.S_IMODE((out / "scripts" / "run.sh").stat().st_mode) == 0o755
    assert (out / "latest").is_symlink() and os.readlink(out / "latest") == "data/table.bin"
    assert not (out / ".git").exists()
    again = hipport("convert", "--rocm-version", "7.2", "--no-cache", "--no-build-files", src, "-o", out)
    assert again.returncode == 0, again.stderr  # into a tree it wrote before: replaced, atomically


# -- build files ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, why", [
    (b"cmake_minimum_required(VERSION 3.21)\nenable_language(HIP)\n", "`enable_language(HIP)`"),
    (b"set_source_files_properties(${SRCS} PROPERTIES LANGUAGE HIP)\n", "`LANGUAGE HIP`"),
    (b"project(demo LANGUAGES CXX HIP)\n", "`LANGUAGES CXX HIP`"),
    (b"# enable_language(HIP) one day\nproject(demo LANGUAGES CXX CUDA)\n", ""),
])
def test_a_cmake_file_that_enables_hip_is_the_projects_own(text, why):
    from hipport.convert.build import convert_build_text
    from hipport.convert.single_source import hip_path_of_cmake

    assert hip_path_of_cmake(text) == why
    result = convert_build_text(text, "cmake", OPTIONS, "CMakeLists.txt")[0]
    assert (result.after == text) if why else (result.after != text)
    assert result.hip_path == why


def test_a_tree_with_its_own_hip_build_keeps_its_cuda_build(tmp_path):
    (tmp_path / "cuda").mkdir()
    (tmp_path / "hip").mkdir()
    cuda = b"project(k LANGUAGES CXX CUDA)\nadd_library(k k.cu)\n"
    hip = b"enable_language(HIP)\nadd_library(k ../cuda/k.cu)\nset_source_files_properties(../cuda/k.cu PROPERTIES LANGUAGE HIP)\n"
    (tmp_path / "cuda" / "CMakeLists.txt").write_bytes(cuda)
    (tmp_path / "hip" / "CMakeLists.txt").write_bytes(hip)
    r = hipport("convert", "--rocm-version", "7.2", "--no-cache", "--check", tmp_path)
    assert r.returncode == 0, r.stderr  # nothing would change
    assert "already builds for AMD: 2 files with a HIP path" in r.stderr
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "CMakeLists.txt").write_bytes(cuda)
    r = hipport("convert", "--rocm-version", "7.2", "--no-cache", "--check", alone)
    assert r.returncode == 1, r.stderr  # a CUDA-only project's is converted as before


def test_a_converted_error_checking_header_is_not_taken_for_a_compat_layer(tmp_path):
    """Converting a tree in place writes its headers before some of the files that include them: a CUDA-named
    macro that now uses HIP names (`#define CUDA_CHECK_LAST_ERROR() { if (hipSuccess != ...) }`) is the project's
    code, not a mapping, so the files converted after it are converted too (HeCBench's tsne lost 7 files so)."""
    (tmp_path / "a_utils.h").write_text(
        "#pragma once\n#include <cstdio>\n#define CUDA_CHECK_LAST_ERROR() { \\\n"
        "    if (cudaSuccess != cudaGetLastError()) printf(\"%s\\n\", cudaGetErrorString(cudaGetLastError())); }\n")
    for name in ("b.cu", "z.cu"):
        (tmp_path / name).write_text('#include "a_utils.h"\nvoid f() { cudaDeviceSynchronize(); '
                                     'CUDA_CHECK_LAST_ERROR(); }\n')
    r = hipport("convert", tmp_path, "--rocm-version", "7.2", "-q")
    assert r.returncode == 0, r.stderr
    for name in ("b.cu", "z.cu"):
        text = (tmp_path / name).read_text()
        assert "hipDeviceSynchronize();" in text and "cudaDeviceSynchronize" not in text, text
    assert "cudaGetLastError" not in (tmp_path / "a_utils.h").read_text()
    again = hipport("convert", tmp_path, "--rocm-version", "7.2", "--check")
    assert again.returncode == 0, again.stdout + again.stderr


UTILS_PAIR = """#pragma once
#include <cstdio>
#include <cstdlib>
#if defined(__CUDACC__)
#define CUDA_CHECK_RETURN(value) { cudaError_t s = value; if (s != cudaSuccess) { \\
    fprintf(stderr, "%s\\n", cudaGetErrorString(s)); exit(1); } }
#endif
#if defined(__HIPCC__)
#define HIP_CHECK_RETURN(value) { hipError_t s = value; if (s != hipSuccess) { \\
    fprintf(stderr, "%s\\n", hipGetErrorString(s)); exit(1); } }
#endif
"""
USES_PAIR = '#include "utils.h"\nvoid alloc(float **p) { CUDA_CHECK_RETURN(cudaMalloc((void **)p, 64)); }\n'


def test_a_cuda_only_file_calls_the_projects_own_amd_spelling_of_a_macro(tmp_path):
    """HeCBench cm: the header defines its error check once per platform; the header is left as it is (its nvcc
    branch is the other platform's), so the ported file calls the AMD spelling, which the AMD build defines."""
    (tmp_path / "utils.h").write_text(UTILS_PAIR)
    (tmp_path / "process.cu").write_text(USES_PAIR)
    r = hipport("convert", tmp_path, "--rocm-version", "7.2", "-q", "--no-cache")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "utils.h").read_text() == UTILS_PAIR
    assert (tmp_path / "process.cu").read_text() == "#include <hip/hip_runtime.h>\n" + USES_PAIR.replace(
        "CUDA_CHECK_RETURN(cudaMalloc", "HIP_CHECK_RETURN(hipMalloc")
    again = hipport("convert", tmp_path, "--rocm-version", "7.2", "--check", "--no-cache")
    assert again.returncode == 0, again.stdout + again.stderr
    built = real_compile(tmp_path / "process.cu", "7.2", REAL_ARCHS)
    assert built.returncode == 0, built.stderr[-3000:]


@pytest.mark.parametrize("utils", [
    UTILS_PAIR.replace("HIP_CHECK_RETURN(value)", "HIP_CHECK_RETURN(value, what)"),  # other parameters: no pair
    UTILS_PAIR.replace("#if defined(__CUDACC__)\n", "#if 1\n"),                      # defined for both builds
    UTILS_PAIR.replace("HIP_CHECK_RETURN", "HIP_CHECK"),                              # no HIP spelling of the name
], ids=["other-parameters", "both-builds", "another-name"])
def test_a_macro_without_an_amd_counterpart_is_left_to_the_user(tmp_path, utils):
    (tmp_path / "utils.h").write_text(utils)
    (tmp_path / "process.cu").write_text(USES_PAIR)
    r = hipport("convert", tmp_path, "--rocm-version", "7.2", "-q", "--no-cache")
    assert r.returncode == 0, r.stderr
    assert "CUDA_CHECK_RETURN(hipMalloc" in (tmp_path / "process.cu").read_text()
