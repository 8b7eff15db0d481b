"""The user's own names (hipport/convert/usernames.py) where a project's namespace is named like one of CUDA's."""

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
