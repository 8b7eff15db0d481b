"""`<cooperative_groups/reduce.h>`, which no ROCm release hipport targets ships, becomes a stand-in (rules/shims.toml
`[cooperative_groups_reduce]`): `cg::reduce` on a `thread_block_tile<N>` and the operators build, a `cg::reduce` on
a `coalesced_group` does not build and stays a `cg-api-unavailable` error, and what the stand-in covers is not
reported as hand work, neither from the CUDA source nor from the converted file. The fixture pair
tests/fixtures/convert/cg-reduce*.cu holds the full expected text and is compiled with HIP 5.2 and ROCm 6.2.2."""

from __future__ import annotations

import subprocess
import sys

from hipcc import require_hipcc, syntax_check

from hipport.convert import ConvertOptions, convert_source

TILE = """\
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void sums(const float *x, float *out) {
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  float v = cg::reduce(warp, x[threadIdx.x], cg::plus<float>());
  if (warp.thread_rank() == 0) out[blockIdx.x] = v;
}
"""
COALESCED = """\
__global__ void active(float *x) {
  cg::coalesced_group active = cg::coalesced_threads();
  x[threadIdx.x] = cg::reduce(active, x[threadIdx.x], cg::plus<float>());
}
"""


def audit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "hipport", "audit", "--no-cache", "-q", "--rocm-version", "6.2",
                           "--offload-arch", "gfx1100", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_the_header_alone_gets_cooperative_groups_before_the_stand_in(rules):
    src = b"#include <cooperative_groups/reduce.h>\n__global__ void k(float *x) {}\n"
    out = convert_source(src, rules, ConvertOptions(rocm_version=(5, 2))).after
    assert out.startswith(b"#include <hip/hip_runtime.h>\n#include <hip/hip_cooperative_groups.h>\n"
                          b"#if __has_include(<hip/cooperative_groups/hip_reduce.h>)\n"
                          b"#include <hip/cooperative_groups/hip_reduce.h>\n"
                          b"#elif !defined(HIPPORT_SHIM_cooperative_groups_reduce) && defined(__HIP_PLATFORM_AMD__)\n")
    assert out.endswith(b"}  // namespace cooperative_groups\n#endif\n__global__ void k(float *x) {}\n")
    assert b"#include <cooperative_groups/reduce.h>" not in out
    assert convert_source(out, rules, ConvertOptions(rocm_version=(5, 2))).after == out


def test_the_finding_says_what_was_written_and_the_header_is_not_unsupported(rules):
    result = convert_source(TILE.encode(), rules, ConvertOptions(rocm_version=(6, 2)))
    assert [(f.rule_id, f.severity, f.line, f.subject) for f in result.findings] == [
        ("shim-added", "info", 2, "cooperative_groups/reduce.h")]
    message = result.findings[0].message
    assert len(message) <= 300 and "\n" not in message
    assert message.startswith("HIP 6.2 has no `<cooperative_groups/reduce.h>`")


def test_what_the_stand_in_covers_is_no_hand_work_and_a_coalesced_reduce_is(tmp_path):
    (tmp_path / "tile.cu").write_text(TILE)
    r = audit("tile.cu", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cg-api-unavailable" not in r.stdout and "info shim-added" in r.stdout

    (tmp_path / "both.cu").write_text(TILE + COALESCED)
    r = audit("both.cu", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    errors = [line for line in r.stdout.splitlines() if " error " in line]
    assert len(errors) == 1 and errors[0].startswith("both.cu:12:24: error cg-api-unavailable: `cg::reduce` on a "
                                                     "group not declared a `thread_block_tile<N>`"), r.stdout


def test_the_converted_file_is_audited_the_same(tmp_path):
    (tmp_path / "both.cu").write_text(TILE + COALESCED)
    r = subprocess.run([sys.executable, "-m", "hipport", "convert", "--no-cache", "-q", "--rocm-version", "6.2",
                        "-o", "out", "both.cu"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = audit("out/both.cu", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    errors = [line for line in r.stdout.splitlines() if " error " in line]
    assert len(errors) == 1 and "cg-api-unavailable: `cg::reduce` on a group not declared" in errors[0], r.stdout


def test_a_reduce_on_a_coalesced_group_does_not_compile(rules, tmp_path):
    require_hipcc()
    out = convert_source((TILE + COALESCED).encode(), rules, ConvertOptions(rocm_version=(5, 2))).after
    (tmp_path / "both.hip.cpp").write_bytes(out)
    r = syntax_check(tmp_path / "both.hip.cpp", tree="5.2")
    assert r.returncode != 0 and "no matching function for call to 'reduce'" in r.stderr, r.stderr[-2000:]
    (tmp_path / "tile.hip.cpp").write_bytes(convert_source(TILE.encode(), rules,
                                                           ConvertOptions(rocm_version=(5, 2))).after)
    r = syntax_check(tmp_path / "tile.hip.cpp", tree="5.2")
    assert r.returncode == 0, r.stderr[-2000:]
