"""Check 7: warp built-ins and headers with no HIP form for the targeted ROCm version."""

from __future__ import annotations

from hipport import directives as dirs
from hipport.audit.checks.common import is_full_mask32, user_defined
from hipport.audit.checks.context import IDENT, Context

RULE = "warp-builtin-unavailable"
_SYNC_TO_PLAIN = {b"__shfl_sync": "__shfl", b"__shfl_up_sync": "__shfl_up", b"__shfl_down_sync": "__shfl_down",
                  b"__shfl_xor_sync": "__shfl_xor", b"__ballot_sync": "__ballot", b"__any_sync": "__any",
                  b"__all_sync": "__all"}
_NEED_70 = {b"__match_any_sync", b"__match_all_sync", b"__reduce_add_sync", b"__reduce_min_sync",
            b"__reduce_max_sync", b"__reduce_and_sync", b"__reduce_or_sync", b"__reduce_xor_sync"}
_HEADERS = {b"mma.h": "warp matrix functions have no HIP form; port to rocWMMA",
            b"cuda/pipeline": "no HIP counterpart; use plain loads and `__syncthreads()`",
            b"cuda_pipeline.h": "no HIP counterpart; use plain loads and `__syncthreads()`",
            b"cuda/barrier": "no HIP counterpart; use `__syncthreads()`"}
# `cooperative_groups/reduce.h`, `scan.h` and `memcpy_async.h` are judged by `cg-api-unavailable` (coop_groups.py).


def _v(t: tuple[int, ...]) -> str:
    return ".".join(map(str, t))


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards:
        return
    rocm = ctx.rocm
    wmma_lines: set[int] = set()
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if target and target[2] in _HEADERS:
            ctx.report(RULE, d.first, f"`<{target[2].decode()}>`: {_HEADERS[target[2]]}", severity="error",
                       subject=target[2].decode(), offset=target[0])
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT:
            continue
        word = ctx.text[i]
        if word in (b"wmma", b"nvcuda") and ctx.t(ctx.next_code(i)) == b"::":
            line = ctx.lines.line_col(ctx.starts[i])[0]
            if ctx.t(ctx.prev_code(i)) != b"::" and line not in wmma_lines:
                wmma_lines.add(line)
                ctx.report(RULE, i, f"`{word.decode()}::` warp matrix functions have no HIP form; port to rocWMMA",
                           severity="error", subject="wmma")
            continue
        if not ctx.is_call(i) or user_defined(ctx, word):
            continue
        if word in _SYNC_TO_PLAIN and rocm < (6, 2):
            _sync_before_62(ctx, i, word)
        elif word in _SYNC_TO_PLAIN and rocm[:2] == (6, 2):
            ctx.report(RULE, i, f"`{word.decode()}` needs `HIP_ENABLE_WARP_SYNC_BUILTINS` defined in ROCm 6.2",
                       severity="warning", subject=word.decode())
        elif word in _NEED_70 and rocm < (7, 0):
            ctx.report(RULE, i, f"`{word.decode()}` has no HIP form before ROCm 7.0 (targeting {_v(rocm)})",
                       severity="error", subject=word.decode())
        elif word == b"__syncwarp":
            _syncwarp(ctx, i)


def _sync_before_62(ctx: Context, i: int, word: bytes) -> None:
    args = ctx.call_args(i)
    plain = _SYNC_TO_PLAIN[word]
    edits = []
    if args and len(args) >= 2:
        # `__shfl_down_sync(mask, v, d)` -> `__shfl_down(v, d)`: the mask has no meaning without the _sync form
        edits = [ctx.edit(i, plain), ctx.edit(ctx.next_code(i) + 1, b"", args[1][0] - 1)]
        edits[1] = type(edits[1])(ctx.ends[ctx.next_code(i)], ctx.starts[args[1][0]], b"")
    ctx.report(RULE, i, f"`{word.decode()}` does not exist before ROCm 6.2 (targeting {_v(ctx.rocm)}); call "
               f"`{plain}` without the mask", severity="error", edits=edits, subject=word.decode())


def _syncwarp(ctx: Context, i: int) -> None:
    args = ctx.call_args(i) or []
    partial = False
    if args:
        is32, value = is_full_mask32(ctx, *args[0])
        text = ctx.span_text(*args[0]).replace(b" ", b"").lower()
        full = value == 0xFFFFFFFF or text in (b"0xffffffffffffffffull", b"~0ull", b"__activemask()", b"-1")
        partial = not full
    if partial:
        ctx.report(RULE, i, "`__syncwarp` with a partial mask: HIP lanes never run independently, so this cannot "
                   "synchronise a subset; restructure the code around whole-wavefront steps",
                   severity="warning", confidence="medium", subject="__syncwarp")
    elif ctx.rocm < (7, 0):
        end = ctx.match(ctx.next_code(i))
        ctx.report(RULE, i, f"`__syncwarp` has no HIP form before ROCm 7.0 (targeting {_v(ctx.rocm)}); "
                   f"`__builtin_amdgcn_wave_barrier()` keeps the wavefront together",
                   severity="error", edits=[ctx.edit(i, "__builtin_amdgcn_wave_barrier()", end)],
                   subject="__syncwarp")
