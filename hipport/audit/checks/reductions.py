"""Which functions hold a shuffle reduction sized for 32 lanes, which functions reach one through calls, and the
lane and warp ids that go with it: the pieces of one 32-lane assumption that a patch must keep together.

Why it matters: a butterfly or tree reduction with offsets 16..1 reduces each half of a 64-lane wavefront on its
own. With lane and warp ids of 32 (`tid % 32`, `tid / 32`, a `WARP_SIZE` of 32) that is still right on AMD: lanes
0 and 32 each hold the sum of their 32 threads, stored under their own warp id. Changing only the offsets (to
`warpSize / 2`) or only the ids (to `warpSize`) makes it wrong; only ids counted by the hardware (`warpSize`,
`__lane_id()`) make the offsets 16..1 wrong."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field

from hipport.audit.checks.common import (BALLOTS, SHUFFLES, SYNC_BUILTINS, WARP_OPS, enclosing_open, is_lane_like,
                                         operand_before, split_template_args, statement_end, statement_start,
                                         thread_derived, user_defined)
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, THREAD_INDEX, Context, int_value

OFFSET_SHUFFLES = {b"__shfl_down_sync", b"__shfl_xor_sync", b"__shfl_up_sync", b"__shfl_down", b"__shfl_xor",
                   b"__shfl_up"}
_HALVING = (b"/= 2", b">>= 1", b"/ 2", b">> 1")
_DOUBLING = (b"*= 2", b"<<= 1", b"* 2", b"<< 1")
# operator, divisor value: a lane id (`x % 32`, `x & 31`) or a warp id (`x / 32`, `x >> 5`) of 32-lane warps
_BLOCK_DIM = {b"blockDim", b"hipBlockDim_x"}
_ID_32 = {(b"%", 32), (b"&", 31), (b"/", 32), (b">>", 5)}
# A project's wrapper of an offset shuffle (`op.warp_shfl_down(v, o)`, `WARP_SHFL_XOR`, `shuffle_down`).
SYNC_NAMES = SYNC_BUILTINS - {b"__syncwarp"}
_SHUFFLE_WRAPPER = re.compile(rb"(?i)(?:shfl|shuffle)_?(?:down|xor|up)")


@dataclass
class Ids:
    """Lane/warp id computations seen with a reduction: token indices of the operator."""

    fixed: list[int] = field(default_factory=list)    # counted in 32s (`tid % 32`, `tid / WARP_SIZE` = 32)
    named: list[int] = field(default_factory=list)    # of those, through a named constant of 32
    hardware: list[int] = field(default_factory=list)  # counted by the hardware (`% warpSize`, `__lane_id()`)


def loop_offsets_32(ctx: Context, cond: tuple[int, int], init: tuple[int, int], incr: tuple[int, int],
                    body: tuple[int, int]) -> int | None:
    """The literal of a `for` loop over shuffle offsets 16..1 (`o = 16; o > 0; o /= 2`, `o = 1; o < 32; o *= 2`,
    `o <= 16`) whose body shuffles by offset, or None."""
    if not any(ctx.text[k] in OFFSET_SHUFFLES or (_SHUFFLE_WRAPPER.search(ctx.text[k]) and ctx.kinds[k] == IDENT)
               for k in range(*body)):
        return None
    init_lits = [k for k in range(*init) if ctx.kinds[k] == LITERAL]
    cond_lits = [k for k in range(*cond) if ctx.kinds[k] == LITERAL]
    incr_text = b" ".join(ctx.text[k] for k in range(*incr))
    if any(x in incr_text for x in _HALVING) and len(init_lits) == 1 and int_value(ctx.text[init_lits[0]]) == 16:
        return init_lits[0]
    if any(x in incr_text for x in _DOUBLING) and len(cond_lits) == 1:
        k = cond_lits[0]
        v, op = int_value(ctx.text[k]), ctx.t(ctx.prev_code(k))
        # offsets 1, 2, .., 16: `< 32`, `!= 32`, `<= 16`, or any bound between (`mask < 0x1f`)
        if v is not None and ((16 < v <= 32 and op == b"<") or (v == 32 and op == b"!=")
                              or (16 <= v < 32 and op == b"<=")):
            return k
    return _named_offsets_32(ctx, cond, init, incr_text)


def _named_offsets_32(ctx: Context, cond: tuple[int, int], init: tuple[int, int], incr_text: bytes) -> int | None:
    """The same loop written with the project's own constant of 32 (`o = WARP_SIZE / 2; o > 0; o /= 2`, `o < W`
    with `#define W 32`, bm3d's `#define warpSize 32`): the constant's token, or None. HIP's own `warpSize` is
    not one (its loop counts the hardware's lanes)."""
    def named_32(first: int, last: int) -> int | None:
        code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT and ctx.text[k] not in (b"(", b")")]
        names = [k for k in code if ctx.kinds[k] == IDENT]
        if len(names) != 1 or not value_is_32(ctx, ctx.text[names[0]]):
            return None
        if ctx.text[names[0]] == b"warpSize" and hip_warp_size(ctx):
            return None
        return names[0]

    if any(x in incr_text for x in _HALVING):
        eq = next((k for k in range(*init) if ctx.text[k] == b"="), None)
        if eq is None:
            return None
        rest = b"".join(ctx.text[k] for k in range(eq + 1, init[1]) if ctx.kinds[k] not in (COMMENT, IDENT))
        if rest.replace(b"(", b"").replace(b")", b"") in (b"/2", b">>1"):
            return named_32(eq + 1, init[1])
        return None
    if any(x in incr_text for x in _DOUBLING):
        ops = [k for k in range(*cond) if ctx.text[k] in (b"<", b"!=")]
        if len(ops) == 1:
            return named_32(ops[0] + 1, cond[1])
    return None


def value_is_32(ctx: Context, name: bytes) -> bool:
    """`#define NAME 32`, or `NAME = 32` declared somewhere in the file or a warp-size constant of 32 of a header
    it includes."""
    known = ctx.__dict__.setdefault("_value_is_32", {})  # asked for every id a file computes: once per name
    if name not in known:
        known[name] = _value_is_32(ctx, name)
    return known[name]


def _value_is_32(ctx: Context, name: bytes) -> bool:
    body = ctx.macro_value(name)
    if body is not None:
        vals = [k for k in body if ctx.text[k] not in (b"(", b")")]
        return len(vals) == 1 and int_value(ctx.text[vals[0]]) == 32
    for k in ctx.positions(name):
        if k >= ctx.n - 2:
            break
        if ctx.t(ctx.next_code(k)) == b"=" and ctx.is_decl_name(k):
            v = ctx.next_code(ctx.next_code(k))
            return int_value(ctx.text[v]) == 32 and ctx.t(ctx.next_code(v)) in (b";", b",")
    return name in ctx.header_constants


class Reductions:
    """Computed once per file: functions holding a 16..1 shuffle reduction, the functions calling them, and the
    lane/warp ids of each."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.by_fn: dict[int, int] = {}  # function body start -> literal of its first 32-lane reduction
        for fn in ctx.functions:
            if not fn.device:
                continue
            for i in range(*fn.body):
                if ctx.text[i] == b"for":
                    lit = _for_offsets(ctx, i)
                    if lit is not None:
                        self.by_fn.setdefault(fn.body[0], lit)
                elif ctx.text[i] in OFFSET_SHUFFLES and ctx.is_call(i) and _ladder_from_16(ctx, i, fn):
                    self.by_fn.setdefault(fn.body[0], i)
        self._names = {ctx.text[fn.name_index]: fn for fn in ctx.functions if fn.body[0] in self.by_fn}
        self._ids: dict[int, Ids] = {}
        # Asked again for every id and use of a constant: each answered once per function (by body start).
        self._reaching: dict[int, int | None] = {}
        self._groups: dict[int, list] = {}
        self._group_ids: dict[int, Ids] = {}
        self._rank = {id(fn): k for k, fn in enumerate(ctx.functions)}
        self._callees: dict[int, list] | None = None
        self._components: dict[int, int] | None = None
        self._members: dict[int, list] | None = None  # component root -> its functions
        self._logical: dict[int, bool] = {}  # component root -> `logical_32`'s answer, the same for each member
        self._crosses: dict[int, int] = {}

    @classmethod
    def of(cls, ctx: Context) -> Reductions:
        """One analysis per file, shared by the checks that need it."""
        if getattr(ctx, "_reductions", None) is None:
            ctx._reductions = cls(ctx)
        return ctx._reductions

    def offset_edit(self, at: int) -> list | None:
        """The patch of the reduction's offsets alone (a loop bound, and any width of 32 in the function), or None
        for an unrolled ladder, which needs a step added."""
        ctx = self.ctx
        if ctx.kinds[at] != LITERAL:
            return None
        new = "warpSize" if int_value(ctx.text[at]) == 32 else "warpSize / 2"
        edits = [ctx.edit(at, new)]
        fn = ctx.function_at(at)
        for k in range(*fn.body):
            if ctx.text[k] in SHUFFLES and ctx.is_call(k):
                args = ctx.call_args(k) or []
                w = SHUFFLES[ctx.text[k]] + 2
                if len(args) > w and int_value(ctx.span_text(*args[w]).strip()) == 32:
                    edits.append(ctx.edit(args[w][0], "warpSize", args[w][1] - 1))
        return edits

    def reaching(self, fn) -> int | None:
        """The reduction ``fn`` holds or calls directly, as a token index; None when none."""
        if fn is None:
            return None
        if fn.body[0] in self.by_fn:
            return self.by_fn[fn.body[0]]
        if fn.body[0] not in self._reaching:
            ctx = self.ctx
            found = None
            for k in range(*fn.body):
                callee = self._names.get(ctx.text[k])
                if callee is not None and called_at(ctx, k):
                    found = self.by_fn[callee.body[0]]
                    break
            self._reaching[fn.body[0]] = found
        return self._reaching[fn.body[0]]

    def group(self, fn) -> list:
        """``fn`` and the functions of the file that call it: where its lanes and warps are numbered."""
        if fn.body[0] not in self._groups:
            ctx = self.ctx
            callers = {}
            for k in ctx.positions(ctx.text[fn.name_index]):  # the calls, then the functions holding them
                if k != fn.name_index and called_at(ctx, k):
                    for other in ctx.functions_holding(k):
                        if other is not fn and other.device:
                            callers[id(other)] = other
            self._groups[fn.body[0]] = [fn, *sorted(callers.values(), key=lambda f: self._rank[id(f)])]
        return self._groups[fn.body[0]]

    def ids(self, fn) -> Ids:
        """The lane and warp ids computed in ``fn`` and its callers (one answer per function: not to be changed)."""
        if fn.body[0] in self._group_ids:
            return self._group_ids[fn.body[0]]
        found = Ids()
        for f in self.group(fn):
            if f.body[0] not in self._ids:
                self._ids[f.body[0]] = _ids_in(self.ctx, f)
            found.fixed += self._ids[f.body[0]].fixed
            found.named += self._ids[f.body[0]].named
            found.hardware += self._ids[f.body[0]].hardware
        # A caller that also runs a reduction over the hardware's lanes (`warp_sum` from `warpSize / 2` beside
        # this one from 16) mixes the widths: its ids are not one logical warp of 32.
        members = {id(f) for f in self.group(fn)}
        for f in self.group(fn):
            for other in self._called_by(f):
                if id(other) in members or not other.device:
                    continue
                if other.body[0] not in self._ids:
                    self._ids[other.body[0]] = _ids_in(self.ctx, other)
                found.hardware += self._ids[other.body[0]].hardware
        self._group_ids[fn.body[0]] = found
        return found

    def _called_by(self, fn) -> list:
        """The file's functions that ``fn`` calls (the map is made once a file, from the names' positions)."""
        if self._callees is None:
            ctx = self.ctx
            self._callees = {}
            for other in ctx.functions:
                for k in ctx.positions(ctx.text[other.name_index]):
                    if k != other.name_index and called_at(ctx, k):
                        for holder in ctx.functions_holding(k):
                            found = self._callees.setdefault(holder.body[0], [])
                            if other not in found:
                                found.append(other)
        return self._callees.get(fn.body[0], [])

    def logical_32(self, fn) -> bool:
        """``fn`` belongs with a 16..1 shuffle reduction (the functions joined to it by calls, either way, hold
        one), they number lanes or warps in 32s, and none counts lanes by the hardware (`warpSize`,
        `__lane_id()`) or runs an operation that sees both halves of a 64-lane wavefront: a logical warp of 32
        throughout, right on a 64-lane wavefront (see the module's text)."""
        if fn is None:
            return False
        if self._components is None:
            self._components = self._join()
        if self._members is None:  # once per file: asked for every id of every kernel
            self._members = {}
            for f in self.ctx.functions:
                self._members.setdefault(self._components.get(f.body[0]), []).append(f)
        root = self._components.get(fn.body[0])
        if root not in self._logical:
            self._logical[root] = self._logical_component(self._members.get(root, []))
        return self._logical[root]

    def _logical_component(self, members: list) -> bool:
        if not any(f.body[0] in self.by_fn for f in members):
            return False
        fixed = False
        for f in members:
            if f.body[0] not in self._ids:
                self._ids[f.body[0]] = _ids_in(self.ctx, f)
            if self._ids[f.body[0]].hardware or self.crossing_op(f) >= 0:
                return False
            fixed = fixed or bool(self._ids[f.body[0]].fixed)
        return fixed  # a reduction alone (a helper no caller here numbers) may serve ids of `warpSize`

    def butterfly_alone(self, fn) -> bool:
        """Every 16..1 reduction of ``fn`` is an xor butterfly (`v = __shfl_xor_sync(m, v, i)`, i = 1..16), the
        functions joined to it by calls count no hardware lane and run nothing that sees both 32-lane halves, and
        its results leave only through memory (a kernel, or a `void` function with no reference parameter). Lane
        k xor an offset below 32 stays in k's 32-lane half, so every lane of a 64-lane wavefront computes what it
        computes in a 32-lane warp, ids or none (exllamav2's Hadamard transform of 32 values per group). A helper
        returning its sum may serve ids of `warpSize` in a file out of sight: not this."""
        if fn is None or not fn.device or fn.body[0] not in self.by_fn or not _results_stay(self.ctx, fn):
            return False
        if self.ids(fn).hardware or not _xor_only(self.ctx, fn):
            return False
        if self._components is None:
            self._components = self._join()
        root = self._components.get(fn.body[0])
        for f in self.ctx.functions:
            if self._components.get(f.body[0]) != root:
                continue
            if f.body[0] not in self._ids:
                self._ids[f.body[0]] = _ids_in(self.ctx, f)
            if self._ids[f.body[0]].hardware or self.crossing_op(f) >= 0:
                return False
        return True

    def crosses(self, fn) -> bool:
        """``fn`` itself runs a warp operation that sees both 32-lane halves of a 64-lane wavefront
        (`_crosses_halves`): beside it, its ids of 32, or the reduction it holds, are not one logical warp of 32."""
        return fn is not None and self.crossing_op(fn) >= 0

    def crossing_op(self, f) -> int:
        """The first such operation of ``f`` (its name's token), or -1."""
        if f.body[0] not in self._crosses:
            self._crosses[f.body[0]] = _crosses_halves(self.ctx, f)
        return self._crosses[f.body[0]]

    def _join(self) -> dict[int, int]:
        """Body start -> a representative, for the file's functions joined by calls."""
        parent = {fn.body[0]: fn.body[0] for fn in self.ctx.functions}

        def root(b: int) -> int:
            while parent[b] != b:
                parent[b] = parent[parent[b]]
                b = parent[b]
            return b

        for fn in self.ctx.functions:
            for callee in self._called_by(fn):
                parent[root(fn.body[0])] = root(callee.body[0])
        return {b: root(b) for b in parent}

    def lines(self, tokens: list[int]) -> str:
        ctx = self.ctx
        return ", ".join(str(n) for n in sorted({ctx.lines.line_col(ctx.starts[k])[0] for k in tokens}))


_XOR = (b"__shfl_xor_sync", b"__shfl_xor")
_QUALIFIERS = {b"__device__", b"__host__", b"__forceinline__", b"inline", b"__inline__", b"static", b"__noinline__"}


def _xor_only(ctx: Context, fn) -> bool:
    """Each 16..1 loop of ``fn`` shuffles only by xor, and no unrolled ladder from 16 is another shuffle."""
    for i in range(*fn.body):
        if ctx.text[i] == b"for" and _for_offsets(ctx, i) is not None:
            body = split_for(ctx, i)[3]
            if any(ctx.text[k] in OFFSET_SHUFFLES and ctx.is_call(k) and ctx.text[k] not in _XOR
                   for k in range(*body)):
                return False
        elif ctx.text[i] in OFFSET_SHUFFLES and ctx.text[i] not in _XOR and ctx.is_call(i) \
                and _ladder_from_16(ctx, i, fn):
            return False
    return True


def _results_stay(ctx: Context, fn) -> bool:
    """``fn`` is a kernel, or returns `void` and takes no non-const reference: what it computes leaves only
    through memory, never as a value a caller goes on reducing."""
    if fn.kernel:
        return True
    m, void = ctx.prev_code(fn.name_index), False
    while m >= 0 and (ctx.text[m] in _QUALIFIERS or ctx.text[m] == b"void"):
        void = void or ctx.text[m] == b"void"
        m = ctx.prev_code(m)
    if not void:
        return False
    open_, close = fn.params
    const = False
    for k in range(open_ + 1, close):
        if ctx.text[k] == b",":
            const = False
        elif ctx.text[k] == b"const":
            const = True
        elif ctx.text[k] in (b"&", b"&&") and not const:
            return False
    return True


def called_at(ctx: Context, k: int) -> bool:
    """Token ``k`` names a function called there: `f(x)`, or with template arguments, `f<T>(x)` (a block reduction
    calling `warpReduceSum<T>(val)` is one 32-lane assumption with it). Asked only of names the file defines, so
    a qualified call (`B::Warps()`, `op.warp_shfl_down(v, o)`) counts too."""
    if ctx.kinds[k] != IDENT:
        return False
    if ctx.t(ctx.next_code(k)) == b"(":
        return True
    if ctx.t(ctx.next_code(k)) != b"<":
        return False
    split = split_template_args(ctx, ctx.next_code(k))
    return split is not None and ctx.t(ctx.next_code(split[1])) == b"("


def _crosses_halves(ctx: Context, fn) -> int:
    """``fn`` runs a warp operation that may see both 32-lane halves of a 64-lane wavefront: a vote or ballot
    (`__any_sync`, `__ballot`: the whole wavefront's), or a shuffle from an absolute lane with no width of 32 or
    less (`__shfl_sync(m, v, k)`: lanes 32-63 read lane k of the lower half). Offset shuffles are judged with the
    reduction they belong to; an index shuffle with `width` <= 32 stays inside its half."""
    masks = None
    for k in range(*fn.body):
        t = ctx.text[k]
        if t not in WARP_OPS or t in OFFSET_SHUFFLES or not ctx.is_call(k):
            continue
        if in_first_32_tail(ctx, k, named=True):
            continue  # only threads 0-31 run it (`if (tid < 32)`, a 16..1 tail): lanes 32-63 take no part
        if t in BALLOTS or t in (b"__ballot_sync", b"__any_sync", b"__all_sync"):
            if masks is None:
                masks = _mask_only(ctx, fn)
            if k in masks:
                continue
        if t in SHUFFLES and confined_index_shuffle(ctx, fn, k):
            continue
        return k
    return -1


def confined_index_shuffle(ctx: Context, fn, k: int) -> bool:
    """The shuffle called at ``k`` in ``fn`` has a `width` of 32 or less, or reads a value lanes j and j + 32
    hold alike (`_same_in_both_halves`): no lane gets a value from the other 32-lane half it would not get from
    its own."""
    t = ctx.text[k]
    args = ctx.call_args(k) or []
    w = SHUFFLES[t] + 2
    value = int_value(ctx.span_text(*args[w]).strip()) if len(args) > w else None
    return (value is not None and 0 < value <= 32) or _same_in_both_halves(ctx, fn, args, SHUFFLES[t])


def _same_in_both_halves(ctx: Context, fn, args: list, vi: int) -> bool:
    """`__shfl(value, 0)` where `value` depends on the thread only through its lane of 32 (`value = (tid & 31) ==
    0 ? arg : 0`, the rest literals and parameters): lanes k and k + 32 hold the same, so lanes 32-63 reading lane
    k of the lower half get what lane k + 32 holds, as on 32-lane warps."""
    if len(args) <= vi + 1:
        return False
    src = [m for m in range(*args[vi + 1]) if ctx.kinds[m] != COMMENT]
    val = [m for m in range(*args[vi]) if ctx.kinds[m] != COMMENT]
    lane = int_value(ctx.text[src[0]]) if len(src) == 1 else None
    if lane is None or not 0 <= lane < 32 or len(val) != 1 or ctx.kinds[val[0]] != IDENT:
        return False
    name = ctx.text[val[0]]
    writes = [m for m in ctx.positions_between(name, *fn.body) if ctx.t(ctx.next_code(m)) in _WRITES]
    if len(writes) != 1 or not ctx.is_decl_name(writes[0]) or ctx.t(ctx.next_code(writes[0])) != b"=":
        return False
    params = {n.encode() for n in fn.param_names}
    m = ctx.next_code(ctx.next_code(writes[0]))
    while m < val[0] and ctx.text[m] != b";":
        t = ctx.text[m]
        if t in THREAD_INDEX:  # only as `threadIdx.x & 31` (`& 0x1f`, `% 32`)
            op = ctx.next_code(ctx.next_code(ctx.next_code(m)))
            if (ctx.t(op), int_value(ctx.t(ctx.next_code(op)))) not in ((b"&", 31), (b"%", 32)):
                return False
            m = ctx.next_code(op)
        elif ctx.kinds[m] == IDENT and t not in params:
            return False
        m = ctx.next_code(m)
    return True


_WRITES = {b"=", b"+=", b"-=", b"*=", b"/=", b"|=", b"&=", b"^=", b"<<=", b">>=", b"++", b"--"}


def _mask_only(ctx: Context, fn) -> set[int]:
    """Votes and ballots of ``fn`` whose result only ever serves as the mask of `*_sync` calls (`mask =
    __ballot_sync(~0, tid < n); __shfl_down_sync(mask, v, o)`, `__shfl_sync(__activemask(), ...)`): they choose
    the lanes taking part and count none."""
    out: set[int] = set()
    for k in range(*fn.body):
        if ctx.text[k] not in BALLOTS and ctx.text[k] not in (b"__ballot_sync", b"__any_sync", b"__all_sync"):
            continue
        if not ctx.is_call(k):
            continue
        p = ctx.prev_code(k)
        if ctx.t(p) in (b"(", b","):
            outer = ctx.open_before(k)
            name = ctx.prev_code(outer) if outer >= 0 else -1
            if name >= 0 and ctx.text[name] in SYNC_NAMES and ctx.t(outer) == b"(" and ctx.next_code(outer) == k:
                out.add(k)  # the first argument of a `*_sync` call
            continue
        if ctx.t(p) != b"=" or ctx.kinds[ctx.prev_code(p)] != IDENT or ctx.t(ctx.next_code(ctx.match(
                ctx.next_code(k)))) != b";":
            continue
        var = ctx.text[ctx.prev_code(p)]
        uses = [m for m in ctx.positions_between(var, ctx.prev_code(p) + 1, fn.body[1])]
        if uses and all(ctx.t(ctx.prev_code(m)) == b"(" and ctx.t(ctx.next_code(m)) == b","
                        and ctx.text[ctx.prev_code(ctx.prev_code(m))] in SYNC_NAMES for m in uses):
            out.add(k)
    return out


def split_for(ctx: Context, i: int):
    """The three clauses and the body of the `for` at token ``i``, as (start, end) token ranges; None if it is not one."""
    p = ctx.next_code(i)
    if ctx.t(p) != b"(" or ctx.match(p) < p:
        return None
    close = ctx.match(p)
    semis, depth = [], 0
    for k in range(p + 1, close):
        if ctx.text[k] in (b"(", b"["):
            depth += 1
        elif ctx.text[k] in (b")", b"]"):
            depth -= 1
        elif ctx.text[k] == b";" and depth == 0:
            semis.append(k)
    if len(semis) != 2:
        return None
    body_start = ctx.next_code(close)
    if ctx.t(body_start) == b"{":
        body_end = ctx.match(body_start)
    else:
        body_end = body_start
        while body_end < ctx.n and ctx.text[body_end] != b";":
            if ctx.text[body_end] in (b"(", b"[", b"{") and ctx.match(body_end) > body_end:
                body_end = ctx.match(body_end)
            body_end += 1
    return (p + 1, semis[0]), (semis[0] + 1, semis[1]), (semis[1] + 1, close), (body_start, body_end)


def hip_warp_size(ctx: Context) -> bool:
    """`warpSize` here is HIP's (the hardware's width), not a project's `#define warpSize 32` or constant."""
    known = _HIP_WARP_SIZE.get(ctx)
    if known is None:  # asked at every `warpSize` of the file: its declarations are looked for once
        known = _HIP_WARP_SIZE[ctx] = b"warpSize" not in ctx.macros and b"warpSize" not in ctx.header_constants \
            and not any(ctx.is_decl_name(k) for k in ctx.positions(b"warpSize"))
    return known


_HIP_WARP_SIZE: "weakref.WeakKeyDictionary[Context, bool]" = weakref.WeakKeyDictionary()


def group_lanes(ctx: Context, red: "Reductions", fn) -> set[bytes]:
    """In a function whose lane and warp ids all count 32 (`lane = tid % 32`, `& 31`, a constant of 32; none by
    the hardware), the variables holding such a lane: numbers 0..31 inside a group of 32 threads on any
    wavefront. Empty for a function with a hardware id, whose lanes run to 63."""
    if fn is None:
        return set()
    ids = red.ids(fn)
    if not ids.fixed or ids.hardware:
        return set()
    names: set[bytes] = set()
    for k in ids.fixed:
        if ctx.text[k] not in (b"%", b"&"):
            continue
        first = statement_start(ctx, k)
        for m in range(first, k):
            nxt = ctx.next_code(m)
            if ctx.kinds[m] == IDENT and ctx.t(nxt) in (b"=", b"(", b"{") and (ctx.t(nxt) == b"=" or
                                                                               ctx.match(nxt) > k):
                names.add(ctx.text[m])
                break
    return names


def guarded_by_lane(ctx: Context, call: int, lanes: set[bytes]) -> bool:
    """`__shfl_up(v, d)` whose result is only taken where `lane >= d` (or `> d`), ``lane`` one of ``lanes``: the
    lanes that would read from the group below (or from another group of 32 on a 64-lane wavefront) never use
    what they read, so the scan stays inside each group."""
    args = ctx.call_args(call)
    vi = SHUFFLES.get(ctx.text[call])
    if not lanes or not args or vi is None or len(args) <= vi + 1:
        return False
    offset = ctx.span_text(*args[vi + 1]).strip()
    fn = ctx.function_at(call)
    if fn is None or not offset:
        return False
    for k in range(call, fn.body[1]):
        if ctx.text[k] in (b">=", b">") and ctx.text[ctx.prev_code(k)] in lanes:  # `lane > d` skips one more
            r = ctx.next_code(k)
            if ctx.span_text(r, statement_end(ctx, r)).strip().split(b")")[0].strip() == offset:
                return True
    return False


def _for_offsets(ctx: Context, i: int) -> int | None:
    parts = split_for(ctx, i)
    if parts is None:
        return None
    init, cond, incr, body = parts
    return loop_offsets_32(ctx, cond, init, incr, body)


def _ladder_from_16(ctx: Context, i: int, fn) -> bool:
    """`v += __shfl_xor(v, 16); ... (v, 8) ...`: an unrolled reduction from offset 16 with no offset-32 step. A
    project's own overload of the name (`float4 __shfl_down(float4 v, unsigned d, unsigned w = 32)`) counts when
    its body passes the offset on to HIP's shuffles."""
    if user_defined(ctx, ctx.text[i]) and not _shuffle_overload(ctx, ctx.text[i]):
        return False
    args = ctx.call_args(i)
    vi = SHUFFLES.get(ctx.text[i], 0)
    if not args or len(args) <= vi + 1:
        return False
    code = [k for k in range(*args[vi + 1]) if ctx.kinds[k] != COMMENT]
    if len(code) != 1 or int_value(ctx.text[code[0]]) != 16:
        return False
    for k in range(*fn.body):
        if ctx.text[k] in OFFSET_SHUFFLES and k != i:
            other = ctx.call_args(k)
            ok = SHUFFLES.get(ctx.text[k], 0) + 1
            if other and len(other) > ok and ctx.span_text(*other[ok]).strip() in (b"32", b"warpSize / 2",
                                                                                   b"warpSize/2"):
                return False
    return True


def _shuffle_overload(ctx: Context, name: bytes) -> bool:
    """Every definition the file gives the shuffle ``name`` is a function whose body calls an offset shuffle."""
    defs = [fn for fn in ctx.functions if ctx.text[fn.name_index] == name]
    return bool(defs) and name not in ctx.macros and all(
        any(ctx.text[k] in OFFSET_SHUFFLES and k != fn.name_index for k in range(*fn.body)) for fn in defs)


def thread_macros(ctx: Context) -> set[bytes]:
    """Object-like macros that stand for a thread index (`#define TX threadIdx.x`)."""
    found = ctx.__dict__.get("_thread_macro_names")
    if found is None:
        found = ctx._thread_macro_names = {name for name in ctx.macros if (ctx.macro_value(name) or [None])[0]
                                           is not None and ctx.text[ctx.macro_value(name)[0]] in THREAD_INDEX}
    return found


def _ids_in(ctx: Context, fn) -> Ids:
    found = Ids()
    derived = thread_derived(ctx, fn) | thread_macros(ctx)
    for k in range(*fn.body):
        t = ctx.text[k]
        if t == b"__shared__":  # a per-warp array sized by a constant of 32
            end = k
            while end < fn.body[1] and ctx.text[end] not in (b";", b"="):
                if ctx.text[end] == b"[" and ctx.match(end) == end + 2 and ctx.kinds[end + 1] == IDENT \
                        and value_is_32(ctx, ctx.text[end + 1]):
                    found.fixed.append(end + 1)
                    found.named.append(end + 1)
                end += 1
            continue
        if t == b"__lane_id" and ctx.is_call(k):
            found.hardware.append(k)
            continue
        if t == b"warpSize" and hip_warp_size(ctx) and ctx.t(ctx.prev_code(k)) not in (b"%", b"&", b"("):
            # HIP's width anywhere else (a reduction from `warpSize / 2`, a loop to it): the function counts the
            # hardware's lanes too, so its ids of 32 are not one logical warp of 32 throughout
            found.hardware.append(k)
            continue
        if t not in (b"%", b"/", b"&", b">>"):
            continue
        lo = operand_before(ctx, k)
        if lo >= k:
            continue
        if t == b"/" and any(ctx.text[m] in _BLOCK_DIM for m in range(lo, k)):
            r = ctx.next_code(k)  # `blockDim.x / 32`: the number of warps, counted in 32s
            if int_value(ctx.text[r]) == 32 or (ctx.kinds[r] == IDENT and value_is_32(ctx, ctx.text[r])):
                found.fixed.append(k)
                if ctx.kinds[r] == IDENT:
                    found.named.append(k)
            continue
        if not any(ctx.text[m] in THREAD_INDEX or ctx.text[m] in derived for m in range(lo, k)):
            continue
        r = ctx.next_code(k)
        if ctx.kinds[r] == LITERAL and (t, int_value(ctx.text[r])) in _ID_32:
            found.fixed.append(k)
        elif ctx.kinds[r] == IDENT and t in (b"%", b"/") and ctx.text[r] != b"warpSize" and value_is_32(ctx, ctx.text[r]):
            found.fixed.append(k)
            found.named.append(k)
        elif ctx.text[r] == b"warpSize" or (t == b"&" and ctx.t(r) == b"(" and ctx.t(ctx.next_code(r)) == b"warpSize"):
            found.hardware.append(k)
    return found


def uses_warp_ops(ctx: Context) -> set[int]:
    """Body starts of the device functions that run a warp operation themselves or through calls in the file.
    The calls are found from the names (`ctx.positions`), not by a pass over every body per round."""
    def bodies_holding(k: int) -> list[int]:  # `{` included, `}` not
        return [fn.body[0] for fn in ctx.functions_holding(k) if fn.body[0] <= k < fn.body[1]]

    direct = {b for op in WARP_OPS for k in ctx.positions(op) if ctx.is_call(k) for b in bodies_holding(k)}
    names = {ctx.text[fn.name_index]: fn for fn in ctx.functions}
    calls: dict[int, set[int]] = {}  # body start -> body starts of the file's functions it calls
    for name, callee in names.items():
        for k in ctx.positions(name):
            if k != callee.name_index and called_at(ctx, k):
                for b in bodies_holding(k):
                    calls.setdefault(b, set()).add(callee.body[0])
    for _ in range(4):
        grew = False
        for fn in ctx.functions:
            if fn.body[0] in direct:
                continue
            if any(b in direct for b in calls.get(fn.body[0], ())):
                direct.add(fn.body[0])
                grew = True
        if not grew:
            break
    return direct


__all__ = ["Ids", "OFFSET_SHUFFLES", "Reductions", "called_at", "confined_index_shuffle", "group_lanes",
           "guarded_by_lane", "loop_offsets_32",
           "uses_warp_ops", "value_is_32", "IDENT"]


# `if (tid < 32)` tails: only threads 0-31 run them (warp_loops and masks read these too).

def if_branch(ctx: Context, i: int) -> tuple[int, int]:
    """First and last token of what the `if` at ``i`` runs: its block, or its one statement."""
    close = ctx.match(ctx.next_code(i))
    body = ctx.next_code(close)
    end = ctx.match(body) if ctx.t(body) == b"{" else body
    while ctx.t(body) != b"{" and end < ctx.n and ctx.text[end] != b";":
        end += 1
    return body, end


def tail_from_16(ctx: Context, body: int, end: int) -> bool:
    """The branch reduces by shuffle offsets 16..1 (a loop or a ladder) and by no offset counted from `warpSize`."""
    found = False
    for k in range(body, max(end, body) + 1):
        if ctx.text[k] == b"for":
            parts = split_for(ctx, k)
            if parts is not None:
                init, cond, incr, loop = parts
                if loop_offsets_32(ctx, cond, init, incr, loop) is not None:
                    found = True
                elif any(ctx.text[m] == b"warpSize" for m in range(init[0], incr[1])):
                    return False
        elif ctx.text[k] in OFFSET_SHUFFLES and ctx.is_call(k):
            args = ctx.call_args(k) or []
            pos = SHUFFLES[ctx.text[k]] + 1
            if len(args) > pos:
                offset = [m for m in range(*args[pos]) if ctx.kinds[m] != COMMENT]
                if any(ctx.text[m] == b"warpSize" for m in offset):
                    return False
                if len(offset) == 1 and int_value(ctx.text[offset[0]]) == 16:
                    found = True
    return found


def in_first_32_tail(ctx: Context, i: int, named: bool = False) -> bool:
    """Token ``i`` is in the branch of an `if (tid < 32)` whose shuffles count offsets 16..1 (with ``named``, the
    32 may be a project's constant: `if (threadIdx.x < WARP_SIZE)`)."""
    lit = inside_first_32(ctx, i, named)
    if lit is None:
        return False
    k = lit
    while ctx.text[k] != b"if":
        k = ctx.prev_code(k)
    return tail_from_16(ctx, *if_branch(ctx, k))


def first_32_part(ctx: Context, k: int) -> bool:
    """Token ``k`` is the 32 of an `if (tid < 32)` (a literal or a project's constant) whose branch reduces by
    offsets 16..1, or lies in such a branch: only threads 0-31 take part there, on any wavefront."""
    if in_first_32_tail(ctx, k, named=True):
        return True
    p = enclosing_open(ctx, k, b"(")
    if p < 0 or ctx.t(ctx.prev_code(p)) != b"if" or ctx.match(p) != ctx.next_code(k):
        return False
    return first_32_condition(ctx, ctx.prev_code(p), named=True) is not None and \
        tail_from_16(ctx, *if_branch(ctx, ctx.prev_code(p)))


def first_32_condition(ctx: Context, i: int, named: bool = False) -> list[int] | None:
    """The condition's tokens when the `if` at ``i`` tests `<thread index> < 32` in device code (`lane < 32` is
    "the low half", a choice, not "the first warp"), the 32 a literal or, with ``named``, a project's constant of
    32; else None."""
    if ctx.text[i] != b"if" or not ctx.device[i] or ctx.t(ctx.next_code(i)) != b"(":
        return None
    open_ = ctx.next_code(i)
    close = ctx.match(open_)
    if close <= open_:
        return None
    code = [k for k in range(open_ + 1, close) if ctx.kinds[k] != COMMENT]
    if len(code) < 3 or ctx.text[code[-2]] != b"<" or not (int_value(ctx.text[code[-1]]) == 32 or named and (
            ctx.kinds[code[-1]] == IDENT and value_is_32(ctx, ctx.text[code[-1]]) and not (
            ctx.text[code[-1]] == b"warpSize" and hip_warp_size(ctx)))):
        return None
    fn = ctx.function_at(i)
    if fn is None:
        return None
    derived = ctx.__dict__.setdefault("_first_32_derived", {})  # once a function
    if fn.body[0] not in derived:
        derived[fn.body[0]] = thread_derived(ctx, fn)
    left = code[:-2]
    if not any(ctx.text[k] in (b"threadIdx", b"hipThreadIdx_x") or ctx.text[k] in derived[fn.body[0]]
               for k in left) or is_lane_like(ctx, left[0], left[-1] + 1):
        return None
    return code


def inside_first_32(ctx: Context, i: int, named: bool = False) -> int | None:
    """The `32` of an `if (tid < 32)` whose branch holds token ``i`` (a block, or the one statement after it)."""
    k = i
    while True:
        before = ctx.prev_code(k)
        if ctx.t(before) == b")" and 0 <= ctx.match(before) < before:
            code = first_32_condition(ctx, ctx.prev_code(ctx.match(before)), named)
            if code is not None:
                return code[-1]
        k = enclosing_open(ctx, k, b"{")
        if k < 0:
            return None
