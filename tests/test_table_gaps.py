"""Names HIPIFY's tables list without a HIP form that hipBLAS and HIP declare (rules/overrides.toml): renamed for a
release whose headers have the HIP name (rules/rocm/releases.toml), left and reported for one that lacks it. The HIP
texts below are written by hand from hipblas.h and library_types.h of ROCm 6.4.3 and 7.2.4; the real compilers of
both releases build them."""

from __future__ import annotations

import pytest

from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules

CUDA = b"""#include <cublas_v2.h>
void scale(cublasHandle_t h, cuComplex* a, cuComplex* x, cuComplex* c, float* sa, float* sx, float* sc) {
  cublasCdgmm_64(h, CUBLAS_SIDE_LEFT, 4, 4, a, 4, x, 1, c, 4);
  cublasSdgmm_64(h, CUBLAS_SIDE_LEFT, 4, 4, sa, 4, sx, 1, sc, 4);
  cudaDataType e4 = CUDA_R_8F_E4M3, e5 = CUDA_R_8F_E5M2;
  (void)e4; (void)e5;
}
"""

HIP = {"7.2": """#include <hip/hip_runtime.h>
#include <hipblas/hipblas.h>
void scale(hipblasHandle_t h, hipComplex* a, hipComplex* x, hipComplex* c, float* sa, float* sx, float* sc) {
  hipblasCdgmm_64(h, HIPBLAS_SIDE_LEFT, 4, 4, a, 4, x, 1, c, 4);
  hipblasSdgmm_64(h, HIPBLAS_SIDE_LEFT, 4, 4, sa, 4, sx, 1, sc, 4);
  hipDataType e4 = HIP_R_8F_E4M3, e5 = HIP_R_8F_E5M2;
  (void)e4; (void)e5;
}
""", "6.4": """#include <hip/hip_runtime.h>
#include <hipblas/hipblas.h>
void scale(hipblasHandle_t h, hipComplex* a, hipComplex* x, hipComplex* c, float* sa, float* sx, float* sc) {
  hipblasCdgmm_v2_64(h, HIPBLAS_SIDE_LEFT, 4, 4, a, 4, x, 1, c, 4);
  hipblasSdgmm_64(h, HIPBLAS_SIDE_LEFT, 4, 4, sa, 4, sx, 1, sc, 4);
  hipDataType e4 = HIP_R_8F_E4M3, e5 = HIP_R_8F_E5M2;
  (void)e4; (void)e5;
}
"""}


def _convert(release: str):
    target = tuple(int(p) for p in release.split("."))
    return convert_source(CUDA, load_rules([]), ConvertOptions(rocm_version=target), "gaps.cu")


@pytest.mark.parametrize("release", ["7.2", "6.4"])
def test_renamed_where_the_release_has_the_hip_name(tmp_path, release):
    from hipcc import real_compile

    result = _convert(release)
    assert result.after.decode() == HIP[release]
    assert not [f for f in result.findings if f.severity in ("warning", "error")], result.findings
    (tmp_path / "gaps.hip").write_text(HIP[release])
    r = real_compile(tmp_path / "gaps.hip", release, ("gfx942", "gfx1100"))
    assert r.returncode == 0, r.stderr[-3000:]


def test_left_and_reported_where_the_release_lacks_it():
    # 6.2.2's hipBLAS has no `_64` dgmm and HIP only the FNUZ FP8 types, another encoding
    result = _convert("6.2")
    text = result.after.decode()
    for name in ("cublasCdgmm_64", "cublasSdgmm_64", "CUDA_R_8F_E4M3", "CUDA_R_8F_E5M2"):
        assert name in text
    assert sorted(f.subject for f in result.findings if f.rule_id == "needs-newer-rocm") == \
        ["CUDA_R_8F_E4M3", "CUDA_R_8F_E5M2", "cublasCdgmm_64", "cublasSdgmm_64"]
