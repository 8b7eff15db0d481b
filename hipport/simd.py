"""Portable definitions of CUDA's SIMD video intrinsics (`__vadd2`, `__vmaxs4`, `__vcmpgtu4`, ...), which HIP has
none of (HIPIFY's device table lists every one without a HIP name).

Each intrinsic treats a 32-bit word as two 16-bit or four 8-bit lanes and works lane by lane; the definitions are
written from a short description (rules/shims.toml, `[simd]`): the lane width, whether lanes are signed, the C
expression on one lane pair `x`, `y` (held in `long long`, so nothing overflows), whether the result saturates to
the lane's range, and whether the lanes are summed instead of packed (`__vsads4`). Writing them out here rather
than by hand keeps the eighty of them uniform; tests/test_simd.py compiles the generated code on the host and
checks every function against an independent Python model of CUDA's documented behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass

_LANE_TYPES = {(8, "s"): "signed char", (8, "u"): "unsigned char", (16, "s"): "short", (16, "u"): "unsigned short"}


@dataclass(frozen=True, slots=True)
class SimdSpec:
    bits: int            # 8 or 16
    lanes: str           # "s" signed, "u" unsigned
    expr: str            # C expression over `x` and `y` (one lane of each operand)
    saturate: bool = False
    unary: bool = False
    sum: bool = False    # the lane results are added up (sum of absolute differences)


def lane_range(bits: int, lanes: str) -> tuple[int, int]:
    if lanes == "s":
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def simd_code(name: str, spec: SimdSpec) -> str:
    """The C++ definition of ``name`` (a `__device__` function on `unsigned int` words)."""
    lane_t = _LANE_TYPES[(spec.bits, spec.lanes)]
    lo, hi = lane_range(spec.bits, spec.lanes)
    mask = (1 << spec.bits) - 1
    params = "unsigned int a" if spec.unary else "unsigned int a, unsigned int b"
    y = "" if spec.unary else f", y = ({lane_t})(b >> i)"
    lines = [f"__device__ inline unsigned int {name}({params}) {{",
             "  unsigned int r = 0;",
             f"  for (int i = 0; i < 32; i += {spec.bits}) {{",
             f"    long long x = ({lane_t})(a >> i){y};",
             f"    long long v = {spec.expr};"]
    if spec.saturate:
        lines.append(f"    v = v < {lo}LL ? {lo}LL : (v > {hi}LL ? {hi}LL : v);")
    if spec.sum:
        lines.append("    r += (unsigned int)v;")
    else:
        lines.append(f"    r |= ((unsigned int)v & 0x{mask:x}u) << i;")
    lines += ["  }", "  return r;", "}"]
    return "\n".join(lines)
