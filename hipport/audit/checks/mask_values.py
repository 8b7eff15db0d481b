"""The values a 32-bit lane-mask variable holds, for the patch that makes it 64-bit (issue 34).

Widening the type alone is no fix: `unsigned long long m = 0xffffffff` still names 32 lanes. ROCm 7's `*_sync`
built-ins check, in a build without `NDEBUG`, that the mask equals the lanes taking part (`__hip_check_mask` in
amd_warp_sync_functions.h: a full wave64 traps), and in every build `__ballot_sync` ANDs the ballot with it and
`__all_sync` compares with it. So every value stored in the variable (its initialiser, default argument, later
assignments, and for a parameter what the file's callers pass) must say the same lanes in 64 bits, or no patch is
offered. On wave32 the built-ins trim a shuffle's, ballot's or vote's mask to 32 bits, so the 64-bit all-lanes
literal is right on both wave sizes; `__syncwarp(mask)` does not trim it, so a mask that reaches it gets the lanes
that are active, `__activemask()`, which equals `__ballot(true)` on both."""

from __future__ import annotations

from hipport.audit.checks.common import BALLOTS, enclosing_open, is_32bit_type, is_full_mask32
from hipport.audit.checks.context import COMMENT, IDENT, KEYWORD, LITERAL, Context

FULL64 = "0xffffffffffffffffull"
ACTIVE = "__activemask()"
_GROUP_BALLOTS = {b"ballot", b"match_any", b"match_all"}
_ASSIGNS = {b"=", b"&=", b"|=", b"^=", b"<<=", b">>=", b"+=", b"-="}
# A cast to one of these keeps 32 bits (`(unsigned)-1`, `static_cast<uint32_t>(~0)`).
_NARROW_CASTS = {b"unsigned", b"int", b"signed", b"uint32_t", b"int32_t", b"uint", b"u32", b"uint32", b"std", b"::"}


def full_spelling(ctx: Context, uses: tuple[int, int], word: bytes) -> str:
    """How "every lane" is written for a mask ``word`` used in ``uses`` (a token range)."""
    for k in ctx.positions_between(word, *uses):
        if ctx.t(ctx.prev_code(k)) == b"(" and ctx.t(ctx.prev_code(ctx.prev_code(k))) == b"__syncwarp" \
                and ctx.t(ctx.next_code(k)) == b")":
            return ACTIVE
    return FULL64


def literal_fix(ctx: Context, first: int, last: int, value: int, full: str = FULL64) -> str:
    if value == 0xFFFFFFFF:
        return full
    toks = [ctx.text[k] for k in range(first, last) if ctx.kinds[k] != COMMENT]
    return toks[-1].rstrip(b"uUlL").decode() + "ull"


def value_edits(ctx: Context, first: int, last: int, word: bytes, scope: tuple[int, int] | None, full: str,
                op: bytes = b"=") -> list | None:
    """Edits that make the value tokens[first:last), stored in the 64-bit mask ``word`` with ``op``, name the same
    lanes: [] when it already does, None when no edit can say (a 32-bit all-lanes value inside an expression, a
    narrowing cast, a 32-bit variable, a call that is no ballot)."""
    code = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
    if not code:
        return None
    inner = _strip(ctx, code)
    if inner is not None:
        a, b = inner
        is32, value = is_full_mask32(ctx, a, b)
        if is32 and op in (b"=", b"&=", b"|=", b"^="):
            new = literal_fix(ctx, a, b, value, full)
            plain = value != 0xFFFFFFFF and a == code[0] and b == code[-1] + 1
            return [] if plain and op != b"=" else [ctx.edit(code[0], new, code[-1])]
        if is32:
            return []  # a shift or step count
        if b - a == 1 and ctx.kinds[a] == IDENT:
            body = ctx.macro_value(ctx.text[a])
            if body:
                is32, value = is_full_mask32(ctx, body[0], body[-1] + 1)
                if is32 and value == 0xFFFFFFFF:
                    return [ctx.edit(code[0], full, code[-1])]  # here, not at the #define other code may read
    if _low_lanes(ctx, code):
        return []
    return [] if _wide_expression(ctx, code, word, scope) else None


def _low_lanes(ctx: Context, code: list[int]) -> bool:
    """`0xffffffff >> (32 - n)`, `FULL_MASK >> k`: the 32-bit all-ones value shifted right, the lowest lanes, which
    stay the same lanes zero-extended to 64 bits (the literal must stay 32-bit for the shift to mean that)."""
    a, b = code[0], code[-1] + 1
    while ctx.t(a) == b"(" and ctx.match(a) == b - 1:
        a, b = ctx.next_code(a), b - 1
    if ctx.t(ctx.next_code(a)) != b">>":
        return False
    first = a
    if ctx.kinds[a] == IDENT:
        body = ctx.macro_value(ctx.text[a])
        if not body or len(body) != 1:
            return False
        first = body[0]
    if ctx.kinds[first] != LITERAL or is_full_mask32(ctx, first, first + 1) != (True, 0xFFFFFFFF):
        return False
    rest = [k for k in range(ctx.next_code(ctx.next_code(a)), b) if ctx.kinds[k] != COMMENT]
    return not any(ctx.text[k] in (b"?", b"=", b",") for k in rest)


def _strip(ctx: Context, code: list[int]) -> tuple[int, int] | None:
    """The token range left when outer parentheses and narrowing casts are taken off ``code``; None when the
    value is more than that."""
    a, b = code[0], code[-1] + 1
    for _ in range(8):
        while ctx.kinds[b - 1] == COMMENT:
            b -= 1
        if ctx.t(a) == b"(" and ctx.match(a) == b - 1:
            a, b = ctx.next_code(a), b - 1
            continue
        if ctx.t(a) == b"(" and ctx.match(a) > a and all(
                ctx.text[k] in _NARROW_CASTS for k in range(a + 1, ctx.match(a)) if ctx.kinds[k] != COMMENT):
            a = ctx.next_code(ctx.match(a))
            continue
        if ctx.t(a) == b"static_cast" and ctx.t(ctx.next_code(a)) == b"<":
            close = next((k for k in range(a, b) if ctx.text[k] == b">"), None)
            if close is None or not all(ctx.text[k] in _NARROW_CASTS for k in range(ctx.next_code(a) + 1, close)
                                        if ctx.kinds[k] != COMMENT):
                return None
            a = ctx.next_code(close)
            continue
        break
    code = [k for k in range(a, b) if ctx.kinds[k] != COMMENT]
    if not code:
        return None
    if len(code) <= 2:
        return a, b
    return None


def _wide_expression(ctx: Context, code: list[int], word: bytes, scope: tuple[int, int] | None) -> bool:
    """The expression is 64-bit in each part that could name lanes: the variable itself, ballots, variables
    declared 64-bit, and plain numbers combined without `~`, unary minus or a cast."""
    k = code[0]
    last = code[-1]
    prev = b"="
    while k <= last:
        t = ctx.text[k]
        if ctx.kinds[k] == COMMENT:
            k += 1
            continue
        if t == b"~" or (t == b"-" and prev in (b"=", b"(", b"&", b"|", b"^", b"<<", b">>", b"+", b"-", b"*")):
            return False
        if ctx.kinds[k] == LITERAL:
            is32, value = is_full_mask32(ctx, k, k + 1)
            if is32 and value == 0xFFFFFFFF:
                return False
        elif ctx.kinds[k] == KEYWORD and t not in (b"true", b"false"):
            return False  # a cast, `sizeof` ...
        elif ctx.kinds[k] == IDENT:
            nxt = ctx.next_code(k)
            if t in BALLOTS and ctx.t(nxt) == b"(" and ctx.match(nxt) > nxt:
                k = ctx.match(nxt) + 1
                prev = b")"
                continue
            member = ctx.next_code(nxt)
            call = ctx.next_code(member)
            if ctx.t(nxt) in (b".", b"->") and ctx.t(member) in _GROUP_BALLOTS and ctx.t(call) == b"(" \
                    and ctx.match(call) > call:  # `active.ballot(p)`: a group's 64-bit ballot
                k = ctx.match(call) + 1
                prev = b")"
                continue
            if ctx.t(nxt) in (b"(", b".", b"->", b"::", b"[") or ctx.t(ctx.prev_code(k)) in (b".", b"->", b"::"):
                return False
            if t != word:
                if ctx.macro_value(t) is not None:
                    return False
                decl = ctx.find_decl(t, k, scope)
                if decl is None or is_32bit_type(ctx, decl) is not False:
                    return False
        prev = t
        k += 1
    return True


def _value_end(ctx: Context, k: int, stop: int) -> int:
    """Index of the `;`, `,` or unmatched `)` ending the value that starts at ``k``."""
    while k < stop and ctx.text[k] not in (b";", b",", b")", b"}"):
        if ctx.text[k] in (b"(", b"[", b"{") and ctx.match(k) > k:
            k = ctx.match(k)
        k += 1
    return k


def variable_edits(ctx: Context, decl: int, fn) -> list | None:
    """Edits giving every value stored in the mask declared at ``decl`` (a local, a global, or a parameter of
    ``fn``) the same lanes in 64 bits, or None when one cannot be given them."""
    word = ctx.text[decl]
    param = fn is not None and fn.params[0] < decl < fn.params[1]
    home = fn if param else ctx.function_at(decl)
    scope = (home.params[0], home.body[1]) if home is not None else (0, ctx.n)
    block = enclosing_open(ctx, decl, b"{") if home is not None and not param else -1
    uses = (decl + 1, ctx.match(block) if block >= 0 and ctx.match(block) > block else scope[1])
    full = full_spelling(ctx, uses, word)
    edits: list = []
    if ctx.t(ctx.next_code(decl)) == b"=":
        start = ctx.next_code(ctx.next_code(decl))
        found = value_edits(ctx, start, _value_end(ctx, start, scope[1]), word, scope, full)
        if found is None:
            return None
        edits += found
    for k in ctx.positions_between(word, *uses):
        op = ctx.next_code(k)
        if ctx.t(op) not in _ASSIGNS or ctx.t(ctx.prev_code(k)) in (b".", b"->", b"::") or ctx.is_decl_name(k):
            continue
        start = ctx.next_code(op)
        found = value_edits(ctx, start, _value_end(ctx, start, scope[1]), word, scope, full, ctx.text[op])
        if found is None:
            return None
        edits += found
    if param:
        found = _caller_edits(ctx, fn, decl, full)
        if found is None:
            return None
        edits += found
    return edits


def _caller_edits(ctx: Context, fn, decl: int, full: str) -> list | None:
    """What the file's calls of ``fn`` pass for its parameter at ``decl``, made 64-bit: None when a call passes
    what no edit can make so, or when another declaration of the function would keep the 32-bit parameter."""
    params = ctx.call_args(fn.name_index) or []
    pos = next((n for n, (a, b) in enumerate(params) if a <= decl < b), None)
    if pos is None:
        return None
    name = ctx.text[fn.name_index]
    edits: list = []
    for k in ctx.positions(name):
        if k == fn.name_index:
            continue
        if ctx.in_directive[k] or ctx.t(ctx.next_code(k)) == b"<":
            return None  # a call inside a macro or of a template instance: not followed here
        if ctx.t(ctx.next_code(k)) != b"(":
            continue
        caller = ctx.function_at(k)
        if caller is None:
            return None  # a prototype: it would declare another overload with the 32-bit parameter
        if not ctx.is_call(k):
            continue
        args = ctx.call_args(k) or []
        if pos >= len(args):
            continue  # the default argument, checked with the parameter
        found = value_edits(ctx, *args[pos], b"", (caller.params[0], caller.body[1]), full)
        if found is None:
            return None
        edits += found
    return edits
