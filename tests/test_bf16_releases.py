"""bf16 by targeted release (issue 34): before ROCm 6.0 the only type is hip/hip_bfloat16.h's `hip_bfloat16`, a class
without CUDA's intrinsics; from 6.0 hip/hip_bf16.h has `__hip_bfloat16`/`__hip_bfloat162` and the intrinsics by
CUDA's names. The fixture pair is tests/fixtures/convert/bf16-rocm5 (checked by test_fixtures_convert.py, and for
7.2 and 6.4 with the real compilers by test_real_rocm.py); here its HIP form compiles with Debian's HIP 5.2, and the
names 5.x lacks are reported with the release that has them, never written. Expected texts are written by hand."""

from __future__ import annotations

from pathlib import Path

from hipcc import require_hipcc, syntax_check

from hipport.convert import ConvertOptions, convert_source

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "convert"

PAIR = """#include <cuda_bf16.h>
__global__ void k(const __nv_bfloat162* p, float2* out) {
    out[threadIdx.x] = __bfloat1622float2(p[threadIdx.x]);
}
"""


def _convert(rules, src: str, release: tuple):
    return convert_source(src.encode(), rules, ConvertOptions(rocm_version=release))


def test_the_rocm_5_form_compiles_with_hip_5_2(tmp_path):
    require_hipcc()
    target = tmp_path / "bf16-rocm5.hip.cpp"
    target.write_bytes((FIXTURES / "bf16-rocm5.hip.cu").read_bytes())
    r = syntax_check(target, tree="5.2")
    assert r.returncode == 0, r.stderr[-3000:]


def test_names_hip_has_from_6_0_are_left_and_reported_with_that_release(rules):
    result = _convert(rules, PAIR, (5, 2))
    assert b"__hip_bfloat162" not in result.after and b"__nv_bfloat162" in result.after
    found = [(f.rule_id, f.subject) for f in result.findings]
    assert found == [("needs-newer-rocm", "__nv_bfloat162"), ("needs-newer-rocm", "__bfloat1622float2")]
    assert "`__hip_bfloat162` is in ROCm 6.0 and later, not in 5.2" in result.findings[0].message


def test_from_6_0_the_names_are_hips_and_the_braces_stay(rules):
    src = "#include <cuda_bf16.h>\n__global__ void k(float* o) { __nv_bfloat16 z = {{0}}; o[0] = __bfloat162float(z); }\n"
    after = _convert(rules, src, (6, 4)).after
    assert b"__hip_bfloat16 z = {{0}};" in after and b"__bfloat162float(z)" in after
    after = _convert(rules, src, (5, 7)).after
    assert b"hip_bfloat16 z = {};" in after and b"float(z)" in after and b"__bfloat162float" not in after
