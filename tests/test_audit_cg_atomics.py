"""Cooperative-groups availability by targeted release, and float atomics placed by memory space with and
without the libclang parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from hipport.audit import AuditOptions, audit_source
from hipport.audit.checks import context

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "audit"

KERNEL = b"""#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void k(const float* x, float* out) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    float s = cg::reduce(warp, x[threadIdx.x], cg::plus<float>());
    out[warp.meta_group_rank()] = s;
}
"""


def _cg(rocm: tuple[int, ...]) -> dict[str, tuple[str, str, str]]:
    found = audit_source(KERNEL, "k.cu", AuditOptions(rocm_version=rocm, select=frozenset({"cg-api-unavailable"})))
    return {f.subject: (f.severity, f.confidence, f.message) for f in found}


@pytest.mark.parametrize("rocm", [(5, 0), (5, 2)])
def test_everything_is_an_error_up_to_the_hip_whose_headers_were_read(rocm):
    got = _cg(rocm)
    assert set(got) == {"cooperative_groups/reduce.h", "reduce", "meta_group_rank"}
    assert all(sev == "error" for sev, _, _ in got.values())
    assert "HIP 5.2's cooperative-groups headers" in got["reduce"][2]


@pytest.mark.parametrize("rocm", [(6, 2), (7, 0)])
def test_later_releases(rocm):
    got = _cg(rocm)
    # nothing proves cg::reduce in any release hipport knows
    assert got["reduce"][0] == "error"
    if rocm == (6, 2):  # a release whose headers were read (rules/rocm/releases.toml)
        assert "not declared by the cooperative-groups headers of ROCm 6.2" in got["reduce"][2]
    else:
        assert "not in HIP <= 7.0 as far as hipport knows" in got["reduce"][2]
    assert got["cooperative_groups/reduce.h"][0] == "error"
    # ROCm 6.2.2's and 7.2.4's amd_hip_cooperative_groups.h declare `meta_group_rank()` (read by hand): no finding
    assert "meta_group_rank" not in got


def test_cg_headers_are_reported_once():
    found = audit_source(KERNEL, "k.cu", AuditOptions(rocm_version=(5, 2)))
    header = [f for f in found if f.line == 2]
    assert [f.rule_id for f in header] == ["cg-api-unavailable"]


@pytest.mark.parametrize("name, expected", [
    ("atomic-float-add.spaces.cu", [(29, True), (30, True), (41, True), (42, True)]),
    ("atomic-float-add.templates.cu", [(11, True), (25, False), (31, True), (32, True)]),
])
def test_atomic_float_add_without_the_parse(monkeypatch, name, expected):
    """Memory spaces, template instantiations and the file's type aliases come from the tokens alone too."""
    src = (FIXTURES / name).read_bytes()

    def lines():
        return sorted((f.line, bool(f.edits)) for f in audit_source(src, name) if f.rule_id == "atomic-float-add")

    with_parse = lines()
    monkeypatch.setattr(context.Context, "parsed", lambda self: None)
    assert lines() == with_parse == expected


def test_device_function_parameter_follows_its_callers():
    src = b"""__device__ void add(float* p, float v) { atomicAdd(p, v); }
__global__ void lds(float v) { __shared__ float s[64]; add(&s[threadIdx.x], v); }
__global__ void both(float* g, float v) { __shared__ float s[64]; add(s, v); add(g, v); }
"""
    only_lds = src.split(b"\n__global__ void both")[0]
    assert not [f for f in audit_source(only_lds, "a.cu") if f.rule_id == "atomic-float-add"]
    mixed = [f for f in audit_source(src, "a.cu") if f.rule_id == "atomic-float-add"]
    assert [(f.line, f.confidence) for f in mixed] == [(1, "medium")]
    assert "cannot tell which memory" in mixed[0].message
