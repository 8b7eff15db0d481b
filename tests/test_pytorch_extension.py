"""PyTorch extensions (issue 33): the c10/ATen names of PyTorch's own GPU API are left for PyTorch's extension build,
which hipifies them itself on ROCm (hipify v1, PyTorch 2.10 and older, to its `...MasqueradingAsCUDA` wrappers;
hipify v2, 2.11 on, not at all), and each is reported with what either release writes; a `setup.py` that builds with
`CUDAExtension` is noted. rules/pytorch.toml holds the names, docs/convert.md "PyTorch extensions" the reasoning.

tests/fixtures/pytorch/input/ is a small extension written for these tests (`setup.py`, a `.cu` of kernels using the
names, a `.cpp` binding, and a look-alike `.cu` of a project's own helpers named like PyTorch's); expected/ is its
conversion, written by hand. Every expected finding below is written by hand too. No PyTorch is installed here, so
nothing is compiled against PyTorch's headers; the look-alike, which includes none, is compiled with ROCm 7.2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc import real_compile

from hipport.convert import ConvertOptions, convert_source
from hipport.files import build_file_kind
from hipport.pytorch_data import hip_header_path, parse_pytorch
from hipport.rules import RuleError, load_rules

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "pytorch"
FILES = ["setup.py", "csrc/binding.cpp", "csrc/scale.cu", "csrc/lookalike.cu"]
OPTIONS = ConvertOptions(rocm_version=(7, 2))
V1 = "hipify v1, PyTorch 2.10 and older"

# (file, line, subject, what PyTorch's build writes for it): every `pytorch-name` finding of the fixture.
EXPECTED = [
    ("csrc/binding.cpp", 3, "c10/cuda/CUDAGuard.h",
     f"includes `ATen/hip/impl/HIPGuardImplMasqueradingAsCUDA.h` for it ({V1}) or `c10/hip/HIPGuard.h` (v2, from 2.11)"),
    ("csrc/binding.cpp", 10, "c10::cuda::OptionalCUDAGuard", "`c10::hip::OptionalHIPGuardMasqueradingAsCUDA`"),
    ("csrc/binding.cpp", 11, "USE_CUDA", "rewrites it to `USE_ROCM`"),
    ("csrc/scale.cu", 3, "ATen/cuda/CUDAContext.h", "includes `ATen/hip/HIPContext.h` for it"),
    ("csrc/scale.cu", 4, "c10/cuda/CUDAGuard.h", "`ATen/hip/impl/HIPGuardImplMasqueradingAsCUDA.h`"),
    ("csrc/scale.cu", 5, "c10/cuda/CUDAException.h", "includes `c10/hip/HIPException.h` for it"),
    ("csrc/scale.cu", 21, "at::cuda::OptionalCUDAGuard", "`at::hip::OptionalHIPGuardMasqueradingAsCUDA`"),
    ("csrc/scale.cu", 22, "c10::cuda::CUDAGuard", "`c10::hip::HIPGuardMasqueradingAsCUDA`"),
    ("csrc/scale.cu", 23, "at::cuda::getCurrentCUDAStream", "`at::hip::getCurrentHIPStreamMasqueradingAsCUDA`"),
    ("csrc/scale.cu", 31, "C10_CUDA_KERNEL_LAUNCH_CHECK", "`C10_HIP_KERNEL_LAUNCH_CHECK`"),
    ("csrc/scale.cu", 37, "at::cuda::CUDAStream", "`at::hip::HIPStreamMasqueradingAsCUDA`"),
    ("csrc/scale.cu", 37, "at::cuda::getStreamFromPool", "`at::hip::getStreamFromPoolMasqueradingAsCUDA`"),
    ("csrc/scale.cu", 38, "at::cuda::CUDAStreamGuard", "`at::hip::HIPStreamGuardMasqueradingAsCUDA`"),
    ("csrc/scale.cu", 39, "C10_CUDA_CHECK", "`C10_HIP_CHECK`"),
    ("csrc/scale.cu", 41, "c10::cuda::getCurrentCUDAStream", "`c10::hip::getCurrentHIPStreamMasqueradingAsCUDA`"),
    ("csrc/scale.cu", 42, "c10::cuda::current_device", "`c10::hip::current_device`"),
    ("csrc/scale.cu", 54, "getCurrentCUDAStream", "`getCurrentHIPStreamMasqueradingAsCUDA`"),  # `using namespace`
]
# Names ROCm PyTorch keeps in every release: in the fixture, left as they are and not reported.
# (file, the text as it stays, the name no finding may be about)
KEPT = [("csrc/scale.cu", "TORCH_CHECK(x.is_cuda()", "is_cuda"),
        ("csrc/binding.cpp", "x.device().is_cuda()", "is_cuda"),
        ("csrc/binding.cpp", "torch::kCUDA", "kCUDA"),
        ("csrc/scale.cu", "AT_DISPATCH_FLOATING_TYPES(", "AT_DISPATCH"),
        ("csrc/scale.cu", "AT_CUDA_CHECK(hipGetLastError())", "AT_CUDA_CHECK"),
        ("csrc/scale.cu", "at::cuda::getCurrentDeviceProperties()", "getCurrentDeviceProperties"),
        ("csrc/scale.cu", "at::cuda::getCurrentCUDABlasHandle()", "getCurrentCUDABlasHandle"),
        ("csrc/scale.cu", "#include <torch/extension.h>", "torch/extension.h")]


def hipport(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


def convert(rel: str, options: ConvertOptions = OPTIONS, text: bytes | None = None):
    path = FIXTURE / "input" / rel
    src = path.read_bytes() if text is None else text
    if rel.endswith("setup.py"):
        from hipport.convert.build import convert_build_text

        return convert_build_text(src, "setuptools", options, str(path))[0]
    return convert_source(src, load_rules(), options, str(path))


def findings(rel: str, rule: str = "pytorch-name", **kw):
    return [f for f in convert(rel, **kw).findings if f.rule_id == rule]


@pytest.mark.parametrize("rel", FILES)
def test_each_file_converts_to_its_hand_written_form(rel):
    result = convert(rel)
    assert result.after == (FIXTURE / "expected" / rel).read_bytes()


@pytest.mark.parametrize(("rel", "line", "subject", "v1"), EXPECTED, ids=[e[2] + f"@{e[1]}" for e in EXPECTED])
def test_each_pytorch_name_is_left_and_reported(rel, line, subject, v1):
    got = [f for f in findings(rel) if f.subject == subject]
    assert len(got) == 1, [f.subject for f in findings(rel)]
    f = got[0]
    assert (f.line, f.severity) == (line, "info")
    assert f.message.startswith(f"`{subject}` left for PyTorch: "), f.message
    assert v1 in f.message, f.message
    written = (FIXTURE / "input" / rel).read_text().splitlines()[line - 1]
    assert subject.rsplit("::", 1)[-1] in written
    if "cuda" not in written.replace(subject, ""):  # (a line that also holds CUDA runtime names changes for those)
        assert written in (FIXTURE / "expected" / rel).read_text().splitlines()  # the CUDA spelling stays


def test_no_finding_beyond_the_expected_ones():
    for rel in ("csrc/binding.cpp", "csrc/scale.cu"):
        got = sorted((f.line, f.subject) for f in findings(rel))
        assert got == sorted((line, s) for r, line, s, _ in EXPECTED if r == rel)


@pytest.mark.parametrize(("rel", "text", "name"), KEPT, ids=[k[1] for k in KEPT])
def test_names_rocm_pytorch_keeps_are_left_unreported(rel, text, name):
    assert text in (FIXTURE / "expected" / rel).read_text()
    assert not [f for f in convert(rel).findings if name in f.subject or name in f.message]


def test_lookalikes_are_not_pytorchs():
    # A project's own `getCurrentCUDAStream` in its namespace, a member of that name, its own `C10_CUDA_CHECK`
    # macro, `USE_CUDA` outside a PyTorch extension's file: converted as CUDA code, never reported as PyTorch's.
    result = convert("csrc/lookalike.cu")
    assert [f for f in result.findings if f.rule_id.startswith("pytorch")] == []
    # ... and in the extension's own file, `detail::getCurrentCUDAStream` (declared at line 10, called at line 43).
    assert not [f for f in findings("csrc/scale.cu") if f.line in (10, 43) or "detail" in f.subject]


def test_lookalike_compiles_with_rocm_7(tmp_path):
    out = tmp_path / "lookalike.hip.cu"
    out.write_bytes(convert("csrc/lookalike.cu").after)
    real_compile(out, "7.2")


def test_setup_py_is_noted_and_left():
    result = convert("setup.py")
    assert result.after == result.before
    assert [(f.rule_id, f.severity, f.line, f.col) for f in result.findings] == [("pytorch-extension", "info", 3, 55)]
    assert result.findings[0].message.startswith("`CUDAExtension` builds a PyTorch extension: on ROCm PyTorch ")


@pytest.mark.parametrize("text", [
    b"from setuptools import setup\nsetup(name='x', ext_modules=[])\n",
    b"# from torch.utils.cpp_extension import CUDAExtension\nfrom setuptools import setup\nsetup(name='x')\n",
    b"from mylib.build import CUDAExtension\nsetup(ext_modules=[CUDAExtension('x', ['x.cu'])])\n",
])
def test_other_setup_py_is_left_unreported(text):
    result = convert("setup.py", text=text)
    assert result.after == text and result.findings == []


def test_setup_py_is_a_build_file_of_its_own_kind():
    assert build_file_kind("setup.py") == "setuptools"
    assert build_file_kind("pkg/setup.py") == "setuptools"
    assert build_file_kind("setup.cfg") is None and build_file_kind("my_setup.py") is None


def test_roc_warns_about_pytorchs_blas_handle():
    got = findings("csrc/scale.cu", "pytorch-roc-handle", options=ConvertOptions(rocm_version=(7, 2), roc=True))
    assert [(f.line, f.col, f.severity, f.subject) for f in got] == [(47, 27, "warning", "getCurrentCUDABlasHandle")]
    assert "`hipblasHandle_t` ROCm PyTorch returns" in got[0].message
    assert findings("csrc/scale.cu", "pytorch-roc-handle") == []  # without --roc the handle types agree


# Every name and header of rules/pytorch.toml, written the way an extension writes it, and what hipify v1 writes for
# it (from PyTorch's `cuda_to_hip_mappings.py` of releases before 2.11, by hand).
SNIPPETS = [
    ("at::cuda::getDefaultCUDAStream()", "at::cuda::getDefaultCUDAStream", "at::hip::getDefaultHIPStreamMasqueradingAsCUDA"),
    ("c10::cuda::getStreamFromExternal(p, 0)", "c10::cuda::getStreamFromExternal",
     "c10::hip::getStreamFromExternalMasqueradingAsCUDA"),
    ("at::cuda::setCurrentCUDAStream(s)", "at::cuda::setCurrentCUDAStream", "at::hip::setCurrentHIPStreamMasqueradingAsCUDA"),
    ("c10::cuda::OptionalCUDAStreamGuard g(s)", "c10::cuda::OptionalCUDAStreamGuard",
     "c10::hip::OptionalHIPStreamGuardMasqueradingAsCUDA"),
    ("at::cuda::CUDAMultiStreamGuard g(v)", "at::cuda::CUDAMultiStreamGuard", "at::hip::HIPMultiStreamGuardMasqueradingAsCUDA"),
    ("c10::cuda::CUDACachingAllocator::raw_delete(p)", "c10::cuda::CUDACachingAllocator",
     "c10::hip::HIPCachingAllocator"),
    ("C10_CUDA_CHECK_WARN(e)", "C10_CUDA_CHECK_WARN", "C10_HIP_CHECK_WARN"),
    ("C10_CUDA_ERROR_HANDLED(e)", "C10_CUDA_ERROR_HANDLED", "C10_HIP_ERROR_HANDLED"),
    ("C10_CUDA_IGNORE_ERROR(e)", "C10_CUDA_IGNORE_ERROR", "C10_HIP_IGNORE_ERROR"),
    ("C10_CUDA_CLEAR_ERROR()", "C10_CUDA_CLEAR_ERROR", "C10_HIP_CLEAR_ERROR"),
    ("using namespace c10::cuda", "c10::cuda", "c10::hip"),
]
HEADERS = [
    ("c10/cuda/CUDAStream.h", "ATen/hip/impl/HIPStreamMasqueradingAsCUDA.h", "c10/hip/HIPStream.h"),
    ("c10/cuda/CUDACachingAllocator.h", "ATen/hip/impl/HIPCachingAllocatorMasqueradingAsCUDA.h",
     "c10/hip/HIPCachingAllocator.h"),
    ("c10/cuda/CUDAFunctions.h", "c10/hip/HIPFunctions.h", "c10/hip/HIPFunctions.h"),
    ("c10/cuda/CUDAMathCompat.h", "c10/hip/HIPMathCompat.h", "c10/hip/HIPMathCompat.h"),
    ("ATen/cuda/Exceptions.h", "ATen/hip/Exceptions.h", "ATen/hip/Exceptions.h"),
    ("ATen/cuda/CUDAEvent.h", "ATen/hip/HIPEvent.h", "ATen/hip/HIPEvent.h"),
    ("ATen/native/cuda/Loops.cuh", "ATen/native/hip/Loops.cuh", "ATen/native/hip/Loops.cuh"),
]


@pytest.mark.parametrize(("code", "subject", "v1"), SNIPPETS, ids=[s[1] for s in SNIPPETS])
def test_every_name_of_the_table(code, subject, v1):
    src = f"#include <torch/extension.h>\n#include <c10/cuda/CUDAStream.h>\nvoid f() {{\n  {code};\n}}\n".encode()
    result = convert_source(src, load_rules(), OPTIONS, "ext.cpp")
    assert result.after == src
    got = [f for f in result.findings if f.subject == subject]
    assert len(got) == 1 and got[0].line == 4, [f.subject for f in result.findings]
    assert f"({V1}: `{v1}`" in got[0].message, got[0].message


@pytest.mark.parametrize(("header", "v1", "v2"), HEADERS, ids=[h[0] for h in HEADERS])
def test_every_header_of_the_table(header, v1, v2):
    src = f"#include <{header}>\n__global__ void k() {{}}\n".encode()
    result = convert_source(src, load_rules(), OPTIONS, "k.cu")
    assert f"#include <{header}>".encode() in result.after
    got = [f for f in result.findings if f.subject == header]
    assert len(got) == 1, result.findings
    expected = (f"includes `{v1}` for it" if v1 == v2 else
                f"includes `{v1}` for it ({V1}) or `{v2}` (v2, from 2.11)")
    assert expected in got[0].message, got[0].message


def test_an_unknown_c10_cuda_header_is_reported_without_a_counterpart():
    result = convert_source(b"#include <c10/cuda/CUDANew.h>\n__global__ void k() {}\n", load_rules(), OPTIONS, "k.cu")
    [f] = [f for f in result.findings if f.rule_id == "pytorch-name"]
    assert "hipport knows no ROCm counterpart" in f.message


def test_names_on_the_other_platforms_branch_are_not_reported():
    src = (b"#include <torch/extension.h>\n#ifndef USE_ROCM\n#include <c10/cuda/CUDAGuard.h>\n"
           b"void f() { c10::cuda::CUDAGuard g(0); }\n#endif\n")
    result = convert_source(src, load_rules(), OPTIONS, "ext.cpp")
    assert result.after == src and [f for f in result.findings if f.rule_id == "pytorch-name"] == []


def test_pytorchs_path_rule():
    assert hip_header_path("ATen/cuda/CUDAContext.h") == "ATen/hip/HIPContext.h"
    assert hip_header_path("ATen/cuda/detail/IndexUtils.cuh") == "ATen/hip/detail/IndexUtils.cuh"
    assert hip_header_path("ATen/cuda/CUDAGraphsUtils.cuh") == "ATen/hip/HIPGraphsUtils.cuh"
    assert hip_header_path("ATen/cuda/cub.cuh") == "ATen/hip/cub.cuh"  # `cub` holds no `cuda`
    assert hip_header_path("ATen/cuda/cuda_utils.h") == "ATen/hip/hip_utils.h"
    assert hip_header_path("ATen/native/cuda/block_reduce.cuh") == "ATen/native/hip/block_reduce.cuh"


def test_messages_are_one_line_of_at_most_300_characters():
    results = [convert(rel, ConvertOptions(rocm_version=(7, 2), roc=True)) for rel in FILES]
    messages = [f.message for r in results for f in r.findings if f.rule_id.startswith("pytorch")]
    assert messages and all(len(m) <= 300 and "\n" not in m for m in messages), max(messages, key=len)


@pytest.mark.parametrize(("data", "error"), [
    ({"names": {"x": {"v1": "y", "why": "w"}}}, "`[names.x] qualifiers` must be a non-empty list of strings"),
    ({"names": {"x": {"v1": "y", "why": "w", "qualifiers": ["at::"]}}}, "qualifier `at::` is not"),
    ({"macros": {"M": {"why": "w"}}}, "`[macros.M]` needs `v1`"),
    ({"kept": {"X_*": {"why": "w"}}, "macros": {}}, None),
    ({"kept": {"X": {"why": "w", "pattern": True}}}, "`pattern = true` takes a name ending in `*`"),
    ({"headers": {"a.h": {"v1": "b.h", "why": "w", "v3": "c"}}}, "unknown key `v3`"),
    ({"macros": {"M": {"v1": "N", "why": "w"}}, "kept": {"M": {"why": "w"}}}, "`M` is both rewritten"),
])
def test_malformed_data_is_one_line(data, error):
    base = {"detect": {"includes": ["torch/extension.h"], "setup_words": ["CUDAExtension"], "setup_module": "m"},
            "path_rule": {"folders": ["ATen/cuda/"], "why": "w"}}
    if error is None:
        parse_pytorch(Path("pytorch.toml"), {**base, **data})
        return
    with pytest.raises(RuleError) as exc:
        parse_pytorch(Path("pytorch.toml"), {**base, **data})
    assert error in str(exc.value) and "\n" not in str(exc.value)


def test_cli_converts_the_extension_and_a_second_run_changes_nothing(tmp_path):
    tree = tmp_path / "ext"
    shutil.copytree(FIXTURE / "input", tree)
    r = hipport("convert", "--no-cache", "--rocm-version", "7.2", "--check", tree)
    assert r.returncode == 1, r.stderr
    r = hipport("convert", "--no-cache", "--rocm-version", "7.2", tree)
    assert r.returncode == 0, r.stderr
    assert "4 files scanned, 2 changed" in r.stderr
    assert "PyTorch extension: " in r.stderr and "setup.py builds it with `torch.utils.cpp_extension`" in r.stderr
    assert "pytorch-extension 1 (info), pytorch-name 17 (info)" in r.stderr
    for rel in FILES:
        assert (tree / rel).read_bytes() == (FIXTURE / "expected" / rel).read_bytes(), rel
    again = hipport("convert", "--no-cache", "--rocm-version", "7.2", "--check", tree)
    assert again.returncode == 0, again.stderr
    assert "4 files scanned, 0 would change" in again.stderr


def test_cli_verbose_lists_the_findings_and_no_build_files_skips_setup_py(tmp_path):
    r = hipport("convert", "--no-cache", "--rocm-version", "7.2", "--diff", "-v", FIXTURE / "input", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "setup.py:3:55: info pytorch-extension: `CUDAExtension` builds a PyTorch extension" in r.stderr
    assert "scale.cu:23:25: info pytorch-name: `at::cuda::getCurrentCUDAStream` left for PyTorch" in r.stderr
    r = hipport("convert", "--no-cache", "--rocm-version", "7.2", "--diff", "--no-build-files", FIXTURE / "input",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "3 files scanned" in r.stderr and "PyTorch extension" not in r.stderr


def test_rules_show_tells_what_convert_does_with_pytorch_names():
    r = hipport("rules", "show", "getCurrentCUDAStream")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:4] == [
        "getCurrentCUDAStream  (PyTorch extension, rules/pytorch.toml)",
        "  convert:      left as it is for PyTorch's build-time hipify, reported (pytorch-name) behind `at::cuda::`, "
        "`c10::cuda::`",
        "  hipify v1:    getCurrentHIPStreamMasqueradingAsCUDA  (PyTorch 2.10 and older)",
        "  hipify v2:    getCurrentCUDAStream  (PyTorch 2.11 on)"]
    r = hipport("rules", "show", "c10/cuda/CUDAStream.h")
    assert r.returncode == 0 and "  hipify v2:    c10/hip/HIPStream.h  (PyTorch 2.11 on)" in r.stdout, r.stdout
    r = hipport("rules", "show", "kCUDA")
    assert r.returncode == 0 and "left as it is, not reported" in r.stdout, r.stdout
    r = hipport("rules", "show", "getCurrentCUDAStreamX")
    assert r.returncode == 1, r.stdout
