"""The audit's misses of issue 34, each class as a regression test beside its fixture pair in tests/fixtures/audit/
(which tests/test_audit.py checks: findings, look-alikes, the reviewed fix): the reviewed fixes compile with the
real ROCm 7.2.4 compiler for a wave64 and a wave32 target (gfx942, gfx1100) once converted for 7.2, and with
6.4.3's for gfx942 once converted for 6.4. Expected findings are written by hand."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hipcc import REAL_ARCHS, real_compile

from hipport.audit import AuditOptions, audit_source
from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules

AUDIT = Path(__file__).resolve().parent / "fixtures" / "audit"

# The fixed fixtures of the classes issue 34 found missing, each compiled for real.
FIXED = [
    "lane-math-32.namespace",
    "cub-warp-width",
    "lane-math-64",
]


@pytest.fixture(scope="module")
def scratch():
    path = Path(tempfile.mkdtemp(prefix="hipport-misses-", dir=tempfile.gettempdir()))  # the chroots see /tmp
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("release,archs", [("7.2", REAL_ARCHS), ("6.4", ("gfx942",))])
@pytest.mark.parametrize("name", FIXED)
def test_reviewed_fix_builds_with_the_real_compiler(scratch: Path, name: str, release: str, archs: tuple):
    src = (AUDIT / f"{name}.fixed.cu").read_bytes()
    converted = convert_source(src, load_rules(), ConvertOptions(rocm_version=tuple(map(int, release.split(".")))))
    target = scratch / release / f"{name}.hip"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(converted.after)
    r = real_compile(target, release, archs)
    assert r.returncode == 0, f"{name}.fixed.cu for ROCm {release} ({'/'.join(archs)}):\n{r.stderr[-3000:]}"


def _lane_math(src: str, path: str = "k.cu") -> list[tuple[int, bool]]:
    return [(f.line, bool(f.edits)) for f in audit_source(src.encode(), path, AuditOptions())
            if f.rule_id == "lane-math-32"]


KERNEL = """__device__ float wsum(float v) {
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffffffffffull, v, o);
    return v;
}
__global__ void k(const float* x, float* out) {
    const int lane = threadIdx.x % WS;
    float v = wsum(x[threadIdx.x]);
    if (lane == 0) out[threadIdx.x / WS] = v;
}
"""


def test_a_namespace_constant_of_32_is_patched_at_its_device_uses():
    assert _lane_math("static const int WS = 32;\n" + KERNEL) == [(1, True), (7, False), (9, False)]


def test_a_namespace_constant_a_host_launch_uses_gets_no_patch():
    host = "void launch(const float* x, float* out, int n) { k<<<n / (256 / WS), 256>>>(x, out); }\n"
    assert (1, False) in _lane_math("constexpr int WS = 32;\n" + KERNEL + host)
    assert all(not edits for _, edits in _lane_math("constexpr int WS = 32;\n" + KERNEL + host))


def test_a_constant_left_unused_by_the_patch_is_silent_in_a_source_and_reported_in_a_header():
    patched = "static const int WS = 32;\n" + KERNEL.replace("% WS", "% warpSize").replace("/ WS", "/ warpSize")
    assert _lane_math(patched) == []
    assert _lane_math("#pragma once\nconstexpr int kWarp = 32;\n", "warp.h") == [(2, False)]


def test_a_variable_named_warp_is_no_width():
    assert _lane_math("__global__ void k(int* o) { int warp = 32; o[0] = __popc(__ballot_sync(~0ull, "
                      "threadIdx.x < warp)); }\n") == []
    assert _lane_math("#define WARP 32\n__global__ void k(int* o) { o[threadIdx.x / WARP] = "
                      "__shfl_sync(~0ull, 1, 0); }\n") == [(1, True), (2, False)]


def _launch(src: str, archs=("gfx90a", "gfx942", "gfx1100")) -> list[int]:
    return [f.line for f in audit_source(src.encode(), "k.cu", AuditOptions(offload_arch=archs))
            if f.rule_id == "launch-warps-32"]


VOTE = """__global__ void vote(const float* x, int* out, int ws) {
    const int lane = threadIdx.x % ws;
    const unsigned long long b = __ballot_sync(~0ull, x[threadIdx.x] > 0.0f);
    if (lane == 0) out[threadIdx.x / ws] = __popcll(b);
}
void run(const float* x, int* out, int n) {
    int warp_size = 32;
    vote<<<n / 256, 256>>>(x, out, warp_size);
}
"""


def test_a_host_warp_size_of_32_passed_to_a_kernel_that_ballots_is_reported_where_wave64_is_built():
    assert _launch(VOTE) == [8]
    assert _launch(VOTE, ("gfx1100",)) == []  # a 32-lane target: 32 is its warp size


def test_the_width_a_kernel_is_given_alone_is_a_logical_warp():
    assert _launch(VOTE.replace("__ballot_sync(~0ull, x[threadIdx.x] > 0.0f)", "x[threadIdx.x] > 0.0f")
                   .replace("__popcll(b)", "(int)b")) == []


WAVE64_CODE = """__global__ void k(const float* x, float* out) {
    float v = x[threadIdx.x];
    for (int o = 32; o > 0; o /= 2) v += __shfl_down(v, o);
    if (threadIdx.x % 64 == 0) out[threadIdx.x / 64] = v;
}
"""


def _lane_math_64(src: str, archs: tuple[str, ...]) -> list[int]:
    return [f.line for f in audit_source(src.encode(), "k.hip", AuditOptions(offload_arch=archs))
            if f.rule_id == "lane-math-64"]


def test_code_for_64_lanes_is_reported_only_where_a_32_lane_target_is_built():
    assert _lane_math_64(WAVE64_CODE, ("gfx90a", "gfx942", "gfx1100")) == [3, 4]
    assert _lane_math_64(WAVE64_CODE, ("gfx90a", "gfx942")) == []


def test_code_that_picks_its_width_per_target_is_left_to_its_branch():
    guarded = "#if defined(__GFX9__)\n" + WAVE64_CODE + "#endif\n"
    assert _lane_math_64(guarded, ("gfx942", "gfx1100")) == []
