"""A call's arguments as the AMD build compiles them, for the passes that go by a call's shape (`callsites.py`).

A project that builds for both platforms may write one call with a platform test inside its argument list
(DeepSpeed's `cublasGemmEx(..., #ifdef __HIP_PLATFORM_AMD__ HIPBLAS_R_32F, #else CUDA_R_32F, #endif ...)`): split
at its commas as written, it has the arguments of every arm. Here the arms the AMD build never compiles
(`platforms.Branches.other`) are dropped, and of a chain whose arms the AMD build may each compile (`#if
defined(__HIP_PLATFORM_AMD__) && defined(HIPBLAS_V2)` ... `#elif defined(__HIP_PLATFORM_AMD__)`) only the first
counts, as only one of them is compiled; each argument left is cut to its code, without the directive lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipport.convert.calls import Arg
from hipport.scan import COMMENT

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext

_OPEN = (b"if", b"ifdef", b"ifndef")
_NEXT = (b"elif", b"else", b"elifdef", b"elifndef")


def amd_arguments(conv: "ConversionContext", args: list[Arg]) -> list[Arg]:
    """``args`` as the AMD build compiles the call (see the module's text); ``args`` itself when no directive line
    lies inside the call."""
    if not args:
        return args
    lo, hi = args[0].first, args[-1].last
    in_directive = conv.structure.in_directive
    if not any(in_directive[lo:hi]):
        return args
    tokens = conv.tokens
    branches = conv.platform.branches
    inside = {d.first: d for d in conv.structure.directives if lo <= d.first < hi}
    alive = bytearray(hi - lo)
    frames: list[list[bool]] = []  # per chain opened in the call: [an earlier arm is compiled, this arm is]
    i = lo
    while i < hi:
        d = inside.get(i)
        if d is not None:
            other = branches.in_other(d.end)  # the arm's body starts where its directive line ends
            if d.name in _OPEN:
                frames.append([not other, not other])
            elif d.name in _NEXT and frames:
                frame = frames[-1]
                frame[1] = not frame[0] and not other
                frame[0] = frame[0] or frame[1]
            elif d.name == b"endif" and frames:
                frames.pop()
            i = max(d.last, i + 1)
            continue
        if not in_directive[i] and tokens.kinds[i] != COMMENT and all(f[1] for f in frames):
            alive[i - lo] = 1
        i += 1
    out = []
    for arg in args:
        code = [k for k in range(arg.first, arg.last) if alive[k - lo]]
        if code:
            out.append(Arg(code[0], code[-1] + 1, tokens.starts[code[0]], tokens.ends[code[-1]]))
        elif not any(not in_directive[k] and tokens.kinds[k] != COMMENT for k in range(arg.first, arg.last)):
            out.append(arg)  # an empty argument stays one
    return out
