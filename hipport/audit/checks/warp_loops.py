"""Check 4: warp-synchronous code hard-wired to 32 lanes: shuffle loops from 16 or up to 32, explicit shuffle
width 32, unrolled shuffle ladders that start at 16, per-lane shared arrays of 32."""

from __future__ import annotations

from hipport.audit.checks.common import (
    SHUFFLES,
    SYNC_BUILTINS,
    WARP_OPS,
    Spans,
    is_full_mask32,
    is_lane_like,
    user_defined,
)
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context, int_value
from hipport.audit.checks.lane_math import group_edits
from hipport.audit.checks.reductions import (Reductions, first_32_condition, group_lanes, guarded_by_lane, if_branch,
                                             inside_first_32, loop_offsets_32, split_for, tail_from_16)
from hipport.semantic import load_semantic

RULE = "warp-loop-32"
ACTIVE = "__activemask()"
_OFFSET_SHUFFLES = {b"__shfl_down_sync", b"__shfl_xor_sync", b"__shfl_up_sync", b"__shfl_down", b"__shfl_xor",
                    b"__shfl_up"}


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or not (ctx.words & WARP_OPS):
        return
    flagged_loops: list[tuple[int, int]] = []
    red = Reductions.of(ctx)
    for i in range(ctx.n):
        if ctx.text[i] == b"for" and ctx.device[i]:
            span = _check_for(ctx, i, red)
            if span:
                flagged_loops.append(span)
    loops = Spans(flagged_loops)
    for i in range(ctx.n):
        if ctx.kinds[i] == IDENT and ctx.text[i] in SHUFFLES and (ctx.device[i] or ctx.in_directive[i]) \
                and ctx.is_call(i) and not user_defined(ctx, ctx.text[i]):
            _check_shuffle_call(ctx, i, loops, red)
    _check_lane_arrays(ctx)
    _check_first_32_guard(ctx)


def _check_first_32_guard(ctx: Context) -> None:
    """`if (threadIdx.x < 32) { ... __shfl_down(v, o) ... }`: "the first warp" as 32 threads. On a 64-lane wavefront
    they are half of one, and the shuffles inside read lanes 32-63, which hold no value of theirs. When the shuffles
    count offsets 16..1 (the tail of a block reduction, `s[tid] + s[tid + 32]` folded first), lane 0's result stays
    within the 32 threads on any wavefront, and is right as written; what is not is a `*_sync` mask of every lane,
    which ROCm 7 checks against the lanes taking part (debug builds): those masks become `__activemask()`."""
    for i in ctx.positions(b"if"):
        code = first_32_condition(ctx, i)
        if code is None:
            continue
        body, end = if_branch(ctx, i)
        if not any(ctx.text[k] in SHUFFLES and ctx.is_call(k) for k in range(body, max(end, body) + 1)):
            continue
        guard = ctx.span_text(code[0], code[-1] + 1).decode("latin-1")
        if not tail_from_16(ctx, body, end):
            ctx.report(RULE, code[-1], f"`{guard}` takes the first 32 threads as a warp: on a 64-lane wavefront they "
                       f"are half of one, and the shuffles inside read lanes 32-63, which take no part (test "
                       f"`< warpSize`, or give lanes 32-63 a neutral value)",
                       confidence="medium", subject="< 32", severity="warning")
            continue
        edits = [ctx.edit(a, ACTIVE, b - 1) for a, b in full_masks_within(ctx, body, end)]
        if not edits:
            continue  # right on both wave sizes as written: lane 0 reads only lanes 0-31
        ctx.report(RULE, code[-1], f"`{guard}` runs the shuffles inside on 32 threads, half of a 64-lane wavefront: "
                   f"offsets 16..1 keep lane 0's result within them, but a mask of every lane is not the lanes "
                   f"taking part, which ROCm 7 checks in debug builds (pass `__activemask()`; keep the guard and "
                   f"offsets, or widen them together)", edits=edits, subject="< 32", severity="warning")


def full_masks_within(ctx: Context, body: int, end: int) -> list[tuple[int, int]]:
    """Token ranges of the all-lanes masks (32- or 64-bit spellings) given to `*_sync` calls in body..end, when the
    targeted release has them."""
    if ctx.sync_state() != "on":
        return []
    out = []
    for k in range(body, max(end, body) + 1):
        if ctx.text[k] in SYNC_BUILTINS and ctx.text[k] != b"__syncwarp" and ctx.is_call(k):
            args = ctx.call_args(k) or []
            if not args:
                continue
            code = [m for m in range(*args[0]) if ctx.kinds[m] != COMMENT]
            if not code:
                continue
            is32, value = is_full_mask32(ctx, code[0], code[-1] + 1)
            spelled = ctx.span_text(code[0], code[-1] + 1).strip().decode("latin-1")
            if (is32 and value == 0xFFFFFFFF) or spelled in load_semantic().full64:
                out.append((code[0], code[-1] + 1))
    return out


def _kept_halves(ctx: Context, red: Reductions, k: int, what: str, calls: list[int] | None = None) -> bool:
    """Code that counts 32 lanes throughout: 32-lane offsets at ``k`` whose lane and warp ids count 32 lanes too
    means a logical warp of 32. On a 64-lane wavefront each 32-lane group then reduces on its own (`__shfl_down` /
    `__shfl_xor` from 16 only read inside the group for the lanes whose results are taken), which is right: no
    hazard, and widening it would change what the program computes (one sum per 64 lanes instead of per 32). The
    patch, where one is written, states the logical warp: `width` 32 on the shuffles ``calls`` that lack one, right
    on wave64 and wave32 alike. `__shfl_up` and an index shuffle do cross into the other group without it: a
    warning. An explicit width of 32 with such ids is already that: nothing to say."""
    fn = ctx.function_at(k)
    if fn is None:
        return False
    ids = red.ids(fn)
    if not ids.fixed or ids.hardware:
        return False
    if calls is None:
        return True  # an explicit `width` 32 beside ids of 32: a logical warp of 32, as meant
    missing, crossing = [], []
    for c in calls:
        args = ctx.call_args(c)
        value_index = SHUFFLES.get(ctx.text[c])
        if not args or value_index is None or len(args) != value_index + 2:
            continue
        missing.append(c)
        if ctx.text[c] not in (b"__shfl_down_sync", b"__shfl_xor_sync", b"__shfl_down", b"__shfl_xor") \
                and not guarded_by_lane(ctx, c, group_lanes(ctx, red, fn)):
            crossing.append(c)
    if not missing:
        return True
    edits = []
    # A shuffle the project defines itself (shuffle-cuda's `#define __shfl_xor(v, d) __shfl_xor_sync(~0, v, d)`)
    # takes the parameters it declares: a third argument would not compile, so no patch.
    if not any(user_defined(ctx, ctx.text[c]) for c in missing):
        for c in missing:
            close = ctx.match(ctx.next_code(c))
            edits.append(ctx.edit(close, ", 32)"))
    lines = red.lines([k, *ids.fixed])
    if crossing:
        names = ", ".join(sorted({f"`{ctx.text[c].decode()}`" for c in crossing}))
        ctx.report(RULE, k, f"{what} with lane/warp ids of 32 lanes (lines {lines}): a logical warp of 32, but on "
                   f"a 64-lane wavefront {names} read across into the other 32-lane group; `width` 32 keeps "
                   f"each group apart (right on 32 lanes too)", edits=edits, subject=what, severity="warning")
        return True
    ctx.report(RULE, k, f"{what} with lane/warp ids of 32 lanes (lines {lines}): right on 64 lanes, each 32-lane "
               f"group reducing on its own" + ("; the patch says so with `width` 32" if edits else ""), edits=edits,
               subject=what,
               severity="info", confidence="high")
    return True


def _wave_confidence(ctx: Context, red: Reductions, k: int) -> str:
    """High when the ids beside the reduction are counted by the hardware; a guess when none are in the file."""
    fn = ctx.function_at(k)
    return "high" if fn is not None and red.ids(fn).hardware else "medium"


def _check_for(ctx: Context, i: int, red: Reductions) -> tuple[int, int] | None:
    parts = split_for(ctx, i)
    if parts is None:
        return None
    init, cond, incr, body = parts
    if body[1] <= body[0] or not any(ctx.text[k] in WARP_OPS for k in range(body[0], body[1])):
        return None
    offsets = loop_offsets_32(ctx, cond, init, incr, body)
    shuffles = [k for k in range(body[0], body[1]) if ctx.text[k] in SHUFFLES and ctx.is_call(k)]
    if offsets is not None and _kept_halves(ctx, red, offsets, "shuffle offsets 16..1", shuffles):
        return body
    if offsets is not None and red.butterfly_alone(ctx.function_at(i)):
        ctx.report(RULE, offsets, "xor butterfly over offsets 1..16: each lane reads inside its own 32-lane half, "
                   "so a 64-lane wavefront computes what two 32-lane warps compute, and nothing here counts the "
                   "hardware's lanes; bound it by `warpSize` only if it must span the whole wavefront",
                   subject="< 32", confidence="medium", severity="info")
        return body
    if offsets is not None and inside_first_32(ctx, i) is not None:
        # Only 32 threads take part there (`if (tid < 32)`, the tail of a block reduction): offsets 16..1 read
        # inside them on any wavefront, and `warpSize / 2` would read lanes that never wrote. The guard's own
        # finding says what to change, together or not at all.
        return body
    confidence = _wave_confidence(ctx, red, i) if offsets is not None else "high"
    init_lits = [k for k in range(*init) if ctx.kinds[k] == LITERAL]
    cond_lits = [k for k in range(*cond) if ctx.kinds[k] == LITERAL]
    incr_text = b" ".join(ctx.text[k] for k in range(*incr))
    halving = any(x in incr_text for x in (b"/= 2", b">>= 1", b"/ 2", b">> 1"))
    doubling = any(x in incr_text for x in (b"*= 2", b"<<= 1", b"* 2", b"<< 1"))
    counting = any(x in incr_text for x in (b"++", b"+= 1"))
    cond_ops = {ctx.text[k] for k in range(*cond)}
    if halving and len(init_lits) == 1 and int_value(ctx.text[init_lits[0]]) == 16:
        k = init_lits[0]
        ctx.report(RULE, k, "shuffle reduction starts at offset 16: on a 64-lane wavefront lanes 32-63 are never "
                   "combined (start at `warpSize / 2`)", edits=[ctx.edit(k, "warpSize / 2")], subject="offset 16",
                   confidence=confidence)
        return body
    if (doubling or counting) and len(cond_lits) == 1:
        k = cond_lits[0]
        v = int_value(ctx.text[k])
        op = ctx.t(ctx.prev_code(k))
        if v == 32 and op in (b"<", b"!="):
            what = "shuffle loop" if doubling else "lane loop"
            ctx.report(RULE, k, f"{what} bounded by 32 lanes: a 64-lane wavefront has lanes 32-63 too "
                       f"(bound it by `warpSize`)", edits=[ctx.edit(k, "warpSize")], subject="< 32",
                       confidence=confidence)
            return body
        if v == 16 and op == b"<=" and doubling:
            ctx.report(RULE, k, "shuffle loop stops at offset 16: on a 64-lane wavefront lanes 32-63 are never "
                       "combined (bound it by `warpSize / 2`)", edits=[ctx.edit(k, "warpSize / 2")],
                       subject="<= 16", confidence=confidence)
            return body
        if v == 31 and op == b"<=":
            ctx.report(RULE, k, "lane loop stops at lane 31: a 64-lane wavefront has lanes 32-63 too "
                       "(loop while `< warpSize`)", edits=[ctx.edit(ctx.prev_code(k), "< warpSize", k)],
                       subject="<= 31")
            return body
    del cond_ops
    return None


def _check_shuffle_call(ctx: Context, i: int, loops: Spans, red: Reductions) -> None:
    args = ctx.call_args(i)
    if not args:
        return
    name = ctx.text[i]
    value_index = SHUFFLES[name]
    width_index = value_index + 2
    if len(args) > width_index:
        a, b = args[width_index]
        code = [k for k in range(a, b) if ctx.kinds[k] != COMMENT]
        if len(code) == 1 and int_value(ctx.text[code[0]]) == 32 and \
                not _kept_halves(ctx, red, code[0], f"`{name.decode()}` with width 32"):
            ctx.report(RULE, code[0], f"`{name.decode()}` with width 32 splits a 64-lane wavefront into two "
                       f"independent halves (pass `warpSize`, or drop the width)",
                       edits=[ctx.edit(code[0], "warpSize")], subject="width 32")
    if name not in _OFFSET_SHUFFLES or len(args) <= value_index + 1:
        return
    if loops.hold(i):
        return
    a, b = args[value_index + 1]
    code = [k for k in range(a, b) if ctx.kinds[k] != COMMENT]
    if len(code) != 1 or int_value(ctx.text[code[0]]) != 16:
        return
    fn = ctx.function_at(i)
    lo, hi = (fn.body if fn else (0, ctx.n))
    has_32 = False
    for k in range(lo, hi):
        if ctx.text[k] in _OFFSET_SHUFFLES and k != i:
            other = ctx.call_args(k)
            if other and len(other) > SHUFFLES[ctx.text[k]] + 1:
                oa, ob = other[SHUFFLES[ctx.text[k]] + 1]
                if ctx.span_text(oa, ob).strip() in (b"32", b"warpSize / 2", b"warpSize/2"):
                    has_32 = True
    ladder = [k for k in range(lo, hi) if ctx.text[k] in _OFFSET_SHUFFLES and ctx.is_call(k)]
    if has_32 or _kept_halves(ctx, red, code[0], "shuffle ladder from offset 16", ladder):
        return
    if inside_first_32(ctx, i) is not None:
        return  # only 32 threads take part (`if (tid < 32)`): the ladder from 16 stays inside them
    ctx.report(RULE, code[0], f"unrolled `{name.decode()}` ladder starts at offset 16: on a 64-lane wavefront "
               f"lanes 32-63 are never combined (add an offset-32 step for wave64, or loop from `warpSize / 2`)",
               confidence="medium", subject="offset 16")


def _check_lane_arrays(ctx: Context) -> None:
    """`__shared__ T a[32]` (or a dimension of 32 in `a[W][32]`) written at `a[lane]` / `a[w][lane]`: per-lane
    storage for only 32 lanes."""
    for i in range(ctx.n - 4):
        if ctx.text[i] != b"__shared__" or ctx.in_directive[i]:
            continue
        k = i
        while k < ctx.n and ctx.text[k] not in (b"[", b";", b"="):
            k += 1
        if ctx.t(k) != b"[":
            continue
        name = ctx.text[ctx.prev_code(k)]
        dims = []  # index of the literal 32 of each dimension, or None
        b = k
        while ctx.t(b) == b"[" and ctx.match(b) > b:
            dims.append(b + 1 if ctx.match(b) == b + 2 and int_value(ctx.text[b + 1]) == 32 else None)
            b = ctx.match(b) + 1
        if not any(d is not None for d in dims):
            continue
        fn = ctx.function_at(i)
        lo, hi = fn.body if fn else (k, ctx.n)
        done = False
        for m in range(b, hi):
            if done:
                break
            if ctx.text[m] != name or ctx.t(m + 1) != b"[" or ctx.t(ctx.prev_code(m)) in (b".", b"->"):
                continue
            subs, e = [], m + 1
            while ctx.t(e) == b"[" and ctx.match(e) > e:
                subs.append((e + 1, ctx.match(e)))
                e = ctx.match(e) + 1
            if ctx.t(e) != b"=" or len(subs) != len(dims):
                continue
            lanes_32 = group_lanes(ctx, Reductions.of(ctx), fn) if fn is not None else set()
            for d, (a, z) in zip(dims, subs):
                if d is not None and is_lane_like(ctx, a, z) and not _group_lane_only(ctx, a, z, lanes_32):
                    ctx.report(RULE, d, f"`{name.decode()}` has a dimension of 32 written per lane "
                               f"(`{ctx.span_text(m, e).decode()}`), and a 64-lane wavefront has lanes up "
                               f"to 63 (size it 64)", edits=[ctx.edit(d, "64")], subject="[32]")
                    done = True
                    break


def _group_lane_only(ctx: Context, first: int, last: int, lanes: set[bytes]) -> bool:
    """The subscript is a lane of a group of 32 (`sums[laneid]`, `laneid = tid % 32` in a function whose ids all
    count 32): it stays below 32 on a 64-lane wavefront too, so 32 slots are enough."""
    code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
    return len(code) == 1 and ctx.text[code[0]] in lanes

