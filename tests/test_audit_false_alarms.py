"""False alarms the audit raised on projects that already build for AMD GPUs (issue 34), each class with a look-alike
that must stay silent (`// ok: <rule>`) and a true positive that must keep firing (`// expect: <rule>`).

The fixtures in tests/fixtures/false-alarms/ go through what `hipport audit` runs: the conversion in memory and the
audit of the same bytes as one set of findings (a first line `// audit-options: rocm=7.2 arch=... defines=A,B`
sets the target and the project's switches). The real compilers back the claims the data makes: a 64-thread tile
compiles for gfx1100 with ROCm 7.2.4 and not with 6.4.3, rules/rocm/same_names.toml is what the compilers say, and
the names it keeps compile with each release.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from hipport.audit import AuditOptions, audit_source
from hipport.audit.hazards import parse_version
from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "false-alarms"
_ANNOTATION = re.compile(r"//\s*(expect|ok):\s*([a-z0-9-]+)")
_OPTIONS = re.compile(r"//\s*audit-options:(.*)")
FLAGGED = ("warning", "error")


def _options(text: str) -> tuple[AuditOptions, ConvertOptions]:
    m = _OPTIONS.search(text[:400])
    kw = dict(item.split("=", 1) for item in m.group(1).split()) if m else {}
    audit = {}
    if "rocm" in kw:
        audit["rocm_version"] = parse_version(kw["rocm"])
    if "arch" in kw:
        audit["offload_arch"] = tuple(kw["arch"].split(","))
    if "defines" in kw:
        audit["defines"] = tuple(kw["defines"].split(","))
    options = AuditOptions(**audit)
    return options, ConvertOptions(rocm_version=tuple(options.rocm_version[:2]), defines=options.defines)


def findings_of(path: Path, text: bytes | None = None):
    """The findings `hipport audit` reports for ``path``: the conversion's and the audit's, as the CLI joins them."""
    src = path.read_bytes() if text is None else text
    audit_options, convert_options = _options(src.decode())
    converted = convert_source(src, load_rules([]), convert_options, str(path))
    return audit_source(src, str(path), audit_options, converted)


FILES = sorted(FIXTURES.glob("*.cu"))


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_look_alikes_stay_silent_and_true_positives_fire(path: Path):
    lines = path.read_text().splitlines()
    marks = [(n, kind, rule) for n, line in enumerate(lines, 1) for kind, rule in _ANNOTATION.findall(line)]
    assert marks, f"{path.name}: no `// expect:` or `// ok:` line"
    flagged = {(f.line, f.rule_id): f for f in findings_of(path) if f.severity in FLAGGED}
    missing = [f"line {n}: {rule}" for n, kind, rule in marks if kind == "expect" and (n, rule) not in flagged]
    noisy = [f"line {n}: {flagged[n, rule].message}" for n, kind, rule in marks
             if kind == "ok" and (n, rule) in flagged]
    assert not missing, f"{path.name}: expected, not reported: {missing}"
    assert not noisy, f"{path.name}: false alarms: {noisy}"


def test_a_project_that_defines_a_toolkit_version_for_amd_compiles_its_branch(tmp_path):
    path = FIXTURES / "amd-branches.cu"
    src = path.read_bytes().replace(b"rocm=7.2", b"rocm=7.2 defines=CUDART_VERSION=12000")
    lines = {(f.line, f.rule_id) for f in findings_of(path, src)}
    assert (9, "unsupported-api") in lines      # `#if CUDART_VERSION >= 11000` holds for this AMD build
    assert (13, "unsupported-api") not in lines  # CUBLAS_VERSION is still undefined
    (tmp_path / "compat.h").write_text("#pragma once\n#define CUBLAS_VERSION 11000\n")
    (tmp_path / "k.cu").write_bytes(b'#include "compat.h"\n' + path.read_bytes())
    lines = {(f.line, f.rule_id) for f in findings_of(tmp_path / "k.cu")}
    assert (14, "unsupported-api") in lines     # the project's header defines CUBLAS_VERSION: compiled


def test_the_tile_message_says_why_per_release():
    path = FIXTURES / "cg-tile-size.cu"
    at_72 = [f for f in findings_of(path) if f.rule_id == "cg-tile-size" and f.line == 10]
    assert [f.severity for f in at_72] == ["warning"]
    assert "span 2 wavefronts" in at_72[0].message and "does not compile" not in at_72[0].message
    src = path.read_bytes().replace(b"rocm=7.2", b"rocm=6.4")
    at_64 = [f for f in findings_of(path, src) if f.rule_id == "cg-tile-size" and f.line == 10]
    assert [f.severity for f in at_64] == ["error"] and "rejects it" in at_64[0].message
    src = path.read_bytes().replace(b"tiled_partition<64>", b"tiled_partition<128>")
    at_128 = [f for f in findings_of(path, src) if f.rule_id == "cg-tile-size" and f.line == 10]
    assert [f.severity for f in at_128] == ["error"] and "does not compile" in at_128[0].message


_TILE = """#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(float *out, const float *in) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<64> t = cg::tiled_partition<64>(block);
  float v = in[block.thread_rank()];
  for (int o = t.size() / 2; o > 0; o /= 2) v += t.shfl_down(v, o);
  if (t.thread_rank() == 0) out[blockIdx.x] = v;
}
"""


@pytest.mark.parametrize("release, compiles", [("7.2", True), ("6.4", False)])
def test_a_64_tile_for_gfx1100_compiles_from_rocm_7(tmp_path, release, compiles):
    from hipcc import real_compile

    (tmp_path / "tile.hip").write_text(_TILE)
    r = real_compile(tmp_path / "tile.hip", release, ("gfx1100",))
    assert (r.returncode == 0) == compiles, r.stderr[-2000:]
    if not compiles:
        assert "Tile size is either not a power of 2 or greater than the wavefront size" in r.stderr


def test_same_names_data_is_what_the_compilers_say():
    from needs import need

    for release, tool in (("6.4", "rocm64-hipcc"), ("7.2", "rocm7-hipcc")):
        need(subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode == 0,
             f"the real ROCm {release} compiler `{tool}`", "as root: bash ../shared/tools/rocm_chroot.sh")
    need((ROOT.parent / "shared" / "rocm-6.2.2" / "bin" / "hipcc").is_file(), "ROCm 6.2.2's header tree",
         "place it in ../shared/rocm-6.2.2")
    need(Path("/usr/include/hip/hip_runtime.h").is_file(), "Debian's HIP 5.2", "apt-get install libamdhip64-dev")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_same_names.py"), "--check"], capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, r.stderr


_KEPT = """#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cublas_v2.h>
__global__ void k(half2 *o, float x, int *n) {
  o[0] = make_half2(__float2half(x), __float2half(x));
  if (__isnanf(x) || __isinff(x) || __signbitf(x)) o[1] = o[0];
  __nv_bfloat16_raw r = {0x3f80};
  __nv_bfloat162_raw r2;
  r2.x = r.x;
  n[0] = r2.x;
}
void gemm(cublasHandle_t h, const float *a, float *c) {
  float one = 1.f;
  cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, CUDA_R_32F, 4, a, CUDA_R_32F, 4, &one, c,
               CUDA_R_32F, 4, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
}
"""


@pytest.mark.parametrize("release", ["7.2", "6.4"])
def test_the_names_kept_compile_with_the_real_release(tmp_path, release):
    from hipcc import real_compile

    target = parse_version(release)[:2]
    result = convert_source(_KEPT.encode(), load_rules([]), ConvertOptions(rocm_version=target), "kept.cu")
    assert not [f for f in result.findings if f.rule_id == "unsupported-api"], result.findings
    (tmp_path / "kept.hip").write_bytes(result.after)
    r = real_compile(tmp_path / "kept.hip", release, ("gfx942", "gfx1100"))
    assert r.returncode == 0, r.stderr[-3000:]


def test_no_width_patch_for_a_project_shuffle_macro():
    # HeCBench shuffle: `--apply-suggestions` gave `__shfl_xor(value, mask, 32)` to a two-parameter macro of the
    # project's, which stopped the program compiling; the finding stays, with no patch.
    src = (FIXTURES / "project-shuffle-macro.cu").read_bytes()
    opts = AuditOptions(rocm_version=(7, 2))
    found = [f for f in audit_source(src, str(FIXTURES / "project-shuffle-macro.cu"), opts)
             if f.rule_id == "warp-loop-32"]
    assert [(f.line, f.severity, len(f.edits)) for f in found] == [(10, "info", 0)]
    assert "the patch says so" not in found[0].message
    plain = src.replace(b"#define __shfl_xor(v, d) __shfl_xor_sync(0xffffffffffffffffull, v, d)\n", b"")
    patched = [f for f in audit_source(plain, "k.cu", opts) if f.rule_id == "warp-loop-32"]
    assert [len(f.edits) for f in patched] == [1]  # HIP's own `__shfl_xor` takes the width


VECTOR_OPERATORS = FIXTURES / "vector-operators"


def _flagged_lines(path: Path) -> dict[int, str]:
    return {f.line: f.severity for f in findings_of(path) if f.rule_id == "redefines-hip"}


def test_a_complex_vector_operator_the_project_never_applies_is_only_an_info():
    # main.cu multiplies two float2 (complex.h line 8 changes results on AMD) but divides and scales float2 values
    # only by floats, so the complex `/` (line 25) and `*=` (line 13) are never compiled into anything.
    path = VECTOR_OPERATORS / "complex.h"
    lines = path.read_text().splitlines()
    marks = [(n, kind) for n, line in enumerate(lines, 1) for kind, _ in _ANNOTATION.findall(line)]
    assert [n for n, kind in marks] == [8, 13, 25]
    found = _flagged_lines(path)
    assert {n: found.get(n) for n, _ in marks} == {8: "warning", 13: "info", 25: "info"}


def test_a_vector_operator_header_without_visible_users_keeps_its_warnings(tmp_path):
    # Nothing in the folder includes the header: its users are elsewhere and may divide float2 by float2.
    (tmp_path / "Makefile").write_text("all:\n\ttrue\n")
    (tmp_path / "complex.h").write_bytes((VECTOR_OPERATORS / "complex.h").read_bytes())
    assert _flagged_lines(tmp_path / "complex.h") == {8: "warning", 13: "warning", 25: "warning"}


def test_operands_of_unknown_type_may_be_vectors(tmp_path):
    # A template's `a / b` and `acc *= w` may take float2 operands: the operators stay warnings.
    (tmp_path / "Makefile").write_text("all:\n\ttrue\n")
    (tmp_path / "complex.h").write_bytes((VECTOR_OPERATORS / "complex.h").read_bytes())
    (tmp_path / "ratio.cu").write_text(
        '#include "complex.h"\n'
        "template <typename T> __device__ T ratio(T a, T b) { return a / b; }\n"
        "template <typename T> __device__ void scale(T &acc, const T w) { acc *= w; }\n")
    assert _flagged_lines(tmp_path / "complex.h") == {8: "warning", 13: "warning", 25: "warning"}


def test_a_macro_used_by_a_source_in_a_sibling_folder_is_not_unused(tmp_path):
    # The header sits in include/, its user in src/, the build file at the project directory's top: the project
    # is the top folder, so the warp count the kernel sizes and walks its partial sums with is reported (on 64
    # lanes only 4 of its 8 entries are written); with no user anywhere it is an info.
    from hipport import project_sources

    def flagged() -> set[int]:
        project_sources.forget()
        options = AuditOptions(rocm_version=(7, 2, 0), project_dir=str(tmp_path))
        src = header.read_bytes()
        converted = convert_source(src, load_rules([]), ConvertOptions(rocm_version=(7, 2)), str(header))
        return {f.line for f in audit_source(src, str(header), options, converted)
                if f.rule_id == "lane-math-32" and f.severity in FLAGGED}

    (tmp_path / "Makefile").write_text("all:\n\thipcc -Iinclude src/k.cu\n")
    (tmp_path / "include").mkdir()
    (tmp_path / "src").mkdir()
    header = tmp_path / "include" / "sizes.h"
    header.write_text("#define BLOCK_THREADS 256\n#define GROUPS (BLOCK_THREADS / 32)\n")
    assert flagged() == set()
    (tmp_path / "src" / "k.cu").write_text(
        '#include "sizes.h"\n'
        "__global__ void k(float *out) {\n"
        "    __shared__ float part[GROUPS];\n"
        "    float v = out[threadIdx.x];\n"
        "    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down(v, o);\n"
        "    if (threadIdx.x % warpSize == 0) part[threadIdx.x / warpSize] = v;\n"
        "    __syncthreads();\n"
        "    if (threadIdx.x == 0) { float s = 0.f; for (int w = 0; w < GROUPS; ++w) s += part[w]; out[0] = s; }\n"
        "}\n")
    assert flagged() == {2}
