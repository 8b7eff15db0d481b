"""Build-breakers: code nvcc compiles whose plain HIP rename does not build with HIP-Clang (issue 14). Each class has
a fixture pair in tests/fixtures/convert (input, HIP form written by hand, compiled with hipcc there); here, what
the summary counts and reports for each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hipcc import require_hipcc, syntax_check

from hipport.convert import ConvertOptions, convert_source
from hipport.convert.summary import summarize

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "convert"
OPTIONS = ConvertOptions(rocm_version=(6, 3))


def _convert(rules, name: str):
    return convert_source((FIXTURES / name).read_bytes(), rules, OPTIONS, path=name)


def test_register_is_dropped_and_counted(rules):
    result = _convert(rules, "register.cu")
    assert b"register" not in result.after.split(b"\n", 1)[1]  # the first line is a comment about it
    summary = summarize([result])
    assert summary.conversions["c++17"] == 6
    again = convert_source(result.after, rules, OPTIONS)
    assert again.after == result.after and not [c for c in again.conversions if c.category == "c++17"]


def test_cooperative_groups_header_gets_the_runtime_first(rules):
    result = _convert(rules, "cg-order.cu")
    text = result.after.decode()
    assert text.index("hip/hip_runtime.h") < text.index("hip/hip_cooperative_groups.h")
    assert text.count("hip/hip_runtime.h") == 1  # the runtime include further down went: it would repeat
    # A runtime include in another conditional block does not count: the cooperative-groups one gets its own.
    src = (b"#ifdef A\n#include <cuda_runtime.h>\n#endif\n#include <cooperative_groups.h>\n"
           b"__global__ void k() {}\n")
    out = convert_source(src, rules, OPTIONS).after
    assert out == (b"#ifdef A\n#include <hip/hip_runtime.h>\n#endif\n#include <hip/hip_runtime.h>\n"
                   b"#include <hip/hip_cooperative_groups.h>\n__global__ void k() {}\n")
    assert convert_source(out, rules, OPTIONS).after == out


def test_host_alloc_override_is_data_with_provenance(rules, tmp_path):
    from hipport.rules import load_rules

    assert rules.names["cudaHostAlloc"].hip == "hipHostMalloc"
    assert rules.overrides["cudaHostAlloc"][0] == "hipHostAlloc"  # HIPIFY's, kept for `rules show`
    # An imported hipify-perl table repeating HIPIFY's name does not undo the override; a --rules folder does.
    imported = tmp_path / "perl"
    imported.mkdir()
    (imported / "perl.toml").write_text('[family]\nname = "hipify-perl"\n[import]\nfrom = "x"\n'
                                        '[names]\ncudaHostAlloc = { hip = "hipHostAlloc" }\n')
    assert load_rules([imported], use_cache=False).names["cudaHostAlloc"].hip == "hipHostMalloc"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "m.toml").write_text('[family]\nname = "mine"\n[names]\ncudaHostAlloc = { hip = "hipHostAlloc" }\n')
    assert load_rules([mine], use_cache=False).names["cudaHostAlloc"].hip == "hipHostAlloc"


def test_malformed_override_is_one_line(tmp_path, monkeypatch):
    import shutil

    from hipport import rules as rules_module

    fake = tmp_path / "rules"
    shutil.copytree(rules_module.builtin_rules_dir(), fake)
    (fake / "overrides.toml").write_text('[names.cudaHostAlloc]\nhip = "hipHostMalloc"\n')
    monkeypatch.setattr(rules_module, "builtin_rules_dir", lambda: fake)
    try:
        rules_module.load_rules(use_cache=False)
    except rules_module.RuleError as exc:
        assert "needs exactly `hip`, `source` and `why`" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("a malformed override loaded")


BREAKERS = FIXTURES.parent / "breakers"


def _need_hip_headers():
    from needs import need

    from hipport import rocm

    need(rocm.include_roots(), "HIP's headers (hip/hip_version.h)", "apt-get install libamdhip64-dev")


@pytest.mark.parametrize("name, rule, guarded", [("redefined", "redefines-hip", 3), ("merged", "overload-merged", 2),
                                                ("vector-ops", "redefines-hip", 2)])
def test_redefinitions_are_guarded_and_reported(rules, name, rule, guarded):
    """The project's atomicMax/atomicMin/atomicAdd that HIP declares (found in the installed HIP headers), and
    overloads that renaming folds into one: guarded, counted under `guard`, reported; a second run changes
    nothing; look-alikes (another name, namespace or parameter list) stay."""
    _need_hip_headers()
    src = (BREAKERS / f"{name}.cu").read_bytes()
    expected = (BREAKERS / f"{name}.hip.cu").read_bytes()
    result = convert_source(src, rules, OPTIONS, path=f"{name}.cu")
    assert result.after == expected
    assert summarize([result]).conversions["guard"] == guarded
    assert [f.rule_id for f in result.findings if f.rule_id == rule] == [rule] * guarded
    again = convert_source(expected, rules, OPTIONS)
    assert again.after == expected and not [f for f in again.findings if f.rule_id == rule]


@pytest.mark.parametrize("name", ["redefined", "merged", "vector-ops"])
def test_redefinition_fixtures_compile_and_would_not_unguarded(name, tmp_path):
    require_hipcc()
    assert syntax_check(BREAKERS / f"{name}.hip.cu").returncode == 0
    unguarded = tmp_path / f"{name}.cu"
    text = (BREAKERS / f"{name}.hip.cu").read_text()
    unguarded.write_text(re.sub(r"#if !defined\(__HIP_PLATFORM_AMD__\).*\n", "#if 1\n", text))
    r = syntax_check(unguarded)
    assert r.returncode != 0 and ("error: redefinition of" in r.stderr or "is ambiguous" in r.stderr)


def test_no_guard_without_a_matching_hip_declaration(rules):
    src = (b"#include <cuda_runtime.h>\n"
           b"__device__ float atomicMax(float *a, float b, float c) { return b; }\n"  # HIP has no 3-parameter one
           b"__host__ float atomicMin(float *a, float b) { return b; }\n"              # host code: not HIP's
           b"#ifdef A\nvoid check(cudaError_t e) {}\n#else\nvoid check(CUresult e) {}\n#endif\n")  # never both
    result = convert_source(src, rules, OPTIONS)
    assert b"#if !defined" not in result.after
    assert not [f for f in result.findings if f.rule_id in ("redefines-hip", "overload-merged")]
    # Overloads in an #ifdef and outside it are compiled together when the macro is defined: guarded.
    src = b"void check(cudaError_t e) {}\n#ifdef A\nvoid check(CUresult e) {}\n#endif\n"
    assert convert_source(src, rules, OPTIONS).after == (
        b"void check(hipError_t e) {}\n#ifdef A\n#if !defined(__HIP_PLATFORM_AMD__) && "
        b"!defined(__HIP_PLATFORM_NVIDIA__)\nvoid check(hipError_t e) {}\n#endif\n#endif\n")


HOST_ONLY = b"""#include <cstdio>
// Host code calling the runtime without including it: nvcc includes cuda_runtime.h in every .cu file.
int main() {
  int count = 0;
  cudaGetDeviceCount(&count);
  cudaSetDevice(0);
  printf("%d\\n", count);
  return 0;
}
"""


def test_cu_file_calling_the_runtime_gets_its_header(rules, tmp_path):
    result = convert_source(HOST_ONLY, rules, OPTIONS, path="src/main.cu")
    expected = HOST_ONLY.replace(b"#include <cstdio>\n", b"#include <hip/hip_runtime.h>\n#include <cstdio>\n") \
        .replace(b"cudaGetDeviceCount", b"hipGetDeviceCount").replace(b"cudaSetDevice", b"hipSetDevice")
    assert result.after == expected
    assert convert_source(expected, rules, OPTIONS, path="src/main.cu").after == expected
    # A .cpp file was compiled by a host compiler, which includes nothing by itself: renamed only.
    assert b"hip_runtime" not in convert_source(HOST_ONLY, rules, OPTIONS, path="src/main.cpp").after
    require_hipcc()
    (tmp_path / "main.cu").write_bytes(expected)
    assert syntax_check(tmp_path / "main.cu").returncode == 0
    (tmp_path / "plain.cu").write_bytes(expected.replace(b"#include <hip/hip_runtime.h>\n", b""))
    assert "use of undeclared identifier 'hipGetDeviceCount'" in syntax_check(tmp_path / "plain.cu").stderr


CU_UNIT = FIXTURES / "cu-unit"  # a folder of its own: these pairs need their file names (.cu or not) to convert


@pytest.mark.parametrize("name", ["host-unit", "pragma-once"])
def test_every_cu_file_gets_the_runtime_header_nvcc_gave_it(rules, name):
    """nvcc includes cuda_runtime.h in every .cu file, so one that names no CUDA function (vector types, `dim3`,
    only a library's calls) builds with it; hipcc includes no HIP header. hipify-clang writes the include too."""
    source = CU_UNIT / f"{name}.cu"
    expected = (CU_UNIT / f"{name}.hip.cu").read_bytes()
    assert convert_source(source.read_bytes(), rules, OPTIONS, path=source.name).after == expected
    assert convert_source(expected, rules, OPTIONS, path=source.name).after == expected


@pytest.mark.parametrize("name", ["host-unit.noop.cuh", "runtime-first.noop.cu"])
def test_a_header_or_a_cu_file_with_the_runtime_header_stays(rules, name):
    src = (CU_UNIT / name).read_bytes()
    result = convert_source(src, rules, OPTIONS, path=name)
    assert result.after == src and not result.findings


@pytest.mark.parametrize("release", ["7.2", "6.4"])
def test_the_runtime_header_is_what_makes_a_host_cu_file_build(release, tmp_path):
    from hipcc import real_compile

    for name in ("host-unit", "pragma-once"):
        hip = tmp_path / f"{name}.hip.cu"
        hip.write_bytes((CU_UNIT / f"{name}.hip.cu").read_bytes())
        r = real_compile(hip, release)
        assert r.returncode == 0, r.stderr[-3000:]
    bare = tmp_path / "bare.cu"
    bare.write_bytes((CU_UNIT / "host-unit.hip.cu").read_bytes().replace(b"#include <hip/hip_runtime.h>\n", b""))
    r = real_compile(bare, release)
    assert r.returncode != 0 and "unknown type name 'float4'" in r.stderr, r.stderr[-3000:]


OLD = ConvertOptions(rocm_version=(5, 2))


def test_stand_ins_for_names_older_releases_lack(rules):
    src = (FIXTURES / "old-rocm.cu").read_bytes()
    result = convert_source(src, rules, OLD, path="old-rocm.cu")
    shims = [f for f in result.findings if f.rule_id == "shim-added"]
    assert sorted(f.subject for f in shims) == ["__syncwarp", "hipsparseGetErrorString"]
    assert all(f.severity == "info" for f in shims)
    # the stand-in replaces the "needs a newer ROCm" warning for the name it defines
    assert not [f for f in result.findings if f.rule_id == "needs-newer-rocm" and "GetErrorString" in f.message]
    assert summarize([result]).conversions["shim"] == 2
    # Targeting a release that has the names: no stand-in, the masks are kept (widened where they are all lanes).
    new = convert_source(src, rules, ConvertOptions(rocm_version=(7, 0)), path="old-rocm.cu").after
    assert b"HIPPORT_SHIM" not in new and b"__activemask()" in new and b"__shfl_sync(active, v, 0)" in new


def test_stand_in_goes_before_the_first_declaration_using_it(rules):
    src = (b"#include <cuda_runtime.h>\n__device__ int a;\n__device__ void f() {\n  a = 1;\n  __syncwarp();\n}\n"
           b"__device__ void g() { __syncwarp(); }\n")
    out = convert_source(src, rules, OLD).after.decode()
    assert out.count("#define HIPPORT_SHIM___syncwarp") == 1
    assert out.index("__device__ int a;") < out.index("HIPPORT_SHIM___syncwarp") < out.index("__device__ void f()")
    # No include at all: the stand-in follows the runtime include hipport writes.
    out = convert_source(b"__global__ void k() { __syncwarp(); }\n", rules, OLD).after.decode()
    assert out.startswith("#include <hip/hip_runtime.h>\n#if !defined(HIPPORT_SHIM___syncwarp)")
    assert convert_source(out.encode(), rules, OLD).after.decode() == out


def test_stand_in_is_needed_with_hip_5_2(tmp_path):
    """The stand-ins are what makes the HIP form build: without them hipcc 5.2 rejects it."""
    require_hipcc()
    text = (FIXTURES / "old-rocm.hip.cu").read_text()
    stripped = re.sub(r"#if !defined\(HIPPORT_SHIM_.*?#endif\n", "", text, flags=re.S)
    assert stripped.count("HIPPORT_SHIM") == 0 and stripped != text
    f = tmp_path / "stripped.cu"
    f.write_text(stripped)
    r = syntax_check(f)
    assert r.returncode != 0
    assert "__syncwarp" in r.stderr and "hipsparseGetErrorString" in r.stderr


def test_device_side_launches_are_named_and_left(rules):
    src = (b"#include <cuda_runtime.h>\nnamespace nn {\n__global__ void child(int *p) { p[0] = 1; }\n"
           b"__global__ void parent(int *p) {\n  if (p[0] < 2) { child<<<1, 1>>>(p); }\n  int x = p[0] << 2;\n}\n}\n"
           b"__device__ int table[2] = {1, 2};\nvoid host(int *p) { nn::child<<<1, 1>>>(p); }\n"
           b"template <typename T> __device__ void dev(T *p) { nn::child<<<1, 32, 0>>>(p); }\n")
    result = convert_source(src, rules, OPTIONS)
    found = [(f.line, f.severity) for f in result.findings if f.rule_id == "device-launch"]
    assert found == [(5, "error"), (11, "error")]  # the host launch on line 10 is fine
    assert b"child<<<1, 1>>>(p); }" in result.after


def test_device_side_launch_does_not_compile_with_hip(tmp_path):
    """What the finding is about: HIP-Clang rejects the launch, and verify.toml names the cause."""
    require_hipcc()
    f = tmp_path / "dp.cu"
    f.write_text("#include <hip/hip_runtime.h>\n__global__ void child(int *p) { p[0] = 1; }\n"
                 "__global__ void parent(int *p) { child<<<1, 1>>>(p); }\n")
    r = syntax_check(f)
    assert r.returncode != 0 and "reference to __global__ function 'child' in __global__ function" in r.stderr


TEXTURES = (b"#include <cuda_runtime.h>\n"
            b"__global__ void k(cudaTextureObject_t tex, float *out, int *ids) {\n"
            b"  out[0] = tex1Dfetch<float>(tex, 0);\n"
            b"  ids[0] = (int)tex;\n"
            b"  ids[1] = static_cast<unsigned long long>(tex) % 7;\n"
            b"}\n"
            b"void host(float *out, int *ids, cudaSurfaceObject_t surf) {\n"
            b"  cudaTextureObject_t tex = 0, copy;\n"
            b"  if (tex) copy = tex;\n"
            b"  unsigned long long handle = (unsigned long long)tex;\n"
            b"  int slot = surf % 16;\n"
            b"  k<<<1, 1>>>(tex, out, ids);\n"
            b"}\n")


def test_texture_objects_used_as_integers_are_named(rules):
    result = convert_source(TEXTURES, rules, OPTIONS)
    found = [(f.line, f.subject) for f in result.findings if f.rule_id == "texture-object-integer"]
    # the cast to a 64-bit integer (line 10) compiles on HIP and converts back; `if (tex)`, `= 0` and copies are fine
    assert found == [(4, "tex"), (5, "tex"), (11, "surf")]


def test_texture_objects_used_as_integers_do_not_compile_with_hip(rules, tmp_path):
    """What the finding is about: exactly the reported lines are the ones hipcc rejects."""
    require_hipcc()
    f = tmp_path / "tex.cu"
    f.write_bytes(convert_source(TEXTURES, rules, OPTIONS).after)
    r = syntax_check(f)
    lines = sorted({int(m) for m in re.findall(r"tex\.cu:(\d+):\d+: error", r.stderr)})
    assert lines == [4, 5, 11], r.stderr[-2000:]


def test_vector_operators_clash_by_release(rules, tmp_path):
    """Which of helper_math.h's operators clash with HIP_vector_type's is release data (rules/releases.toml), not
    read from the installed HIP: for 6.2 the two-vector `*` and `/` are guarded, and that form builds against ROCm
    6.2.2's headers while the unguarded one is ambiguous there; for 5.2 they stay, and build with Debian's HIP."""
    src = (BREAKERS / "vector-ops-62.cu").read_bytes()
    expected = (BREAKERS / "vector-ops-62.hip.cu").read_bytes()
    result = convert_source(src, rules, ConvertOptions(rocm_version=(6, 2)), path="vector-ops-62.cu")
    assert result.after == expected
    assert [f.rule_id for f in result.findings] == ["redefines-hip"] * 2
    assert convert_source(expected, rules, ConvertOptions(rocm_version=(6, 2))).after == expected
    old = convert_source(src, rules, ConvertOptions(rocm_version=(5, 2))).after
    assert b"#if !defined(__HIP_PLATFORM_AMD__)" not in old
    assert syntax_check(BREAKERS / "vector-ops-62.hip.cu", target=(6, 2)).returncode == 0
    unguarded = tmp_path / "vector-ops-62.cu"
    unguarded.write_bytes(re.sub(rb"#if !defined\(__HIP_PLATFORM_AMD__\)\n", b"#if 1\n", expected))
    r = syntax_check(unguarded, target=(6, 2))
    assert r.returncode != 0 and "is ambiguous" in r.stderr
    (tmp_path / "old.cu").write_bytes(old)
    require_hipcc()
    assert syntax_check(tmp_path / "old.cu").returncode == 0


def test_a_component_wise_vector_operator_is_an_info_and_any_other_body_a_warning(rules):
    """helper_math.h's operators do what HIP_vector_type's do: guarded, with nothing left to check (issue 34's
    sample: 5 of 25 warnings were these). A complex product on `float2`, or a body that skips a component, does not."""
    src = (b"#include <cuda_runtime.h>\n"
           b"inline __host__ __device__ void operator-=(float2 &a, float2 b)\n{\n    a.x -= b.x;\n    a.y -= b.y;\n}\n"
           b"inline __host__ __device__ void operator*=(float2 &a, float2 b)\n{\n"
           b"    float re = a.x * b.x - a.y * b.y;\n    a.y = a.x * b.y + a.y * b.x;\n    a.x = re;\n}\n"
           b"inline __host__ __device__ void operator+=(int3 &a, int3 b)\n{\n    a.x += b.x; a.y += b.y;\n}\n")
    result = convert_source(src, rules, ConvertOptions(rocm_version=(7, 2)))
    found = [(f.line, f.severity) for f in result.findings if f.rule_id == "redefines-hip"]
    assert found == [(2, "info"), (7, "warning"), (13, "warning")]
    assert result.after.count(b"#if !defined(__HIP_PLATFORM_AMD__)") == 3  # all three guarded alike
