"""hipport against hipify-perl on the fixtures of the argument rewrites, `--roc` and launches (issue 16).

Each fixture input of tests/fixtures/convert that exercises a rewrite is converted by hipify-perl (the reference
script in ../shared/hipify-perl, with the same `--roc` / launch options) and by hipport. The outputs are compared
line by line after treating the include path layout as equal (`<rocsparse.h>` and `<rocsparse/rocsparse.h>`), and
every block where they differ must have a reason from REASONS: what hipport does there, and why. A difference no
reason explains fails the test. `python3 tests/test_hipify_parity.py` prints the whole table.

The second test checks that every call hipify-clang rewrites beyond its name (its "transforming matchers", listed in
HIPIFY_CLANG_REWRITES from HIPIFY's src/HipifyAction.cpp) has a rule in rules/calls.toml, or is in NOT_MATCHED with
the reason; rules/README.md says the same in words.
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from needs import need  # noqa: E402
from test_fixtures_convert import FIXTURES, options_for  # noqa: E402

from hipport.convert import convert_source  # noqa: E402
from hipport.rules import load_rules  # noqa: E402
from hipport.semantic import load_semantic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HIPIFY_PERL = ROOT.parent / "shared" / "hipify-perl" / "hipify-perl"
PARITY_FIXTURES = ["calls", "launch", "rocsparse", "rocsparse6", "rocblas", "rocrand", "miopen", "miopen-dropout",
                   "cublas-legacy", "rtc-options", "rocblas-gemm-ex", "rocsolver",
                   "entry-point", "entry-point-rocm7"]

# Why hipport's text differs from hipify-perl's (the first reason whose test matches a block is given).
R_RUNTIME = ("hipify-perl puts `#include \"hip/hip_runtime.h\"` first in every file and keeps the converted <cuda.h> "
             "too; hipport writes one runtime include, where the file has device code, below its comments")
R_COMMENT = "hipport leaves comments and strings as written; hipify-perl renames CUDA names inside them"
R_HEADER_NAME = ("hipify-perl renames `cuComplex` inside the header name `cuComplex.h` under -roc "
                 "(`rocblas_float_complex.h` does not exist); hipport maps the header (hip/hip_complex.h)")
R_LAUNCH = ("launch: hipport writes hipify-clang's form, grid and block wrapped in dim3(...) and a kernel template "
            "named HIP_KERNEL_NAME(...) also when its arguments are deduced; hipify-perl leaves them as written")
R_ROC_TYPE = ("--roc type of the file's library (rules/roc.toml): rocSPARSE's own complex and data types in "
              "rocSPARSE code, csrsv2Info_t as rocsparse_mat_info, cuRAND's XORWOW state as rocrand_state_xorwow")
R_NO_CAST = ("no kernel cast: HIP's C++ templates take the kernel as it is (hipify-clang writes none either); "
             "hipify-perl casts it to const void*")
R_LEGACY = ("legacy cuBLAS (cublas.h without cublas_v2.h): hipport keeps the handle-less call and reports it "
            "(legacy-api), as hipify-clang keeps it (HIPIFY's cublas_v1.cu); hipify-perl renames it into a hipBLAS call "
            "with the legacy arguments, which does not compile")
R_RELEASE = ("the name the targeted ROCm release declares (rules/releases.toml `[[since]]`: hipGetDriverEntryPoint and "
             "its status and flag names from 7.1, the bf16 types of hip_bf16.h from 6.0); HIPIFY's tables give one "
             "form for every release")
R_ADDRESS = ("HIP_SYMBOL(&sym): HIP declares the graph memcpy-symbol functions with a non-template `const void*`, "
             "and HIP_SYMBOL(x) is plain x on AMD; hipify writes HIP_SYMBOL(sym), which compiles for arrays only")


def _rewrite_reasons(roc: bool, rocm: tuple) -> dict[str, str]:
    """HIP/ROC name a call is renamed to -> why its arguments differ: hipify-clang's argument rewrite (rules/calls.toml,
    with the entry's `differs` where hipport writes otherwise), which hipify-perl does not make."""
    rules, sem = load_rules(), load_semantic()
    by_target: dict[str, list] = {}
    for cuda, rewrites in sem.rewrites.items():
        rule = rules.names.get(cuda)
        target = rule.target(roc) if rule else None
        if target and not roc:
            target = rules.for_release("names", cuda, rocm) or target
        for rw in rewrites:
            if rw.rocm_min and rocm < rw.rocm_min or rw.rocm_before and rocm >= rw.rocm_before:
                continue
            if target and (rw.mode == "any" or (rw.mode == "roc") == roc):
                by_target.setdefault(target, []).append((cuda, rw.differs))
    out = {}
    for target, entries in by_target.items():
        names = ", ".join(sorted({c for c, _ in entries})[:4]) + (", ..." if len({c for c, _ in entries}) > 4 else "")
        differs = sorted({d for _, d in entries if d})
        whose = ("hipify-clang's, which hipify-perl does not make"
                 if any(c in HIPIFY_CLANG_REWRITES for c, _ in entries) else "hipport's own (both HIPIFY tools rename only)")
        out[target] = (f"argument rewrite of {names} (rules/calls.toml): {whose}"
                       + (f"; hipport differs from hipify-clang: {'; '.join(differs)}" if differs else ""))
    for cuda, (_, hip) in sem.by_arity.items():
        out.setdefault(hip, f"`{cuda}` picked by argument count (hipify-clang's overload rule; hipify-perl renames only)")
    return out


def _strip_comment(line: str) -> str:
    return re.sub(r"//.*|/\*.*?\*/", "", line).rstrip()


def _include(line: str) -> str | None:
    m = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
    return m.group(1) if m else None


def _normal(lines: list[str]) -> list[str]:
    """Include lines as their header's file name (the folder layout is equal); the runtime include dropped (R_RUNTIME
    is reported from the raw texts)."""
    out = []
    for line in lines:
        header = _include(line)
        if header is None:
            out.append(line)
        elif header.rsplit("/", 1)[-1] not in ("hip_runtime.h",):
            out.append(f"#include <{header.rsplit('/', 1)[-1]}>")
    return out


def _statement(lines: list[str], start: int, end: int) -> str:
    """The block's lines with the lines before it back to the start of its statement (a call's first line)."""
    k = start
    while k > 0 and not re.search(r"[;{}]\s*$", _strip_comment(lines[k - 1])) and _include(lines[k - 1]) is None:
        k -= 1
    return "\n".join(lines[k:end])


def _release_names(rocm: tuple) -> set[str]:
    """The HIP names rules/releases.toml gives a target of ``rocm`` in place of the tables' ones."""
    return {hip for since, _, names in load_rules().since if tuple(rocm[:2]) >= since for hip in names.values()}


def _reason(perl: list[str], ours: list[str], context: str, reasons: dict[str, str],
            release_names: frozenset = frozenset()) -> str | None:
    if perl and ours and [_strip_comment(x) for x in perl] == [_strip_comment(x) for x in ours]:
        return R_COMMENT
    if any("rocblas_float_complex.h" in x for x in perl):
        return R_HEADER_NAME
    if any("hipLaunchKernelGGL" in x for x in ours):
        return R_LAUNCH
    if any("HIP_SYMBOL(&" in x for x in ours):
        return R_ADDRESS
    if any(re.search(r"\bcublas[A-Z]\w*\s*\(", x) for x in ours) and \
            not any(re.search(r"\bcublas[A-Z]\w*\s*\(", x) for x in perl):
        return R_LEGACY
    for name in re.findall(r"\b(\w+)\s*\(", context):
        if name in reasons:
            return reasons[name]
    ours_words, perl_words = set(re.findall(r"\w+", " ".join(ours))), set(re.findall(r"\w+", " ".join(perl)))
    if (ours_words - perl_words) & release_names:
        return R_RELEASE
    if any("reinterpret_cast<const void*>" in x for x in perl) and not any("reinterpret_cast" in x for x in ours):
        return R_NO_CAST
    roc_types = {t for lib in load_semantic().roc_types.values() for t, _ in lib.values()}
    if any(t in " ".join(ours) for t in roc_types):
        return R_ROC_TYPE
    return None


def hipify_perl_output(source: Path, tmp: Path) -> str:
    options = options_for(source)
    copy = tmp / source.name
    shutil.copyfile(source, copy)
    flags = ["-quiet-warnings"] + (["-roc"] if options.roc else []) + \
        (["-hip-kernel-execution-syntax"] if options.launch_syntax == "hip" else [])
    r = subprocess.run(["perl", str(HIPIFY_PERL), *flags, str(copy)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def differences(name: str, tmp: Path) -> list[tuple[str, str, str, str | None]]:
    """(fixture, hipify-perl's lines, hipport's lines, reason or None) for each block where the two differ."""
    source = FIXTURES / f"{name}.cu"
    options = options_for(source)
    perl = hipify_perl_output(source, tmp).splitlines()
    ours = convert_source(source.read_bytes(), load_rules(), options).after.decode().splitlines()
    rows = []
    if any(_include(x) and _include(x).endswith("hip_runtime.h") for x in perl) and perl != ours:
        rows.append((name, '#include "hip/hip_runtime.h"', "(one runtime include where needed)", R_RUNTIME))
    reasons = _rewrite_reasons(options.roc, options.rocm_version)
    a, b = _normal(perl), _normal(ours)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        # A block of as many lines on each side is shown line by line, each line with its own reason.
        pairs = [(i, i + 1, j, j + 1) for i, j in zip(range(i1, i2), range(j1, j2))] \
            if i2 - i1 == j2 - j1 else [(i1, i2, j1, j2)]
        for p1, p2, q1, q2 in pairs:
            rows.append((name, "\n".join(a[p1:p2]), "\n".join(b[q1:q2]),
                         _reason(a[p1:p2], b[q1:q2], _statement(b, q1, q2), reasons,
                                 frozenset(_release_names(options.rocm_version)))))
    return rows


def render(rows) -> str:
    out = []
    for name, perl, ours, why in rows:
        out.append(f"[{name}] {why or 'UNEXPLAINED'}")
        out += [f"  hipify-perl: {x}" for x in perl.splitlines()]
        out += [f"  hipport:     {x}" for x in ours.splitlines()]
    return "\n".join(out)


def _need_hipify_perl():
    need(HIPIFY_PERL.is_file() and shutil.which("perl"), "../shared/hipify-perl/hipify-perl (and perl)",
         "the reference script beside the repository, see ../shared/hipify-perl/README.md")


@pytest.mark.parametrize("name", PARITY_FIXTURES)
def test_differences_from_hipify_perl_have_reasons(name, tmp_path):
    _need_hipify_perl()
    rows = differences(name, tmp_path)
    print(render(rows))
    unexplained = [r for r in rows if r[3] is None]
    assert not unexplained, "differences from hipify-perl without a reason:\n" + render(unexplained)
    assert rows, "no difference at all: this fixture no longer shows what hipport adds"


# hipify-clang's argument rewrites beyond a rename: the functions of FuncArgCasts and FuncOverloads in HIPIFY's
# src/HipifyAction.cpp (names only). The cuSPARSE ones come in S, D, C and Z forms ("X" below).
HIPIFY_CLANG_REWRITES = [
    "cudaMallocHost", "cudaMemcpyToSymbol", "cudaMemcpyToSymbolAsync", "cudaGetSymbolSize", "cudaGetSymbolAddress",
    "cudaMemcpyFromSymbol", "cudaMemcpyFromSymbolAsync", "cudaGraphAddMemcpyNodeToSymbol",
    "cudaGraphAddMemcpyNodeFromSymbol", "cudaGraphMemcpyNodeSetParamsToSymbol", "cudaGraphMemcpyNodeSetParamsFromSymbol",
    "cudaGraphExecMemcpyNodeSetParamsToSymbol", "cudaGraphExecMemcpyNodeSetParamsFromSymbol", "cudaGetTextureReference",
    "cuOccupancyMaxPotentialBlockSize", "cuOccupancyMaxPotentialBlockSizeWithFlags", "cudaEventCreate",
    "cudaGraphInstantiate", "cudaGetDriverEntryPoint",
    "cudnnGetConvolutionForwardWorkspaceSize", "cudnnGetConvolutionBackwardDataWorkspaceSize",
    "cudnnFindConvolutionForwardAlgorithmEx", "cudnnSetPooling2dDescriptor", "cudnnGetPooling2dDescriptor",
    "cudnnSetPoolingNdDescriptor", "cudnnGetPoolingNdDescriptor", "cudnnSetLRNDescriptor", "cudnnGetRNNDescriptor_v6",
    "cudnnSetRNNDescriptor_v6", "cudnnSoftmaxForward", "cudnnSoftmaxBackward", "cudnnConvolutionForward",
    "cudnnConvolutionBackwardData", "cudnnRNNBackwardWeights",
    # newer than the FuncArgCasts table: HIPIFY's unit test cudnn_insert_new_arg.cu
    "cudnnSetDropoutDescriptor",
    # newer too: HIPIFY's unit test nvrtc2hiprtc.cu
    "nvrtcCompileProgram", "nvrtcCreateProgram",
    *[f.replace("X", p, 1) for f in (
        "cusparseXgpsvInterleavedBatch", "cusparseXgpsvInterleavedBatch_bufferSizeExt", "cusparseXgtsvInterleavedBatch",
        "cusparseXgtsvInterleavedBatch_bufferSizeExt", "cusparseXcsrilu02", "cusparseXcsrilu02_analysis",
        "cusparseXcsric02_analysis", "cusparseXcsric02_bufferSize", "cusparseXbsrilu02", "cusparseXbsrilu02_analysis",
        "cusparseXbsric02", "cusparseXbsric02_analysis", "cusparseXbsric02_bufferSize", "cusparseXbsrsm2_bufferSize",
        "cusparseXcsrsm2_solve", "cusparseXcsrsm2_analysis", "cusparseXcsrsm2_bufferSizeExt",
        "cusparseXgemvi_bufferSize", "cusparseXcsrsv2_solve", "cusparseXcsrsv2_analysis", "cusparseXcsrmv",
        "cusparseXbsrsv2_solve", "cusparseXbsrsv2_analysis", "cusparseXcsrmm", "cusparseXcsrgeam2",
        "cusparseXbsrsv2_bufferSize", "cusparseXcsrsv2_bufferSize", "cusparseXcsrgemm2", "cusparseXcsrilu02_bufferSize",
        "cusparseXbsrilu02_bufferSize") for p in "SDCZ"],
    "cusparseCsr2cscEx2_bufferSize", "cusparseSparseToDense", "cusparseSparseToDense_bufferSize",
    "cusparseDenseToSparse_bufferSize", "cusparseDenseToSparse_analysis", "cusparseSpMM_bufferSize",
    "cusparseSpSM_analysis", "cusparseSpSM_solve", "cusparseXcsrgeam2Nnz", "cusparseSpMM", "cusparseSpVV",
    "cusparseSpVV_bufferSize", "cusparseSpMV", "cusparseSpMV_bufferSize", "cusparseSpMM_preprocess",
    "cusparseSpSV_bufferSize",
]

# What hipify-clang rewrites and hipport does not (also in rules/README.md).
NOT_MATCHED = {
    "half2 members": "`h2.x` of a half2 read as `reinterpret_cast<half&>(h2.x)` (hipify-clang's undocumented-feature "
                     "matcher): hipport leaves member access alone; `half a = h2.x;` compiles as is with HIP 5.2",
    "--use-hip-data-types": "hipify-clang's option to write hipDataType for variables of cudaDataType enum type; "
                            "hipport renames by the tables (hipDataType already, rocsparse_datatype in rocSPARSE code)",
    "launches in macro arguments": "a `<<<>>>` inside a macro body used as CUDA_LAUNCH(k, g, b, args): hipify-clang "
                                   "rewrites the macro's use site, hipport rewrites launches where they are written",
}


def test_every_hipify_clang_argument_rewrite_has_a_rule():
    sem = load_semantic()
    handled = {*sem.rewrites, *sem.symbol_args, *sem.by_arity}
    missing = [n for n in HIPIFY_CLANG_REWRITES if n not in handled]
    assert not missing, f"hipify-clang rewrites these calls' arguments, hipport has no rule: {missing}"
    assert all(NOT_MATCHED.values())


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for fixture in PARITY_FIXTURES:
            print(render(differences(fixture, Path(tmp))))
