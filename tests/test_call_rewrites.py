"""The `[[rewrite]]` rules of rules/calls.toml and the `--roc` library types of rules/roc.toml beyond the fixtures:
calls of an unknown shape, dropped arguments that were not null, device code keeping `__half`, rule-file errors."""

import pytest

from hipport.convert import ConvertOptions, convert_source
from hipport.rules import RuleError
from hipport.semantic import _legacy, _roc, _rewrites, load_semantic

ROC = ConvertOptions(roc=True, rocm_version=(6, 2))


def run(rules, src: str, options=ROC):
    result = convert_source(src.encode(), rules, options)
    again = convert_source(result.after, rules, options)
    assert again.after == result.after
    return result.after.decode(), [(f.rule_id, f.line) for f in result.findings]


def test_a_call_of_another_shape_is_renamed_and_reported(rules):
    text, findings = run(rules, "#include <cusparse.h>\nvoid f() { cusparseSpSM_solve(h, a, b); }\n")
    assert "rocsparse_spsm(h, a, b);" in text
    assert findings == [("call-shape-unknown", 2)]


def test_rewrites_for_one_mode_leave_the_other_alone(rules):
    src = "#include <cusparse.h>\nvoid f() { cusparseSparseToDense(h, a, b, alg, buf); }\n"
    text, findings = run(rules, src, ConvertOptions(rocm_version=(6, 2)))
    assert "hipsparseSparseToDense(h, a, b, alg, buf);" in text and not findings
    text, _ = run(rules, src)
    assert "rocsparse_sparse_to_dense(h, a, b, alg, nullptr, buf);" in text


def test_a_dropped_callback_is_reported_only_when_not_null(rules):
    src = ("void f() {\n  cuOccupancyMaxPotentialBlockSize(&g, &b, fn, nullptr, 0, 0);\n"
           "  cuOccupancyMaxPotentialBlockSizeWithFlags(&g, &b, fn, my_smem, 0, 0, 0);\n}\n")
    text, findings = run(rules, src, ConvertOptions())
    assert "hipModuleOccupancyMaxPotentialBlockSize(&g, &b, fn, 0, 0);" in text
    assert "hipModuleOccupancyMaxPotentialBlockSizeWithFlags(&g, &b, fn, 0, 0, 0);" in text
    assert findings == [("call-rewrite-note", 3)]


def test_user_functions_and_members_of_the_same_name_are_left_alone(rules):
    src = ("#include <cusparse.h>\nnamespace my { int cusparseSpMV(int a); }\n"
           "void f(S s) { s.cusparseSpMV(1, 2); my::cusparseSpMV(3); }\n")
    text, findings = run(rules, src)
    assert "s.cusparseSpMV(1, 2); my::cusparseSpMV(3);" in text and not findings


def test_moved_arguments_are_written_renamed(rules):
    src = "#include <cudnn.h>\nvoid f() { cudnnSoftmaxForward(h, CUDNN_SOFTMAX_FAST, CUDNN_SOFTMAX_MODE_INSTANCE, &a, xd, x, &b, yd, y); }\n"
    text, _ = run(rules, src)
    assert ("miopenSoftmaxForward_V2(h, &a, xd, x, &b, yd, y, MIOPEN_SOFTMAX_FAST, MIOPEN_SOFTMAX_MODE_INSTANCE);"
            in text)


def test_half_stays_in_rocblas_device_code_and_is_reported(rules):
    host = "#include <cublas_v2.h>\nvoid f(__half *p) { cuComplex c; }\n"
    text, findings = run(rules, host)
    assert "void f(rocblas_half *p) { rocblas_float_complex c; }" in text and not findings
    device = "#include <cublas_v2.h>\n__global__ void k(__half *p) { cuComplex c; }\n"
    text, findings = run(rules, device)
    assert "__global__ void k(__half *p) { rocblas_float_complex c; }" in text
    assert findings == [("roc-name-kept", 2)]


def test_library_types_need_the_library_header(rules):
    text, _ = run(rules, "void f() { cuComplex c; curandState_t s; }\n")
    assert "hipComplex c; hiprandState_t s;" in text
    text, _ = run(rules, "#include <cusparse.h>\n#include <curand_kernel.h>\nvoid f() { cuComplex c; curandState_t s; }\n")
    assert "rocsparse_float_complex c; rocrand_state_xorwow s;" in text


def test_no_space_before_the_parenthesis_of_an_argumentless_launch_but_comments_stay(rules):
    opts = ConvertOptions(launch_syntax="hip")
    text, _ = run(rules, "__global__ void k();\nvoid f() { k<<<1, 2>>>(  ); k<<<1, 2>>>( /* none */ ); }\n", opts)
    assert "hipLaunchKernelGGL(k, dim3(1), dim3(2), 0, 0); hipLaunchKernelGGL(k, dim3(1), dim3(2), 0, 0 /* none */ );" in text


@pytest.mark.parametrize("entry, message", [
    ({"names": ["f"], "ops": [{"insert": 1}]}, "op `insert` takes text"),
    ({"names": ["f"], "ops": [{"insert": 1, "text": "x", "remove": 2}]}, "each op names one of"),
    ({"names": ["f"], "mode": "cuda", "ops": [{"remove": 1}]}, "`mode` must be one of"),
    ({"names": ["f"], "ops": [{"remove": -1}]}, "positions must be non-negative"),
    ({"names": ["f g"], "ops": [{"remove": 1}]}, "needs `names`"),
    ({"names": ["f"], "ops": [{"move": 1, "values": {"0": "a"}, "to": 2}]}, "`values` (replace only)"),
    ({"names": ["f"], "ops": [{"remove": 1}], "rocm_min": "six"}, "must be a version"),
    ({"names": ["f"], "ops": [{"remove": 1}], "color": "red"}, "unknown key `color`"),
    ({"names": ["f"], "ops": []}, "empty only with a `note`"),
    ({"names": ["f"], "ops": [{"cast": 1, "text": "T*", "as": "dynamic_cast"}]}, "`as` (cast only)"),
    ({"names": ["f"], "ops": [{"remove": 1, "as": "const_cast"}]}, "op `remove`: `as` (cast only)"),
    ({"names": ["f"], "ops": [{"remove": 1}], "incomplete": True}, "needs a `note`"),
])
def test_malformed_rewrites_stop_with_one_line(entry, message):
    with pytest.raises(RuleError) as err:
        _rewrites("calls.toml", {"rewrite": [entry]})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_malformed_roc_types_stop_with_one_line():
    with pytest.raises(RuleError, match="names a library no header"):
        _roc("roc.toml", {"libraries": {"a.h": "liba"}, "types": {"libb": {"x": "y"}}})
    with pytest.raises(RuleError, match="takes `roc` and `host_only`"):
        _roc("roc.toml", {"libraries": {"a.h": "liba"}, "types": {"liba": {"x": {"roc": "y", "device": True}}}})


def test_the_builtin_rewrites_load():
    sem = load_semantic()
    assert sem.rewrites["cusparseSpSM_solve"] and "cudaGraphAddMemcpyNodeToSymbol" in sem.symbol_address


def test_cudnn_names_without_a_miopen_name_are_reported_not_renamed_to_hipdnn(rules):
    text, findings = run(rules, "#include <cudnn.h>\nvoid f() { cudnnFindConvolutionForwardAlgorithm(h); cudnnCreate(&h); }\n")
    assert "cudnnFindConvolutionForwardAlgorithm(h); miopenCreate(&h);" in text and "hipdnn" not in text
    assert findings == [("unsupported-api", 2)]


def test_miopen_calls_hipport_cannot_complete_are_renamed_and_reported(rules):
    src = ("#include <cudnn.h>\nvoid f() {\n  cudnnGetDropoutDescriptor(d, h, &p, &s, &seed);\n"
           "  cudnnSetCTCLossDescriptor(c, CUDNN_DATA_FLOAT);\n  cudnnGetRNNDescriptor(h, r, &a, &b, &c, &d, &e, &f, &g, &t);\n}\n")
    text, findings = run(rules, src)
    assert "miopenGetDropoutDescriptor(d, h, &p, &s, &seed);" in text
    assert "miopenSetCTCLossDescriptor(c, miopenFloat);" in text
    assert "miopenGetRNNDescriptor_V2(h, r, &a, &b, &c, &d, &e, &f, &g, &t);" in text
    assert findings == [("call-not-rewritten", 3), ("call-not-rewritten", 4), ("call-not-rewritten", 5)]
    # without --roc cuDNN stays cuDNN (no MIOpen arguments to miss), so nothing is said about the arguments
    _, findings = run(rules, src, ConvertOptions(rocm_version=(6, 2)))
    assert "call-not-rewritten" not in {rule for rule, _ in findings}


def test_miopen_dropout_values_are_written_once(rules):
    src = "#include <cudnn.h>\nvoid f() { cudnnSetDropoutDescriptor(d, h, 0.5f, s, n, seed); }\n"
    text, findings = run(rules, src)
    assert "miopenSetDropoutDescriptor(d, h, 0.5f, s, n, seed, false, false, MIOPEN_RNG_PSEUDO_XORWOW);" in text
    assert not findings


@pytest.mark.parametrize("headers, kept", [
    (["cublas.h"], True),
    (["cublas_v2.h"], False),
    (["cublas.h", "cublas_v2.h"], False),  # cublas_v2.h makes the names the _v2 functions
    ([], False),                           # nothing says which API: the current one, as before
])
def test_legacy_cublas_names_are_kept_only_where_the_file_includes_the_legacy_header_alone(rules, headers, kept):
    src = "".join(f"#include <{h}>\n" for h in headers) + "void f(float *x) { cublasSscal(8, 2.0f, x, 1); cublasSetMatrix(1, 1, 4, x, 1, x, 1); }\n"
    for options in (ConvertOptions(rocm_version=(6, 2)), ROC):
        text, findings = run(rules, src, options)
        assert ("cublasSscal(8, 2.0f, x, 1);" in text) == kept
        assert "cublasSetMatrix" not in text  # the same function in both APIs: renamed
        assert (("legacy-api", len(headers) + 1) in findings) == kept


def test_malformed_legacy_tables_stop_with_one_line():
    with pytest.raises(RuleError, match="takes `header`, `converted`"):
        _legacy("calls.toml", {"legacy": {"cublas": {"header": "cublas.h", "color": "red"}}})
    with pytest.raises(RuleError, match="must be lists of header names"):
        _legacy("calls.toml", {"legacy": {"cublas": {"header": "cublas.h", "unless": "cublas_v2.h"}}})


def test_an_incomplete_rewrite_is_reported_as_not_rewritten(rules):
    text, findings = run(rules, "#include <cudnn.h>\nvoid f() { cudnnGetRNNDescriptor_v6(h, r, &a, &b, &c, &d, &e, &f, &g, &t); }\n")
    assert "miopenGetRNNDescriptor_V2(r, &a, &b, &c, &d, &e, &f, &g, &t);" in text
    assert findings == [("call-not-rewritten", 2)]


def test_a_replace_with_values_only_keeps_an_argument_it_does_not_know(rules):
    src = ("#include <cublas_v2.h>\nvoid f() {\n"
           "  cublasGemmEx(h, o, o, m, n, k, a, A, t, m, B, t, k, b, C, t, m, CUBLAS_COMPUTE_64F, g);\n"
           "  cublasGemmEx(h, o, o, m, n, k, a, A, t, m, B, t, k, b, C, t, m, my_type, g);\n}\n")
    text, findings = run(rules, src)
    assert "rocblas_gemm_ex(h, o, o, m, n, k, a, A, t, m, B, t, k, b, C, t, m, C, t, m, rocblas_datatype_f64_r, g, 0, 0);" in text
    assert "rocblas_gemm_ex(h, o, o, m, n, k, a, A, t, m, B, t, k, b, C, t, m, C, t, m, my_type, g, 0, 0);" in text
    assert findings == [("call-rewrite-note", 4)]
    text, findings = run(rules, src, ConvertOptions(rocm_version=(6, 2)))  # hipBLAS's takes cuBLAS's arguments
    assert "hipblasGemmEx_v2(h, o, o, m, n, k, a, A, t, m, B, t, k, b, C, t, m, my_type, g);" in text


def test_a_function_looked_up_by_name_gets_its_hip_name_or_is_reported(rules):
    # HIP's entry-point lookups take HIP names; one HIP lacks, or a name held in a variable, is said at its line.
    src = ('#include <cuda.h>\nint f(void **p, const char *name) {\n'
           '  cuGetProcAddress("cuMemAlloc", p, 12000, 0, nullptr);\n'
           '  cuGetProcAddress("cuCtxGetExecAffinity", p, 12000, 0, nullptr);\n'
           '  cuGetProcAddress("hipFree", p, 12000, 0, nullptr);\n'
           '  cuGetProcAddress(name, p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, nullptr);\n'
           '  return cuGetProcAddress("cuMemFree", p, 11030, CU_GET_PROC_ADDRESS_LEGACY_STREAM);\n}\n')
    text, findings = run(rules, src, ConvertOptions(rocm_version=(6, 4)))
    assert 'hipGetProcAddress("hipMalloc", p, 12000, 0, nullptr);' in text
    assert 'hipGetProcAddress("cuCtxGetExecAffinity", p, 12000, 0, nullptr);' in text
    assert 'hipGetProcAddress("hipFree", p, 12000, 0, nullptr);' in text
    assert "hipGetProcAddress(name, p, 12000, 0, nullptr);" in text
    assert 'hipGetProcAddress("hipFree", p, 11030, CU_GET_PROC_ADDRESS_LEGACY_STREAM, nullptr);' in text
    notes = sorted(line for rule, line in findings if rule == "call-rewrite-note")
    assert notes == [4, 6, 7]  # the name HIP lacks, the variable, the flag HIP does not take


def test_the_hip_version_asked_for_is_the_targeted_release(rules):
    src = '#include <cuda_runtime.h>\nint f(void **p) { return cudaGetDriverEntryPoint("cuInit", p, 0, nullptr); }\n'
    for release, version in (((6, 2), "602"), ((7, 0), "700")):
        text, _ = run(rules, src, ConvertOptions(rocm_version=release))
        assert f'hipGetProcAddress("hipInit", p, {version}, 0, nullptr)' in text
    text, findings = run(rules, src, ConvertOptions(rocm_version=(7, 1)))
    assert 'hipGetDriverEntryPoint("hipInit", p, 0, nullptr)' in text and not findings


def test_a_lookup_flag_other_than_the_default_is_hip_s_from_7_1_and_reported_before(rules):
    src = ('#include <cuda_runtime.h>\nint f(void **p) {\n'
           '  return cudaGetDriverEntryPoint("cuInit", p, cudaEnablePerThreadDefaultStream, nullptr);\n}\n')
    text, findings = run(rules, src, ConvertOptions(rocm_version=(7, 2)))
    assert 'hipGetDriverEntryPoint("hipInit", p, hipEnablePerThreadDefaultStream, nullptr)' in text and not findings
    text, findings = run(rules, src, ConvertOptions(rocm_version=(6, 4)))
    assert 'hipGetProcAddress("hipInit", p, 604, cudaEnablePerThreadDefaultStream, nullptr)' in text
    # HIP has the flag from 7.1 (rules/rocm/releases.toml): the finding names that release, not "no equivalent".
    assert ("call-rewrite-note", 3) in findings and ("needs-newer-rocm", 3) in findings
