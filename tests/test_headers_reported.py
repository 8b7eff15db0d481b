"""Issue 22's header reproductions: a CUDA header with a HIP counterpart is mapped, every other CUDA header is
reported (`unsupported-header`), and `--roc` on cuBLASLt code keeps hipBLAS's enums, which hipBLASLt takes."""

from pathlib import Path

import pytest

from hipport.convert import ConvertOptions, convert_source
from hipport.rules import RuleError, RuleSet, _load_headers_file

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "convert"


def test_headers_without_counterpart_are_each_reported(rules):
    result = convert_source((FIXTURES / "headers-unmapped.cu").read_bytes(), rules, ConvertOptions())
    reported = {f.subject: f.line for f in result.findings if f.rule_id == "unsupported-header"}
    assert reported == {"nvtx3/nvToolsExt.h": 3, "nvToolsExt.h": 4, "cuda_pipeline.h": 5, "cuda/std/atomic": 6,
                        "cusparseLt.h": 7, "nvml.h": 8}
    assert b"#include <hipblaslt/hipblaslt.h>" in result.after
    messages = {f.subject: f.message for f in result.findings}
    assert "roctx" in messages["nvtx3/nvToolsExt.h"] and "<atomic>" in messages["cuda/std/atomic"]


def test_cuda_pipeline_and_libcudacxx_in_a_kernel_file(rules):
    src = b"#include <cuda_awbarrier.h>\n#include <cuda/std/type_traits>\n#include <cuda/annotated_ptr>\n" \
          b"__global__ void k() {}\n"
    result = convert_source(src, rules, ConvertOptions())
    assert {f.subject for f in result.findings if f.rule_id == "unsupported-header"} == {
        "cuda_awbarrier.h", "cuda/std/type_traits", "cuda/annotated_ptr"}


CUBLASLT = (b"#include <cublasLt.h>\n"
            b"void f(cublasLtMatmulDesc_t d) {\n"
            b"  cublasOperation_t op = CUBLAS_OP_T;\n"
            b"  cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);\n"
            b"  cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof(op));\n"
            b"}\n")


@pytest.mark.parametrize("roc", [False, True])
def test_cublaslt_keeps_hipblas_enums_with_and_without_roc(rules, roc):
    result = convert_source(CUBLASLT, rules, ConvertOptions(roc=roc))
    assert result.after == (b"#include <hipblaslt/hipblaslt.h>\n"
                            b"void f(hipblasLtMatmulDesc_t d) {\n"
                            b"  hipblasOperation_t op = HIPBLAS_OP_T;\n"
                            b"  hipblasLtMatmulDescCreate(&d, HIPBLAS_COMPUTE_32F, HIP_R_32F);\n"
                            b"  hipblasLtMatmulDescSetAttribute(d, HIPBLASLT_MATMUL_DESC_TRANSA, &op, sizeof(op));\n"
                            b"}\n")
    kept = [f for f in result.findings if f.rule_id == "roc-name-kept"]
    assert len(kept) == (1 if roc else 0)
    assert convert_source(result.after, rules, ConvertOptions(roc=roc)).after == result.after


def test_roc_still_gives_rocblas_names_without_cublaslt(rules):
    src = b"#include <cublas_v2.h>\nvoid f() { cublasOperation_t op = CUBLAS_OP_T; }\n"
    out = convert_source(src, rules, ConvertOptions(roc=True)).after
    assert b"rocblas_operation op = rocblas_operation_transpose;" in out


@pytest.mark.parametrize("entry", [{"match": "cuda/*"}, {"match": [], "note": "x"}, {"match": "a", "note": "x",
                                                                                    "why": "y"}])
def test_malformed_unmapped_entry_is_one_line(entry):
    with pytest.raises(RuleError) as err:
        _load_headers_file(Path("headers.toml"), {"unmapped": [entry]}, RuleSet())
    assert "headers.toml: `[[unmapped]]` #1" in str(err.value) and "\n" not in str(err.value)


CUB_AND_STATUS = (b"#include <cub/block/block_load.cuh>\n#include <cub/util_type.cuh>\n#include <cub/util_debug.cuh>\n"
                  b"#include <cublas_v2.h>\n#include <cstdio>\n"
                  b"void report(cublasStatus_t s) { std::printf(\"%s\\n\", cublasGetStatusString(s)); }\n"
                  b"__global__ void k(const int* in, int* out) {\n"
                  b"  int items[4];\n"
                  b"  cub::LoadDirectBlocked(threadIdx.x, in, items);\n"
                  b"  out[threadIdx.x] = items[0];\n"
                  b"}\n")


def test_cub_sub_headers_and_the_cublas_status_string_build_with_rocm_6_2(rules, tmp_path):
    # HeCBench's moe, quantVLLM (cub/util_type.cuh), blockScan (cub/block/*.cuh), gels and ludb
    # (cublasGetStatusString): the sub-headers have hipCUB twins of the same path, the status string hipBLAS's.
    from tests.hipcc import require_hipcc62, syntax_check

    result = convert_source(CUB_AND_STATUS, rules, ConvertOptions(rocm_version=(6, 2)))
    text = result.after.decode()
    assert "#include <hipcub/block/block_load.hpp>\n#include <hipcub/util_type.hpp>\n#include <hipcub/hipcub.hpp>\n" \
        in text
    assert "hipblasStatusToString(s)" in text and "hipcub::LoadDirectBlocked" in text
    assert not [f for f in result.findings if f.rule_id == "unsupported-header"]
    again = convert_source(result.after, rules, ConvertOptions(rocm_version=(6, 2)))
    assert again.after == result.after  # a second run changes nothing
    require_hipcc62()
    path = tmp_path / "k.cu"
    path.write_bytes(result.after)
    r = syntax_check(path, tree="6.2")
    assert r.returncode == 0, r.stderr
