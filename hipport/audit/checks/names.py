"""Check 9: user definitions that take the name of a HIP built-in."""

from __future__ import annotations

from hipport.audit.checks.context import IDENT, KEYWORD, Context

RULE = "hip-name-collision"
_BUILTINS = {b"__lane_id", b"warpSize", b"__shfl", b"__shfl_up", b"__shfl_down", b"__shfl_xor", b"__ballot",
             b"__activemask", b"__any", b"__all", b"__popcll", b"__ffsll", b"__lanemask_lt", b"__lanemask_gt",
             b"__lanemask_eq", b"__syncwarp", b"__shfl_sync", b"__shfl_down_sync", b"__shfl_up_sync",
             b"__shfl_xor_sync", b"__ballot_sync", b"__fns32", b"__fns64", b"__ldg"}
_DECL_WORDS = {b"__device__", b"__host__", b"__forceinline__", b"inline", b"static", b"int", b"unsigned", b"void",
               b"float", b"double", b"long", b"auto", b"T", b"constexpr", b"const", b"__inline__", b"uint32_t",
               b">"}


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or not (ctx.words & _BUILTINS):
        return
    for name, d in ctx.macros.items():
        if name in _BUILTINS:
            ctx.report(RULE, d.first + 2, f"`#define {name.decode()}` redefines a HIP built-in and rewrites HIP's "
                       f"own headers too; remove it or rename it", subject=name.decode())
    for i in range(ctx.n - 1):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in _BUILTINS or ctx.in_directive[i] or ctx.device[i]:
            continue
        prev = ctx.prev_code(i)
        if ctx.t(prev) in (b".", b"->", b"::") or ctx.kinds[prev] not in (IDENT, KEYWORD) and ctx.t(prev) != b">":
            continue
        if ctx.t(prev) not in _DECL_WORDS and ctx.kinds[prev] != IDENT:
            continue
        nxt = ctx.t(ctx.next_code(i))
        if nxt == b"(":
            what = "function"
        elif nxt in (b"=", b";") and ctx.text[i] == b"warpSize":
            what = "variable"
        else:
            continue
        ctx.report(RULE, i, f"this {what} `{ctx.text[i].decode()}` collides with the HIP built-in of that name; "
                   f"delete it where HIP's does the job, or rename it", subject=ctx.text[i].decode())
