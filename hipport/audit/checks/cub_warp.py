"""Check: hipCUB/CUB warp collectives of the default width in code that numbers its lanes and warps in 32s.

`cub::WarpReduce<T>` and `cub::WarpScan<T>` take the hardware warp as their logical warp when no width is given:
32 lanes under CUDA, but `HIPCUB_DEVICE_WARP_THREADS`, 64, on a wave64 target. Code around them that groups
threads by 32 (`lane = tid % 32`, `warp = tid / 32`, temp storage per 32 threads, results read at lane 0 of each
32) then disagrees with the collective: on 64 lanes one reduction spans two of its "warps", lane 32 holds no
result, and two temp-storage slots serve one collective. Stating the width, `WarpReduce<T, 32>`, gives what CUDA
computed on every target (hipCUB runs logical warps of 32 inside a 64-lane wavefront; on wave32 it is the
default). With ids counted by the hardware (`warpSize`) the default width is right: nothing to say."""

from __future__ import annotations

from hipport.audit.checks.common import Spans, split_template_args, statement_end, statement_start, user_defined
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context, int_value
from hipport.audit.checks.reductions import Reductions, value_is_32

RULE = "cub-warp-width"
# Collective -> position of its LOGICAL_WARP_THREADS template parameter (hipCUB's and CUB's, the same).
COLLECTIVES = {b"WarpReduce": 1, b"WarpScan": 1}
_NAMESPACES = (b"cub", b"hipcub")


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or not ctx.words & set(COLLECTIVES):
        return
    red = Reductions.of(ctx)
    logical_32: list[tuple[int, int]] = []  # bodies whose collective is a logical warp of 32, stated or patched
    for name, pos in COLLECTIVES.items():
        if user_defined(ctx, name) or any(ctx.is_decl_name(k) for k in ctx.positions(name)):
            continue
        for i in ctx.positions(name):
            if ctx.in_directive[i] or ctx.t(ctx.next_code(i)) != b"<":
                continue
            before = ctx.prev_code(i)
            if ctx.t(before) == b"::" and ctx.t(ctx.prev_code(before)) not in _NAMESPACES:
                continue  # another library's `WarpReduce`
            split = split_template_args(ctx, ctx.next_code(i))
            if split is None:
                continue
            args, close = split
            fns = _users(ctx, i, close)
            if not fns:
                continue
            fixed, hardware = [], []
            for fn in fns:
                ids = red.ids(fn)
                fixed += ids.fixed
                hardware += ids.hardware
            if not fixed or hardware:
                continue  # nothing counts 32 lanes, or the ids count the hardware's: the default width is right
            if len(args) > pos:
                if _is_32(ctx, *args[pos]):
                    logical_32 += [fn.body for fn in fns]  # a logical warp of 32, as stated
                continue
            if len(args) != pos or 64 not in ctx.wave_sizes():
                continue  # a 32-lane target only: its default width is 32
            new = ">, 32>" if ctx.text[close] == b">>" else ", 32>"
            shown = ctx.span_text(i, close + 1).decode("latin-1")
            ctx.report(RULE, i, f"`{shown}` spans the whole wavefront (64 lanes on gfx9), but the code around it "
                       f"numbers lanes and warps in 32s (lines {red.lines(fixed)}): state the logical warp, "
                       f"`{name.decode()}<..., 32>` (what CUDA computes; the same on 32-lane targets)",
                       edits=[ctx.edit(close, new)], subject=name.decode())
            logical_32 += [fn.body for fn in fns]
    if logical_32:
        _drop_lane_ids(ctx, logical_32)


def _is_32(ctx: Context, first: int, last: int) -> bool:
    code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
    return len(code) == 1 and (ctx.kinds[code[0]] == LITERAL and int_value(ctx.text[code[0]]) == 32
                               or ctx.kinds[code[0]] == IDENT and value_is_32(ctx, ctx.text[code[0]]))


def _users(ctx: Context, i: int, close: int) -> list:
    """The device functions where the collective at token ``i`` runs: the one it is written in, or those that use
    the alias it is given (`typedef cub::WarpReduce<float> WR;`, `using WR = cub::WarpReduce<float>;`) outside a
    function."""
    fn = ctx.function_at(i)
    if fn is not None:
        return [fn] if fn.device else []
    first, last = statement_start(ctx, i), statement_end(ctx, close)
    alias = None
    if ctx.t(first) == b"typedef" and ctx.t(last) == b";" and ctx.kinds[ctx.prev_code(last)] == IDENT:
        alias = ctx.text[ctx.prev_code(last)]
    elif ctx.t(first) == b"using" and ctx.t(ctx.next_code(ctx.next_code(first))) == b"=":
        alias = ctx.text[ctx.next_code(first)]
    if alias is None:
        return []
    found = {}
    for k in ctx.positions(alias):
        user = ctx.function_at(k)
        if user is not None and user.device:
            found[user.body] = user
    return list(found.values())


def _drop_lane_ids(ctx: Context, bodies: list[tuple[int, int]]) -> None:
    """The 32-lane ids beside a collective that is a logical warp of 32 (stated, or by this check's patch) are what
    it wants: their lane-math-32 findings go, as a `width` 32 shuffle's do (warp_loops.py)."""
    lines = Spans((ctx.lines.line_col(ctx.starts[a])[0], ctx.lines.line_col(ctx.starts[b])[0]) for a, b in bodies)
    spans = Spans(bodies)
    # A warp-size constant of 32 used only there (`#define WARP_SIZE 32` for `temp[BLOCK / WARP_SIZE]`) is right too.
    only_there = {name.decode("latin-1") for name in ctx.warp_constants
                  if all(spans.hold(k) for k in ctx.positions(name) if not ctx.in_directive[k]
                         and not ctx.is_decl_name(k))}
    ctx.findings = [f for f in ctx.findings if f.rule_id != "lane-math-32" or not lines.hold(f.line)
                    and f.subject not in only_there]


__all__ = ["check", "RULE", "COLLECTIVES"]
