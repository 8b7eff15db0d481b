"""Check: code hard-wired to 64 lanes, where a 32-lane target (RDNA, gfx10 and later) is among the targets.

HIP code written for CDNA often counts 64 lanes outright: `lane = threadIdx.x % 64`, `warp = threadIdx.x / 64`,
shuffle reductions from offset 32, a ballot compared with all 64 bits set, `#define WARP_SIZE 64`. On a wave32
target each of those is wrong: a "warp" of 64 threads is two wavefronts, offset 32 reads past the wavefront (a
shuffle there returns the lane's own value, so a sum counts it twice), and a 32-lane ballot never has its upper 32
bits set. Only reported when a wave32 target is selected (hipport's default targets include gfx1100).

Every patch writes the width as each target has it, `warpSize` (`warpSize / 2` for the first offset, `(~0ull >>
(64 - warpSize))` for all lanes of a ballot): the same value as before on a 64-lane wavefront, so no patch changes
what a wave64 build computes. A `__shared__` per-warp array sized `X / 64` is sized `X / 32` with the warp ids it
holds (a block has twice the warps with 32 lanes); a warp id that indexes an array sized otherwise gets no patch.
Ids are reported only where their uses show a lane or warp number (lane_uses.py): `% 64` on data stays silent. Code
inside an `#if` that tests the wavefront size is left to its branch (the engine)."""

from __future__ import annotations

from hipport.audit.checks.common import (
    BALLOTS,
    SHUFFLES,
    WARP_OPS,
    const_context,
    constexpr_as_const,
    enclosing_open,
    operand_before,
    statement_end,
    thread_derived,
    user_defined,
)
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, THREAD_INDEX, Context, int_value
from hipport.audit.checks.lane_math import BLOCK_NAME, NOT_A_COUNT, WARP_CONST_NAME, namespace_constant_edits
from hipport.audit.checks.lane_uses import LaneUses
from hipport.audit.checks.reductions import OFFSET_SHUFFLES, split_for, uses_warp_ops

RULE = "lane-math-64"
# operator, literal -> (kind, what the operator and operand become)
_IDS = {(b"%", 64): ("lane", "% warpSize"), (b"&", 63): ("lane", "& (warpSize - 1)"),
        (b"/", 64): ("warp", "/ warpSize"), (b">>", 6): ("warp", "/ warpSize")}
_BLOCK_DIM = {b"blockDim", b"hipBlockDim_x"}
_FULL64 = 0xFFFFFFFFFFFFFFFF
_ALL_LANES = "(~0ull >> (64 - warpSize))"
_HALVING = (b"/= 2", b">>= 1", b"/ 2", b">> 1")
_DOUBLING = (b"*= 2", b"<<= 1", b"* 2", b"<< 1")
_COUNTING = (b"++", b"+= 1")


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or 32 not in ctx.wave_sizes() or not ctx.words & WARP_OPS:
        return
    warp_fns = uses_warp_ops(ctx)
    if not warp_fns:
        return
    _constants(ctx, warp_fns)
    uses = LaneUses(ctx, warp_fns)
    for fn in ctx.functions:
        if not fn.device or fn.body[0] not in warp_fns:
            continue
        _ids(ctx, fn, uses)
        _loops(ctx, fn)
        _ballots(ctx, fn)


def _constants(ctx: Context, warp_fns: set[int]) -> None:
    """`#define WARP_SIZE 64`, `constexpr int kWaveSize = 64;`: the 64-lane width, named, used by warp code. The
    patch makes the name `warpSize` where every use is in device code and none needs a constant (a macro's body, a
    function's own constant), or rewrites its uses (a namespace-scope constant, lane_math's rule for 32)."""
    for name, d in ctx.macros.items():
        body = ctx.macro_value(name)
        if not WARP_CONST_NAME.match(name) or body is None:
            continue
        vals = [k for k in body if ctx.text[k] not in (b"(", b")")]
        if len(vals) != 1 or int_value(ctx.text[vals[0]]) != 64:
            continue
        uses = [k for k in ctx.positions(name) if not ctx.in_directive[k]]
        if not any(ctx.function_at(k) is not None and ctx.function_at(k).body[0] in warp_fns for k in uses):
            continue
        fixable = all(ctx.device[k] and const_context(ctx, k) is None for k in uses)
        _report_constant(ctx, name, vals[0], [ctx.edit(vals[0], "warpSize")] if fixable else [])
    named = [w for w in ctx.words if WARP_CONST_NAME.match(w) and w not in ctx.macros]
    for decl in sorted(k for w in named for k in ctx.declarations(w)):
        v = ctx.next_code(ctx.next_code(decl))
        if ctx.in_directive[decl] or ctx.t(ctx.next_code(decl)) != b"=" or int_value(ctx.t(v)) != 64 \
                or ctx.t(ctx.next_code(v)) not in (b";", b","):
            continue
        name = ctx.text[decl]
        uses = [k for k in ctx.positions(name) if k != decl and not ctx.in_directive[k]]
        if not any(ctx.function_at(k) is not None and ctx.function_at(k).body[0] in warp_fns for k in uses):
            continue
        fn = ctx.function_at(decl)
        if fn is None:
            edits = namespace_constant_edits(ctx, decl, uses)
        else:
            qualifiers = constexpr_as_const(ctx, decl)
            edits = [ctx.edit(v, "warpSize"), *qualifiers] if qualifiers is not None and all(
                const_context(ctx, k) is None for k in uses if fn.body[0] < k < fn.body[1]) else []
        _report_constant(ctx, name, v, edits)


def _report_constant(ctx: Context, name: bytes, at: int, edits: list) -> None:
    how = "with the patch, `warpSize`" if edits else "it is needed as a constant: size for the largest wavefront " \
        "and take the width from `warpSize` where it counts lanes"
    ctx.report(RULE, at, f"`{name.decode()}` is 64: every lane, warp and offset computed from it assumes 64-lane "
               f"wavefronts, and a 32-lane target (gfx10+) has 32 ({how})", edits=edits, subject=name.decode(),
               confidence="high" if edits else "medium")


def _ids(ctx: Context, fn, uses: LaneUses) -> None:
    derived = thread_derived(ctx, fn) | THREAD_INDEX
    for i in range(*fn.body):
        if ctx.kinds[i] != LITERAL:
            continue
        op = ctx.prev_code(i)
        pattern = _IDS.get((ctx.t(op), int_value(ctx.text[i])))
        if pattern is None or ctx.t(ctx.next_code(i)) in (b"*", b"/", b"%", b".") or const_context(ctx, i):
            continue
        lo = operand_before(ctx, op)
        words = {ctx.text[k] for k in range(lo, op) if ctx.kinds[k] == IDENT}
        kind, replacement = pattern
        named = any(BLOCK_NAME.search(w) and not NOT_A_COUNT.search(w) for w in words)
        count = bool(words & _BLOCK_DIM) or (named and not words & derived)
        if not (words & derived or (kind == "warp" and count)):
            continue
        lane = kind == "lane"
        carriers = uses.carriers(fn, lo, i + 1)
        if lane and _bits_and_halves(ctx, carriers[1:], uses.results(fn)):
            continue  # a bit number of a 64-bit word, and the first lane of each 32-lane half: right on wave32
        if not any(uses.proves(fn, at, lane, count) for at in carriers):
            continue  # no use shows a lane or warp number: 64 may be a block of data
        expr = ctx.span_text(lo, i + 1).decode("latin-1")
        what = "lane index" if lane else ("warp count" if count else "warp index")
        edits = [ctx.edit(op, replacement, i)]
        if not lane:
            bounds = _per_warp_bounds(ctx, fn, uses.carriers(fn, lo, i + 1))
            edits = edits + bounds if bounds is not None else []
        advice = f"`{replacement}`" + (", with the per-warp arrays sized for 32-lane warps" if len(edits) > 1 else "")
        if not edits:
            advice = f"`{replacement}`, and size the per-warp arrays it indexes for 32-lane warps"
        # Medium: an id is one piece of the code's 64-lane layout (`tid & 63` beside `tid & 0x3c0`), which the
        # patch does not prove whole; on 64 lanes it changes nothing, so applying it never breaks a wave64 build.
        ctx.report(RULE, op, f"`{expr}` computes a {what} for 64-lane wavefronts; a 32-lane target (gfx10+) runs "
                   f"two wavefronts in it (use {advice})", edits=edits, confidence="medium",
                   subject=f"{ctx.text[op].decode()} {ctx.text[i].decode()}")


def _bits_and_halves(ctx: Context, later: list[int], warp_results: set[bytes]) -> bool:
    """Every use of a `tid & 63` is `_bit_or_half`, and a test of it, if any, names lane 32 too (`lanex == 32`
    beside `lanex == 0`: the code works in 32-lane halves; `lane == 0` alone is the first lane of 64, which a
    32-lane target's second wavefront never has)."""
    if not later or not all(_bit_or_half(ctx, at, warp_results) for at in later):
        return False
    tests = [int_value(ctx.t(ctx.next_code(ctx.next_code(at)))) for at in later
             if ctx.t(ctx.next_code(at)) in (b"==", b"!=")]
    return not tests or 32 in tests


def _bit_or_half(ctx: Context, at: int, warp_results: set[bytes]) -> bool:
    """The variable at ``at`` is the count of a right shift of data (`(w >> lanex) & 1`, one bit of a 64-bit word
    per thread; not of a ballot, whose bits are lanes) or compared for equality with 0 or 32 (`lanex == 32`: the
    first lane of the upper 32-lane half, which on a 32-lane target is a wavefront's lane 0, as CUDA's 32-lane code
    has it)."""
    shift, after = ctx.prev_code(at), ctx.next_code(at)
    if ctx.t(shift) == b">>" and ctx.t(after) in (b")", b";", b",", b"&", b"|"):
        lo = operand_before(ctx, shift)
        return not any(ctx.text[k] in BALLOTS or (ctx.text[k] in warp_results and ctx.t(ctx.next_code(k)) != b"[")
                       for k in range(lo, shift))  # an array element is data, whatever else the array holds
    if ctx.t(after) in (b"==", b"!=") and int_value(ctx.t(ctx.next_code(after))) in (0, 32):
        return ctx.t(ctx.next_code(ctx.next_code(after))) in (b")", b"&&", b"||", b";")
    return False


def _per_warp_bounds(ctx: Context, fn, carriers: list[int]) -> list | None:
    """Edits sizing each `__shared__` array the warp id at ``carriers`` indexes for 32-lane warps (`[X / 64]` to
    `[X / 32]`); [] when it indexes none, None when one is sized otherwise (a name, a macro): then a warp id of
    `warpSize` could run past its end on wave32, so the id gets no patch."""
    edits, seen = [], set()
    for at in carriers:
        b = enclosing_open(ctx, at, b"[")
        if b < 0:
            continue
        name = ctx.prev_code(b)
        if ctx.kinds[name] != IDENT or ctx.text[name] in seen:
            continue
        decl = next((k for k in ctx.declarations(ctx.text[name]) if fn.body[0] < k < at), None)
        if decl is None or not any(ctx.text[k] == b"__shared__" for k in range(_statement_first(ctx, decl), decl)):
            continue
        seen.add(ctx.text[name])
        open_ = ctx.next_code(decl)
        if ctx.t(open_) != b"[" or ctx.match(open_) < open_:
            return None
        size = [k for k in range(open_ + 1, ctx.match(open_)) if ctx.kinds[k] != COMMENT]
        if len(size) == 1 and int_value(ctx.text[size[0]]) is not None and int_value(ctx.text[size[0]]) >= 32:
            continue  # 32 slots or more: enough warps for a block of 1024 threads
        if len(size) >= 3 and ctx.text[size[-2]] == b"/" and int_value(ctx.text[size[-1]]) == 64:
            edits.append(ctx.edit(size[-1], "32"))
            continue
        return None
    return edits


def _statement_first(ctx: Context, k: int) -> int:
    while k > 0 and ctx.t(ctx.prev_code(k)) not in (b";", b"{", b"}"):
        k = ctx.prev_code(k)
    return k


def _loops(ctx: Context, fn) -> None:
    """Shuffle loops from offset 32 (`o = 32; o > 0; o /= 2`), up to 64 (`o < 64; o *= 2`), lane loops to 64 around
    shuffles, a shuffle width of 64, and an unrolled ladder that starts at offset 32."""
    in_loops = []
    for i in range(*fn.body):
        if ctx.text[i] != b"for":
            continue
        parts = split_for(ctx, i)
        if parts is None:
            continue
        init, cond, incr, body = parts
        shuffles = [k for k in range(*body) if ctx.text[k] in SHUFFLES and ctx.is_call(k)]
        if not shuffles or user_defined(ctx, ctx.text[shuffles[0]]):
            continue
        incr_text = b" ".join(ctx.text[k] for k in range(*incr))
        init_lits = [k for k in range(*init) if ctx.kinds[k] == LITERAL]
        cond_lits = [k for k in range(*cond) if ctx.kinds[k] == LITERAL]
        found = None
        if any(x in incr_text for x in _HALVING) and len(init_lits) == 1 and int_value(ctx.text[init_lits[0]]) == 32:
            found = (init_lits[0], "warpSize / 2", "starts at offset 32")
        elif len(cond_lits) == 1 and any(x in incr_text for x in _DOUBLING + _COUNTING):
            k = cond_lits[0]
            v, op = int_value(ctx.text[k]), ctx.t(ctx.prev_code(k))
            if v == 64 and op in (b"<", b"!="):
                found = (k, "warpSize", "runs to 64")
            elif v == 32 and op == b"<=" and any(x in incr_text for x in _DOUBLING):
                found = (k, "warpSize / 2", "runs to offset 32")
        if found is None:
            continue
        k, new, what = found
        in_loops += shuffles
        ctx.report(RULE, k, f"shuffle loop {what}, for 64-lane wavefronts: on a 32-lane target (gfx10+) offset 32 "
                   f"reads past the wavefront and a lane sees its own value again (use `{new}`)",
                   edits=[ctx.edit(k, new)], subject=ctx.text[k].decode())
    for k in range(*fn.body):
        if ctx.text[k] not in SHUFFLES or not ctx.is_call(k) or user_defined(ctx, ctx.text[k]):
            continue
        args = ctx.call_args(k) or []
        value = SHUFFLES[ctx.text[k]]
        if len(args) > value + 2:
            code = [m for m in range(*args[value + 2]) if ctx.kinds[m] != COMMENT]
            if len(code) == 1 and int_value(ctx.text[code[0]]) == 64:
                ctx.report(RULE, code[0], f"`{ctx.text[k].decode()}` with width 64: a 32-lane target (gfx10+) has "
                           f"no lanes 32-63 (use `warpSize`)", edits=[ctx.edit(code[0], "warpSize")],
                           subject="width 64")
        if k in in_loops or ctx.text[k] not in OFFSET_SHUFFLES or len(args) <= value + 1:
            continue
        code = [m for m in range(*args[value + 1]) if ctx.kinds[m] != COMMENT]
        if len(code) == 1 and int_value(ctx.text[code[0]]) == 32:
            ctx.report(RULE, code[0], f"`{ctx.text[k].decode()}` by offset 32, a step of 64-lane wavefronts: on a "
                       f"32-lane target (gfx10+) it reads past the wavefront and a lane adds its own value again "
                       f"(take the step only `if (warpSize == 64)`)", confidence="medium", subject="offset 32")


def _ballots(ctx: Context, fn) -> None:
    """A ballot compared with all 64 bits set (`b == 0xffffffffffffffffull`, `__popcll(b) == 64`): on a 32-lane
    target the upper 32 bits are never set, so "every lane voted" is never true."""
    names = _ballot_names(ctx, fn)
    for i in range(*fn.body):
        if ctx.kinds[i] != LITERAL:
            continue
        first = ctx.prev_code(i) if ctx.t(ctx.prev_code(i)) == b"~" else i
        if ctx.t(ctx.prev_code(first)) not in (b"==", b"!=") and ctx.t(ctx.next_code(i)) not in (b"==", b"!="):
            continue
        value = int_value(ctx.text[i])
        full = value == _FULL64 or (first != i and value == 0 and ctx.text[i][-2:].lower() in (b"ll", b"ul", b"lu"))
        popc = value == 64 and first == i
        if not (full or popc):
            continue
        other = _other_operand(ctx, i)
        if other is None:
            continue
        lo, hi = other
        words = [ctx.text[k] for k in range(lo, hi) if ctx.kinds[k] == IDENT]
        ballot = any(w in BALLOTS or w in names for w in words)
        if not ballot or popc and not (words[:1] == [b"__popcll"] or words[:1] == [b"__popc"]):
            continue
        new = "warpSize" if popc else _ALL_LANES
        shown = ctx.span_text(first, i + 1).decode("latin-1")
        ctx.report(RULE, first, f"`{shown}` takes all 64 lanes of a ballot: a 32-lane target (gfx10+) never sets "
                   f"the upper 32 bits, so the test is never true there (compare with `{new}`)",
                   edits=[ctx.edit(first, new, i)], subject=shown)


def _ballot_names(ctx: Context, fn) -> set[bytes]:
    """Variables of ``fn`` initialised or assigned from a ballot (`auto b = __ballot(p);`)."""
    found = set()
    for k in range(*fn.body):
        if ctx.text[k] in BALLOTS and ctx.is_call(k):
            first = _statement_first(ctx, k)
            eq = next((m for m in range(first, k) if ctx.text[m] == b"="), None)
            if eq is not None and ctx.kinds[ctx.prev_code(eq)] == IDENT:
                found.add(ctx.text[ctx.prev_code(eq)])
    return found


def _other_operand(ctx: Context, lit: int) -> tuple[int, int] | None:
    """The tokens compared with the literal at ``lit`` (`b == LIT` or `LIT == b`)."""
    before = ctx.prev_code(lit)
    if ctx.t(before) == b"~":
        before = ctx.prev_code(before)
    if ctx.t(before) in (b"==", b"!="):
        return operand_before(ctx, before), before
    after = ctx.next_code(lit)
    if ctx.t(after) in (b"==", b"!="):
        end = statement_end(ctx, after)
        return ctx.next_code(after), end
    return None


__all__ = ["check", "RULE"]
