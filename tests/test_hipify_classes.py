"""Rules from the classes of HIPIFY's unit tests that hipport wrote differently (issue 32), beyond their fixture
pairs in tests/fixtures/convert (declared-types, launch-macro, guard-pragma): the edges of each rule, and the nvcc
fact the symbol rule rests on."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hipcc import require_nvcc
from needs import need

from hipport.convert import ConvertOptions, convert_source
from hipport.convert.calls import Arg
from hipport.convert.context import ConversionContext
from hipport.convert.declared import canonical, declared_type

OPTIONS = ConvertOptions(rocm_version=(7, 2))
LAUNCH = ConvertOptions(rocm_version=(7, 2), launch_syntax="hip")
RUNTIME = b"#include <hip/hip_runtime.h>\n"


def converted(rules, text: str, options=OPTIONS, path="k.cu") -> str:
    return convert_source(text.encode(), rules, options, path).after.decode()


# --- include guards -------------------------------------------------------------------------------------------

def test_a_guard_with_pragma_once_inside_gets_the_include_after_its_ifndef(rules):
    src = "#ifndef K_H\n#pragma once\n#define K_H\n__global__ void k() {}\n#endif\n"
    assert converted(rules, src) == "#ifndef K_H\n#include <hip/hip_runtime.h>\n#pragma once\n#define K_H\n" \
                                   "__global__ void k() {}\n#endif\n"


def test_a_comment_between_a_guards_lines_leaves_it_a_guard(rules):
    src = "#ifndef K_H\n// the guard\n#define K_H\n__global__ void k() {}\n#endif\n"
    assert converted(rules, src) == "#ifndef K_H\n// the guard\n#define K_H\n#include <hip/hip_runtime.h>\n" \
                                   "__global__ void k() {}\n#endif\n"


@pytest.mark.parametrize("src", [
    "#ifndef K_H\n#pragma once\n#define OTHER_H\n__global__ void k() {}\n#endif\n",           # another macro
    "#ifndef K_H\n#pragma once\nint x;\n#define K_H\n__global__ void k() {}\n#endif\n",      # code between
    "#ifndef K_H\n#pragma pack(1)\n#define K_H\n__global__ void k() {}\n#endif\n",          # another pragma
], ids=["other-macro", "code-between", "other-pragma"])
def test_what_is_no_guard_gets_the_include_at_the_top(rules, src):
    assert converted(rules, src) == RUNTIME.decode() + src


def test_pragma_once_before_the_guard_keeps_the_include_after_it(rules):
    src = "#pragma once\n#ifndef K_H\n#define K_H\n__global__ void k() {}\n#endif\n"
    assert converted(rules, src) == "#pragma once\n#include <hip/hip_runtime.h>\n#ifndef K_H\n#define K_H\n" \
                                   "__global__ void k() {}\n#endif\n"


# --- declared types -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    (b"const void* const", b"const void*"),
    (b"const void * * const", b"const void**"),
    (b"void const *", b"const void*"),
    (b"static __device__ const float", b"const float"),
    (b"const void *const *", b"const void*const*"),
    (b"std :: size_t &", b"std::size_t&"),
])
def test_canonical_spelling(text, expected):
    assert canonical(text) == expected


def _type_of(rules, src: str, name: str) -> bytes | None:
    """The declared type hipport reads for the last use of ``name`` in ``src``."""
    ctx = ConversionContext("k.cu", src.encode(), rules, OPTIONS)
    tokens = ctx.tokens
    use = max(k for k in range(len(tokens)) if tokens.text(k) == name.encode())
    found = declared_type(ctx, Arg(use, use + 1, tokens.starts[use], tokens.ends[use]))
    return canonical(src.encode()[tokens.starts[found[0]]:tokens.ends[found[1] - 1]]) if found else None


@pytest.mark.parametrize("src,expected", [
    ("void f() { const void* p = 0; g(p); }", b"const void*"),
    ("void f(int n, const void* p) { g(p); }", b"const void*"),
    ("const void* p; void f() { g(p); }", b"const void*"),
    ("struct S { const void* p; void f() { g(p); } };", b"const void*"),          # a member, in its class
    ("float p; void h(const void* p) {} void f() { g(p); }", b"float"),           # another function's parameter
    ("float p; void h(const void* p); void f() { g(p); }", b"float"),             # a prototype's parameter
    ("float p; void h() { const void* p = 0; } void f() { g(p); }", b"float"),    # another function's local
    ("struct S { const void* p; }; void f() { g(p); }", None),                    # a member, outside its class
    ("void f(int a) { int b = a * p; g(p); }", None),                             # uses only
    ("void f() { const void* q = 0, *p = 0; g(p); }", None),                      # a second declarator
    ("void f() { std::vector<int> p; g(p); }", None),                             # a template type
])
def test_declared_type_of_an_argument(rules, src, expected):
    assert _type_of(rules, src, "p") == expected


SYMBOLS = """#include <cuda_runtime.h>
__device__ float d_scale;
cudaError_t f(cudaGraphNode_t n, const float* host) {
  const void* by_value = &d_scale;
  void* by_address = nullptr;
  cudaGraphMemcpyNodeSetParamsToSymbol(n, by_value, host, 4, 0, cudaMemcpyHostToDevice);
  cudaGraphMemcpyNodeSetParamsToSymbol(n, d_scale, host, 4, 0, cudaMemcpyHostToDevice);
  return cudaGraphMemcpyNodeSetParamsToSymbol(n, by_address, host, 4, 0, cudaMemcpyHostToDevice);
}
"""


def test_symbol_arguments_follow_nvccs_overloads(rules):
    out = converted(rules, SYMBOLS)
    assert "hipGraphMemcpyNodeSetParamsToSymbol(n, HIP_SYMBOL(by_value)," in out
    assert "hipGraphMemcpyNodeSetParamsToSymbol(n, HIP_SYMBOL(&d_scale)," in out
    assert "hipGraphMemcpyNodeSetParamsToSymbol(n, HIP_SYMBOL(&by_address)," in out


def test_nvcc_takes_the_template_for_a_void_pointer_and_the_c_function_for_a_const_one(tmp_path):
    """The fact the symbol rule rests on: CUDA's C++ template `(const T& symbol)` binds a `void*` lvalue exactly
    (T = void*) and beats the C function's `const void*`, which needs a qualification conversion; for a
    `const void*` both match exactly and the non-template wins. The instances nvcc emits say which was called."""
    nvcc = require_nvcc()
    nm = shutil.which("nm")
    need(nm, "nm (binutils)", "apt-get install binutils")
    (tmp_path / "s.cu").write_text(SYMBOLS)
    r = subprocess.run([nvcc, "-c", str(tmp_path / "s.cu"), "-o", str(tmp_path / "s.o")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    symbols = subprocess.run([nm, "-C", str(tmp_path / "s.o")], capture_output=True, text=True).stdout
    instances = {line.split("cudaGraphMemcpyNodeSetParamsToSymbol<", 1)[1].split(">", 1)[0]
                 for line in symbols.splitlines() if "cudaGraphMemcpyNodeSetParamsToSymbol<" in line}
    assert instances == {"void*", "float"}  # by_address and d_scale through the template; by_value not
    assert any(line.split()[-1] == "cudaGraphMemcpyNodeSetParamsToSymbol" and line.split()[0] == "U"
               for line in symbols.splitlines())  # by_value: the C function


def test_a_cast_to_the_declared_type_is_left_out_and_others_stay(rules):
    src = ("#include <cublas_v2.h>\n"
           "cublasStatus_t f(cublasHandle_t h, const float* al, void** c, const void* const* cuda_a) {\n"
           "  const void** a = const_cast<const void**>(cuda_a);\n"
           "  return cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, al, a, CUDA_R_32F, 1, cuda_a,\n"
           "                             CUDA_R_32F, 1, al, c, CUDA_R_32F, 1, 4, CUBLAS_COMPUTE_32F,\n"
           "                             CUBLAS_GEMM_DEFAULT);\n}\n")
    out = converted(rules, src, ConvertOptions(rocm_version=(6, 4)))
    assert "al, a, HIP_R_32F, 1, const_cast<const void**>(cuda_a)," in out
    assert "al, c, HIP_R_32F" in out


# --- launches inside macros -----------------------------------------------------------------------------------

def test_uses_of_a_launch_head_macro_are_written_only_where_asked(rules):
    src = "__global__ void k(int) {}\n#define GO k<<<2, 64>>>\nvoid f() { GO(1); }\n"
    assert "void f() { GO(1); }" in converted(rules, src)  # --launch-syntax cuda: nothing to do
    out = converted(rules, src, LAUNCH)
    assert "#define GO k<<<2, 64>>>\n" in out
    assert "void f() { hipLaunchKernelGGL(k, dim3(2), dim3(64), 0, 0, 1); }" in out


def test_a_launch_head_macro_used_in_another_macro_or_without_arguments_is_left(rules):
    src = ("__global__ void k(int) {}\n#define GO k<<<2, 64>>>\n#define TWICE GO(1); GO(2)\n"
           "void f() { TWICE; auto p = &GO; }\n")
    result = convert_source(src.encode(), rules, LAUNCH, "k.cu")
    assert "#define TWICE GO(1); GO(2)\n" in result.after.decode()
    assert "void f() { TWICE; auto p = &GO; }" in result.after.decode()
    [finding] = [f for f in result.findings if f.rule_id == "launch-not-rewritten"]
    assert "by hand" in finding.message and len(finding.message) <= 300
