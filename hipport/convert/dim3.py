"""`make_uint3(x, y, z)` where a `dim3` is wanted becomes `dim3(x, y, z)`.

CUDA's `dim3` converts from `uint3` (a constructor and a conversion operator); HIP's `dim3` is a plain struct with a
constructor from three integers, so `grid = make_uint3(n, 1, 1)` for a `dim3 grid`, `dim3 b = make_uint3(...)` and
`k<<<make_uint3(...), ...>>>` do not compile ("no viable overloaded '='"). Only those places change: a `uint3`
elsewhere is HIP's `uint3` as well.
"""

from __future__ import annotations

import re

from hipport.convert.context import ConversionContext
from hipport.scan import COMMENT, IDENT

_DIM3_NAMES = re.compile(rb"\bdim3\s+((?:[A-Za-z_]\w*\s*(?:\([^()]*\))?\s*,\s*)*[A-Za-z_]\w*)")


def make_uint3_to_dim3(ctx: ConversionContext) -> None:
    if b"make_uint3" not in ctx.src:
        return
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    dims = _dim3_variables(ctx.src)
    n = len(tokens)
    launch_depth = 0
    for i in range(n):
        if kinds[i] == COMMENT:
            continue
        t = tokens.text(i)
        if t == b"<<" and i + 1 < n and tokens.text(i + 1) == b"<" and tokens.ends[i] == tokens.starts[i + 1]:
            launch_depth += 1
        elif t == b">>" and launch_depth and i + 1 < n and tokens.text(i + 1) == b">":
            launch_depth -= 1
        if t != b"make_uint3" or kinds[i] != IDENT or ctx.skip[i] or i in ctx.claimed:
            continue
        if ctx.user_names.is_users(i):
            continue
        if launch_depth or _assigned_to_dim3(ctx, i, dims):
            ctx.claimed.add(i)
            ctx.convert(tokens.starts[i], tokens.ends[i], b"dim3", "make_uint3", "argument")


def _dim3_variables(src: bytes) -> set:
    names = set()
    for m in _DIM3_NAMES.finditer(src):
        for part in re.split(rb"\s*,\s*", m.group(1)):
            name = re.match(rb"[A-Za-z_]\w*", part)
            if name:
                names.add(name.group())
    return names


def _assigned_to_dim3(ctx: ConversionContext, i: int, dims: set) -> bool:
    """`x = make_uint3(` or `dim3 x = make_uint3(` / `dim3 x(make_uint3(` with `x` a dim3 of this file."""
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    k = i - 1
    while k >= 0 and kinds[k] == COMMENT:
        k -= 1
    if k < 1 or tokens.text(k) not in (b"=", b"("):
        return False
    j = k - 1
    while j >= 0 and kinds[j] == COMMENT:
        j -= 1
    return j >= 0 and kinds[j] == IDENT and tokens.text(j) in dims
