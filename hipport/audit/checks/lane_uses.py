"""Whether an id of 32 (`x % 32`, `x & 31`, `x / 32`, `x >> 5`, `blockDim.x / 32`) is used as a lane or warp
number, read from its uses (issue 34): a patch to `warpSize` is only right where 32 is the warp width. In a
quantised dot product `i % 32` is the place in a block of 32 values and `i / 32` the block, and a kernel may run a
shuffle reduction beside them; rewriting those indexes reads other data. So an id is patched only when it, or the
variable it is stored in, or the other id of the same operand (`gid & 31` with `gid / 32`), is

- an argument of a warp operation other than the value shuffled and the mask (a source lane, an offset, a width,
  a ballot's predicate),
- tested in the condition of an `if`, a loop or a `?:` whose statement holds a warp operation or a value one
  computed (`if (lane == 0) s[warp] = v;` after `v` was reduced with shuffles),
- the subscript of a `__shared__` array that holds values warp code computed (a per-warp slot `s[warp]`, or a
  per-lane one read at exactly `s[lane]`; a tile of data loaded from memory is not one),
- the count of a shift next to a ballot (`1u << lane` with a ballot's bits),
- for a count of warps, compared with or bounding something numbered by thread, or a `__shared__` subscript.

Anything else (global data indexed with it, a struct's member array) gives a finding without a patch."""

from __future__ import annotations

from hipport.audit.checks.common import BALLOTS, SHUFFLES, WARP_OPS, enclosing_open, statement_end, thread_derived
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, THREAD_INDEX, Context

_COMPARE = {b"==", b"!=", b"<", b"<=", b">", b">="}
_MASKED = {name for name in SHUFFLES if name.endswith(b"_sync")} | {
    b"__ballot_sync", b"__any_sync", b"__all_sync", b"__match_any_sync", b"__match_all_sync", b"__reduce_add_sync"}
_ASSIGN = {b"=", b"+=", b"-=", b"*=", b"|=", b"&=", b"^=", b"<<=", b">>=", b"/="}


class LaneUses:
    """Per file: which functions run warp operations, the variables holding their results, `__shared__` names."""

    def __init__(self, ctx: Context, warp_fns: set[int]) -> None:
        self.ctx = ctx
        self.warp_fns = warp_fns
        self._names = {ctx.text[fn.name_index] for fn in ctx.functions if fn.body[0] in warp_fns}
        self._results: dict[int, set[bytes]] = {}
        self._shared: set[bytes] | None = None

    def warp_call(self, k: int) -> bool:
        ctx = self.ctx
        return ctx.kinds[k] == IDENT and (ctx.text[k] in WARP_OPS or ctx.text[k] in self._names) and ctx.is_call(k)

    def results(self, fn) -> set[bytes]:
        """Variables of ``fn`` given a value computed by a warp operation (or by a function running one), and the
        arrays such values are stored in."""
        if fn.body[0] not in self._results:
            ctx = self.ctx
            found: set[bytes] = set()
            for k in range(*fn.body):
                if ctx.text[k] not in _ASSIGN:
                    continue
                target = ctx.prev_code(k)
                if ctx.t(target) == b"]" and 0 <= ctx.match(target) < target:
                    target = ctx.prev_code(ctx.match(target))  # `s[warp] = v`: the array of per-warp slots
                if ctx.kinds[target] != IDENT:
                    continue
                end = statement_end(ctx, k)
                if any(self.warp_call(m) or ctx.text[m] in found for m in range(k + 1, end)):
                    found.add(ctx.text[target])
            self._results[fn.body[0]] = found
        return self._results[fn.body[0]]

    def shared(self) -> set[bytes]:
        if self._shared is None:
            ctx = self.ctx
            names = set()
            for k in ctx.positions(b"__shared__"):
                m = k
                while m < ctx.n and ctx.text[m] not in (b";", b"[", b"="):
                    m += 1
                if ctx.t(m) == b"[" and ctx.kinds[ctx.prev_code(m)] == IDENT:
                    names.add(ctx.text[ctx.prev_code(m)])
            self._shared = names
        return self._shared

    def carriers(self, fn, lo: int, hi: int) -> list[int]:
        """Where the id at tokens ``lo``..``hi`` is used: the id itself, and every later use of a variable whose
        declaration is initialised with it (`const int lane = tid % 32;`)."""
        ctx = self.ctx
        out = [lo]
        start = _statement_first(ctx, lo)
        eq = next((k for k in range(start, lo) if ctx.text[k] == b"=" and enclosing_open(ctx, k) < start), None)
        if eq is not None and fn is not None:
            name = ctx.prev_code(eq)
            if ctx.kinds[name] == IDENT and ctx.is_decl_name(name):
                block = enclosing_open(ctx, name, b"{")
                end = ctx.match(block) if block >= 0 and ctx.match(block) > block else fn.body[1]
                out += [k for k in ctx.positions_between(ctx.text[name], hi, end)
                        if not ctx.is_decl_name(k) and ctx.t(ctx.prev_code(k)) not in (b".", b"->", b"::")]
        return out

    def proves(self, fn, at: int, lane: bool, count: bool) -> bool:
        """The use of an id at token ``at`` shows it numbers lanes (``lane``) or warps, or counts warps."""
        if fn is None or fn.body[0] not in self.warp_fns:
            return False
        return self._warp_argument(at) or self._tests_warp_code(fn, at) or self._shared_subscript(fn, at, lane) \
            or self._ballot_shift(fn, at) or (count and self._bounds_threads(fn, at))

    def _warp_argument(self, at: int) -> bool:
        ctx = self.ctx
        p = enclosing_open(ctx, at, b"(")
        while p >= 0:
            name = ctx.prev_code(p)
            if ctx.kinds[name] == IDENT and self.warp_call(name):
                args = ctx.call_args(name) or []
                n = next((j for j, (a, b) in enumerate(args) if a <= at < b), None)
                if n is None:
                    return False
                if ctx.text[name] in SHUFFLES and n == SHUFFLES[ctx.text[name]]:
                    return False  # the value shuffled: data
                return not (ctx.text[name] in _MASKED and n == 0) and not self._in_subscript(at, p)
            if ctx.kinds[name] == IDENT and ctx.text[name] not in (b"if", b"while", b"for", b"return"):
                return False  # inside another call: what it returns is something else
            p = enclosing_open(ctx, p, b"(")
        return False

    def _in_subscript(self, at: int, stop: int) -> bool:
        k = self.ctx.open_before(at)
        while k > stop:
            if self.ctx.text[k] == b"[":
                return True
            k = self.ctx.open_before(k)
        return False

    def _tests_warp_code(self, fn, at: int) -> bool:
        """``at`` is compared in a condition whose statement runs warp code or uses what warp code computed."""
        ctx = self.ctx
        if not self._compared(at):
            return False
        p = enclosing_open(ctx, at, b"(")
        while p >= 0 and ctx.t(ctx.prev_code(p)) not in (b"if", b"while", b"for"):
            if ctx.kinds[ctx.prev_code(p)] == IDENT:
                p = -1
                break
            p = enclosing_open(ctx, p, b"(")
        if p >= 0:
            body = ctx.next_code(ctx.match(p))
            end = ctx.match(body) if ctx.t(body) == b"{" else statement_end(ctx, body)
            span = range(p, max(end, body) + 1)
        else:  # `lane == 0 ? v : 0` and the like: the statement
            span = range(_statement_first(ctx, at), statement_end(ctx, at))
        results = self.results(fn)
        return any(self.warp_call(m) or (ctx.kinds[m] == IDENT and ctx.text[m] in results) for m in span)

    def _compared(self, at: int) -> bool:
        """A comparison operator next to the operand holding ``at``."""
        ctx = self.ctx
        k = at
        while ctx.kinds[k] in (IDENT, LITERAL) or ctx.text[k] in (b".", b"%", b"&", b"/", b">>", b"(", b")"):
            if ctx.text[k] == b"(" and ctx.match(k) > k:
                k = ctx.match(k)
            elif ctx.text[k] == b")":
                break
            k = ctx.next_code(k)
            if k < 0 or k >= ctx.n:
                return False
        if ctx.t(k) == b")":
            k = ctx.next_code(k)
        before = ctx.prev_code(at)
        return ctx.t(k) in _COMPARE or ctx.t(before) in _COMPARE

    def _shared_subscript(self, fn, at: int, lane: bool) -> bool:
        """A subscript of a `__shared__` array that holds what warp code computed (a tile of data loaded from
        memory is not one)."""
        ctx = self.ctx
        b = enclosing_open(ctx, at, b"[")
        if b < 0 or ctx.text[ctx.prev_code(b)] not in self.shared() or \
                ctx.text[ctx.prev_code(b)] not in self.results(fn):
            return False
        if not lane:
            return True
        inside = [k for k in range(b + 1, ctx.match(b)) if ctx.kinds[k] != COMMENT]
        return inside == [at] or (ctx.text[inside[0]] in THREAD_INDEX and at == inside[0])

    def _ballot_shift(self, fn, at: int) -> bool:
        ctx = self.ctx
        if ctx.t(ctx.prev_code(at)) not in (b"<<", b">>") and ctx.t(ctx.prev_code(ctx.prev_code(at))) not in (
                b"<<", b">>"):
            return False
        results = self.results(fn)
        span = range(_statement_first(ctx, at), statement_end(ctx, at))
        return any(ctx.text[m] in BALLOTS or ctx.text[m] in results for m in span if ctx.kinds[m] == IDENT)

    def _bounds_threads(self, fn, at: int) -> bool:
        """A count compared with something numbered by thread, or bounding a loop over per-warp slots."""
        ctx = self.ctx
        if not self._compared(at):
            return False
        derived = thread_derived(ctx, fn)
        first = _statement_first(ctx, at)
        if any(ctx.text[m] in THREAD_INDEX or ctx.text[m] in derived for m in range(first, statement_end(ctx, at))
               if ctx.kinds[m] == IDENT):
            return True
        p = enclosing_open(ctx, at, b"(")
        if p < 0 or ctx.t(ctx.prev_code(p)) != b"for":
            return False
        body = ctx.next_code(ctx.match(p))
        end = ctx.match(body) if ctx.t(body) == b"{" else statement_end(ctx, body)
        slots = self.shared() & self.results(fn)
        return any(ctx.text[m] in slots or self.warp_call(m) for m in range(body, max(end, body) + 1)
                   if ctx.kinds[m] == IDENT)


def _statement_first(ctx: Context, i: int) -> int:
    from hipport.audit.checks.common import statement_start

    return statement_start(ctx, i)
