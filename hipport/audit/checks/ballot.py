"""Check 2: ballot / active-mask / match results narrowed to 32 bits or handed to 32-bit bit functions."""

from __future__ import annotations

import re

from hipport.audit.checks.common import (
    BALLOTS,
    is_full_mask32,
    enclosing_calls,
    enclosing_open,
    is_32bit_type,
    statement_start,
    type_span,
    user_defined,
)
from hipport.audit.checks.context import COMMENT, IDENT, KEYWORD, Context, int_value
from hipport.audit.checks.mask_values import variable_edits

RULE = "ballot-32bit"
BIT32 = {b"__popc": "__popcll", b"__ffs": "__ffsll", b"__clz": "__clzll", b"__brev": "__brevll"}


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or not (ctx.words & (BALLOTS | {b"ballot"})):
        return
    reported: set[int] = set()
    holders: dict[int, bytes] = {}  # declaration index -> variable
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT:
            continue
        if ctx.text[i] == b"ballot":
            group = _wide_group_ballot(ctx, i)
            if group is None:
                continue
            name = f"{group}.ballot"
        elif ctx.text[i] not in BALLOTS or not ctx.is_call(i) or user_defined(ctx, ctx.text[i]):
            continue
        else:
            name = ctx.text[i].decode()
        if ctx.text[i] != b"ballot" and ctx.match(ctx.next_code(i)) > i:
            _full_compare(ctx, i, ctx.match(ctx.next_code(i)), name, reported)
        # Handed (possibly inside an expression) straight to a 32-bit bit function.
        for call in enclosing_calls(ctx, i):
            if ctx.text[call] in BIT32 and call not in reported:
                reported.add(call)
                wide = BIT32[ctx.text[call]]
                ctx.report(RULE, call, f"`{ctx.text[call].decode()}` counts 32 bits of the 64-bit `{name}` result; "
                           f"use `{wide}`", edits=[ctx.edit(call, wide)], subject=name)
        # Kept in a variable: `T v = __ballot(...)` or `v = __ballot(...)`.
        s = statement_start(ctx, i)
        eq = next((k for k in range(s, i) if ctx.text[k] in (b"=", b"|=", b"&=") and ctx.match(k) < 0), None)
        # `n = __popc(ballot)` keeps a count, `v = f(ballot)` something else; only `__brev` keeps it a lane mask.
        if eq is None and ctx.t(s if ctx.kinds[s] != COMMENT else ctx.next_code(s)) == b"return" and not any(c > s and ctx.text[c] != b"__brev"
                                                               for c in enclosing_calls(ctx, i)):
            _check_return_type(ctx, i, name, reported)
            continue
        if eq is None or any(c > eq and ctx.text[c] != b"__brev" for c in enclosing_calls(ctx, i)):
            continue
        target = ctx.prev_code(eq)
        if ctx.kinds[target] != IDENT:
            continue
        fn = ctx.function_at(i)
        decl = target if ctx.is_decl_name(target) else ctx.find_decl(ctx.text[target], target,
                                                                       fn.params if fn else None)
        if decl is None:
            continue
        holders[decl] = ctx.text[decl]  # by declaration: a function may reuse the name in another block
        if decl in reported:
            continue
        narrow = is_32bit_type(ctx, decl)
        if narrow is not True:
            continue
        reported.add(decl)
        span = type_span(ctx, decl)
        # Its other values widen with it (`unsigned m = 0xffffffff; m = __ballot_sync(m, p);`), or nothing does.
        values = variable_edits(ctx, decl, fn)
        edits = [ctx.edit(span[0], "unsigned long long", span[1]), *values] if span and values is not None else []
        confidence = "high" if ctx.parsed() is not None else "medium"
        ctx.report(RULE, decl, f"`{ctx.text[decl].decode()}` keeps the 64-bit `{name}` result in a 32-bit type; "
                   f"lanes 32-63 are lost (use `unsigned long long`)", edits=edits, confidence=confidence,
                   subject=name)
    _check_holders_in_bit_functions(ctx, holders, reported)
    _check_joined_halves(ctx, holders, reported)


# Return types that hold 32 bits; anything else (`unsigned long long`, `uint64_t`, `auto`, a typedef) is left be.
_NARROW_RETURNS = {(b"unsigned",), (b"int",), (b"unsigned", b"int"), (b"uint32_t",), (b"int32_t",), (b"uint",),
                   (b"signed", b"int"), (b"std", b"::", b"uint32_t")}
_RETURN_SPECIFIERS = {b"__device__", b"__host__", b"__forceinline__", b"__noinline__", b"static", b"inline",
                      b"const", b"constexpr", b"extern"}


def _check_return_type(ctx: Context, i: int, name: str, reported: set[int]) -> None:
    """`__device__ unsigned f(...) { return __ballot(p); }`: the 64-bit result narrowed by the return type."""
    fn = ctx.function_at(i)
    if fn is None or fn.name_index in reported:
        return
    k = ctx.prev_code(fn.name_index)
    words: list[int] = []
    while k >= 0 and (ctx.kinds[k] in (IDENT, KEYWORD) or ctx.text[k] == b"::") and ctx.text[k] not in (b"}",):
        if ctx.text[k] in _RETURN_SPECIFIERS or ctx.text[k].startswith(b"__attribute"):
            if words:
                break
        else:
            words.insert(0, k)
        k = ctx.prev_code(k)
    if tuple(ctx.text[w] for w in words) not in _NARROW_RETURNS:
        return
    reported.add(fn.name_index)
    fname = ctx.text[fn.name_index].decode()
    # Another declaration of the function (a prototype) would then disagree with a patched definition.
    declared_twice = any(m != fn.name_index and ctx.t(ctx.next_code(m)) == b"(" and ctx.text[ctx.prev_code(m)] in
                         {ctx.text[w] for w in words} for m in ctx.positions(ctx.text[fn.name_index]))
    edits = [] if declared_twice else [ctx.edit(words[0], "unsigned long long", words[-1])]
    ctx.report(RULE, words[0], f"`{fname}` returns the 64-bit `{name}` result as "
               f"`{ctx.span_text(words[0], words[-1] + 1).decode()}`; lanes 32-63 are lost "
               f"(return `unsigned long long`" + (")" if edits else ", in its other declarations too)"),
               edits=edits, confidence="high" if edits else "medium", subject=name)


def _full_compare(ctx: Context, first: int, last: int, name: str, reported: set[int]) -> None:
    """`ballot == 0xffffffff`: "every lane voted" tested on 32 of the 64 bits, never true on a full 64-lane
    wavefront. ``first``..``last`` is the ballot call or the variable holding it."""
    for op, lit in ((ctx.next_code(last), ctx.next_code(ctx.next_code(last))),
                    (ctx.prev_code(first), ctx.prev_code(ctx.prev_code(first)))):
        if ctx.t(op) not in (b"==", b"!=") or not 0 <= lit < ctx.n or lit in reported:
            continue
        is32, value = is_full_mask32(ctx, lit, lit + 1)
        if not is32 or value != 0xFFFFFFFF:
            body = ctx.macro_value(ctx.t(lit)) if ctx.kinds[lit] == IDENT else None
            if not body or is_full_mask32(ctx, body[0], body[-1] + 1) != (True, 0xFFFFFFFF):
                continue
        reported.add(lit)
        ctx.report(RULE, lit, f"`{name}` compared with the 32-bit `{ctx.text[lit].decode('latin-1')}`: \"every lane "
                   f"voted\" is never true on a full 64-lane wavefront, whose ballot has 64 bits (compare with "
                   f"`__activemask()`, or with the full mask of the wavefront size)", confidence="medium",
                   subject=name, severity="warning")
        return


_GROUP_TYPES = {b"coalesced_group", b"thread_group", b"thread_block", b"grid_group", b"thread_block_tile"}


def _wide_group_ballot(ctx: Context, i: int) -> str | None:
    """`g.ballot(p)` on a cooperative group that can hold more than 32 threads (a coalesced group, a tile of 64 or
    of a size not known here): its 64-bit result. A tile of at most 32 threads ballots into 32 bits safely."""
    dot = ctx.prev_code(i)
    if ctx.t(dot) not in (b".", b"->") or ctx.t(ctx.next_code(i)) != b"(":
        return None
    obj = ctx.prev_code(dot)
    if obj < 0 or ctx.kinds[obj] != IDENT:
        return None
    fn = ctx.function_at(i)
    decl = ctx.find_decl(ctx.text[obj], obj, fn.params if fn else None)
    if decl is None:
        return None
    words = set(ctx.decl_type_words(decl))
    init: list[bytes] = []
    if ctx.t(ctx.next_code(decl)) == b"=":
        k = ctx.next_code(ctx.next_code(decl))
        while k < ctx.n and ctx.text[k] != b";":
            init.append(ctx.text[k])
            k += 1
    if not (words & _GROUP_TYPES) and not (b"auto" in words and (b"coalesced_threads" in init
                                                                 or b"tiled_partition" in init)):
        return None
    size = _tile_size(ctx, decl, init)
    if size is not None and size <= 32:
        return None
    return ctx.text[obj].decode("latin-1")


def _tile_size(ctx: Context, decl: int, init: list[bytes]) -> int | None:
    """N of `thread_block_tile<N> t` or `auto t = tiled_partition<N>(...)`; None when not a literal tile size."""
    k = ctx.prev_code(decl)
    if ctx.t(k) == b">":
        lit = ctx.prev_code(k)
        if ctx.t(ctx.prev_code(lit)) == b"<":
            return int_value(ctx.text[lit])
    for j, w in enumerate(init[:-3]):
        if w == b"tiled_partition" and init[j + 1] == b"<" and init[j + 3] == b">":
            return int_value(init[j + 2])
    return None


_WAVE_CONDITION = re.compile(rb"(?i)(?:warp_?size|wave(?:front)?_?size)\s*[=!<>]=\s*(?:32|64)\b|"
                             rb"\b(?:32|64)\s*[=!<>]=\s*(?:warp_?size|wave(?:front)?_?size)")


def _in_wave_branch(ctx: Context, k: int) -> bool:
    """``k`` lies in a branch of an `if` (`if constexpr`) that tests the warp size (`if constexpr (WarpSize == 64)
    {...} else {...}`): the code there is written for the size its branch is taken with."""
    block = enclosing_open(ctx, k, b"{")
    while block >= 0:
        before = ctx.prev_code(block)
        if ctx.t(before) == b"else":
            close = ctx.prev_code(before)  # `}` of the `if` part
            open_ = ctx.match(close) if ctx.t(close) == b"}" else -1
            before = ctx.prev_code(open_) if open_ >= 0 else -1
        if ctx.t(before) == b")" and 0 <= ctx.match(before) < before:
            cond = ctx.span_text(ctx.match(before), before + 1)
            if ctx.t(ctx.prev_code(ctx.match(before))) in (b"if", b"constexpr") and _WAVE_CONDITION.search(cond):
                return True
        block = enclosing_open(ctx, block, b"{")
    return False


def _check_joined_halves(ctx: Context, holders: dict, reported: set[int]) -> None:
    """`(half[tid + 32] << 32) + bitmap`: a 64-bit word built from the ballots of two 32-lane warps. On a 64-lane
    wavefront one ballot already holds every lane, and the "upper half" is another lane's copy of the same ballot;
    the store that hands that half over (`if (lane == 32) half[tid] = bitmap;`) is reported with it."""
    for decl, var in holders.items():
        block = enclosing_open(ctx, decl, b"{")
        hi = ctx.match(block) if block >= 0 and ctx.match(block) > block else ctx.n
        for k in range(decl + 1, hi):
            if ctx.text[k] != var or ctx.kinds[k] != IDENT or ctx.is_decl_name(k):
                continue
            if ctx.t(ctx.prev_code(k)) not in (b"+", b"|") and ctx.t(ctx.next_code(k)) not in (b"+", b"|"):
                continue
            first = statement_start(ctx, k)
            last = next((m for m in range(k, hi) if ctx.text[m] in (b";", b"{", b"}")), hi)
            shift = next((m for m in range(first, last) if ctx.text[m] == b"<<"
                          and int_value(ctx.t(ctx.next_code(m))) == 32 and m != k), None)
            if shift is None or shift in reported or _in_wave_branch(ctx, k):
                continue
            reported.add(shift)
            ctx.report(RULE, shift, f"a 64-bit word joined from two 32-lane ballots (`{var.decode()}` and a half "
                       f"shifted by 32): on a 64-lane wavefront `{var.decode()}` already holds all 64 lanes, so the "
                       f"upper half repeats them (keep the ballot in `unsigned long long` and split by the "
                       f"wavefront size)", confidence="medium", subject=var.decode())
            arrays = {ctx.text[m] for m in range(first, shift) if ctx.kinds[m] == IDENT
                      and ctx.t(ctx.next_code(m)) == b"["}
            for m in range(block if block >= 0 else 0, hi):
                if ctx.text[m] in arrays and ctx.t(ctx.next_code(m)) == b"[":
                    after = ctx.next_code(ctx.match(ctx.next_code(m)))
                    if ctx.t(after) == b"=" and ctx.t(ctx.next_code(after)) == var \
                            and ctx.t(ctx.next_code(ctx.next_code(after))) == b";" and m not in reported:
                        reported.add(m)
                        ctx.report(RULE, m, f"`{var.decode()}` stored as the upper half of a word joined from two "
                                   f"32-lane ballots: on a 64-lane wavefront there is no second warp's half",
                                   confidence="medium", subject=var.decode())


def _check_holders_in_bit_functions(ctx: Context, holders: dict, reported: set[int]) -> None:
    for decl, var in holders.items():
        block = enclosing_open(ctx, decl, b"{")
        hi = ctx.match(block) if block >= 0 and ctx.match(block) > block else ctx.n
        for k in range(decl + 1, hi):
            if ctx.text[k] != var or ctx.kinds[k] != IDENT:
                continue
            if k != decl and ctx.is_decl_name(k):
                break  # declared again further on: another variable from here
            _full_compare(ctx, k, k, var.decode(), reported)
            for call in enclosing_calls(ctx, k):
                if ctx.text[call] in BIT32 and call not in reported:
                    reported.add(call)
                    wide = BIT32[ctx.text[call]]
                    ctx.report(RULE, call, f"`{ctx.text[call].decode()}({var.decode()})` sees only 32 of the 64 "
                               f"ballot bits in `{var.decode()}`; use `{wide}`", edits=[ctx.edit(call, wide)],
                               subject=var.decode())
