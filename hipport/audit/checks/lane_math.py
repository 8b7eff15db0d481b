"""Check 3: lane / warp index arithmetic that assumes 32 lanes, and WARP_SIZE-style constants defined as 32."""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass

from hipport.audit.checks.common import (
    _ASSIGN,
    _OPERAND_END,
    _OPERAND_START,
    LANE_NAME,
    WARP_OPS,
    const_context,
    constexpr_as_const,
    enclosing_open,
    operand_before,
    statement_end,
    statement_start,
    thread_derived,
    wave_conditional_lines,
)
from hipport import project_sources
from hipport.audit.checks import host_flow
from hipport.audit.checks.lane_uses import LaneUses
from hipport.audit.checks.reductions import Reductions, group_lanes, uses_warp_ops
from hipport.audit.checks.thread_groups import group_only
from hipport.audit.checks.context import (
    COMMENT,
    IDENT,
    LANE_FUNCS,
    LITERAL,
    THREAD_INDEX,
    Context,
    int_value,
)

RULE = "lane-math-32"
WARP_CONST_NAME = re.compile(rb"(?i)^(?:k_?|c_?|g_?)?(?:warp|warp_?size|warp_?sz|warp_?lanes|warp_?width|"
                             rb"lanes?_?per_?warp|threads?_?per_?warp|warp_?threads|cuda_?warp_?size|wsize|ws|"
                             rb"wave_?size|wavefront_?size|wave_?lanes)$")
BLOCK_NAME = re.compile(rb"(?i)(block|threads|tpb|nthreads|num_?threads|cta)")
# `block_offset / 32` is a position in the data, not a count of threads: no warp count
NOT_A_COUNT = re.compile(rb"(?i)(offset|off$|idx|index|id$|pos|start|begin|base|ptr)")
BLOCK_DIM = {b"blockDim", b"hipBlockDim_x", b"hipBlockDim_y", b"hipBlockDim_z"}
_FLOAT_32 = re.compile(rb"^32(?:\.0*)?[fF]?$|^32\.0*$")
# operator, literal value -> (kind, replacement operator+operand)
_PATTERNS = {(b"&", 31): ("lane", "% warpSize"), (b"%", 32): ("lane", "% warpSize"),
             (b"/", 32): ("warp", "/ warpSize"), (b">>", 5): ("warp", "/ warpSize")}


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards:
        return
    derived: dict[int, set[bytes]] = {fn.body[0]: thread_derived(ctx, fn) for fn in ctx.functions}
    thread_macros = {name for name, d in ctx.macros.items()
                     if any(ctx.text[k] in THREAD_INDEX | LANE_FUNCS for k in range(d.first, d.last))}
    bitsets = _bitset_operands(ctx)
    red = Reductions.of(ctx)
    warp_fns = uses_warp_ops(ctx)
    candidates: list[_Candidate] = []
    for i in range(ctx.n - 1):
        if ctx.kinds[i] != LITERAL:
            continue
        in_macro = ctx.in_directive[i]
        if not (ctx.device[i] or in_macro):
            continue
        value = int_value(ctx.text[i])
        op = ctx.prev_code(i)
        floating = value is None and ctx.t(op) == b"/" and _FLOAT_32.match(ctx.text[i]) is not None
        if floating:
            value = 32  # `blockDim.x / 32.f`: a warp count all the same
        pattern = _PATTERNS.get((ctx.t(op), value))
        if pattern is None:
            continue
        lhs_end = ctx.prev_code(op)
        if lhs_end < 0 or not (ctx.kinds[lhs_end] in (IDENT, LITERAL) or ctx.text[lhs_end] in (b")", b"]")):
            continue  # unary `&`, or no left operand
        after = ctx.next_code(i)
        if ctx.t(after) in (b"*", b"/", b"%", b".") or ctx.kinds[after] == LITERAL:
            continue
        lo = operand_before(ctx, op)
        kind, replacement = pattern
        fn = ctx.function_at(i)
        names = derived.get(fn.body[0], set()) if fn else set()
        words = {ctx.text[k] for k in range(lo, op) if ctx.kinds[k] == IDENT}
        if in_macro:
            names = set()
        direct = bool(words & (THREAD_INDEX | LANE_FUNCS | thread_macros))
        via = bool(words & names)
        block = bool(words & BLOCK_DIM)
        named_block = any(BLOCK_NAME.search(w) and not NOT_A_COUNT.search(w) for w in words) \
            and not (direct or via)
        if not (direct or via or (kind == "warp" and (block or named_block))):
            continue
        if floating and not block:
            continue  # `x / 32.f` on data is arithmetic; only `blockDim.x / 32.f` is surely a warp count
        if _bank_padding(ctx, lo, op):
            continue
        if fn is not None and (fn.body[0], ctx.span_text(lo, op)) in bitsets:
            continue  # bit `i % 32` of word `i / 32`: a bitmap of 32-bit words, whatever the warp size
        where = const_context(ctx, i)
        if where in ("static_assert", "__launch_bounds__") or (where == "array bound" and kind == "warp"):
            continue  # sizing by 32 lanes over-allocates on wave64: safe
        expr = ctx.span_text(lo, i + 1).decode()
        what = "lane index" if kind == "lane" else ("warp count" if block or named_block else "warp index")
        users = _macro_users(ctx, i) if in_macro else [fn]
        if in_macro and not users and _unused_macro(ctx, _macro_holding(ctx, i)):
            name = _macro_holding(ctx, i).decode("latin-1")
            ctx.report(RULE, op, f"`{name}` divides by 32 but nothing uses it, in this file or in the other sources "
                       f"of its project", confidence="medium",
                       subject=ctx.text[op].decode() + " " + ctx.text[i].decode(), severity="info")
            continue
        warp_fed = any(f is not None and f.body[0] in warp_fns for f in users)
        if kind == "lane" and _permutes_within_32(ctx, op):
            continue  # `(i & ~31) | f(i) & 31`: data moved inside rows of 32, not a lane
        own = []
        if where is None and (not in_macro or direct) and not floating and warp_fed:
            new = _fix(ctx, lo, op, i, after, replacement)
            if new is not None:
                own = [ctx.edit(op, new, i)]
        reaching = next((r for r in (red.reaching(f) for f in users) if r is not None), None)
        groups = groups_only(ctx, users)
        candidates.append(_Candidate(op, i, fn, in_macro, reaching, own, expr, what, replacement, where,
                                     # without a warp operation a group of 32 threads is right on AMD too:
                                     # still shown, as the code may mean a warp, but never patched
                                     ("high" if (direct or block) else "medium") if warp_fed else "low", lo,
                                     groups=groups))
    _unproven_lose_patches(ctx, candidates, warp_fns)
    ctx._lane_ids = candidates
    for c in candidates:
        edits, why = c.own, ""
        if c.reaching is not None:
            home = ctx.function_at(c.reaching)
            ids = red.ids(home) if home is not None else None
            if ids is not None and not ids.hardware and (ids.fixed or red.butterfly_alone(home)):
                wide = next((k for k in (red.crossing_op(home), red.crossing_op(c.fn) if c.fn else -1) if k >= 0),
                            -1)
                if wide < 0:
                    continue  # a logical warp of 32 throughout: right on 64 lanes (warp-loop-32 says so, and why)
                op_line = ctx.lines.line_col(ctx.starts[wide])[0]
                ctx.report(RULE, c.op, f"`{c.expr}` numbers lanes or warps of 32, but `{ctx.text[wide].decode()}` "
                           f"(line {op_line}) sees the whole 64-lane wavefront, both 32-lane groups of it: lanes "
                           f"32-63 read or vote with lanes 0-31 (give that shuffle `width` 32, or count lanes with "
                           f"`warpSize` throughout)", confidence="medium",
                           subject=ctx.text[c.op].decode() + " " + ctx.text[c.lit].decode())
                continue
            # One patch for the whole group, carried by the reduction's finding: the same edits on every id's
            # finding would repeat a long diff in each report for no gain.
            whole = group_edits(ctx, c.reaching)
            edits = []
            line = ctx.lines.line_col(ctx.starts[c.reaching])[0]
            why = (f"; patched by the `warp-loop-32` finding of line {line}, together with that 32-lane shuffle "
                   f"reduction and its other ids" if whole else f"; no patch: it belongs with the 32-lane shuffle reduction of line {line}, "
                   f"which is right on a 64-lane wavefront with ids of 32, and not every piece can be rewritten "
                   f"(change them together or not at all)")
        if c.reaching is None and not c.in_macro and logical_32(ctx, c.fn):
            continue  # joined by calls to a 32-lane reduction whose ids all count 32: the same logical warp
        if c.groups and c.reaching is None:
            ctx.report(RULE, c.op, f"`{c.expr}` numbers groups of 32 threads; nothing in this kernel counts a "
                       f"warp's lanes (no vote, no `warpSize`, no shuffle across a 32-lane half), so each group "
                       f"stays in lockstep inside a 64-lane wavefront and the code is right on AMD as written",
                       confidence=c.confidence,
                       subject=ctx.text[c.op].decode() + " " + ctx.text[c.lit].decode(), severity="info")
            continue
        advice = f"`{c.replacement.split()[0]} warpSize`" if edits or c.where is None else \
            "a warp size chosen at compile time (a template parameter)"
        said = f"`{c.expr}` computes a {c.what} for 32-lane warps; use {advice}{why}"
        if c.proof == "data":
            continue
        if c.proof == "none":
            said = (f"`{c.expr}` may compute a {c.what} for 32-lane warps (then use {advice}); no patch: no use "
                    f"shows a lane or warp number (a warp operation's lane, a lane test beside warp results, a "
                    f"per-warp `__shared__` slot), and 32 may be the size of a block of data")
        ctx.report(RULE, c.op, said,
                   confidence=c.confidence, edits=edits,
                   subject=ctx.text[c.op].decode() + " " + ctx.text[c.lit].decode())
    _check_constants(ctx)
    _check_lane_arrays(ctx)
    _check_last_lane(ctx)


@dataclass
class _Candidate:
    """A lane or warp id of 32 lanes that warp-level code uses, before it is reported."""

    op: int
    lit: int
    fn: object
    in_macro: bool
    reaching: int | None  # the 32-lane shuffle reduction it goes with
    own: list             # its own patch, alone
    expr: str
    what: str
    replacement: str
    where: str | None
    confidence: str
    lo: int = -1          # first token of the operand
    proof: str = ""       # why it numbers lanes or warps, or "" (lane_uses.py)
    groups: bool = False  # every function using it shares work in groups of 32 threads (thread_groups.py)


def _reduction_follows(ctx: Context, red: Reductions, fn, name: bytes) -> bool:
    """No 16..1 shuffle reduction reaches ``fn``, or the one that does counts its offsets with the constant
    ``name`` itself (`o = WARP_SIZE >> 1`) beside a reduction over the hardware's lanes: then defining the
    constant as `warpSize` moves the offsets and the ids together, and ends the mix of widths."""
    at = red.reaching(fn)
    return at is None or (ctx.text[at] == name and bool(red.ids(fn).hardware))


def groups_only(ctx: Context, users: list) -> bool:
    """Every one of ``users`` (functions) is one whose ids of 32 are groups of 32 threads, and there is one."""
    free = group_only(ctx)
    return bool(users) and all(f is not None and f.body[0] in free for f in users)


def _unproven_lose_patches(ctx: Context, candidates: list[_Candidate], warp_fns: set[int]) -> None:
    """An id whose uses do not show a lane or warp number (a block of 32 values, a row of 32) keeps its finding
    without its patch, at low confidence; an id of the same operand as a proven one (`gid & 31` beside `gid /
    32`) is the other half of the same numbering and is proven with it."""
    uses = LaneUses(ctx, warp_fns)
    proven: set[tuple[int, bytes]] = set()
    for c in candidates:
        if c.lo < 0:
            continue
        where = [(f, k) for f, k in _use_sites(ctx, c)]
        if any(uses.proves(f, at, c.what == "lane index", c.what == "warp count")
               for f, site in where for at in uses.carriers(f, site, c.lit + 1 if site == c.lo else site + 1)):
            c.proof = "use"
            proven.add(_operand_key(ctx, c))
    for c in candidates:
        if not c.proof and c.lo >= 0 and _operand_key(ctx, c) in proven:
            c.proof = "pair"
        if not c.proof and c.confidence != "low":
            c.own = []
            c.confidence = "low"
            c.proof = "none"
    rows = {_operand_key(ctx, c) for c in candidates if c.proof == "none" and c.what != "lane index"
            and not c.in_macro and _word_row(ctx, c, uses)}  # `vecRow = i / 32`, read times a pitch
    for c in candidates:
        if c.proof != "none" or c.in_macro:
            continue
        if (c.what == "lane index" and (_bit_count(ctx, c, uses) or _row_base_beside(ctx, c))) or \
                _operand_key(ctx, c) in rows:
            c.proof = "data"  # a bit of a 32-bit word, a row of such words: no lane, no warp


def _later_uses(ctx: Context, c: _Candidate, uses: LaneUses) -> list[int]:
    """Where the id's value is read: each use of the variable it initialises, or the id's own place."""
    found = uses.carriers(c.fn, c.lo, c.lit + 1)
    return found[1:] if len(found) > 1 else []


def _row_base_beside(ctx: Context, c: _Candidate) -> bool:
    """`j % 32` in a function that also takes `j / 32 * ...` (a multiple of 32 or a row pitch): the offset in a
    tile of 32 columns or a word of 32 bits, beside the tile's or word row's start."""
    if c.fn is None:
        return False
    operand = ctx.span_text(c.lo, c.op).strip()
    for k in range(*c.fn.body):
        if ctx.text[k] == b"/" and int_value(ctx.t(ctx.next_code(k))) == 32 \
                and ctx.t(ctx.next_code(ctx.next_code(k))) == b"*" \
                and ctx.span_text(operand_before(ctx, k), k).strip() == operand:
            return True
    return False


def _bit_count(ctx: Context, c: _Candidate, uses: LaneUses) -> bool:
    """`vecLane = i % 32` read only as the count of a right shift of data (`(C[k] >> vecLane) & 1`): the bit of
    row ``i`` in a word packing 32 rows, whatever the wavefront size."""
    later = _later_uses(ctx, c, uses)
    return bool(later) and all(ctx.t(ctx.prev_code(k)) == b">>" and ctx.t(ctx.next_code(k)) in (b")", b";")
                               for k in later)


def _word_row(ctx: Context, c: _Candidate, uses: LaneUses) -> bool:
    """`vecRow = i / 32` read only as a row of words, multiplied by a pitch (`vecRow * padded_width`, `i / 32 *
    32`), or compared: with its bit `i % 32`, a matrix packed 32 rows a word."""
    after = ctx.next_code(c.lit)
    if ctx.t(after) == b"*":
        return True
    later = _later_uses(ctx, c, uses)
    return bool(later) and all(ctx.t(ctx.next_code(k)) == b"*" or ctx.t(ctx.prev_code(k)) == b"*"
                               or ctx.t(ctx.next_code(k)) in (b"<", b">=") for k in later)


def _use_sites(ctx: Context, c: _Candidate) -> list:
    """(function, token) where the id's value is used: the id itself, or each use of the macro it defines."""
    if not c.in_macro:
        return [(c.fn, c.lo)]
    name = _macro_holding(ctx, c.lit)
    return [(ctx.function_at(k), k) for k in ctx.positions(name) if not ctx.in_directive[k]] if name else []


def _operand_key(ctx: Context, c: _Candidate) -> tuple[int, bytes]:
    return (c.fn.body[0] if c.fn is not None else -1, ctx.span_text(c.lo, c.op).strip())


def id_candidates(ctx: Context) -> list[_Candidate]:
    """The lane/warp ids of the file (computed by `check`, kept on the context for `group_edits`)."""
    return getattr(ctx, "_lane_ids", [])


def group_edits(ctx: Context, reduction: int) -> list | None:
    """Every edit that turns the 32-lane reduction at ``reduction`` and its ids into whole-wavefront ones, or
    None when one piece cannot be rewritten (an id through a named constant, an id without a patch of its own, an
    unrolled ladder): then none is, as each alone breaks the others (reductions.py)."""
    candidates = id_candidates(ctx)
    # Asked once per id of a reduction's group: answered once per reduction, for the ids known when asked.
    known = getattr(ctx, "_group_edits", None)
    if known is None or known[0] is not candidates:
        by_fn: dict[int, list[int]] = {}
        for k, c in enumerate(candidates):
            if c.fn is not None:
                by_fn.setdefault(c.fn.body[0], []).append(k)
        known = ctx._group_edits = (candidates, by_fn, {})
    if reduction not in known[2]:
        known[2][reduction] = _group_edits(ctx, reduction, candidates, known[1])
    return known[2][reduction]


def _group_edits(ctx: Context, reduction: int, candidates: list[_Candidate], by_fn: dict[int, list[int]]) \
        -> list | None:
    red = Reductions.of(ctx)
    fn = ctx.function_at(reduction)
    offset = red.offset_edit(reduction)
    if fn is None or offset is None or red.ids(fn).named:
        return None
    group = {f.body[0] for f in red.group(fn)}
    ids = [candidates[k] for k in sorted(k for start in group for k in by_fn.get(start, ()))]
    if not ids or any(not c.own or c.in_macro for c in ids):
        return None
    return [*offset, *(e for c in ids for e in c.own)]


def _permutes_within_32(ctx: Context, op: int) -> bool:
    """The statement also keeps the bits above 32 of an index (`& 0xFFFFFFE0`, `& ~31`): the `& 31` beside it
    permutes data within 32-wide rows (cuda-samples' dct8x8), whatever the warp size."""
    first, last = statement_start(ctx, op), statement_end(ctx, op)
    for k in range(first, last):
        if ctx.text[k] != b"&":
            continue
        r = ctx.next_code(k)
        if int_value(ctx.text[r]) in (0xFFFFFFE0, 0xFFFFFFFFFFFFFFE0) or (
                ctx.text[r] == b"~" and int_value(ctx.t(ctx.next_code(r))) in (31, 0x1F)):
            return True
    return False


def _macro_users(ctx: Context, i: int) -> list:
    """The functions that use the macro whose body holds token ``i``."""
    name = _macro_holding(ctx, i)
    if name is None:
        return []
    return [ctx.function_at(k) for k in ctx.positions(name) if not ctx.in_directive[k]]


def _unused_macro(ctx: Context, name: bytes | None) -> bool:
    """No token of this file but its `#define` names macro ``name``, and no other source of the project (what
    `project_sources` reads: the outermost folder with a build file up to the project directory, and what its
    build reaches) mentions it: a
    definition nothing compiles with (exllamav2's `GPTQ_MAX_GROUPS_IN_BLOCK`). Unknown (a project too large to
    read) is not unused."""
    if name is None or any(not ctx.in_directive[k] for k in ctx.positions(name)) or len(ctx.positions(name)) > 1:
        return False
    if ctx.path.startswith("<") or not os.path.isfile(ctx.path):
        return False
    index = project_sources.index_for(ctx.path, getattr(ctx.options, "project_dir", ""),
                                      tuple(getattr(ctx.options, "include_dirs", ())))
    return index is not None and index.mentions(name) <= 1


def _macro_holding(ctx: Context, i: int) -> bytes | None:
    """The name of the macro whose `#define` directive holds token ``i`` (directives never overlap)."""
    spans = getattr(ctx, "_macro_spans", None)
    if spans is None:
        by_first = sorted((d.first, d.last, name) for name, d in ctx.macros.items())
        spans = ctx._macro_spans = ([f for f, _, _ in by_first], by_first)
    k = bisect_right(spans[0], i) - 1
    if k >= 0 and i < spans[1][k][1]:
        return spans[1][k][2]
    return None


# `lane == 31`, `lane + d > 31`, `lane >= 32`: the last lane, or past it, of a 32-lane warp.
# (`lane < 32` is left alone: "the first 32 lanes" is as likely as "every lane".)
_LAST_LANE = {(b"==", 31): "(warpSize - 1)", (b"!=", 31): "(warpSize - 1)", (b">", 31): "(warpSize - 1)",
              (b"<=", 31): "(warpSize - 1)"}


def _check_last_lane(ctx: Context) -> None:
    """A lane number compared with 31 or 32 treats lane 31 as the last one: on a 64-lane wavefront it is 63, so
    the warp's last element (a scan's total, the end of a segment) is taken from the middle."""
    for i in range(1, ctx.n):
        if ctx.kinds[i] != LITERAL or not ctx.device[i] or ctx.in_directive[i]:
            continue
        op = ctx.prev_code(i)
        new = _LAST_LANE.get((ctx.t(op), int_value(ctx.text[i])))
        if new is None or ctx.t(ctx.next_code(i)) in (b"*", b"/", b"%", b"+", b"-", b"<<", b">>"):
            continue
        lo = operand_before(ctx, op)
        if not any(ctx.kinds[k] == IDENT and LANE_NAME.match(ctx.text[k]) for k in range(lo, op)):
            continue
        expr = ctx.span_text(lo, i + 1).decode("latin-1")
        fn = ctx.function_at(i)
        if fn is not None and (Reductions.of(ctx).reaching(fn) is not None or logical_32(ctx, fn)) \
                and _group_lane_operand(ctx, lo, op, group_lanes(ctx, Reductions.of(ctx), fn)):
            continue  # a logical warp of 32 throughout: its reduction's finding says so (warp_loops.py)
        if groups_only(ctx, [fn]):
            ctx.report(RULE, i, f"`{expr}` takes the last thread of a group of 32; nothing in this kernel counts a "
                       f"warp's lanes (no vote, no `warpSize`, no shuffle across a 32-lane half), so the groups are "
                       f"right on a 64-lane wavefront as written", confidence="medium", severity="info",
                       subject=f"{ctx.text[op].decode()} {ctx.text[i].decode()}")
            continue
        ctx.report(RULE, i, f"`{expr}` takes lane 31 for the last lane of the warp; on a 64-lane wavefront the last "
                   f"lane is 63 (compare with `{new}`)", edits=[ctx.edit(i, new)], confidence="medium",
                   subject=f"{ctx.text[op].decode()} {ctx.text[i].decode()}")


def _group_lane_operand(ctx: Context, lo: int, op: int, lanes: set[bytes]) -> bool:
    """The operand before ``op`` is a lane of a group of 32 (`lane`), or a sum with one (`(lane + dim) > 31`: the
    last `dim` lanes of each group), with no other thread index in it."""
    names = [ctx.text[k] for k in range(lo, op) if ctx.kinds[k] == IDENT]
    return any(n in lanes for n in names) and not any(n in THREAD_INDEX for n in names) \
        and all(ctx.text[k] in (b"(", b")", b"+") or ctx.kinds[k] in (IDENT, LITERAL)
                for k in range(lo, op) if ctx.kinds[k] != COMMENT)


def _fix(ctx: Context, lo: int, op: int, lit: int, after: int, replacement: str) -> str | None:
    optext = ctx.text[op]
    if optext in (b"/", b"%"):
        return replacement  # same precedence as before: only the literal changes
    before = ctx.t(ctx.prev_code(lo)) if lo > 0 else b";"
    safe_left = before in _OPERAND_START
    safe_right = ctx.t(after) in _OPERAND_END or (optext == b">>" and ctx.t(after) in (
        b"<", b">", b"<=", b">=", b"==", b"!="))
    if safe_left and safe_right:
        return replacement
    if optext == b"&":
        return "& (warpSize - 1)"  # keeps `&`'s precedence
    return None


_BIT = {(b"&", 31), (b"%", 32)}
_WORD = {(b">>", 5), (b"/", 32)}


def _bitset_operands(ctx: Context) -> set[tuple[int, bytes]]:
    """(function body start, operand text) for each `x` that a function uses both as a bit number, shifting by
    `x & 31` / `x % 32`, and as a word number, indexing with `[x >> 5]` / `[x / 32]`: bitmap arithmetic on 32-bit
    words (`bits[i >> 5] |= 1u << (i & 31)`), which the wavefront size does not change."""
    bit: set[tuple[int, bytes]] = set()
    word: set[tuple[int, bytes]] = set()
    if not ctx.words & {b"<<", b">>"}:
        return bit  # no shift, no bit number
    for i in range(1, ctx.n):
        if ctx.kinds[i] != LITERAL or not ctx.device[i]:
            continue
        op = ctx.prev_code(i)
        key = (ctx.t(op), int_value(ctx.text[i]))
        if key not in _BIT and key not in _WORD:
            continue
        fn = ctx.function_at(i)
        if fn is None:
            continue
        lo = operand_before(ctx, op)
        if any(ctx.text[k] in THREAD_INDEX or ctx.text[k] in LANE_FUNCS for k in range(lo, op)):
            continue  # `1u << (threadIdx.x & 31)` is a lane bit: the hazard itself
        operand = (fn.body[0], ctx.span_text(lo, op))
        before = ctx.prev_code(lo)
        if key in _BIT:
            if ctx.t(before) == b"(" and ctx.match(before) == ctx.next_code(i):
                before = ctx.prev_code(before)
            if ctx.t(before) in (b"<<", b">>"):
                bit.add(operand)
        elif ctx.t(before) == b"[" and ctx.match(before) == ctx.next_code(i):
            word.add(operand)
    return bit & word


def _bank_padding(ctx: Context, lo: int, op: int) -> bool:
    """`smem[i + (i >> 5)]`, `p = tid + tid / 32`: padding against shared-memory bank conflicts, not a warp index."""
    b = enclosing_open(ctx, lo, b"[")
    if b >= 0:
        first, last = b + 1, ctx.match(b)
    else:
        first, last = statement_start(ctx, lo), statement_end(ctx, op)
    if last <= first:
        return False
    operand = ctx.span_text(lo, op)
    inside = [ctx.text[k] for k in range(first, last)]
    return b"+" in inside and ctx.span_text(first, last).count(operand) >= 2


def _check_constants(ctx: Context) -> None:
    """`#define WARP_SIZE 32`, `constexpr int kWarpSize = 32;`: the 32-lane assumption, named."""
    waves = wave_conditional_lines(ctx)
    for name, d in ctx.macros.items():
        if not WARP_CONST_NAME.match(name):
            continue
        line = ctx.lines.line_col(ctx.starts[d.first])[0]
        if any(a <= line <= b for a, b in waves):
            continue  # `#if defined(__GFX9__) ... #define WARP_SIZE 64 #else ... 32`: chosen per wavefront
        body = ctx.macro_value(name)
        if body is None:
            continue
        vals = [k for k in body if ctx.text[k] not in (b"(", b")")]
        if len(vals) != 1 or int_value(ctx.text[vals[0]]) != 32:
            continue
        uses = [k for k in ctx.positions(name) if not ctx.in_directive[k]]
        # A use in a function that runs a 16..1 shuffle reduction: `warpSize` there would make the ids count 64
        # lanes while the offsets still count 32 (reductions.py), so the constant stays with them.
        red = Reductions.of(ctx)
        fixable = bool(uses) and all(ctx.device[k] and const_context(ctx, k) is None
                                     and _reduction_follows(ctx, red, ctx.function_at(k), name) for k in uses)
        edits = [ctx.edit(vals[0], "warpSize")] if fixable else []
        ctx.warp_constants.setdefault(name, ctx.lines.line_col(ctx.starts[vals[0]])[0])
        device_users = [ctx.function_at(k) for k in uses if ctx.device[k]]
        if groups_only(ctx, device_users):
            ctx.report(RULE, vals[0], f"`{name.decode()}` is 32 and every kernel here uses it for groups of 32 "
                       f"threads with no shuffle, vote or `warpSize`: right on a 64-lane wavefront as written "
                       f"(make it `warpSize` only if warp operations come to use it)", subject=name.decode(),
                       confidence="medium", severity="info")
            continue
        if _definition_right(ctx, name, vals[0], uses, device_users):
            continue
        how = "define it as `warpSize`" if fixable else \
            "it is used where a constant is needed, so make the warp size a template parameter or size for 64"
        ctx.report(RULE, vals[0], f"`{name.decode()}` is defined as 32; every lane and warp computed from it assumes "
                   f"32-lane warps ({how})", edits=edits, subject=name.decode())
        _report_uses(ctx, name, vals[0], range(ctx.n))
    for i in range(ctx.n - 2):
        if ctx.kinds[i] != IDENT or ctx.in_directive[i] or not WARP_CONST_NAME.match(ctx.text[i]):
            continue
        if ctx.t(ctx.next_code(i)) not in (b"=",) and ctx.t(ctx.next_code(i)) != b"{":
            continue
        v = ctx.next_code(ctx.next_code(i))
        if ctx.kinds[v] != LITERAL or int_value(ctx.text[v]) != 32 or ctx.t(ctx.next_code(v)) not in (
                b";", b",", b"}"):
            continue
        if not ctx.is_decl_name(i) and ctx.t(ctx.prev_code(i)) not in (b"{", b","):  # enumerators too
            continue
        name = ctx.text[i]
        if _bare_warp_name(name) and not _const_declared(ctx, i):
            continue  # `int warp = 32;`: a variable named after a warp, not a constant of its width
        edits = []
        fn = ctx.function_at(i)
        if fn is None:  # a function's own constant is no definition for the files that include this one
            ctx.warp_constants.setdefault(name, ctx.lines.line_col(ctx.starts[v])[0])
            uses = [k for k in ctx.positions(name) if k != i and not ctx.in_directive[k]]
            if not uses and not _is_header(ctx.path):
                continue  # nothing in this file computes with it (its uses were patched to `warpSize`)
            if groups_only(ctx, [ctx.function_at(k) for k in uses if ctx.device[k]]):
                ctx.report(RULE, v, f"`{name.decode()}` is 32 and every kernel here uses it for groups of 32 "
                           f"threads with no shuffle, vote or `warpSize`: right on a 64-lane wavefront as written "
                           f"(make it `warpSize` only if warp operations come to use it)", subject=name.decode(),
                           confidence="medium", severity="info")
                continue
            if _definition_right(ctx, name, v, uses, [ctx.function_at(k) for k in uses if ctx.device[k]]):
                continue
            edits = namespace_constant_edits(ctx, i, uses)
            how = "its uses in device code read `warpSize` with the patch" if edits else \
                "make the warp size a template parameter chosen on the host"
            if host_flow.function_body(ctx, i) is not None:  # a host function's variable: ask the device
                how = "ask the device: `hipDeviceGetAttribute(&ws, hipDeviceAttributeWarpSize, dev)` or " \
                    "`hipDeviceProp_t::warpSize`"
            ctx.report(RULE, v, f"`{name.decode()}` is 32; every lane and warp computed from it assumes 32-lane "
                       f"warps ({how})", edits=edits, subject=name.decode())
            _report_uses(ctx, name, v, range(i + 1, ctx.n))
            continue
        if fn is not None:
            hi = fn.body[1]
            uses = [k for k in range(i + 1, hi) if ctx.text[k] == name]
            if uses and (logical_32(ctx, fn) or _first_32_only(ctx, uses)) \
                    and _definition_right(ctx, name, v, uses, [fn]):
                continue
            qualifiers = constexpr_as_const(ctx, i)
            if qualifiers is not None and all(const_context(ctx, k) is None for k in uses):
                edits = [ctx.edit(v, "warpSize"), *qualifiers]
        how = "initialise it from `warpSize`" if edits else \
            "make the warp size a template parameter chosen on the host"
        ctx.report(RULE, v, f"`{name.decode()}` is 32; every lane and warp computed from it assumes 32-lane warps "
                   f"({how})", edits=edits, subject=name.decode())
        _report_uses(ctx, name, v, range(i + 1, fn.body[1]) if fn is not None else range(i + 1, ctx.n))
    _check_header_constants(ctx)


def logical_32(ctx: Context, fn) -> bool:
    """``fn`` runs (or calls) a 16..1 shuffle reduction and every lane and warp id beside it counts 32 (none by the
    hardware): a logical warp of 32. On a 64-lane wavefront each 32-lane half reduces on its own and its result is
    stored under its own id of 32, the same sums as on 32-lane warps (reductions.py)."""
    return Reductions.of(ctx).logical_32(fn)


def _host_code(ctx: Context, k: int) -> bool:
    """Token ``k`` is in the body of a host function: not a device one marked through a macro (`#define DEVICE
    __forceinline__ __device__`), which the context does not take for one."""
    body = host_flow.function_body(ctx, k)
    if body is None:
        return False
    m = body[0]
    for _ in range(64):
        m = ctx.prev_code(m)
        if m < 0 or ctx.text[m] in (b";", b"}") and not ctx.in_directive[m]:
            return True
        if ctx.kinds[m] == IDENT and ctx.text[m] in ctx.macros and any(
                ctx.text[v] in (b"__device__", b"__global__") for v in (ctx.macro_value(ctx.text[m]) or [])):
            return False
    return True


def _first_32_only(ctx: Context, uses: list[int]) -> bool:
    """Every use is the bound of an `if (tid < 32)` whose shuffles reduce by offsets 16..1, or inside its branch:
    only threads 0-31 run there, half of a 64-lane wavefront, and the shuffles read among them (`warp_loops.py`)."""
    from hipport.audit.checks.reductions import first_32_part

    return all(first_32_part(ctx, k) for k in uses)


def _definition_right(ctx: Context, name: bytes, at: int, uses: list[int], device_users: list) -> bool:
    """A constant of 32 that nothing here makes wrong, reported as an info: every device use is in a logical warp
    of 32 (`logical_32`) or in the first 32 threads' branch (`_first_32_only`), only host code uses it, or
    nothing in this file uses it at all (a header's definition: each file using it is audited, and judges its
    uses, where they are)."""
    if uses and not device_users and all(_host_code(ctx, k) for k in uses):
        # Host code only (launch sizes, buffers): it reaches a wavefront only through a launch, and a launch of a
        # kernel that counts lanes with `warpSize`, or passes it a width of 32, is reported there
        # (`launch-warps-32`).
        ctx.report(RULE, at, f"`{name.decode()}` is 32 and only host code here uses it (launch sizes, buffers); "
                   f"a launch it sizes for a kernel that counts lanes with `warpSize` is reported at the launch",
                   subject=name.decode(), confidence="medium", severity="info")
        return True
    if uses and not device_users:
        return False  # a `__shared__` array's size, a type's member: sizes on the device
    if device_users and not all(groups_only(ctx, [f]) or logical_32(ctx, f) for f in device_users) \
            and not _first_32_only(ctx, uses):
        return False
    if device_users and _first_32_only(ctx, uses):
        said = (f"`{name.decode()}` is 32 and only bounds threads 0-31 (`if (tid < {name.decode()})`) whose "
                f"shuffles read among themselves: right on a 64-lane wavefront as written")
    elif device_users:
        said = (f"`{name.decode()}` is 32 and every device use here goes with a 16..1 shuffle reduction whose lane "
                f"and warp ids all count 32: each 32-lane half of a 64-lane wavefront reduces on its own, so the "
                f"code is right on AMD as written (change the ids and the offsets together, or not at all)")
    else:
        said = (f"`{name.decode()}` is 32 but nothing in this file computes with it; each file using it is "
                f"audited where it is used")
    ctx.report(RULE, at, said, subject=name.decode(), confidence="medium", severity="info")
    return True


_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc")


def _is_header(path: str) -> bool:
    return path.lower().endswith(_HEADER_SUFFIXES)


def _bare_warp_name(name: bytes) -> bool:
    """`WARP`, `kWarp`: a width only when declared constant (`int warp = 32;` may be anything)."""
    return re.match(rb"(?i)^(?:k_?|c_?|g_?)?warp$", name) is not None


def _const_declared(ctx: Context, name: int) -> bool:
    first = statement_start(ctx, name)
    return any(ctx.text[k] in (b"const", b"constexpr", b"enum") for k in range(first, name)) \
        or ctx.t(ctx.prev_code(name)) in (b"{", b",")  # an enumerator


def namespace_constant_edits(ctx: Context, decl: int, uses: list[int]) -> list:
    """`static const int WS = 32;` / `constexpr int kWarp = 32;` at namespace scope, where `warpSize` cannot
    initialise it (a host-visible constant; no constant at all from ROCm 7.0): each use in device code becomes
    `warpSize`, all together or none. None where a use needs a constant or runs on the host, the name is declared
    again (a parameter or local of that name), a use is qualified (`Cfg::WS`), a 32-lane shuffle reduction goes
    with the ids (reductions.py: ids of 32 keep it right on 64 lanes), or no use meets a warp operation (a group
    of 32 threads is right on AMD too)."""
    if len(ctx.declarations(ctx.text[decl])) != 1 or enclosing_open(ctx, decl, b"{") >= 0 \
            and ctx.t(ctx.prev_code(ctx.prev_code(enclosing_open(ctx, decl, b"{")))) != b"namespace":
        return []  # a class member (used qualified) or a name declared twice
    if not uses:
        return []
    red = Reductions.of(ctx)
    warp_fns = uses_warp_ops(ctx)
    fed = False
    for k in uses:
        fn = ctx.function_at(k)
        if fn is None or not ctx.device[k] or const_context(ctx, k) is not None or red.reaching(fn) is not None \
                or ctx.t(ctx.prev_code(k)) in (b"::", b".", b"->"):
            return []
        fed = fed or fn.body[0] in warp_fns
    return [ctx.edit(k, "warpSize") for k in uses] if fed else []


def _check_header_constants(ctx: Context) -> None:
    """A warp-size constant of 32 from an included header (`#include "config.h"` with `constexpr int kWarpSize =
    32;`): reported at each use here, where the reader is, since the header's own line is reported in its audit."""
    for name, where in ctx.header_constants.items():
        if name in ctx.macros or name in ctx.warp_constants or name not in ctx.words:
            continue  # this file's own definition wins
        if any(ctx.is_decl_name(k) for k in ctx.positions(name)):
            continue
        _report_uses(ctx, name, None, range(ctx.n), where)


def _lane_valued(ctx: Context, first: int, last: int, names: set[bytes]) -> bool:
    """Tokens ``first`` .. ``last`` hold a lane number counted by the hardware: `x % warpSize`,
    `x & (warpSize - 1)`, `__lane_id()`, a lane-named variable or one of ``names`` (set from such a value)."""
    for k in range(first, last):
        t = ctx.text[k]
        if t == b"__lane_id" or (ctx.kinds[k] == IDENT and (t in names or LANE_NAME.match(t))):
            return True
        if t == b"warpSize" and ctx.t(ctx.prev_code(k)) == b"%":
            return True
        if t == b"warpSize" and ctx.t(ctx.next_code(k)) == b"-" and ctx.t(ctx.prev_code(ctx.prev_code(k))) == b"&":
            return True
    return False


def _lane_names(ctx: Context, lo: int, hi: int) -> set[bytes]:
    """Variables of a function body that hold a lane number or run over the lanes of a wavefront: declared from a
    lane value (`int rd = F * (threadIdx.x % warpSize);`), or a loop variable bounded by a multiple of `warpSize`
    (`for (int i = threadIdx.x; i < warpSize * 8; ...)`). One step of def-use, in source order."""
    names: set[bytes] = set()
    for k in range(lo, hi):
        if ctx.kinds[k] != IDENT or ctx.t(ctx.next_code(k)) != b"=" or not ctx.is_decl_name(k):
            continue
        end = statement_end(ctx, k)
        if _lane_valued(ctx, ctx.next_code(k) + 1, end, names):
            names.add(ctx.text[k])
        elif ctx.t(end) == b";" and ctx.t(enclosing_open(ctx, k)) == b"(" and \
                ctx.t(ctx.prev_code(enclosing_open(ctx, k))) == b"for":
            cond_end = statement_end(ctx, end + 1)
            cond = [ctx.text[m] for m in range(end + 1, cond_end)]
            if cond[:1] == [ctx.text[k]] and b"warpSize" in cond and b"*" in cond:
                names.add(ctx.text[k])
    return names


def _check_lane_arrays(ctx: Context) -> None:
    """`__shared__ int4 buf[32 * F];` in a kernel that indexes it per lane with `% warpSize` (or a loop up to
    `warpSize * n`): one slot group per lane of a 32-lane warp, so lanes 32-63 of a wave64 write and read past its
    end. A per-warp array (`[32]`, indexed by `tid / warpSize`) is not one: 32 warps cover more than wave64 needs."""
    if b"__shared__" not in ctx.words or b"warpSize" not in ctx.words or b"warpSize" in ctx.macros:
        return  # `#define warpSize 32` makes the buffer and its indices agree on 32 (reported as a collision)
    waves = wave_conditional_lines(ctx)
    for fn in ctx.functions:
        if not fn.device:
            continue
        lo, hi = fn.body
        names: set[bytes] | None = None
        for i in range(lo, hi):
            if ctx.text[i] != b"__shared__":
                continue
            end = statement_end(ctx, i)
            open_ = next((k for k in range(i, end) if ctx.text[k] == b"["), None)
            if open_ is None or ctx.kinds[ctx.prev_code(open_)] != IDENT or ctx.match(open_) <= open_:
                continue
            close = ctx.match(open_)
            size = [k for k in range(open_ + 1, close) if ctx.kinds[k] != COMMENT]
            # `32 * F` or `F * 32`: 32 lanes times a per-lane stride (a bare `[32]` is the per-warp idiom).
            thirty_twos = [k for k in size if ctx.kinds[k] == LITERAL and int_value(ctx.text[k]) == 32
                        and b"*" in (ctx.t(ctx.prev_code(k)), ctx.t(ctx.next_code(k)))]
            if len(thirty_twos) != 1 or any(ctx.text[k] in (b"/", b"%", b">>") for k in size):
                continue
            line = ctx.lines.line_col(ctx.starts[i])[0]
            if any(a <= line <= b for a, b in waves):
                continue
            name = ctx.text[ctx.prev_code(open_)]
            if names is None:
                names = _lane_names(ctx, lo, hi)
            uses = [k for k in range(end, hi) if ctx.text[k] == name and ctx.t(ctx.next_code(k)) == b"["]
            if not any(_lane_valued(ctx, ctx.next_code(k) + 1, ctx.match(ctx.next_code(k)), names) for k in uses):
                continue
            lit = thirty_twos[0]
            ctx.report(RULE, lit, f"`{name.decode()}` is sized for 32 lanes (`{ctx.span_text(size[0], size[-1] + 1).decode()}`) "
                       f"but indexed per lane with `warpSize`: lanes 32-63 of a 64-lane wavefront go past its end "
                       f"(size it for 64 lanes; `warpSize` is not a constant)", confidence="medium",
                       edits=[ctx.edit(lit, "64")], subject=name.decode())


# Where a warp-size constant of 32 turns into a lane or warp number, a per-lane array or a lane-count test.
_USE_OPERATORS = {b"%", b"/", b"<", b"<=", b">", b">=", b"==", b"!=", b">>", b"-", b"&"}
# A "warp" of 32 that never meets a hardware warp operation is just a group of 32 threads: correct on AMD too.
_HARDWARE_WARP = WARP_OPS | {b"__syncwarp", b"tiled_partition", b"thread_block_tile", b"shfl", b"shfl_down",
                             b"shfl_xor", b"ballot", b"__popc", b"__ffs"}


def _squash(ctx: Context, first: int, last: int) -> bytes:
    return b"".join(ctx.text[m] for m in range(first, last))


def _bit_of_word(ctx: Context, k: int, name: bytes) -> bool:
    """`x / W` or `x % W` in a statement that also shifts by `(x % W)`: the bit and word of a bitmap of 32-bit words
    (`atomicAnd(&w[x / W], ~(MSB >> (x % W)))`), not a lane or warp."""
    op = ctx.prev_code(k)
    operand = _squash(ctx, operand_before(ctx, op), op)
    first = statement_start(ctx, k)
    last = statement_end(ctx, first)
    for m in range(first, last):
        if ctx.text[m] in (b"<<", b">>") and ctx.t(ctx.next_code(m)) == b"(":
            r = ctx.next_code(m)
            if ctx.match(r) > r and _squash(ctx, r + 1, ctx.match(r)) == operand + b"%" + name:
                return True
    return False


def _bits_not_lanes(ctx: Context, first: int, k: int) -> bool:
    """A use of a constant of 32 that counts bits, not lanes (HeCBench gc's `WS`, "warp size and bits per int"):
    a shift amount (`range << (WS / 2)`), the bound of a shift count (`(range >= WS) ? -1 : (MSB >> range)`), or
    a count of words of a size that no thread index enters (`edges / WS + 1`)."""
    p = enclosing_open(ctx, first, b"(")
    if ctx.t(ctx.prev_code(first)) in (b"<<", b">>") or (p >= 0 and ctx.t(ctx.prev_code(p)) in (b"<<", b">>")):
        return True
    before, after = ctx.prev_code(first), ctx.next_code(k)
    if ctx.t(before) in _COMPARE or ctx.t(after) in _COMPARE:
        other = ctx.prev_code(before) if ctx.t(before) in _COMPARE else ctx.next_code(after)
        if ctx.kinds[other] == IDENT:
            first_tok = statement_start(ctx, k)
            stmt = range(first_tok, next((m for m in range(k, min(ctx.n, k + 200)) if ctx.text[m] == b";"), k))
            return any(ctx.text[m] == ctx.text[other] and ctx.t(ctx.prev_code(m)) in (b">>", b"<<") for m in stmt)
    if ctx.t(before) == b"/":
        fn = ctx.function_at(k)
        lo = operand_before(ctx, before)
        words = {ctx.text[m] for m in range(lo, before) if ctx.kinds[m] == IDENT}
        derived = thread_derived(ctx, fn) if fn is not None else set()
        return bool(words) and not words & (THREAD_INDEX | LANE_FUNCS | BLOCK_DIM | derived) and not any(
            BLOCK_NAME.search(w) or LANE_NAME.match(w) for w in words)
    return False


_COMPARE = {b"<", b"<=", b">", b">=", b"==", b"!="}


def _report_uses(ctx: Context, name: bytes, definition: int | None, where: range, defined_at: str = "") -> None:
    """Each device-code use of a warp-size constant of 32 is a place that computes with 32 lanes: the user reads
    the kernel, not the header line that defines the constant, so say it there too (once per line). The constant
    is this file's token ``definition``, or ``defined_at`` ("header.h:line") in an included header."""
    if not ctx.words & _HARDWARE_WARP:
        return
    place = defined_at or f"line {ctx.lines.line_col(ctx.starts[definition])[0]}"
    flagged = ctx.finding_lines(RULE)  # this call adds a line only with a finding there
    for k in ctx.positions_between(name, where.start, where.stop):
        if ctx.in_directive[k] or not ctx.device[k] or ctx.is_decl_name(k):
            continue
        first = k
        while ctx.t(ctx.prev_code(first)) == b"::" and ctx.kinds[ctx.prev_code(ctx.prev_code(first))] == IDENT:
            first = ctx.prev_code(ctx.prev_code(first))  # `Cfg::kWarpThreads`: the operator is before `Cfg`
        before, after = ctx.t(ctx.prev_code(first)), ctx.t(ctx.next_code(k))
        if not (before in _USE_OPERATORS or after in _USE_OPERATORS or (before == b"[" and after == b"]")):
            continue
        if before in (b"%", b"/") and _bit_of_word(ctx, k, name):
            continue
        if _bits_not_lanes(ctx, first, k):
            continue
        line = ctx.lines.line_col(ctx.starts[k])[0]
        if line in flagged:
            continue
        if groups_only(ctx, [ctx.function_at(k)]):
            continue  # groups of 32 threads, right on AMD: the constant's own line says so once
        flagged.add(line)
        user = ctx.function_at(k)
        reduction = Reductions.of(ctx).reaching(user)
        # ... unless the function also runs a vote or an absolute-lane shuffle that sees both halves (gc's
        # `who = __ffs(bal) - 1; __shfl_sync(m, v, who)` beside ids of 32): then they are not one logical warp.
        if reduction is not None and not Reductions.of(ctx).ids(user).hardware \
                and not Reductions.of(ctx).crosses(user):
            # With a 32-lane shuffle reduction the ids of 32 are what keeps it right on 64 lanes (reductions.py).
            red_line = ctx.lines.line_col(ctx.starts[reduction])[0]
            ctx.report(RULE, k, f"`{name.decode()}` (32, {place}) used as the warp size here, with the "
                       f"32-lane shuffle reduction of line {red_line}: right on a 64-lane wavefront as long as they "
                       f"change together", confidence="medium", subject=name.decode(), severity="info")
            continue
        ctx.report(RULE, k, f"`{name.decode()}` (32, {place}) used as the warp size here: on a 64-lane "
                   f"wavefront this lane, warp or size computation is wrong", confidence="medium",
                   subject=name.decode())


__all__ = ["check", "RULE", "_ASSIGN"]
