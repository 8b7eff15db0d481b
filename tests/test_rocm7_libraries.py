"""ROCm 7's library changes (issue 32): hipBLAS 3 dropped hipBLAS 2's `_v2` functions, `hipblasDatatype_t`, its
complex types and data types as compute types. CUDA input converted for 7.x gets hipBLAS 3's names; HIP written
for 6.x is brought forward (rules/forward.toml, hipport/convert/forward.py); 6.x targets keep hipBLAS 2's `_v2`
forms, which compile there. The HIP forms are compiled with the real ROCm 7.2.4 / 6.4.3 compilers (gfx942 and
gfx1100); without them those tests skip, and fail under CI=true."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hipcc import real_compile
from needs import need

from hipport.convert import ConvertOptions, convert_source
from hipport.convert.context import ConversionContext
from hipport.convert.engine import run_passes
from hipport.forward import parse_forward
from hipport.rules import RuleError
from hipport.semantic import load_semantic

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "convert"
AT_72 = ConvertOptions(rocm_version=(7, 2))
AT_64 = ConvertOptions(rocm_version=(6, 4))
# The headers of ../shared/tools/rocm_chroot.sh's chroots (Debian's ROCm packages install under /usr).
REAL_INCLUDE = {"7.2": Path("/opt/rocm7-root/usr/include"), "6.4": Path("/opt/rocm64-root/usr/include")}


def _compiled(path: Path, release: str) -> None:
    r = real_compile(path, release)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("fixture", ["cublas-rocm7", "hipblas2-forward", "lowp-rocm7"])
def test_rocm7_forms_compile_with_rocm_7_2(fixture):
    _compiled(FIXTURES / f"{fixture}.hip.cu", "7.2")


def test_hipblas2_form_compiles_with_rocm_6_4():
    """For a 6.x target the `_v2` functions stay: hipBLAS 2 declares them (its plain names take hipblasDatatype_t
    and hipblasComplex unless HIPBLAS_V2 is defined)."""
    _compiled(FIXTURES / "cublas-rocm6.hip.cu", "6.4")


def test_hip_input_is_rocm_6_code():
    """The HIP input the forward fixture brings to 7.2 is code that builds with ROCm 6.4."""
    _compiled(FIXTURES / "hipblas2-forward.cu", "6.4")


GEMM = b"""#include <cublas_v2.h>
cublasStatus_t gemm(cublasHandle_t h, int n, const float *a, float *c) {
  const float one = 1.0f, zero = 0.0f;
  cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_32F, n, a, CUDA_R_32F, n, &zero, c, CUDA_R_32F,
               n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_32F, n, 0, a, CUDA_R_32F,
                                    n, 0, &zero, c, CUDA_R_32F, n, 0, 1, CUDA_R_32F, CUBLAS_GEMM_DEFAULT);
}
"""


def test_cublas_gemm_ex_for_7_2_builds_with_rocm_7_2(rules):
    """The measured fault: `cublasGemmEx` at `--rocm-version 7.2` became `hipblasGemmEx_v2`, which hipBLAS 3 lacks."""
    out = convert_source(GEMM, rules, AT_72)
    assert b"_v2" not in out.after and b"hipblasGemmEx(" in out.after and not out.findings
    assert out.after.count(b"HIPBLAS_COMPUTE_32F") == 2  # CUDA 10's CUDA_R_32F as compute type too
    with tempfile.TemporaryDirectory(prefix="hipport-gemm-") as tmp:
        path = Path(tmp) / "gemm.cpp"
        path.write_bytes(out.after)
        _compiled(path, "7.2")


def test_cublas_gemm_ex_for_6_4_keeps_v2(rules):
    out = convert_source(GEMM, rules, AT_64)
    assert out.after.count(b"_v2(") == 2 and out.after.count(b"HIPBLAS_COMPUTE_32F") == 2


def test_hip_input_for_6_x_is_left(rules):
    src = (FIXTURES / "hipblas2-forward.cu").read_bytes()
    out = convert_source(src, rules, AT_64)
    assert out.after == src and not out.findings


def _forward(src: bytes, rules, options=AT_72):
    """The passes run directly: the engine's fast path may not look at a HIP-only file (no CUDA word in it)."""
    return run_passes(ConversionContext("<hip>", src, rules, options))


def test_host_only_hip_file_is_brought_forward(rules):
    src = b"#include <hipblas/hipblas.h>\nvoid f(hipblasHandle_t h, int n, hipComplex *x) { hipblasCscal_v2(h, n, x, x, 1); }\n"
    out = _forward(src, rules)
    assert out.after == src.replace(b"hipblasCscal_v2", b"hipblasCscal")
    assert [c.cuda for c in out.conversions] == ["hipblasCscal_v2"]


def test_compute_type_in_a_variable_is_reported(rules):
    src = (b"#include <hipblas/hipblas.h>\n"
           b"void f(hipblasHandle_t h, const float *a, float *c, hipblasDatatype_t t, const void *s) {\n"
           b"  hipblasGemmEx(h, HIPBLAS_OP_N, HIPBLAS_OP_N, 1, 1, 1, s, a, t, 1, a, t, 1, s, c, t, 1, t,\n"
           b"                HIPBLAS_GEMM_DEFAULT);\n}\n")
    out = _forward(src, rules)
    assert out.after == src.replace(b"hipblasDatatype_t", b"hipDataType")
    (finding,) = out.findings
    assert finding.rule_id == "rocm-forward" and (finding.line, finding.col) == (3, 90)
    assert "`hipblasGemmEx` takes its compute type as a `hipblasComputeType_t`" in finding.message
    assert finding.message.endswith("(`t`)")


def test_hipblas3_calls_alone_are_not_looked_at(rules):
    """A variable compute type in a file with nothing of hipBLAS 2 is hipBLAS 3's own code: no finding."""
    src = (b"#include <hipblas/hipblas.h>\n"
           b"void f(hipblasHandle_t h, const float *a, float *c, hipblasComputeType_t t, const void *s) {\n"
           b"  hipblasGemmEx(h, HIPBLAS_OP_N, HIPBLAS_OP_N, 1, 1, 1, s, a, HIP_R_32F, 1, a, HIP_R_32F, 1, s, c,\n"
           b"                HIP_R_32F, 1, t, HIPBLAS_GEMM_DEFAULT);\n}\n")
    out = _forward(src, rules)
    assert out.after == src and not out.findings


def test_triggers_are_exposed_for_the_fast_path():
    """`Forward.triggers()` is what a fast path tests a HIP file with before lexing it."""
    triggers = load_semantic().forward.triggers()
    assert triggers.search(b"x = hipblasZgemm_v2_64(h);") and triggers.search(b"hipblasDatatype_t t;")
    assert not triggers.search(b"hipblasGemmEx(h, HIP_R_32F); my_hipblasComplex; hipblasGemmEx_v2x")


# --- the data against the real headers ---

def _headers(release: str) -> str:
    path = REAL_INCLUDE[release] / "hipblas" / "hipblas.h"
    need(path.is_file(), f"ROCm {release}'s hipblas.h ({path})",
         f"as root: bash ../shared/tools/rocm_chroot.sh {'7' if release == '7.2' else release}")
    return path.read_text(errors="replace")


_DECLARED = re.compile(r"HIPBLAS_EXPORT\s+[\w\s*]+?\b(hipblas\w+)\s*\(([^;]*?)\);")


def test_every_v2_function_of_6_4_is_declared_without_it_in_7_2():
    fwd = load_semantic().forward
    old = {m.group(1) for m in _DECLARED.finditer(_headers("6.4"))}
    new = {m.group(1) for m in _DECLARED.finditer(_headers("7.2"))}
    v2 = sorted(n for n in old if "_v2" in n)
    assert len(v2) > 300 and not [n for n in new if "_v2" in n]
    assert [n for n in v2 if fwd.current(n, (7, 2)) not in new] == []
    assert all(fwd.current(n, (6, 4)) == n for n in v2)


def test_forward_argument_positions_are_compute_types_in_7_2():
    fwd = load_semantic().forward
    params = {m.group(1): [p.strip() for p in m.group(2).split(",")] for m in _DECLARED.finditer(_headers("7.2"))}
    for rule in fwd.arguments:
        for call, pos in rule.calls.items():
            assert params[call][pos].startswith("hipblasComputeType_t"), call
        text = _headers("7.2") + (REAL_INCLUDE["7.2"] / "hipblas-common" / "hipblas-common.h").read_text()
        assert all(re.search(rf"\b{v}\b", text) for v in rule.values.values())


def test_forward_renames_name_what_7_2_declares():
    text = "".join((REAL_INCLUDE["7.2"] / "hip" / h).read_text() for h in ("library_types.h", "hip_complex.h"))
    text += "".join((REAL_INCLUDE["7.2"] / "hip" / "amd_detail" / h).read_text() for h in ("amd_hip_complex.h",))
    fwd = load_semantic().forward
    names, _ = fwd.renamed((7, 2))
    targets = set(names.values()) | {f for _, calls in fwd.constructors for f in calls.values()}
    assert [t for t in sorted(targets) if not re.search(rf"\b{t}\b", text)] == []
    assert not [old for old in names if re.search(rf"\b{old}\b(?!\s+HIP_)", _headers("7.2"))
                and not old.startswith("HIPBLAS_")]


# --- rules/forward.toml is validated with one-line errors ---

@pytest.mark.parametrize("data, message", [
    ({"suffixes": []}, "unknown table `suffixes`"),
    ({"suffix": [{"rocm": "7", "prefix": "hipblas", "drop": "_v2", "why": "w", "source": "s"}]},
     "`rocm` must be a release like \"7.0\""),
    ({"suffix": [{"rocm": "7.0", "prefix": "hipblas", "drop": "_v2", "why": "w"}]}, "`source` must be a non-empty"),
    ({"rename": [{"rocm": "7.0", "names": {"hipblasComplex": "hip Complex"}, "why": "w", "source": "s"}]},
     "`names` must map C identifiers to C identifiers"),
    ({"argument": [{"rocm": "7.0", "calls": {"hipblasGemmEx": -1}, "values": {}, "keep": "H", "note": "n",
                    "why": "w", "source": "s"}]}, "`calls` must map C identifiers to non-negative argument positions"),
    ({"constructor": [{"rocm": "7.0", "calls": {"a": "b"}, "why": "w", "source": "s", "extra": 1}]},
     "has unknown key `extra`"),
])
def test_forward_toml_errors_are_one_line(data, message):
    with pytest.raises(RuleError) as err:
        parse_forward(Path("forward.toml"), data)
    assert message in str(err.value) and "\n" not in str(err.value) and str(err.value).startswith("forward.toml: ")


_GEMM = ("  hipblasGemmEx(h, HIPBLAS_OP_N, HIPBLAS_OP_N, m, m, m, &a, A, HIP_R_16F, m, B, HIP_R_16F, m, &b, C, "
         "HIP_R_32F, m, computeType, HIPBLAS_GEMM_DEFAULT);\n}\n")
_HEAD = ("#include <hipblas/hipblas.h>\nvoid g(hipblasHandle_t h, const void *A, const void *B, float *C, float a, "
         "float b, int m) {\n")


def test_a_compute_type_chosen_by_the_hipblas_version_is_no_finding(rules):
    """faiss: `#if hipblasVersionMajor >= 3` sets `computeType` to `HIPBLAS_COMPUTE_32F`, the `#else` (hipBLAS 2) to a
    data type: the call gets the right type on each release. Set to a data type alone, it is still reported."""
    chosen = _HEAD + ("#if hipblasVersionMajor >= 3\n  auto computeType = HIPBLAS_COMPUTE_32F;\n#else\n"
                      "  auto computeType = HIPBLAS_R_32F;\n#endif\n") + _GEMM
    result = convert_source(chosen.encode(), rules, ConvertOptions(rocm_version=(7, 2)), "g.hip")
    assert not [f for f in result.findings if f.rule_id == "rocm-forward"]
    alone = _HEAD + "  auto computeType = HIPBLAS_R_32F;\n" + _GEMM
    result = convert_source(alone.encode(), rules, ConvertOptions(rocm_version=(7, 2)), "g.hip")
    assert [f.line for f in result.findings if f.rule_id == "rocm-forward"] == [4]
    unversioned = _HEAD + ("#ifdef FAST\n  auto computeType = HIPBLAS_COMPUTE_32F;\n#else\n"
                           "  auto computeType = HIPBLAS_R_32F;\n#endif\n") + _GEMM
    result = convert_source(unversioned.encode(), rules, ConvertOptions(rocm_version=(7, 2)), "g.hip")
    assert [f.line for f in result.findings if f.rule_id == "rocm-forward"] == [8]
