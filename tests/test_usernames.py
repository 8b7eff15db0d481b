"""The user's own names (hipport/convert/usernames.py) where a project's namespace is named like one of CUDA's."""

import tempfile
from pathlib import Path

from hipport.convert import ConvertOptions, convert_source


def test_a_namespace_named_cuda_inside_the_projects_own_is_the_projects(rules):
    """CTranslate2's `ctranslate2::cuda::cublasGetStatusName`: declared in `namespace ctranslate2 { namespace cuda
    {`, called qualified from a macro; libcu++'s `::cuda::` and thrust's `thrust::cuda::` stay CUDA's."""
    src = ("namespace proj {\n  namespace cuda {\n    const char* cublasGetStatusName(cublasStatus_t status);\n"
           "  }\n}\n#define CHECK(s) puts(proj::cuda::cublasGetStatusName(s))\n"
           "void f() { auto p = thrust::cuda::par; ::cuda::std::size_t n = 0; }\n")
    result = convert_source(src.encode(), rules, ConvertOptions(rocm_version=(7, 2)))
    text = result.after.decode()
    assert text.count("cublasGetStatusName") == 2 and "hipblasStatus_t status" in text
    assert "thrust::hip::par" in text and "::cuda::std::size_t" in text
    assert not [f for f in result.findings if f.subject == "cublasGetStatusName"]


def test_a_template_parameter_named_like_a_cuda_type_is_the_templates_own(rules):
    """CTranslate2's `template <typename curandState>`: the parameter inside that template; cuRAND's type after it."""
    src = ("template <typename curandState>\n__global__ void init(curandState* s, unsigned long long seed) {\n"
           "  curand_init(seed, threadIdx.x, 0, s + threadIdx.x);\n}\nvoid f(curandState *s) { init<<<1, 1>>>(s, 1); }\n")
    text = convert_source(src.encode(), rules, ConvertOptions(rocm_version=(7, 2))).after.decode()
    assert "template <typename curandState>\n__global__ void init(curandState* s," in text
    assert "hiprand_init(seed" in text and "void f(hiprandState *s)" in text


def test_an_angle_include_of_the_projects_own_header_is_no_cuda_header(rules, tmp_path):
    """CTranslate2's `#include <cuda/mpi_stub.h>` is its `src/cuda/mpi_stub.h` (the build's `-I src`), not libcu++."""
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / "mpi_stub.h").write_text("#pragma once\n")
    src = b"#include <cuda/mpi_stub.h>\n__global__ void k() {}\n"

    def reported(path):
        return [f.subject for f in convert_source(src, rules, ConvertOptions(rocm_version=(7, 2)), str(path)).findings
                if f.rule_id == "unsupported-header"]

    assert reported(tmp_path / "cuda" / "utils.h") == []
    with tempfile.TemporaryDirectory() as other:  # no such file beside it or above it: libcu++'s, reported
        assert reported(Path(other) / "utils.h") == ["cuda/mpi_stub.h"]
