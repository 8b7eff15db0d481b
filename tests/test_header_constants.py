"""Warp-size constants of 32 that a file takes from a header it includes (issue 23): `#define`, `constexpr`,
`static const`, a `static const` class member and an enumerator. The header's line is reported in the header's
own audit; each use in the including file is reported where the reader is, and a 32-lane shuffle reduction
beside such ids is still recognised as right on 64 lanes (no patch of its offsets alone). Expected lines are
written by hand."""

from hipport.audit import AuditOptions, audit_source

OPTS = AuditOptions(rocm_version=(7, 0))

CONSTS = """#pragma once
#define WARP_SIZE 32
constexpr int kWarpSize = 32;
static const int WARPSIZE = 32;
struct Cfg { static const int kWarpThreads = 32; };
enum { WARP_LANES = 32 };
"""

KERNEL = """#include "consts.h"
__global__ void k(float* out, const float* in) {
    float v = in[threadIdx.x];
    for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffffffffffull, v, o);
    int a = threadIdx.x % WARP_SIZE;
    int b = threadIdx.x % kWarpSize;
    int c = threadIdx.x / WARPSIZE;
    int d = threadIdx.x % Cfg::kWarpThreads;
    int e = threadIdx.x % WARP_LANES;
    if (a == 0) out[b + c + d + e] = v;
}
"""


def _lane_math(tmp_path, header: str, kernel: str, name: str = "consts.h", options=OPTS):
    (tmp_path / name).write_text(header)
    path = tmp_path / "k.cu"
    path.write_text(kernel)
    return [(f.line, f.severity, f.subject) for f in audit_source(kernel.encode(), str(path), options)
            if f.rule_id in ("lane-math-32", "warp-loop-32")]


def test_each_kind_of_header_constant_is_reported_at_its_uses(tmp_path):
    found = _lane_math(tmp_path, CONSTS, KERNEL)
    assert found == [(5, "warning", "WARP_SIZE"), (6, "warning", "kWarpSize"), (7, "warning", "WARPSIZE"),
                     (8, "warning", "kWarpThreads"), (9, "warning", "WARP_LANES")]
    messages = [f.message for f in audit_source(KERNEL.encode(), str(tmp_path / "k.cu"), OPTS)]
    assert any("(32, consts.h:2)" in m for m in messages)


def test_look_alikes_stay_silent(tmp_path):
    # A compat header that gives the AMD build 64, a tile and a padding of 32 (not warp sizes), and a file that
    # defines the name itself as `warpSize`.
    header = ("#pragma once\n#ifdef USE_ROCM\n#define WARP_SIZE 64\n#else\n#define WARP_SIZE 32\n#endif\n"
              "#define TILE 32\nconstexpr int kPadding = 32;\n")
    kernel = KERNEL.replace("kWarpSize", "TILE").replace("WARPSIZE", "kPadding") \
        .replace("Cfg::kWarpThreads", "TILE").replace("WARP_LANES", "kPadding")
    assert _lane_math(tmp_path, header, kernel, options=AuditOptions(rocm_version=(7, 0), defines=("USE_ROCM",))) == []
    own = '#include "consts.h"\n#undef WARP_SIZE\n#define WARP_SIZE warpSize\n' + KERNEL.split("\n", 1)[1]
    assert [s for _, _, s in _lane_math(tmp_path, CONSTS, own)] == ["kWarpSize", "WARPSIZE", "kWarpThreads",
                                                                   "WARP_LANES"]


def test_without_the_switch_the_amd_build_takes_the_32_branch(tmp_path):
    # A project's own switch that nothing defines; `USE_ROCM`, an AMD switch of rules/platforms.toml, counts as set.
    kernel = KERNEL.split("    int b")[0] + "    out[a] = v;\n}\n"
    header = "#pragma once\n#ifdef MYLIB_AMD\n#define WARP_SIZE 64\n#else\n#define WARP_SIZE 32\n#endif\n"
    assert _lane_math(tmp_path, header, kernel) == [(5, "warning", "WARP_SIZE")]
    assert _lane_math(tmp_path, header.replace("MYLIB_AMD", "USE_ROCM"), kernel) == []


def test_a_32_lane_reduction_with_ids_from_a_header_constant_gets_no_offset_patch(tmp_path):
    # Defect 1 of issue 21 with its WARP_SIZE in a header: offsets 16..1 and ids of 32 are right on 64 lanes
    # together; a patch of the offsets alone would store 64-lane sums twice.
    kernel = """#include "w.h"
__device__ float wsum(float v) { for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(~0ull, v, o); return v; }
__global__ void k(const float* x, float* out) {
    __shared__ float s[32];
    int lane = threadIdx.x % WARP_SIZE, w = threadIdx.x / WARP_SIZE;
    float v = wsum(x[threadIdx.x]);
    if (lane == 0) s[w] = v;
}
"""
    (tmp_path / "w.h").write_text("#define WARP_SIZE 32\n")
    path = tmp_path / "k.cu"
    path.write_text(kernel)
    findings = [f for f in audit_source(kernel.encode(), str(path), OPTS)
                if f.rule_id in ("lane-math-32", "warp-loop-32")]
    assert findings and all(f.severity == "info" for f in findings)
    # The minimal right patch (issue 34): the shuffles say they mean groups of 32 (`width` 32); offsets and ids stay.
    edits = [e for f in findings for e in f.edits]
    assert [f.rule_id for f in findings if f.edits] == ["warp-loop-32"]
    src = kernel.encode()
    patched = src
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        patched = patched[:e.start] + e.new + patched[e.end:]
    assert patched == src.replace(b"__shfl_xor_sync(~0ull, v, o)", b"__shfl_xor_sync(~0ull, v, o, 32)")
