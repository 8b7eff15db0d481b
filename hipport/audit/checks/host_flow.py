"""Statements and bodies of host code, which `Context.functions` (device functions only) does not give: the function
or lambda body around a token, the statement a token starts and where it ends, the conditions that control it, and
where a new statement can be written after another. Token-level and conservative: where the shape is not plain,
the answer is None and the caller says less."""

from __future__ import annotations

from bisect import bisect_left

from hipport.audit.checks.common import enclosing_open, statement_start
from hipport.audit.checks.context import COMMENT, IDENT, KEYWORD, Context

CONTROL = frozenset({b"if", b"while", b"for", b"switch", b"catch"})
# Words and calls after which the code that follows a branch does not run.
_LEAVE_WORDS = frozenset({b"return", b"throw", b"goto", b"co_return"})
_LEAVE_CALLS = frozenset({b"exit", b"abort", b"_Exit", b"quick_exit", b"terminate", b"__builtin_trap",
                          b"__builtin_unreachable"})


def function_body(ctx: Context, i: int) -> tuple[int, int] | None:
    """(`{`, `}`) of the innermost function or lambda body holding token ``i``."""
    k = i
    while True:
        brace = enclosing_open(ctx, k, b"{")
        if brace < 0:
            return None
        if is_function_brace(ctx, brace):
            close = ctx.match(brace)
            return (brace, close) if close > brace else None
        k = brace


def is_function_brace(ctx: Context, brace: int) -> bool:
    """`) {`, `) const {`, `) noexcept {`, `) -> T {` after a parameter list that is not a control statement's."""
    p = ctx.prev_code(brace)
    while p >= 0 and ctx.text[p] in (b"const", b"noexcept", b"override", b"final", b"mutable", b"volatile"):
        p = ctx.prev_code(p)
    if ctx.t(p) != b")":
        # a trailing return type: `) -> T {`
        q = p
        while q >= 0 and (ctx.kinds[q] in (IDENT, KEYWORD) or ctx.text[q] in (b"::", b"*", b"&", b"<", b">")):
            q = ctx.prev_code(q)
        if ctx.t(q) != b"->":
            return False
        p = ctx.prev_code(q)
        if ctx.t(p) != b")":
            return False
    open_ = ctx.match(p)
    if open_ < 0:
        return False
    before = ctx.prev_code(open_)
    return ctx.t(before) not in CONTROL and ctx.t(before) not in (b"=", b",", b"(", b"return")


def statement_last(ctx: Context, k: int) -> int | None:
    """Index of the last token of the statement that starts at ``k`` (its `;` or closing `}`), through `if`/`else`
    chains, loops and blocks; None for a shape this does not follow."""
    t = ctx.t(k)
    if t == b"{":
        close = ctx.match(k)
        return close if close > k else None
    if t in (b"if", b"while", b"for", b"switch"):
        p = ctx.next_code(k)
        if ctx.t(p) == b"constexpr":
            p = ctx.next_code(p)
        if ctx.t(p) != b"(" or ctx.match(p) < p:
            return None
        last = statement_last(ctx, ctx.next_code(ctx.match(p)))
        if last is None:
            return None
        if t == b"if" and ctx.t(ctx.next_code(last)) == b"else":
            return statement_last(ctx, ctx.next_code(ctx.next_code(last)))
        return last
    if t == b"do":
        body = statement_last(ctx, ctx.next_code(k))
        if body is None or ctx.t(ctx.next_code(body)) != b"while":
            return None
        k = ctx.next_code(body)
    j = k
    while j < ctx.n:
        if ctx.text[j] in (b"(", b"[", b"{") and ctx.match(j) > j:
            j = ctx.match(j) + 1
            continue
        if ctx.text[j] == b";":
            return j
        if ctx.text[j] in (b")", b"]", b"}"):
            return None
        j += 1
    return None


def branches(ctx: Context, if_: int) -> tuple[tuple[int, int] | None, tuple[int, int] | None] | None:
    """((first, last) of the then-statement, (first, last) of the else-statement or None) of the `if` at ``if_``."""
    p = ctx.next_code(if_)
    if ctx.t(p) == b"constexpr":
        p = ctx.next_code(p)
    if ctx.t(p) != b"(" or ctx.match(p) < p:
        return None
    first = ctx.next_code(ctx.match(p))
    last = statement_last(ctx, first)
    if last is None:
        return None
    other = None
    if ctx.t(ctx.next_code(last)) == b"else":
        e = ctx.next_code(ctx.next_code(last))
        e_last = statement_last(ctx, e)
        if e_last is None:
            return None
        other = (e, e_last)
    return (first, last), other


def condition_of(ctx: Context, keyword: int) -> tuple[int, int] | None:
    """(first, last exclusive) of the parenthesised condition after `if`/`while`/`for`/`switch` at ``keyword``."""
    p = ctx.next_code(keyword)
    if ctx.t(p) == b"constexpr":
        p = ctx.next_code(p)
    if ctx.t(p) != b"(" or ctx.match(p) < p:
        return None
    return p + 1, ctx.match(p)


def own_start(ctx: Context, i: int) -> int:
    """First token of the innermost statement holding ``i``: as `statement_start`, but the statement under an
    `if (...)`, a loop's `(...)`, an `else` or a `do` starts after them."""
    k = i - 1
    while k >= 0:
        t = ctx.text[k]
        if ctx.kinds[k] == COMMENT:
            k -= 1
            continue
        if t in (b")", b"]") and 0 <= ctx.match(k) < k:
            kw = ctx.prev_code(ctx.match(k))
            if ctx.t(kw) == b"constexpr":
                kw = ctx.prev_code(kw)
            if t == b")" and ctx.t(kw) in CONTROL:
                return ctx.next_code(k)
            k = ctx.match(k) - 1
            continue
        if t in (b";", b"{", b"}", b"else", b"do") or ctx.in_directive[k] and not ctx.in_directive[i]:
            return ctx.next_code(k)
        k -= 1
    return 0


def controlling(ctx: Context, i: int, body: tuple[int, int]) -> list[tuple[int, int]]:
    """The conditions (token ranges) of the `if`/`else`/`while`/`for`/`switch` statements, inside ``body``, under
    which the statement holding ``i`` runs; for an `else` branch, its `if`'s condition."""
    out = []
    s = own_start(ctx, i)
    while True:
        p = ctx.prev_code(s)
        if p <= body[0]:
            break
        t = ctx.t(p)
        if t == b")" and ctx.match(p) >= 0:
            kw = ctx.prev_code(ctx.match(p))
            if ctx.t(kw) == b"constexpr":
                kw = ctx.prev_code(kw)
            if ctx.t(kw) not in CONTROL:
                break
            out.append((ctx.match(p) + 1, p))
            s = kw
        elif t == b"else":
            if_ = _if_of_else(ctx, p)
            cond = condition_of(ctx, if_) if if_ is not None else None
            if cond is None:
                break
            out.append(cond)
            s = if_
        elif t == b"do":
            s = p
        else:  # a statement of a block: the block is the statement its brace starts
            brace = enclosing_open(ctx, s, b"{")
            if brace <= body[0]:
                break
            s = brace
    return out


def _if_of_else(ctx: Context, else_: int) -> int | None:
    """The `if` an `else` at ``else_`` belongs to."""
    end = ctx.prev_code(else_)  # `}` or `;` ending the then-statement
    k = end
    # walk back over statements until an `if (...)` whose then-statement ends at `end`
    while k >= 0:
        if ctx.text[k] == b"if":
            br = branches(ctx, k)
            if br is not None and br[0][1] == end:
                return k
        if ctx.text[k] in (b"}", b")", b"]") and ctx.match(k) >= 0 and ctx.match(k) < k:
            k = ctx.match(k)
        k -= 1
        if end - k > 20000:
            return None
    return None


def leaves(ctx: Context, first: int, last: int) -> bool:
    """Whether the statement from ``first`` to ``last`` (inclusive) can end the function or the program: a
    `return`, `throw` or `goto`, or a call of `exit`, `abort` and the like."""
    for k in range(first, last + 1):
        t = ctx.text[k]
        if ctx.kinds[k] == COMMENT:
            continue
        if t in _LEAVE_WORDS or (t in _LEAVE_CALLS and ctx.t(ctx.next_code(k)) == b"("):
            return True
    return False


def mentions(ctx: Context, first: int, last: int, names: set[bytes]) -> bool:
    return any(ctx.text[k] in names and ctx.kinds[k] == IDENT for k in range(first, last))


def token_at(ctx: Context, offset: int) -> int | None:
    """Index of the token that starts at byte ``offset``, or None."""
    k = bisect_left(ctx.starts, offset)
    return k if k < ctx.n and ctx.starts[k] == offset else None


def uses_before(ctx: Context, name: bytes, before: int, after: int = -1):
    """Indices of the identifier tokens ``name`` between ``after`` and ``before`` (exclusive), nearest first:
    from the file's index of names, so a walk back to a declaration costs no pass over every token."""
    kinds = ctx.kinds
    return (k for k in reversed(ctx.positions_between(name, after + 1, before)) if kinds[k] == IDENT)


def decl_before(ctx: Context, name: bytes, before: int, after: int = -1) -> int | None:
    """The nearest declaration of ``name`` before ``before`` (as `Context.find_decl` judges one)."""
    found = ctx.declarations(name)  # a host function launching many kernels asks from every launch
    k = bisect_left(found, before) - 1
    return found[k] if k >= 0 and found[k] > after else None


def indent_of(ctx: Context, k: int) -> bytes:
    """The blanks that start the line of token ``k``."""
    line = ctx.lines.line_col(ctx.starts[k])[0]
    text = ctx.line_text(line)
    return text[:len(text) - len(text.lstrip(b" \t"))]


def line_end(ctx: Context, k: int) -> int | None:
    """Offset of the end of the line of token ``k`` when nothing but blanks and a `//` comment follows ``k`` on it
    (a new line can be written there without moving code), else None."""
    end = ctx.src.find(b"\n", ctx.ends[k])
    end = len(ctx.src) if end < 0 else end
    rest = ctx.src[ctx.ends[k]:end].strip()
    if rest and not rest.startswith(b"//"):
        return None
    if end > 0 and ctx.src[end - 1:end] == b"\r":
        end -= 1
    return end


__all__ = ["function_body", "is_function_brace", "statement_last", "branches", "condition_of", "controlling",
           "leaves", "mentions", "indent_of", "line_end", "own_start", "token_at", "uses_before", "decl_before",
           "CONTROL"]
