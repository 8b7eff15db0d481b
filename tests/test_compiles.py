"""Code that fails to compile after plain renaming (what hipify-perl does) and compiles after `hipport convert`:
header-guard macros, argument rewrites, warp built-ins, launches; checked with Debian's hipcc (HIP 5.2)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc import real_compile, require_hipcc, syntax_check

from hipport.convert import ConvertOptions, convert_source

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parents[1]


def plain_rename(src: str, rules) -> str:
    """Identifier-for-identifier renaming with the same tables, and header renaming: hipify-perl's approach."""
    def name(m):
        rule = rules.names.get(m.group(0))
        return rule.hip if rule is not None and rule.hip and rule.family not in rules.family_notes else m.group(0)

    def header(m):
        rule = rules.headers.get(m.group(2))
        return f"{m.group(1)}{rule.hip}{m.group(3)}" if rule is not None and rule.hip else m.group(0)

    src = re.sub(r"(#include\s*[<\"])([^>\"]+)([>\"])", header, src)
    return re.sub(r"\b[A-Za-z_]\w*\b", name, src)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The new-user project: src/ and include/ with a helper_cuda.h-style header, converted with one command."""
    out = tmp_path_factory.mktemp("proj") / "project"
    shutil.copytree(FIXTURES / "project", out)
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", str(out), "--rocm-version", "5.2"],
                       capture_output=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr.decode()
    return out


@pytest.mark.parametrize("tu", ["saxpy.cu", "warp_reduce.cu"])
def test_project_builds_after_convert(project, tu):
    require_hipcc()
    r = syntax_check(project / "src" / tu, f"-I{project / 'include'}")
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("tu", ["saxpy.cu", "warp_reduce.cu"])
def test_project_fails_after_plain_renaming(rules, tmp_path, tu):
    require_hipcc()
    plain = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", plain)
    for f in plain.rglob("*.*"):
        f.write_text(plain_rename(f.read_text(), rules))
    r = syntax_check(plain / "src" / tu, f"-I{plain / 'include'}")
    assert r.returncode != 0, "plain renaming already compiles: this fixture proves nothing"


def test_helper_header_macros(project):
    text = (project / "include" / "helper_cuda.h").read_text()
    assert "#ifdef HIP_INCLUDE_HIP_DRIVER_TYPES_H" in text
    assert "#if defined(HIP_INCLUDE_HIP_HIP_RUNTIME_H) || defined(HIP_INCLUDE_HIP_HIP_RUNTIME_API_H)" in text
    assert "#ifdef __HIP_DEVICE_COMPILE__" in text


def test_argument_rewrites(project):
    text = (project / "src" / "saxpy.cu").read_text()
    assert "hipFuncSetCacheConfig(reinterpret_cast<const void*>(saxpy), hipFuncCachePreferL1)" in text
    assert "hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(saxpy))" in text
    assert "hipEventCreateWithFlags(&done, hipEventDisableTiming)" in text
    text = (project / "src" / "warp_reduce.cu").read_text()
    assert "hipMemcpyToSymbol(HIP_SYMBOL(c_bias), &bias, sizeof(float))" in text


def test_warp_builtins_before_6_2_drop_full_masks(project):
    text = (project / "src" / "warp_reduce.cu").read_text()
    assert "v += __shfl_down(v, offset);" in text
    assert "__any(v < 0.0f)" in text and "__shfl(v, 0)" in text


def _convert(convert_fn, src, **opts):
    return convert_fn(src, **opts)


@pytest.fixture
def conv(rules):
    def run(src, **opts):
        options = ConvertOptions(**opts)
        result = convert_source(src.encode(), rules, options)
        again = convert_source(result.after, rules, options)
        assert again.after == result.after
        return result
    return run


SYNC = ("#define FULL_MASK 0xffffffff\n__device__ float f(float v, unsigned m) {\n"
        "  v += __shfl_xor_sync(0xffffffff, v, 1);\n  v += __shfl_down_sync(FULL_MASK, v, 2, 16);\n"
        "  unsigned long long b = __ballot_sync(0xFFFFFFFFu, v > 0);\n  v += __shfl_sync(m, v, 0);\n"
        "  return v + __all_sync(0xffffffffffffffffull, v > 1);\n}\n")


# The all-lanes calls of SYNC, whose converted form must build as written.
SYNC_FULL = SYNC.replace("  v += __shfl_sync(m, v, 0);\n", "")


def _compiles_on(tmp_path, text: str, target: tuple):
    f = tmp_path / f"sync-{target[0]}.{target[1]}.hip"
    f.write_text("#include <hip/hip_runtime.h>\n" + text)
    r = syntax_check(f, target=target)
    assert r.returncode == 0, r.stderr[-3000:]


def test_warp_builtins_7_take_64_bit_masks(conv, tmp_path):
    for version in ((7, 0), (7, 2)):
        result = conv(SYNC, rocm_version=version)
        text = result.after.decode()
        assert "__shfl_xor_sync(0xffffffffffffffffull, v, 1)" in text
        assert "__shfl_down_sync(0xffffffffffffffffull, v, 2, 16)" in text
        assert "__ballot_sync(0xffffffffffffffffull, v > 0)" in text
        assert "__shfl_sync(m, v, 0)" in text  # a mask variable is never guessed
        assert "__all_sync(0xffffffffffffffffull, v > 1)" in text
        rules = {f.rule_id for f in result.findings}
        assert "warp-sync-mask" in rules
    # Compiled with ROCm 6.2.2's headers and the *_sync built-ins switched on: its static_assert takes only 64-bit
    # masks; and with the real ROCm 7.2, where they are on by default, for a wave64 and a wave32 target.
    _compiles_on(tmp_path, conv(SYNC_FULL, rocm_version=(7, 0)).after.decode(), (7, 0))
    f = tmp_path / "sync-7.2.hip"
    f.write_text("#include <hip/hip_runtime.h>\n" + conv(SYNC_FULL, rocm_version=(7, 2)).after.decode())
    r = real_compile(f, "7.2")
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("version", [(6, 3), (6, 4)])
def test_warp_builtins_6_4_are_written_mask_free(conv, tmp_path, version):
    """ROCm 6.4.3's `*_sync` built-ins are still opt-in (HIP_ENABLE_WARP_SYNC_BUILTINS, read from its headers
    into rules/rocm/releases.toml): code converted for 6.3 or 6.4 calls the mask-free forms, and builds with the
    real 6.4 compiler as written (the `_sync` form did not: `__shfl_down_sync` undeclared)."""
    text = conv(SYNC_FULL, rocm_version=version).after.decode()
    assert "_sync" not in text and "__shfl_down(v, 2, 16)" in text
    f = tmp_path / "sync-6.4.hip"
    f.write_text("#include <hip/hip_runtime.h>\n" + text)
    r = real_compile(f, "6.4")
    assert r.returncode == 0, r.stderr[-3000:]


def test_warp_builtins_6_2_are_written_mask_free(conv, tmp_path):
    # 6.2 declares the *_sync forms only with -DHIP_ENABLE_WARP_SYNC_BUILTINS: the calls are written as the
    # mask-free built-ins, as for older releases and as the hand ports write them; a partial mask is reported.
    src = SYNC + "__device__ unsigned long long g() { return __activemask(); }\n"
    result = conv(src, rocm_version=(6, 2))
    text = result.after.decode()
    assert "__shfl_xor(v, 1)" in text and "__shfl_down(v, 2, 16)" in text and "__ballot(v > 0)" in text
    assert "__all(v > 1)" in text and "__shfl(v, 0)" in text and "__ballot(1)" in text and "_sync" not in text
    [warning] = [f for f in result.findings if f.rule_id == "warp-sync-mask"]
    assert warning.line == 6 and "undeclared on ROCm 6.2 without HIP_ENABLE_WARP_SYNC_BUILTINS" in warning.message
    _compiles_on(tmp_path, text, (6, 2))  # no -DHIP_ENABLE_WARP_SYNC_BUILTINS


def test_warp_builtins_before_6_2_drop_masks_and_report_partial_ones(conv):
    # Before 6.2 a *_sync call left as it is cannot build; a partial mask is dropped too, and said so.
    result = conv(SYNC, rocm_version=(5, 7))
    text = result.after.decode()
    assert "__shfl_xor(v, 1)" in text and "__shfl_down(v, 2, 16)" in text and "__ballot(v > 0)" in text
    assert "__all(v > 1)" in text
    assert "__shfl(v, 0)" in text and "_sync" not in text
    warnings = [f for f in result.findings if f.rule_id == "warp-sync-mask"]
    assert len(warnings) == 1 and warnings[0].severity == "warning" and warnings[0].line == 6
    assert "`m` dropped" in warnings[0].message


def test_version_comparisons_are_reported_not_rewritten(conv):
    src = ("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700\nint a;\n#endif\n"
           "#if CUDART_VERSION >= 11000\nint b;\n#endif\n#ifndef __CUDA_ARCH__\nint c;\n#endif\n")
    result = conv(src)
    # the presence test beside a comparison of the same macro stays: renamed alone, the AMD device pass would
    # compare 0 and take the branch written for old NVIDIA GPUs (HeCBench attention-paged's `assert(false)`)
    assert result.after.decode() == src.replace("#ifndef __CUDA_ARCH__", "#ifndef __HIP_DEVICE_COMPILE__")
    assert [(f.rule_id, f.line, f.severity) for f in result.findings] == [
        ("cuda-version-macro", 1, "info"), ("cuda-version-macro", 4, "warning")]


def test_an_old_architecture_test_stays_false_on_the_amd_device_pass(conv):
    src = ("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800\nassert(false);\n#else\nok();\n#endif\n"
           "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600\nint x;\n#endif\n"
           "#if defined(__CUDA_ARCH__)\nint device_pass;\n#endif\n")
    result = conv(src)
    assert result.after.decode() == src.replace("#if defined(__CUDA_ARCH__)\nint", "#if defined(__HIP_DEVICE_COMPILE__)\nint")
    assert [(f.rule_id, f.line, f.severity) for f in result.findings] == [
        ("cuda-version-macro", 1, "info"), ("cuda-version-macro", 6, "info")]


def test_guard_macros_in_code_are_not_touched(conv):
    src = 'const char *s = "__DRIVER_TYPES_H__"; // __CUDA_RUNTIME_H__\nint __CUDA_RUNTIME_H__x;\n'
    assert conv(src).after.decode() == src


def test_a_name_the_release_lacks_is_never_written(conv):
    """`hipSetValidDevices` is not in HIP 5.2's headers (rules/rocm/releases.toml, read from them): converted for
    5.x the CUDA name stays, reported with the release that has it; for 6.2 it is renamed."""
    result = conv("cudaSetValidDevices(d, n);\n", rocm_version=(5, 1))
    assert result.after == b"cudaSetValidDevices(d, n);\n"
    [finding] = result.findings
    assert finding.rule_id == "needs-newer-rocm"
    assert "`hipSetValidDevices` is in ROCm 6.2 and later, not in 5.1" in finding.message
    assert conv("cudaSetValidDevices(d, n);\n", rocm_version=(6, 2)).findings == []
    assert conv("cudaSetValidDevices(d, n);\n", rocm_version=(6, 2)).after == b"hipSetValidDevices(d, n);\n"


def test_a_name_a_release_removed_is_never_written(rules):
    """hipBLAS 3 (ROCm 7) has no `hipblasDatatype_t`: a rename table that still says so is not followed for 7.x."""
    from hipport.convert.renames import _release_lacks

    assert "is gone from ROCm 7.2 (its headers; last in 6.4)" in _release_lacks("hipblasDatatype_t", "cudaDataType",
                                                                               (7, 2))
    assert _release_lacks("hipblasDatatype_t", "cudaDataType", (6, 4)) is None
    assert _release_lacks("hipMalloc", "cudaMalloc", (5, 2)) is None  # in every release: no claim needed


def test_argument_splitting_across_lines_templates_and_lambdas(conv):
    src = ("void f() {\n  cudaMemcpyToSymbolAsync(table<int, 4>::data,\n      [&] { return g(a, b); }(),\n"
           "      \"a, b\", cudaMemcpyHostToDevice, s);\n  cudaMemcpyToSymbol(HIP_SYMBOL(x), p, 4);\n"
           "  cudaEventCreate(&e);\n  cudaEventCreate(&e, cudaEventBlockingSync);\n}\n")
    text = conv(src).after.decode()
    assert "hipMemcpyToSymbolAsync(HIP_SYMBOL(table<int, 4>::data),\n      [&] { return g(a, b); }(),\n" in text
    assert "hipMemcpyToSymbol(HIP_SYMBOL(x), p, 4)" in text
    assert "hipEventCreate(&e);" in text and "hipEventCreateWithFlags(&e, hipEventBlockingSync);" in text


LAUNCH_EXPECTED = [
    "#define LAUNCH_TOUCH(ptr, stream) hipLaunchKernelGGL(kernels::touch, dim3(1), dim3(64), 0, stream, ptr)",
    "hipLaunchKernelGGL(HIP_KERNEL_NAME(kernels::fill<float, 256>), dim3((n + 255) / 256), dim3(256), 0, 0, d, 1.0f, n);",
    "hipLaunchKernelGGL(HIP_KERNEL_NAME(kernels::fill<float, 128>), dim3((n + 127) / 128, 1, 1), dim3(128), 0, "
    "hipStreamPerThread, \n      d,\n      2.0f,\n      n);",
    "hipLaunchKernelGGL(kernels::touch, dim3(cfg.g), dim3(cfg.b), 64 * sizeof(float), s, d);",
    "hipLaunchKernelGGL(noargs, dim3(1), dim3(1), 0, 0);",
]


def test_launch_syntax_hip(conv, tmp_path):
    src = (FIXTURES / "launch" / "launches.cu").read_text()
    assert "<<<" in conv(src).after.decode()  # kept by default
    text = conv(src, launch_syntax="hip").after.decode()
    for expected in LAUNCH_EXPECTED:
        assert expected in text
    assert "<<<" not in text
    require_hipcc()
    out = tmp_path / "launches.cu"
    out.write_text(text)
    r = syntax_check(out)
    assert r.returncode == 0, r.stderr[-3000:]


def test_project_config_and_flag_override(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".hipport.toml").write_text('rocm-version = "5.2"\nlaunch-syntax = "hip"\nexclude = ["skip"]\n')
    (tmp_path / "k.cu").write_text("__global__ void k() {}\nvoid f() { k<<<1, 1>>>(); __shfl_sync(0xffffffff, 1, 0); }\n")
    (tmp_path / "skip").mkdir()
    (tmp_path / "skip" / "s.cu").write_text("cudaFree(0);\n")
    run = lambda *a: subprocess.run([sys.executable, "-m", "hipport", "convert", *a], capture_output=True,
                                    cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    r = run("--stdout", "k.cu")
    assert r.returncode == 0, r.stderr
    assert b"hipLaunchKernelGGL(k, dim3(1), dim3(1), 0, 0);" in r.stdout and b"__shfl(1, 0)" in r.stdout
    r = run("--stdout", "--rocm-version", "7.0", "--launch-syntax", "cuda", "k.cu")
    assert r.returncode == 0, r.stderr
    assert b"k<<<1, 1>>>();" in r.stdout and b"__shfl_sync(0xffffffffffffffffull, 1, 0)" in r.stdout
    r = run("--check", ".")
    assert r.returncode == 1 and b"1 file scanned" in r.stderr
    (tmp_path / ".hipport.toml").write_text('rocm-versoin = "5.2"\n')
    r = run("--check", ".")
    assert r.returncode == 2 and b"unknown setting `rocm-versoin`" in r.stderr
