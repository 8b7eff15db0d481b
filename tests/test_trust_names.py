"""Issue 11 (trust), items 2 and 3: the user's own names stay theirs, consistently (declaration, out-of-line
definition and calls agree) while the real CUDA API is still renamed; comments on removed include lines are kept;
stringized and pasted macro operands are not renamed."""

from hipcc import require_hipcc, syntax_check

from hipport.convert.summary import summarize


def out(convert, src, **kw):
    return convert(src, **kw).after.decode()


# --- the user's own names -------------------------------------------------------------------------------------

POOL = """\
#include <cuda_runtime.h>
#include <cstddef>

namespace mylib {
int cudaFree(void *p);
int release(void *p) { return cudaFree(p); }
}
int mylib::cudaFree(void *p) { return p == nullptr; }

struct Pool {
  int cudaMalloc(void **p, size_t n);
  int grow() { void *q = nullptr; return cudaMalloc(&q, 8); }
  int reserve();
  int used = 0;
};

int Pool::cudaMalloc(void **p, size_t n) {
  used += (int)n;
  return ::cudaMalloc(p, n) == cudaSuccess ? 0 : 1;
}

int Pool::reserve() { void *q = nullptr; return cudaMalloc(&q, 1); }

int run() {
  Pool pool;
  Pool *pp = &pool;
  void *p = nullptr;
  int r = pool.cudaMalloc(&p, 4) + pp->cudaMalloc(&p, 4);
  r += mylib::cudaFree(p) + mylib::release(p);
  void *d = nullptr;
  cudaMalloc(&d, 16);
  cudaFree(d);
  return r;
}
"""

POOL_HIP = """\
#include <hip/hip_runtime.h>
#include <cstddef>

namespace mylib {
int cudaFree(void *p);
int release(void *p) { return cudaFree(p); }
}
int mylib::cudaFree(void *p) { return p == nullptr; }

struct Pool {
  int cudaMalloc(void **p, size_t n);
  int grow() { void *q = nullptr; return cudaMalloc(&q, 8); }
  int reserve();
  int used = 0;
};

int Pool::cudaMalloc(void **p, size_t n) {
  used += (int)n;
  return ::hipMalloc(p, n) == hipSuccess ? 0 : 1;
}

int Pool::reserve() { void *q = nullptr; return cudaMalloc(&q, 1); }

int run() {
  Pool pool;
  Pool *pp = &pool;
  void *p = nullptr;
  int r = pool.cudaMalloc(&p, 4) + pp->cudaMalloc(&p, 4);
  r += mylib::cudaFree(p) + mylib::release(p);
  void *d = nullptr;
  hipMalloc(&d, 16);
  hipFree(d);
  return r;
}
"""


def test_members_and_namespace_names_stay_the_users_consistently(convert):
    # `convert` also checks that a second conversion changes nothing.
    assert out(convert, POOL) == POOL_HIP


def test_pool_example_compiles_after_convert(convert, tmp_path):
    require_hipcc()
    path = tmp_path / "pool.hip.cpp"
    path.write_bytes(convert(POOL).after)
    r = syntax_check(path)
    assert r.returncode == 0, r.stderr[-3000:]


def test_issue_example_declaration_definition_and_call_agree(convert):
    src = ("struct Pool { int cudaMalloc(void**, size_t); };\n"
           "int Pool::cudaMalloc(void** p, size_t n) { return 0; }\n"
           "int f(Pool &pool, void **p) { return pool.cudaMalloc(p, 4) + mylib::cudaFree(*p); }\n")
    assert out(convert, src) == src


def test_real_cuda_api_is_still_renamed_around_user_names(convert):
    src = ("struct S { cudaStream_t s; cudaEvent_t e[2]; void f() { cudaMalloc(&p, 1); } };\n"
           "namespace mylib { void g() { cudaMalloc(&p, 1); } cudaError_t e = cudaGetLastError(); }\n"
           "void Other::h() { cudaFree(p); }\n"
           "void alloc(void **p) { cudaMalloc(p, 4); }\n"
           "void k() { ::cudaMalloc(&p, 1); cudaMemcpyKind::cudaMemcpyHostToDevice; }\n"
           "typedef cub::BlockReduce<int, 128> R;\n")
    assert out(convert, src) == (
        "struct S { hipStream_t s; hipEvent_t e[2]; void f() { hipMalloc(&p, 1); } };\n"
        "namespace mylib { void g() { hipMalloc(&p, 1); } hipError_t e = hipGetLastError(); }\n"
        "void Other::h() { hipFree(p); }\n"
        "void alloc(void **p) { hipMalloc(p, 4); }\n"
        "void k() { ::hipMalloc(&p, 1); hipMemcpyKind::hipMemcpyHostToDevice; }\n"
        "typedef hipcub::BlockReduce<int, 128> R;\n")


def test_a_global_redeclaration_of_the_cuda_api_is_cuda(convert):
    src = 'extern "C" cudaError_t cudaFree(void *p);\nvoid f() { cudaFree(0); }\n'
    assert out(convert, src) == 'extern "C" hipError_t hipFree(void *p);\nvoid f() { hipFree(0); }\n'


def test_derived_class_and_using_see_the_users_names(convert):
    src = ("struct Base { int cudaMalloc(void **p, size_t n); };\n"
           "struct Derived : public Base { int g() { return cudaMalloc(0, 1); } };\n"
           "namespace mylib { int cudaFree(void *p); }\n"
           "void f() { cudaFree(0); }\n"
           "using namespace mylib;\n"
           "void h() { cudaFree(0); }\n")
    assert out(convert, src) == src.replace("void f() { cudaFree(0); }", "void f() { hipFree(0); }")


def test_user_qualified_and_member_names_get_no_argument_rewrite(convert):
    src = ("struct Sym { int cudaMemcpyToSymbol(int a, int b); };\n"
           "int Sym::cudaMemcpyToSymbol(int a, int b) { return a + b; }\n"
           "int f(Sym &s) { return s.cudaMemcpyToSymbol(1, 2) + mylib::cudaMemcpyToSymbol(3, 4); }\n")
    result = convert(src)
    assert result.after.decode() == src
    assert not result.findings


def test_user_names_are_never_unknown_in_the_summary(convert):
    src = ("struct S { void cudaFancyHook(); };\n"
           "void S::cudaFancyHook() {}\n"
           "void f(S &s) { s.cudaFancyHook(); mylib::cudaOtherHook(); cudaNotAThing(); }\n")
    result = convert(src)
    assert [u[0] for u in result.unknown] == ["cudaNotAThing"]
    assert list(summarize([result]).unknown) == ["cudaNotAThing"]


def test_user_variable_of_a_cuda_name_is_theirs_within_its_scope(convert):
    src = "void f() { int cudaMalloc = 3; g(cudaMalloc + 1); }\nvoid h() { cudaMalloc(&p, 1); }\n"
    assert out(convert, src) == src.replace("cudaMalloc(&p", "hipMalloc(&p")


def test_macro_bodies_follow_the_same_notion(convert):
    src = ("#define ALLOC(p) pool.cudaMalloc(p)\n#define FREE(p) mylib::cudaFree(p)\n"
           "#define G(p) ::cudaFree(p)\n#define H ::cudaFree\n")
    assert out(convert, src) == src.replace("::cudaFree(p)\n#define H ::cudaFree", "::hipFree(p)\n#define H ::hipFree")


def test_using_declaration_anonymous_namespace_and_enumerators(convert):
    src = ("using mylib::cudaFree;\nvoid f() { cudaFree(p); }\n"
           "namespace { int cudaMalloc(void **p, size_t n) { return 0; } }\nvoid g() { cudaMalloc(&p, 1); }\n"
           "namespace n { enum E { cudaMemcpyHostToDevice }; int k = cudaMemcpyHostToDevice; }\n"
           "int m = cudaMemcpyHostToDevice;\n")
    assert out(convert, src) == src.replace("int m = cudaMemcpyHostToDevice", "int m = hipMemcpyHostToDevice")


def test_own_namespace_fallback_of_an_unsupported_intrinsic_is_not_reported(convert):
    # HeCBench's flashinfer headers define old-CUDA fallbacks of bf16 intrinsics in their own namespace.
    src = ("namespace fi {\n__device__ __nv_bfloat162 make_bfloat162(__nv_bfloat16 x, __nv_bfloat16 y);\n"
           "__device__ void f(__nv_bfloat16 v) { auto d = make_bfloat162(v, v); }\n}\n"
           "__device__ void g(__nv_bfloat16 v) { auto d = make_bfloat162(v, v); }\n")
    assert [f.line for f in convert(src).findings if f.subject == "make_bfloat162"] == [5]


def test_user_variables_are_not_unknown_names(convert):
    result = convert("void f() { cudaError_t cudaStat = cudaSuccess; size_t cuStackSize = 0; use(cudaStat, cuStackSize); }\n")
    assert result.unknown == []


# --- include lines removed with their comment kept -------------------------------------------------------------

def test_removed_include_keeps_its_trailing_comment(convert):
    src = ('#include <cuda_runtime.h>\n#include <cuda.h>  // NOTE\n'
           '#include "device_launch_parameters.h" /* why */\nint x;\n')
    assert out(convert, src) == "#include <hip/hip_runtime.h>\n// NOTE\n/* why */\nint x;\n"


def test_removed_indented_include_keeps_comment_at_its_indentation(convert):
    src = '#ifdef X\n  #include "device_launch_parameters.h" // for threadIdx\n#endif\n'
    assert out(convert, src) == "#ifdef X\n  // for threadIdx\n#endif\n"


def test_removed_include_without_comment_goes_whole(convert):
    src = '#include <cuda_runtime.h>\n#include "device_launch_parameters.h"\nint x;\n'
    assert out(convert, src) == "#include <hip/hip_runtime.h>\nint x;\n"


# --- stringizing and pasting ------------------------------------------------------------------------------------

def test_stringized_macro_argument_is_not_renamed(convert):
    src = '#define STR(x) #x\nvoid f() { puts(STR(cudaMalloc)); }\n'
    assert out(convert, src) == src


def test_stringized_through_a_helper_macro_is_not_renamed(convert):
    src = '#define XSTR(x) STR(x)\n#define STR(x) # x\nvoid f() { puts(XSTR(cudaFree)); }\n'
    assert out(convert, src) == src


def test_argument_used_as_code_as_well_as_stringized_is_renamed(convert):
    src = ('#define CHECK(x) do { if ((x) != cudaSuccess) printf("%s\\n", #x); } while (0)\n'
           'void f() { CHECK(cudaMalloc(&p, 4)); }\n')
    assert out(convert, src) == src.replace("cudaSuccess", "hipSuccess").replace("cudaMalloc", "hipMalloc")


def test_identifier_after_hash_in_a_define_body_is_not_renamed(convert):
    src = "#define NAME(cudaFree) #cudaFree\n#define USE(cudaMalloc) cudaMalloc(p)\n"
    assert out(convert, src) == src


def test_pasted_operands_are_not_renamed(convert):
    src = ("#define WRAP(f) wrap_##f\n#define GLUE(x) x##cudaFree\n#define LEFT(x) cudaMemcpy##x\n"
           "int WRAP(cudaMalloc)(void);\n")
    assert out(convert, src) == src
