"""Patches that rewrite the whole 32-lane assumption or nothing (issue 34), through `hipport convert
--apply-suggestions` as a user runs it, for ROCm 7.2:

* a mask variable made 64-bit holds every lane in 64 bits (`0xffffffffffffffffull`, or `__activemask()` where it
  reaches `__syncwarp`), never a widened 32-lane value: no patched output declares a 64-bit variable with a 32-bit
  all-lanes value, and a variable whose values cannot all be widened keeps its type;
* `% 32` and `/ 32` that index blocks of 32 values are not rewritten;
* offsets 16..1 under `if (tid < 32)` stay, and the masks there name the lanes taking part.

Each reviewed `.fixed.cu` of these classes (tests/fixtures/audit/, written by hand) is what the suggestions give
(tests/test_audit.py); here its conversion for 7.2 compiles with the real ROCm 7.2.4 compiler for gfx942 (wave64)
and gfx1100 (wave32), and a second `--apply-suggestions` run over the patched output changes nothing. The programs
that run these classes on 64 lanes are tests/fixtures/wave64/data_blocks.cu and first_32_tail.cu."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hipcc import real_compile

from hipport.convert import ConvertOptions, convert_source
from hipport.rules import load_rules

AUDIT = Path(__file__).resolve().parent / "fixtures" / "audit"
PATCHED = ("warp-mask-32bit.values", "warp-mask-32bit.wrappers", "lane-math-32.blocks", "warp-loop-32.first32")
# A 64-bit declaration given a 32-bit all-lanes value: the patch class issue 34 reported.
_WIDENED_32 = re.compile(r"\b(?:unsigned\s+long\s+long|uint64_t)\s+\w+\s*=\s*\(?\s*(?:static_cast<\w+>\()?\s*"
                         r"(?:0[xX][fF]{8}[uUlL]?|~0[uU]?|-1)\s*\)*\s*[;,)]")


def _suggest(path: Path, level: str = "low") -> str:
    """`hipport convert --stdout --apply-suggestions` at ``level`` for ROCm 7.2."""
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", "--stdout", "--no-cache", "--rocm-version", "7.2",
                        "--apply-suggestions", "--suggestion-level", level, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


ALL = sorted(p for p in AUDIT.glob("*.cu") if not p.name.endswith(".fixed.cu"))


@pytest.mark.parametrize("path", [p for p in ALL if p.name.startswith(("warp-mask-32bit", "ballot-32bit"))],
                         ids=lambda p: p.name)
def test_no_patch_widens_a_mask_to_a_32_lane_value(path: Path):
    out = _suggest(path)
    assert not _WIDENED_32.search(out), _WIDENED_32.search(out).group(0)


def test_masks_whose_values_cannot_widen_keep_their_type():
    out = _suggest(AUDIT / "warp-mask-32bit.nopatch.cu")
    for decl in ("unsigned first = 0xffffffff << n;", "unsigned pick = low ? 0x0000ffffu : 0xffffffffu;",
                 "unsigned rest = 0xffffffff;", "float add_from(float v, unsigned mask)"):
        assert decl in out, decl


def test_data_blocks_and_first_32_tails_are_left(tmp_path: Path):
    blocks = _suggest(AUDIT / "lane-math-32.blocks.cu")
    assert "const int ib = i / 32;" in blocks and "x[i / 32].scale * x[i / 32].q[i % 32]" in blocks
    assert "const int lane = threadIdx.x % warpSize;" in blocks  # the proven lane id of the same file
    tail = _suggest(AUDIT / "warp-loop-32.first32.cu")
    assert tail.count("for (int offset = 16; offset > 0; offset /= 2)") == 1
    assert "__shfl_down_sync(__activemask(), v, offset)" in tail
    assert "v += __shfl_down(v, 16);" in tail


@pytest.mark.parametrize("name", PATCHED)
def test_second_run_changes_nothing(name: str, tmp_path: Path):
    once = _suggest(AUDIT / f"{name}.cu")
    again = tmp_path / f"{name}.hip"
    again.write_text(once)
    assert _suggest(again) == once


@pytest.mark.parametrize("name", PATCHED)
def test_reviewed_fix_builds_with_rocm_7_2_for_wave64_and_wave32(name: str, tmp_path: Path):
    source = AUDIT / f"{name}.fixed.cu"
    out = tmp_path / f"{name}.hip"
    out.write_bytes(convert_source(source.read_bytes(), load_rules(), ConvertOptions(rocm_version=(7, 2))).after)
    r = real_compile(out, "7.2", ("gfx942", "gfx1100"))
    assert r.returncode == 0, f"{source.name} does not build with ROCm 7.2.4:\n{r.stderr[-3000:]}"


# A project's own `__syncwarp(unsigned)` for HIP without one: kept for older releases, so the call keeps an argument
# at 7.2, where it reaches HIP's, which does not trim its mask on wave32 (the 64-bit literal would fail the check).
OWN_SYNCWARP = b"""#include <hip/hip_runtime.h>
__device__ inline void __syncwarp(unsigned mask) { __builtin_amdgcn_wave_barrier(); }

__global__ void k(float* data) {
    data[threadIdx.x] += 1.0f;
    __syncwarp(0xffffffff);
    data[threadIdx.x] += data[threadIdx.x ^ 1];
}
"""


@pytest.mark.parametrize("release", ("7.2", "6.4"))
def test_own_syncwarp_call_gets_the_active_lanes(release: str, tmp_path: Path):
    out = convert_source(OWN_SYNCWARP, load_rules(), ConvertOptions(rocm_version=(7, 2))).after
    assert b"    __syncwarp(__ballot(1));\n" in out
    assert convert_source(out, load_rules(), ConvertOptions(rocm_version=(7, 2))).after == out
    unit = tmp_path / "own_syncwarp.hip"
    unit.write_bytes(out)
    r = real_compile(unit, release, ("gfx942", "gfx1100"))  # HIP's `__syncwarp` at 7.2, the project's at 6.4
    assert r.returncode == 0, r.stderr[-3000:]
