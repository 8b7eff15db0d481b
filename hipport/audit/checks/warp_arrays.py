"""Per-warp arrays read with a lane id: `sums[NUM_WARPS]` holds one entry per warp, and a lane id runs up to 63."""

from __future__ import annotations

import re

from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context, int_value

RULE = "warp-array-lane-index"
_LANES = 64
_WARP_WORDS = {b"warpSize"}
_LANE_CALLS = {b"__lane_id", b"getLaneId", b"lane_id", b"laneId", b"get_lane_id"}
_MAX_EXPANSION = 6


def _expand(ctx: Context, tokens: list[bytes], depth: int = 0) -> list[bytes] | None:
    """Object-like macros expanded (the AMD view's definitions), `warpSize` as 64; None when some name is left."""
    out = []
    for t in tokens:
        if t == b"warpSize":
            out.append(b"64")
            continue
        body = ctx.macro_value(t) if re.match(rb"^[A-Za-z_]\w*$", t) else None
        if body is not None and depth < _MAX_EXPANSION:
            inner = _expand(ctx, [ctx.text[j] for j in body], depth + 1)
            if inner is None:
                return None
            out += [b"("] + inner + [b")"]
        elif re.match(rb"^[A-Za-z_]\w*$", t):
            return None
        else:
            v = int_value(t.rstrip(b"uUlL")) if t[:1].isdigit() else None
            out.append(str(v).encode() if v is not None else t)
    return out


def _entries(ctx: Context, first: int, last: int) -> tuple[int, bool] | None:
    """(entries on a 64-lane wavefront, whether the bound divides by a warp size) of an array dimension."""
    raw = [ctx.text[j] for j in range(first, last) if ctx.kinds[j] != COMMENT]
    expanded = _expand(ctx, raw)
    if not expanded or any(not re.match(rb"^(\d+|[()+\-*/%])$", t) for t in expanded):
        return None
    text = b" ".join(expanded).decode().replace("/", "//")
    try:
        value = eval(text, {"__builtins__": {}}, {})  # noqa: S307 - digits and + - * / % ( ) only
    except Exception:  # noqa: BLE001 - not a constant we can read
        return None
    per_warp = any(t == b"/" for t in raw) or any(ctx.macro_value(t) is not None and
                                                  b"/" in b" ".join(ctx.text[j] for j in ctx.macro_value(t))
                                                  for t in raw)
    return (value, per_warp) if isinstance(value, int) else None


def _lane_vars(ctx: Context, fn) -> set[bytes]:
    """Variables of ``fn`` set to a lane id: `x = threadIdx.x % WARP_SIZE`, `& (warpSize - 1)`, `__lane_id()`."""
    names = set()
    a, b = fn.body
    for i in range(a, b):
        if ctx.text[i] != b"=" or ctx.kinds[i - 1] != IDENT:
            continue
        end = i
        while end < b and ctx.text[end] != b";":
            end += 1
        rhs = [ctx.text[j] for j in range(i + 1, end)]
        if (b"threadIdx" in rhs and (b"%" in rhs or b"&" in rhs)) or any(t in _LANE_CALLS for t in rhs):
            names.add(ctx.text[i - 1])
    return names


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or b"__shared__" not in ctx.words:
        return
    for fn in ctx.functions:
        lanes = _lane_vars(ctx, fn)
        if not lanes:
            continue
        a, b = fn.body
        arrays = {}
        for i in range(a, b):
            if ctx.text[i] != b"__shared__":
                continue
            k = i
            while k < b and ctx.text[k] not in (b";", b"[", b"="):
                k += 1
            if ctx.text[k] != b"[" or ctx.kinds[k - 1] != IDENT or ctx.match(k) < 0:
                continue
            got = _entries(ctx, k + 1, ctx.match(k))
            if got and got[1] and got[0] < _LANES and ctx.t(ctx.match(k) + 1) != b"[":
                arrays[ctx.text[k - 1]] = (got[0], k)
        for i in range(a, b):
            name = ctx.text[i]
            if name not in arrays or ctx.t(i + 1) != b"[" or ctx.t(i + 2) not in lanes or ctx.t(i + 3) != b"]":
                continue
            if ctx.t(i + 4) == b"=" and ctx.t(i + 5) != b"=":
                continue  # a write: the writer picks which lanes (`if (lane_id == 0) sums[warp_id] = ...`)
            lane = ctx.t(i + 2)
            if _guarded(ctx, i, lane, a):
                continue
            entries, _decl = arrays[name]
            ctx.report(RULE, i, f"per-warp array `{name.decode()}` has {entries} entries on 64-lane wavefronts but "
                       f"is read with lane id `{lane.decode()}` (up to 63): lanes {entries}-63 read past its end; "
                       f"read `{lane.decode()} < {entries} ? {name.decode()}[{lane.decode()}] : 0`",
                       subject=name.decode())


def _guarded(ctx: Context, i: int, lane: bytes, start: int) -> bool:
    """A `lane <` / `lane >=` test in the same statement or in an `if` just before it."""
    k = i
    steps = 0
    while k > start and steps < 40:
        k -= 1
        steps += 1
        if ctx.text[k] == lane and ctx.t(k + 1) in (b"<", b"<=", b">=", b">"):
            return True
        if ctx.text[k] in (b"}",):
            break
    return False
