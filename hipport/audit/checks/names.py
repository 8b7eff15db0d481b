"""Check 9: user definitions that take the name of a HIP built-in."""

from __future__ import annotations

import re

from hipport.audit.checks.context import IDENT, KEYWORD, Context

RULE = "hip-name-collision"
_BUILTINS = {b"__lane_id", b"warpSize", b"__shfl", b"__shfl_up", b"__shfl_down", b"__shfl_xor", b"__ballot",
             b"__activemask", b"__any", b"__all", b"__popcll", b"__ffsll", b"__lanemask_lt", b"__lanemask_gt",
             b"__lanemask_eq", b"__syncwarp", b"__shfl_sync", b"__shfl_down_sync", b"__shfl_up_sync",
             b"__shfl_xor_sync", b"__ballot_sync", b"__fns32", b"__fns64", b"__ldg"}
_DECL_WORDS = {b"__device__", b"__host__", b"__forceinline__", b"inline", b"static", b"int", b"unsigned", b"void",
               b"float", b"double", b"long", b"auto", b"T", b"constexpr", b"const", b"__inline__", b"uint32_t",
               b">"}


# A definition under a test of the HIP release is a stand-in for releases that lack the built-in (hipport's own
# `HIPPORT_SHIM_` blocks, or the project's): it cannot collide where HIP has the name.
_RELEASE_TESTS = (b"HIP_VERSION", b"HIPPORT_SHIM_")


def _release_guarded(ctx: Context) -> list[tuple[int, int]]:
    """Token ranges inside `#if` blocks whose condition tests the HIP release."""
    ranges, stack = [], []
    for d in ctx.structure.directives:
        if d.name in (b"if", b"ifdef", b"ifndef"):
            stack.append((d.last, any(t in ctx.src[d.start:d.end] for t in _RELEASE_TESTS)))
        elif d.name in (b"elif", b"else") and stack:
            start, guarded = stack.pop()
            if guarded:
                ranges.append((start, d.first))
            stack.append((d.last, False))
        elif d.name == b"endif" and stack:
            start, guarded = stack.pop()
            if guarded:
                ranges.append((start, d.first))
    return ranges


_SHUFFLES = {b"__shfl", b"__shfl_up", b"__shfl_down", b"__shfl_xor", b"__shfl_sync", b"__shfl_down_sync",
             b"__shfl_up_sync", b"__shfl_xor_sync"}
_VECTOR = re.compile(rb"^(?:u?char|u?short|u?int|u?long|longlong|ulonglong|float|double|__half|half|"
                     rb"__nv_bfloat16|__hip_bfloat16)[1-4]$")


def _vector_overload(ctx: Context, open_: int) -> bool:
    """A shuffle defined for a vector or struct value (`float4 __shfl_down(float4 v, ...)`): HIP overloads its
    shuffles for scalars only, so this adds an overload rather than clashing with one."""
    close = ctx.match(open_)
    if close < 0:
        return False
    structs = {ctx.text[ctx.next_code(k)] for k in range(ctx.n) if ctx.text[k] in (b"struct", b"class")}
    # the value parameter: the first one, or the second after a `*_sync` mask
    params, start, depth = [], open_ + 1, 0
    for k in range(open_ + 1, close + 1):
        t = ctx.text[k]
        if t in (b"(", b"<", b"["):
            depth += 1
        elif t in (b")", b">", b"]") and k != close:
            depth -= 1
        if depth == 0 and (t == b"," or k == close):
            params.append((start, k))
            start = k + 1
    value = 1 if ctx.text[ctx.prev_code(open_)].endswith(b"_sync") else 0
    if len(params) <= value:
        return False
    words = [ctx.text[k] for k in range(*params[value]) if ctx.kinds[k] == IDENT]
    return any(_VECTOR.match(w) or w in structs for w in words[:-1])


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or not (ctx.words & _BUILTINS):
        return
    for name, d in ctx.macros.items():
        if name in _BUILTINS:
            ctx.report(RULE, d.first + 2, f"`#define {name.decode()}` redefines a HIP built-in and rewrites HIP's "
                       f"own headers too; remove it or rename it", subject=name.decode())
    guarded = None
    for i in range(ctx.n - 1):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in _BUILTINS or ctx.in_directive[i] or ctx.device[i]:
            continue
        if guarded is None:
            guarded = _release_guarded(ctx)
        if any(a <= i < b for a, b in guarded):
            continue
        prev = ctx.prev_code(i)
        if ctx.t(prev) in (b".", b"->", b"::") or ctx.kinds[prev] not in (IDENT, KEYWORD) and ctx.t(prev) != b">":
            continue
        if ctx.t(prev) not in _DECL_WORDS and ctx.kinds[prev] != IDENT:
            continue
        nxt = ctx.t(ctx.next_code(i))
        if nxt == b"(" and ctx.text[i] in _SHUFFLES and _vector_overload(ctx, ctx.next_code(i)):
            continue
        if nxt == b"(":
            what = "function"
        elif nxt in (b"=", b";") and ctx.text[i] == b"warpSize":
            what = "variable"
        else:
            continue
        ctx.report(RULE, i, f"this {what} `{ctx.text[i].decode()}` collides with the HIP built-in of that name; "
                   f"delete it where HIP's does the job, or rename it", subject=ctx.text[i].decode())
