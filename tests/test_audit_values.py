"""The audit follows values one step beyond a line: helpers defined in an included header are reported at their
calls, and a lane mask is followed through copies and a helper's parameter to the built-in that receives it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from hipport.audit import AuditOptions, audit_source

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "audit_values"
_ANNOTATION = re.compile(r"//\s*(expect|ok):\s*([a-z0-9-]+)")


def _annotations(text: str) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
    expect: dict[int, set[str]] = {}
    ok: dict[int, set[str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        for kind, rule in _ANNOTATION.findall(line):
            (expect if kind == "expect" else ok).setdefault(n, set()).add(rule)
    return expect, ok


def _by_line(findings) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in findings:
        out.setdefault(f.line, set()).add(f.rule_id)
    return out


def test_helper_calls_and_masks_follow_the_annotations():
    path = FIXTURES / "reduce_kernels.cu"
    expect, ok = _annotations(path.read_text())
    assert expect and ok
    got = _by_line(audit_source(path.read_bytes(), str(path)))
    for line, rules in expect.items():
        assert rules <= got.get(line, set()), f"line {line}: expected {rules}, got {got.get(line)}"
    for line, rules in ok.items():
        assert not rules & got.get(line, set()), f"line {line}: {rules & got[line]} is a false alarm"


def test_the_call_names_the_definition():
    path = FIXTURES / "reduce_kernels.cu"
    findings = [f for f in audit_source(path.read_bytes(), str(path)) if f.line == 7]
    assert len(findings) == 1
    assert "`warpReduceSum` (defined at reduce_common.cuh:4)" in findings[0].message
    assert findings[0].severity == "warning" and findings[0].confidence == "medium"


def test_without_the_header_nothing_is_guessed(tmp_path):
    lone = tmp_path / "reduce_kernels.cu"
    shutil.copy(FIXTURES / "reduce_kernels.cu", lone)
    assert [f for f in audit_source(lone.read_bytes(), str(lone)) if "defined at" in f.message] == []


def test_headers_are_found_in_the_include_folders(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "src").mkdir()
    shutil.copy(FIXTURES / "reduce_common.cuh", tmp_path / "include")
    kernel = tmp_path / "src" / "reduce_kernels.cu"
    shutil.copy(FIXTURES / "reduce_kernels.cu", kernel)
    plain = audit_source(kernel.read_bytes(), str(kernel))
    assert not [f for f in plain if "defined at" in f.message]
    with_dirs = audit_source(kernel.read_bytes(), str(kernel),
                             AuditOptions(include_dirs=(str(tmp_path / "include"),)))
    assert {f.line for f in with_dirs if "defined at reduce_common.cuh" in f.message} == {7, 17, 18}


def test_a_mask_before_rocm_6_2_is_not_a_64_bit_question():
    # Before ROCm 6.2 the *_sync built-ins do not exist: the mask is dropped, so its width does not matter.
    path = FIXTURES / "reduce_kernels.cu"
    findings = audit_source(path.read_bytes(), str(path), AuditOptions(rocm_version=(6, 1)))
    assert not [f for f in findings if f.rule_id == "warp-mask-32bit" and "reaches the lane mask" in f.message]


def test_helper_in_the_same_file_is_reported_once_at_its_definition():
    # The finding stands a few lines above the call: saying it again at each call would be noise. A 32-bit mask
    # passed to a helper of the same file is a new hazard at the call, though.
    src = b"""__device__ float sum32(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffffffffffull, v, o);
    return v;
}
__device__ float pick(unsigned long long m, float v) { return __shfl_sync(m, v, 0); }
__global__ void k(float* out) { out[threadIdx.x] = sum32(out[threadIdx.x]); }
__global__ void j(float* out) { out[threadIdx.x] = pick(0xffffffffu, out[threadIdx.x]); }
"""
    by_line = _by_line(audit_source(src, "k.cu"))
    assert "warp-loop-32" in by_line.get(2, set())
    assert "warp-loop-32" not in by_line.get(6, set())
    assert "warp-mask-32bit" in by_line.get(7, set())


def test_cli_reports_the_helper_at_the_call():
    proc = subprocess.run([sys.executable, "-m", "hipport", "audit", "reduce_kernels.cu", "--no-cache", "-q",
                           "--rocm-version", "7.0"],
                          cwd=FIXTURES, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "reduce_kernels.cu:7:9: warning warp-loop-32: `warpReduceSum` (defined at reduce_common.cuh:4)" in proc.stdout


def test_cached_audit_sees_a_changed_header(tmp_path):
    # The kernel file's bytes do not change, its header does: a cached result must not be reused.
    shutil.copy(FIXTURES / "reduce_kernels.cu", tmp_path)
    header = tmp_path / "reduce_common.cuh"
    shutil.copy(FIXTURES / "reduce_common.cuh", header)
    cmd = [sys.executable, "-m", "hipport", "audit", "reduce_kernels.cu", "-q", "--rocm-version", "7.0",
           "--cache-dir", str(tmp_path / "c")]
    first = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 1 and "`warpReduceSum` (defined at" in first.stdout
    header.write_text(header.read_text().replace("int offset = 16;", "int offset = warpSize / 2;"))
    second = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert "`warpReduceSum` (defined at" not in second.stdout, second.stdout
    assert second.returncode == 1  # the mask findings at lines 17-18 remain


def _fake_rocm(root: Path, major: int, minor: int) -> dict:
    (root / "include" / "hip").mkdir(parents=True)
    (root / "include" / "hip" / "hip_version.h").write_text(
        f"#define HIP_VERSION_MAJOR {major}\n#define HIP_VERSION_MINOR {minor}\n")
    import os
    return dict(os.environ, ROCM_PATH=str(root))


def test_convert_and_audit_target_the_same_release_by_default(tmp_path):
    """Neither the command line nor settings name a release: both commands take the installed HIP's, so the
    audit never asks to widen a mask that convert drops (before 7.0: 6.4.3's `*_sync` are still opt-in), and counts
    the one convert widens (7.0+) as converted, the same rewrite (issue 21: what convert does itself is no finding)."""
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* o) {\n"
                   "    float v = o[threadIdx.x];\n"
                   "    v += __shfl_down_sync(0xffffffff, v, 1);\n"
                   "    o[threadIdx.x] = v;\n}\n")
    for version, mask_free in (((6, 1), True), ((6, 4), True), ((7, 2), False)):
        env = _fake_rocm(tmp_path / f"rocm{version[0]}{version[1]}", *version)
        conv = subprocess.run([sys.executable, "-m", "hipport", "convert", "k.cu", "--stdout", "--no-hipify-perl"],
                              cwd=tmp_path, capture_output=True, text=True, env=env)
        assert conv.returncode == 0, conv.stderr
        audit = subprocess.run([sys.executable, "-m", "hipport", "audit", "k.cu", "-q", "--no-cache",
                                "--report", "json", "-o", "-"], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert audit.returncode == 0, audit.stdout + audit.stderr
        (report,) = json.loads(audit.stdout)["files"]
        assert report["findings"] == []
        written = {c["hip"] for c in report["conversions"] if c["category"] == "warp"}
        if mask_free:
            assert "__shfl_down(v, 1)" in conv.stdout, conv.stdout
            assert written == {"__shfl_down"}, written
        else:
            assert "__shfl_down_sync(0xffffffffffffffffull, v, 1)" in conv.stdout, conv.stdout
            assert written == {"0xffffffffffffffffull"}, written


def test_ballot_of_a_32_thread_tile_may_stay_32_bit():
    # HIP 5.2's tiles have no ballot member, so this case lives here rather than in a compiled fixture.
    src = b"""#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(const int* in, int* out) {
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
    auto wide_tile = cg::tiled_partition<64>(cg::this_thread_block());
    unsigned a = tile.ballot(in[threadIdx.x] > 0);
    unsigned b = wide_tile.ballot(in[threadIdx.x] > 0);
    out[0] = __popc(a) + __popc(b);
}
"""
    found = {(f.line, f.rule_id) for f in audit_source(src, "k.cu", AuditOptions(rocm_version=(7, 0)))}
    assert (6, "ballot-32bit") not in found
    assert (7, "ballot-32bit") in found


def test_float_atomic_severity_follows_the_memory():
    # A CAS loop on hipMalloc memory is correct, only slower: information. On managed memory a hardware add (from
    # -munsafe-fp-atomics) is silently lost: a warning.
    src = b"""#include <cuda_runtime.h>
__global__ void acc(float* out, const float* in) { atomicAdd(out, in[threadIdx.x]); }
int main() {
    float *dev, *man, *in;
    cudaMalloc(&dev, 4);
    cudaMallocManaged(&man, 4);
    cudaMalloc(&in, 256);
    acc<<<1, 64>>>(dev, in);
    acc<<<1, 64>>>(man, in);
    return 0;
}
"""
    lone = b"__global__ void acc(float* out, float v) { atomicAdd(out, v); }\n"
    dev_only = src.replace(b"    acc<<<1, 64>>>(man, in);\n", b"")
    managed_only = src.replace(b"    acc<<<1, 64>>>(dev, in);\n", b"")
    severity = {}
    for name, text in (("device", dev_only), ("managed", managed_only), ("parameter", lone)):
        found = [f for f in audit_source(text, "a.cu", AuditOptions()) if f.rule_id == "atomic-float-add"]
        assert len(found) == 1, (name, found)
        severity[name] = found[0].severity
    assert severity == {"device": "info", "managed": "warning", "parameter": "info"}


def test_cli_include_folders_from_settings_and_flag(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "src").mkdir()
    shutil.copy(FIXTURES / "reduce_common.cuh", tmp_path / "include")
    shutil.copy(FIXTURES / "reduce_kernels.cu", tmp_path / "src")
    base = [sys.executable, "-m", "hipport", "audit", "src/reduce_kernels.cu", "-q", "--no-cache", "--rocm-version", "7.0"]
    plain = subprocess.run(base, cwd=tmp_path, capture_output=True, text=True)
    assert plain.returncode == 0 and plain.stdout == "", plain.stdout + plain.stderr  # every finding needs the header
    flag = subprocess.run([*base, "-I", "include"], cwd=tmp_path, capture_output=True, text=True)
    assert flag.returncode == 1 and "src/reduce_kernels.cu:7:9: warning warp-loop-32: `warpReduceSum` (defined at " \
        "reduce_common.cuh:4)" in flag.stdout, flag.stdout + flag.stderr
    (tmp_path / ".hipport.toml").write_text('include-dirs = ["include"]\n')
    settings = subprocess.run(base, cwd=tmp_path, capture_output=True, text=True)
    assert settings.returncode == 1 and settings.stdout == flag.stdout, settings.stderr


def test_header_masks_kernels_and_unknown_wrappers_follow_the_annotations():
    path = FIXTURES / "warp_launch.cu"
    expect, ok = _annotations(path.read_text())
    assert expect and ok
    findings = audit_source(path.read_bytes(), str(path), AuditOptions(rocm_version=(7, 0)))
    got = _by_line(findings)
    for line, rules in expect.items():
        assert rules <= got.get(line, set()), f"line {line}: expected {rules}, got {got.get(line)}"
    for line, rules in ok.items():
        assert not rules & got.get(line, set()), f"line {line}: {rules & got[line]} is a false alarm"
    by_line = {f.line: f for f in findings}
    assert "(defined at warp_common.cuh:4)" in by_line[6].message
    assert by_line[12].confidence == "low" and by_line[12].severity == "warning"  # a guess: the wrapper is unseen
    assert "(defined at warp_common.cuh:18)" in by_line[13].message  # the width defaults to 32 there
    assert "(defined at warp_common.cuh:8)" in by_line[20].message


def test_without_the_header_the_mask_macro_and_the_kernel_are_unknown(tmp_path):
    lone = tmp_path / "warp_launch.cu"
    shutil.copy(FIXTURES / "warp_launch.cu", lone)
    found = {(f.line, f.rule_id) for f in audit_source(lone.read_bytes(), str(lone), AuditOptions(rocm_version=(7, 0)))}
    assert (6, "warp-mask-32bit") not in found and (20, "launch-warps-32") not in found
    assert (13, "warp-loop-32") not in found


def test_a_mask_macro_is_reported_at_each_call_and_fixed_at_its_definition():
    src = b"""#define MASK 0xFFFFFFFF
__global__ void k(int* out, int p) {
    if (__any_sync(MASK, p > 0)) out[0] = 1;
    if (__all_sync(MASK, p > 1)) out[1] = 1;
}
"""
    found = [f for f in audit_source(src, "k.cu", AuditOptions(rocm_version=(7, 0))) if f.rule_id == "warp-mask-32bit"]
    assert sorted(f.line for f in found) == [1, 3, 4]
    assert [f.line for f in found if f.edits] == [1]


def test_a_warp_size_constant_used_for_bitmap_words_is_not_a_lane():
    src = b"""#define WS 32
__global__ void k(unsigned* words, int col, float* v) {
    atomicAnd(&words[col / WS], ~(0x80000000u >> (col % WS)));
    float x = __shfl_down(v[0], 1);
    v[threadIdx.x % WS] = x;
}
"""
    lines = {f.line for f in audit_source(src, "k.cu", AuditOptions(rocm_version=(7, 0))) if f.rule_id == "lane-math-32"}
    assert 3 not in lines and 5 in lines


def test_a_launch_in_warps_of_32_is_right_when_only_wave32_is_built():
    src = b"""__global__ void rows(float* d) { d[blockIdx.x * 4 + threadIdx.x / warpSize] = 0.0f; }
void run(float* d, int n) { rows<<<n, 4 * 32>>>(d); }
"""
    def lines(archs):
        found = audit_source(src, "k.cu", AuditOptions(offload_arch=archs))
        return {f.line for f in found if f.rule_id == "launch-warps-32"}
    assert lines(("gfx90a",)) == {2}
    assert lines(("gfx1100",)) == set()


def test_one_template_argument_splitter_serves_every_check():
    from hipport.audit.checks.common import split_template_args
    from hipport.audit.checks.context import Context
    from hipport.audit.engine import AuditOptions as Options
    from hipport.audit.hazards import load_hazards

    src = b"void f() { g<a<int>, (b < c), sizeof(x)>(1); h<m<n>>(2); k<1, 2; }"
    ctx = Context(src, "t.cu", Options(), load_hazards())
    opens = [i for i in range(ctx.n) if ctx.text[i] == b"<" and ctx.text[i - 1] in (b"g", b"h", b"k")]
    g, h, k = (split_template_args(ctx, i) for i in opens)
    assert [ctx.span_text(a, b) for a, b in g[0]] == [b"a<int>", b"(b < c)", b"sizeof(x)"]
    assert [ctx.span_text(a, b) for a, b in h[0]] == [b"m<n"]  # `>>` is one token: it closes both, ending both
    assert k is None  # the statement ends before a closing `>`


def test_atomic_types_from_an_included_header(tmp_path):
    (tmp_path / "types.h").write_text("#pragma once\ntypedef __half half_t;\nusing real = float;\n")
    kernel = tmp_path / "k.cu"
    kernel.write_text('#include "types.h"\n'
                      "__global__ void k(half_t* h, real* r, int* n) {\n"
                      "    atomicAdd(h, h[1]);\n"
                      "    atomicAdd(r, 1.0f);\n"
                      "    atomicAdd(n, 1);\n"
                      "}\n")
    found = {(f.line, f.rule_id) for f in audit_source(kernel.read_bytes(), str(kernel))}
    assert (3, "atomic-half-type") in found and (4, "atomic-float-add") in found
    assert not {r for line, r in found if line == 5}  # an integer atomic is fine
    (tmp_path / "types.h").unlink()
    assert (3, "atomic-half-type") not in {(f.line, f.rule_id) for f in audit_source(kernel.read_bytes(), str(kernel))}
