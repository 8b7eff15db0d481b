"""ROCm 7's warp-width breakers (issue 32): HIP that builds with ROCm 6.4 and not with 7.2 (or, for
`#if __AMDGCN_WAVEFRONT_SIZE == 64`, silently takes its wave32 branch), one file per class under
tests/fixtures/rocm7/, each with its converted form written by hand (`.expected.hip`), a look-alike that must not
change (`.noop.hip`) and a second run that changes nothing. What the conversion cannot do is the audit's (host
`warpSize`, `static_assert`, `enable_if`): those fixtures have a `.fixed.hip` written by hand after its advice.

The compile tests use the real ROCm 6.4.3 and 7.2.4 compilers (`tests/hipcc.py` `real_compile`, gfx942 and
gfx1100); without them they skip, and fail under CI=true."""

from __future__ import annotations

from pathlib import Path

import pytest
from hipcc import real_compile

from hipport.audit import AuditOptions, audit_source
from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules
from hipport.wavefront import load_wave_rules

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rocm7"
AT_72 = ConvertOptions(rocm_version=(7, 2))
AT_70 = ConvertOptions(rocm_version=(7, 0))
AT_64 = ConvertOptions(rocm_version=(6, 4))
# class -> (a line of the error ROCm 7.2 gives the input, the conversion's finding ids)
CASES = {
    "warpsize-array": ("array size is not a constant expression", {"wavefront-width"}),
    "warpsize-hipcub": ("non-type template argument is not a constant expression", {"wavefront-width"}),
    "warpsize-tile": ("no matching function for call to 'tiled_partition'", {"wavefront-width"}),
    # the input's own static_asserts say which branch the target took: at 7.2 the wave32 one on gfx942 too
    "wavefront-macro": ("wave32 branch on a wave64 target", {"wavefront-width"}),
    "sync-shims": ("static declaration of '__syncwarp' follows non-static declaration", {"sync-builtin-guarded"}),
    "sync-masks": ("The mask must be a 64-bit integer", set()),
}
AUDIT_ONLY = {
    "warpsize-host": ("reference to __device__ function 'operator int' in __host__ function",
                      [(10, "warpsize-host")]),
    "warpsize-static": ("static assertion expression is not an integral constant expression",
                        [(5, "warpsize-constexpr"), (11, "warpsize-constexpr")]),
}


def convert(path: Path, options: ConvertOptions = AT_72):
    return convert_source(path.read_bytes(), load_rules(), options, str(path))


@pytest.mark.parametrize("case", sorted(CASES))
def test_conversion_is_the_reviewed_form(case):
    result = convert(FIXTURES / f"{case}.hip")
    assert result.after == (FIXTURES / f"{case}.expected.hip").read_bytes()
    assert {f.rule_id for f in result.findings} == CASES[case][1], [f.message for f in result.findings]
    again = convert_source(result.after, load_rules(), AT_72, case)
    assert again.after == result.after, "a second run changed the output"


@pytest.mark.parametrize("case", sorted(CASES))
def test_lookalike_is_left_alone(case):
    path = FIXTURES / f"{case}.noop.hip"
    result = convert(path)
    assert result.after == path.read_bytes()
    assert not [f for f in result.findings if f.rule_id in ("wavefront-width", "sync-builtin-guarded",
                                                             "wavefront-size-macro")]


@pytest.mark.parametrize("case", sorted(set(CASES) - {"sync-shims", "sync-masks"}))
def test_rocm_6_targets_are_left_alone(case):
    """The inputs build with 6.4 as they are: for a 6.x target none of this applies."""
    path = FIXTURES / f"{case}.hip"
    assert convert(path, AT_64).after == path.read_bytes()


# 6.4 declares the *_sync forms only with HIP_ENABLE_WARP_SYNC_BUILTINS, and these projects define them for 6.x
# themselves: their definitions and the calls that reach them stay as they are (a name the project defines is its
# own; before, the calls were written mask-free and the first definition taken for a call).
SHIMS_AT_64 = ("sync-shims", "sync-masks")


@pytest.mark.parametrize("case", SHIMS_AT_64)
def test_rocm_6_targets_keep_the_projects_definitions(case, tmp_path):
    expected = (FIXTURES / f"{case}.hip").read_bytes()
    result = convert(FIXTURES / f"{case}.hip", AT_64)
    assert result.after == expected
    out = tmp_path / f"{case}.hip"
    out.write_bytes(result.after)
    _builds(out, "6.4")


def test_rules_start_at_7_0():
    rules = load_wave_rules()
    assert rules.width_from == rules.macro_from == rules.sync_from == rules.dropped_from == (7, 0)
    for case in ("warpsize-array", "wavefront-macro", "sync-shims"):
        assert convert(FIXTURES / f"{case}.hip", AT_70).after == (FIXTURES / f"{case}.expected.hip").read_bytes()


def test_cuda_input():
    """CUDA's `__syncwarp(0xffffffff)` takes no 32-bit mask in HIP 7 (and its masked form checks the mask against
    the active lanes, untrimmed on wave32): the all-lanes mask goes. A HIP branch of a CUDA file chosen by the
    wavefront-size macro is rewritten as in HIP input."""
    result = convert(FIXTURES / "cuda-warp.cu")
    assert result.after == (FIXTURES / "cuda-warp.expected.hip").read_bytes()
    assert convert_source(result.after, load_rules(), AT_72, "again").after == result.after


@pytest.mark.parametrize("case", sorted(AUDIT_ONLY))
def test_audit_reports_what_convert_leaves(case):
    path = FIXTURES / f"{case}.hip"
    src = path.read_bytes()
    converted = convert(path)
    findings = audit_source(src, path.name, AuditOptions(rocm_version=(7, 2)), converted)
    got = sorted((f.line, f.rule_id) for f in findings if f.severity == "error")
    assert got == AUDIT_ONLY[case][1], [f.message for f in findings]
    assert all(not f.edits for f in findings if f.severity == "error")  # no mechanical fix: advice only


def test_static_assert_advice_names_the_device_width():
    path = FIXTURES / "warpsize-static.hip"
    messages = [f.message for f in audit_source(path.read_bytes(), path.name, AuditOptions(rocm_version=(7, 2)))]
    assert all("::rocprim::arch::wavefront::max_size()" in m for m in messages), messages
    assert not any("__AMDGCN_WAVEFRONT_SIZE`" in m and "test" in m for m in messages)


# -- the real compilers -------------------------------------------------------------------------------------------


def _builds(path: Path, release: str) -> None:
    r = real_compile(path, release)
    assert r.returncode == 0, f"{path.name} with ROCm {release}:\n{r.stderr[-3000:]}"


def _fails(path: Path, release: str, error: str) -> None:
    r = real_compile(path, release)
    assert r.returncode != 0 and error in r.stderr, f"{path.name} with ROCm {release}:\n{r.stderr[-3000:]}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_input_builds_with_6_4_and_breaks_with_7_2(case):
    _builds(FIXTURES / f"{case}.hip", "6.4")
    _fails(FIXTURES / f"{case}.hip", "7.2", CASES[case][0])


@pytest.mark.parametrize("case", sorted(CASES))
def test_converted_form_builds_with_7_2_and_6_4(case):
    """Compiled for gfx942 (wave64) and gfx1100 (wave32); for the macro the branches' static_asserts hold on both."""
    _builds(FIXTURES / f"{case}.expected.hip", "7.2")
    _builds(FIXTURES / f"{case}.expected.hip", "6.4")  # rocPRIM's arch.hpp is in 6.4 too (not in 6.2)


def test_converted_cuda_builds_with_7_2():
    _builds(FIXTURES / "cuda-warp.expected.hip", "7.2")


@pytest.mark.parametrize("case", sorted(AUDIT_ONLY))
def test_audit_only_input_breaks_and_its_fix_builds(case):
    _builds(FIXTURES / f"{case}.hip", "6.4")
    _fails(FIXTURES / f"{case}.hip", "7.2", AUDIT_ONLY[case][0])
    _builds(FIXTURES / f"{case}.fixed.hip", "7.2")


SYNCWARP_SUBSET = """#include <cstdint>
__global__ void k(float *smem) {
  uint64_t mask = (((uint64_t)1) << (blockDim.x / 32)) - 1;
  int lane = threadIdx.x % 32;
  if (lane < blockDim.x / 32) {
    __syncwarp(mask);
    smem[lane] = 0;
  }
  if (lane < 16) __syncwarp(0xffffull);
}
"""


def test_a_64_bit_subset_mask_of_syncwarp_is_no_warning_from_7_0():
    # CTranslate2's shape: ROCm 7's `__syncwarp(mask)` syncs the wavefront and checks that the mask is the lanes that
    # call it, which a 64-bit mask of the lanes inside the branch is. Before 7.0 there is no `__syncwarp` at all.
    def found(version, src=SYNCWARP_SUBSET):
        opts = AuditOptions(rocm_version=version)
        return [(f.line, f.severity) for f in audit_source(src.encode(), "s.cu", opts)
                if f.rule_id == "warp-builtin-unavailable"]

    assert found((7, 2)) == [(6, "info"), (9, "info")]
    assert [s for _, s in found((6, 4))] == ["warning", "warning"]
    # look-alike: a mask whose width cannot be told stays a warning; a 32-bit one is warp-mask-32bit's error
    assert found((7, 2), "__global__ void k(unsigned long m){ __syncwarp(m & f()); }\n") == [(1, "warning")]
    assert found((7, 2), "__global__ void k(){ if (threadIdx.x < 16) __syncwarp(0xffff); }\n") == []
