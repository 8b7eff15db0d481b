"""Launches whose grid or block can be empty (`launch-zero-size`): from ROCm 7.0 such a launch fails, where before it
did nothing. Only shapes that are 0 for some value of what they are computed from are reported: a division that
does not round up (`n / 256`), a remainder (`n % 256`), a difference (`end - begin`), a literal 0, and products,
`min`s and rounded-up divisions of those; each followed through a variable's initialiser, a `dim3`'s components and
object-like macros. A launch under a condition (or after an early exit) that tests what the size is computed from
is taken as guarded."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hipport.audit.checks import host_flow
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context, int_value

RULE = "launch-zero-size"
_HOPS = 3
# Launch calls: name -> positions of the grid and block arguments.
_LAUNCH_CALLS = {b"hipLaunchKernelGGL": (1, 2), b"hipLaunchKernel": (1, 2), b"cudaLaunchKernel": (1, 2),
                 b"hipLaunchCooperativeKernel": (1, 2), b"cudaLaunchCooperativeKernel": (1, 2)}
_MIN = frozenset({b"min", b"std::min", b"MIN", b"fmin", b"imin", b"umin"})
_MAX = frozenset({b"max", b"std::max", b"MAX", b"fmax", b"imax", b"umax"})
_CAPS = re.compile(rb"^[A-Z][A-Z0-9_]*$")
# An `if`, or a call that checks a condition (`assert`, `TORCH_CHECK`, `ASSERT_GT`, `REQUIRE`...).
_GUARD_WORDS = re.compile(rb"\b(if)\b|\b\w*(?:assert|CHECK|ASSERT|EXPECT|REQUIRE|ENFORCE)\w*(?=\s*\()")
# Operators that bind less tightly than `>`: an expression holding one is parenthesised before `> 0` is added.
_LOOSE = frozenset({b"?", b":", b"&&", b"||", b"&", b"|", b"^", b"==", b"!=", b"<", b">", b"<=", b">=", b"=", b","})


@dataclass(frozen=True, slots=True)
class Empty:
    why: str                  # "0 when `n` < 256"
    names: frozenset[bytes]   # what the size is computed from: a test of one of them guards the launch


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or ctx.rocm < (7, 0):
        return
    if not (b"<<" in ctx.words or ctx.words & set(_LAUNCH_CALLS)):
        return
    for name, kernel, dims, call_close in _launches(ctx):
        if ctx.device[name] or ctx.in_directive[name]:
            continue
        body = host_flow.function_body(ctx, name)
        if body is None:
            continue
        found = []  # (grid or block, its tokens, [(part, guard conditions, Empty)])
        for what, (first, last) in zip(("grid", "block"), dims):
            code = _code(ctx, first, last)
            parts = [(part, conds, empty) for part, conds, empty in (_empty_parts(ctx, code, at=name) if code else ())
                     if not _guarded(ctx, name, body, empty.names | _words(ctx, code))]
            if parts:
                found.append((what, code, parts))
        if not found:
            continue
        never = any(not e.names for _w, _c, parts in found for _p, _g, e in parts)  # a constant 0
        conds = [c for _w, _c, parts in found for _p, cs, _e in parts for c in cs]
        edits = [] if never else _guard_edits(ctx, name, call_close, conds)
        for n, (what, code, parts) in enumerate(found):
            shown = ctx.span_text(code[0], code[-1] + 1).decode("latin-1")
            whys = "; ".join((f"its {p}: " if p else "") + e.why for p, _g, e in parts)
            advice = "it never runs: remove the launch" if never else f"launch only when there is work: " \
                f"`if ({' && '.join(conds)})`"
            state = "is always empty" if never else f"can be empty ({whys})"
            ctx.report(RULE, code[0], f"the {what} `{shown}` {state}: from ROCm 7.0 launching "
                       f"`{kernel}` with an empty {what} is an error "
                       f"({advice})", confidence="high" if never else "medium", edits=edits if n == 0 else (),
                       subject=kernel)


def _launches(ctx: Context):
    """(kernel name index, the kernel as written, [(first, last) of the grid, of the block], index of the argument
    list's `)`) of each `k<<<...>>>(...)` and launch call."""
    text, n, src = ctx.text, ctx.n, ctx.src
    starts = []
    at = src.find(b"<<<")
    while at >= 0:
        starts.append(at)
        at = src.find(b"<<<", at + 3)
    for word in (b"LaunchKernel", b"LaunchCooperativeKernel"):
        at = src.find(word)
        while at >= 0:
            for prefix in (b"hip", b"cuda"):
                if src.startswith(prefix, at - len(prefix)):
                    starts.append(at - len(prefix))
            at = src.find(word, at + 1)
    for offset in sorted(starts):
        i = host_flow.token_at(ctx, offset)
        if i is None or ctx.in_directive[i]:
            continue
        if text[i] == b"<<" and i + 1 < n and text[i + 1] == b"<" and ctx.ends[i] == ctx.starts[i + 1]:
            k = ctx.prev_code(i)
            if text[k] == b">":  # template arguments
                depth = 0
                while k >= 0:
                    depth += (text[k] == b">") - (text[k] == b"<")
                    if depth == 0:
                        break
                    k -= 1
                k = ctx.prev_code(k)
            if k < 0 or ctx.kinds[k] != IDENT:
                continue
            j = i + 2
            while j + 1 < n and not (text[j] == b">>" and text[j + 1] == b">"):
                if text[j] == b";":
                    break
                if text[j] in (b"(", b"[", b"{") and ctx.match(j) > j:
                    j = ctx.match(j)
                j += 1
            if j + 1 >= n or text[j] != b">>":
                continue
            parts = _split(ctx, i + 2, j)
            p = ctx.next_code(j + 1)
            if len(parts) < 2 or ctx.t(p) != b"(" or ctx.match(p) < p:
                continue
            start = _name_start(ctx, k)
            yield start, ctx.span_text(start, k + 1).decode("latin-1"), parts[:2], ctx.match(p)
        elif text[i] in _LAUNCH_CALLS and ctx.is_call(i):
            args = ctx.call_args(i)
            g, b = _LAUNCH_CALLS[text[i]]
            if args and len(args) > b:
                kernel = ctx.span_text(*args[0]).decode("latin-1").strip()
                yield i, kernel, [args[g], args[b]], ctx.match(ctx.next_code(i))


def _name_start(ctx: Context, k: int) -> int:
    """The first token of a qualified kernel name (`ns::kernel`) ending at ``k``."""
    while ctx.t(ctx.prev_code(k)) == b"::" and ctx.kinds[ctx.prev_code(ctx.prev_code(k))] == IDENT:
        k = ctx.prev_code(ctx.prev_code(k))
    return k


def _split(ctx: Context, first: int, last: int) -> list[tuple[int, int]]:
    out, start, k = [], first, first
    while k < last:
        if ctx.text[k] in (b"(", b"[", b"{") and ctx.match(k) > k:
            k = ctx.match(k) + 1
            continue
        if ctx.text[k] == b",":
            out.append((start, k))
            start = k + 1
        k += 1
    out.append((start, last))
    return out


def _code(ctx: Context, first: int, last: int) -> list[int]:
    return [k for k in range(first, last) if ctx.kinds[k] != COMMENT]


def _words(ctx: Context, code: list[int]) -> frozenset[bytes]:
    return frozenset(ctx.text[k] for k in code if ctx.kinds[k] == IDENT)


def _empty_parts(ctx: Context, code: list[int], at: int):
    """(which component, the `> 0` conditions that guard it, Empty) for each part of a launch dimension that can be
    0: the dimension itself, or the components of a `dim3` it is or is built from."""
    text = ctx.span_text(code[0], code[-1] + 1).decode("latin-1")
    comps = _dim3_components(ctx, code)
    if comps is not None:  # `dim3(a, b)` written in the launch
        for axis, comp in zip("xyz", comps):
            empty = _empty(ctx, comp, _HOPS, at)
            if empty:
                yield (axis, [_positive(ctx, comp)], empty)
        return
    if len(code) == 1 and ctx.kinds[code[0]] == IDENT:
        decl = _dim3_decl(ctx, ctx.text[code[0]], at)
        if decl is not None:
            comps = _dim3_init(ctx, decl)
            if comps is None or _reassigned(ctx, ctx.text[code[0]], decl, at):
                return
            for axis, comp in zip("xyz", comps):
                empty = _empty(ctx, comp, _HOPS, at)
                if empty:
                    yield (f"{axis}, `{ctx.span_text(comp[0], comp[-1] + 1).decode('latin-1')}`",
                           [f"{text}.{axis} > 0"], Empty(empty.why, empty.names | {ctx.text[code[0]]}))
            return
    empty = _empty(ctx, code, _HOPS, at)
    if empty:
        yield ("", [_positive(ctx, code)], empty)


def _positive(ctx: Context, code: list[int]) -> str:
    text = ctx.span_text(code[0], code[-1] + 1).decode("latin-1")
    return f"({text}) > 0" if any(ctx.text[k] in _LOOSE for k in code) else f"{text} > 0"


def _strip(ctx: Context, code: list[int]) -> list[int]:
    """Outer parentheses and casts (`(int)(x)`, `(int)x`, `static_cast<int>(x)`, `int(x)`) removed."""
    while code:
        first, last = code[0], code[-1]
        if ctx.text[first] == b"(" and ctx.match(first) == last:
            code = code[1:-1]
            continue
        m = ctx.match(first) if ctx.text[first] == b"(" else -1
        if first < m < last and all(ctx.text[k] in _TYPES for k in code if first < k < m):
            code = [k for k in code if k > m]
            continue
        if ctx.text[first] in (b"static_cast", *_TYPES) and ctx.text[last] == b")":
            open_ = next((k for k in code if ctx.text[k] == b"(" and ctx.match(k) == last), None)
            if open_ is not None and all(ctx.text[k] in (b"static_cast", b"<", b">", *_TYPES) for k in code
                                         if k < open_):
                code = [k for k in code if open_ < k < last]
                continue
        break
    return code


_TYPES = frozenset({b"int", b"unsigned", b"size_t", b"uint32_t", b"int64_t", b"long", b"uint64_t", b"int32_t",
                    b"const", b"short", b"signed", b"uint"})


def _top_ops(ctx: Context, code: list[int], ops: tuple[bytes, ...]) -> list[int]:
    """Positions in ``code`` of the binary operators ``ops`` outside brackets."""
    out, depth = [], 0
    for n, k in enumerate(code):
        t = ctx.text[k]
        if t in (b"(", b"[", b"{"):
            depth += 1
        elif t in (b")", b"]", b"}"):
            depth -= 1
        elif depth == 0 and t in ops and n > 0 and (ctx.kinds[code[n - 1]] in (IDENT, LITERAL)
                                                    or ctx.text[code[n - 1]] in (b")", b"]")):
            out.append(n)
    return out


def _value(ctx: Context, code: list[int], hops: int = _HOPS) -> int | None:
    """The integer an expression of literals, object-like macros and `+ - * /` on them has, else None."""
    code = _strip(ctx, code)
    if len(code) == 1:
        v = int_value(ctx.text[code[0]])
        if v is not None:
            return v
        body = ctx.macro_value(ctx.text[code[0]]) if ctx.kinds[code[0]] == IDENT and hops > 0 else None
        if body:
            return _value(ctx, body, hops - 1)
        if ctx.kinds[code[0]] == IDENT and hops > 0:
            init = _const_init(ctx, ctx.text[code[0]], code[0])
            return _value(ctx, init, hops - 1) if init else None
        return None
    for ops in ((b"+", b"-"), (b"*", b"/", b"%")):
        at = _top_ops(ctx, code, ops)
        if at:
            n = at[-1]
            a, b = _value(ctx, code[:n], hops), _value(ctx, code[n + 1:], hops)
            if a is None or b is None:
                return None
            op = ctx.text[code[n]]
            if op in (b"/", b"%") and b == 0:
                return None
            return {b"+": a + b, b"-": a - b, b"*": a * b, b"/": a // b if b else None, b"%": a % b}[op]
    return None


def _const_init(ctx: Context, name: bytes, before: int) -> list[int] | None:
    """The initialiser of a `const`/`constexpr` integer named ``name`` declared before ``before``."""
    k = host_flow.decl_before(ctx, name, before)
    if k is None or ctx.t(ctx.next_code(k)) != b"=":
        return None
    words = ctx.decl_type_words(k)
    if b"const" not in words and b"constexpr" not in words:
        return None
    return _init_tokens(ctx, k)


def _init_tokens(ctx: Context, decl: int) -> list[int] | None:
    """`T x = expr;` -> the tokens of expr."""
    eq = ctx.next_code(decl)
    if ctx.t(eq) != b"=":
        return None
    k, out = ctx.next_code(eq), []
    while k < ctx.n and ctx.text[k] not in (b";", b","):
        if ctx.text[k] in (b"(", b"[", b"{") and ctx.match(k) > k:
            out.extend(j for j in range(k, ctx.match(k) + 1) if ctx.kinds[j] != COMMENT)
            k = ctx.match(k) + 1
            continue
        if ctx.kinds[k] != COMMENT:
            out.append(k)
        k += 1
    return out or None


def _empty(ctx: Context, code: list[int], hops: int, at: int) -> Empty | None:
    """How the expression ``code`` can be 0, or None when it cannot or this cannot tell."""
    code = _strip(ctx, code)
    if not code:
        return None
    value = _value(ctx, code)
    if value is not None:
        return Empty("always 0", frozenset()) if value == 0 else None
    if any(ctx.text[k] in (b"?", b"&&", b"||", b"==", b"!=", b"<", b">", b"<=", b">=") for k in code):
        return None
    if len(code) == 1 and ctx.kinds[code[0]] == IDENT:
        return _follow(ctx, code[0], hops, at)
    first = code[0]
    if ctx.kinds[first] == IDENT and ctx.t(ctx.next_code(first)) in (b"(", b"::"):
        return _call(ctx, code, hops, at)
    plus = _top_ops(ctx, code, (b"+", b"-"))
    if plus:
        minus = [n for n in plus if ctx.text[code[n]] == b"-"]
        if len(plus) == 1 and minus:
            n = minus[0]
            a, b = code[:n], code[n + 1:]
            if _value(ctx, b) is None and _value(ctx, a) is None and _runtime(ctx, code, at):
                sa, sb = (ctx.span_text(x[0], x[-1] + 1).decode("latin-1") for x in (a, b))
                return Empty(f"0 when `{sa}` equals `{sb}`", _words(ctx, code))
        return None  # a sum: 0 only if every term is, and `+ 1` rounds up
    mul = _top_ops(ctx, code, (b"*", b"/", b"%", b">>"))
    if not mul:
        return None
    n = mul[-1]
    op = ctx.text[code[n]]
    a, b = code[:n], code[n + 1:]
    if op == b"*":
        return _empty(ctx, a, hops, at) or _empty(ctx, b, hops, at)
    divisor = _value(ctx, b)
    shown_a = ctx.span_text(a[0], a[-1] + 1).decode("latin-1")
    shown_b = ctx.span_text(b[0], b[-1] + 1).decode("latin-1")
    if not _runtime(ctx, a, at):
        return None  # computed from constants only: a size fixed at compile time
    if op == b"%":
        if divisor is not None and divisor <= 1:
            return None
        return Empty(f"0 when `{shown_a}` is a multiple of `{shown_b}`", _words(ctx, a))
    if op == b">>":
        if divisor is None or divisor <= 0:
            return None
        return Empty(f"0 when `{shown_a}` < {1 << divisor}", _words(ctx, a))
    # a division
    if divisor is not None and divisor <= 1:
        return None
    rounded = _rounded_numerator(ctx, a, b, divisor)
    if rounded is not None:
        return _empty(ctx, rounded, hops, at) if rounded else None
    if _value(ctx, a) is not None:
        return None
    bound = f"`{shown_b}`" if divisor is None else (str(divisor) if shown_b == str(divisor) else
                                                    f"`{shown_b}` ({divisor})")
    return Empty(f"0 when `{shown_a}` < {bound}", _words(ctx, a))


def _runtime(ctx: Context, code: list[int], at: int) -> frozenset[bytes]:
    """The names in ``code`` whose value is known only at run time: not macros, not ALL_CAPS constants (a macro
    of another header, a template parameter), not `constexpr` variables, not `sizeof`."""
    out = set()
    skip_to = -1
    for k in code:
        if k <= skip_to:
            continue
        t = ctx.text[k]
        if t == b"sizeof":
            nxt = ctx.next_code(k)
            skip_to = ctx.match(nxt) if ctx.t(nxt) == b"(" else nxt
            continue
        if ctx.kinds[k] != IDENT or t in ctx.macros or _CAPS.match(t) or ctx.t(ctx.prev_code(k)) == b"::":
            continue
        if ctx.t(ctx.next_code(k)) == b"::":
            continue
        decl = host_flow.decl_before(ctx, t, at)
        if decl is not None and b"constexpr" in ctx.decl_type_words(decl):
            continue
        out.add(t)
    return frozenset(out)


def _rounded_numerator(ctx: Context, a: list[int], b: list[int], divisor: int | None) -> list[int] | None:
    """For a division `a / b` that rounds up (`(x + b - 1) / b`, `(x + 255) / 256`): the tokens of x ([] when what
    is added cannot be told, which then cannot be judged); None for a division that does not round up."""
    a = _strip(ctx, a)
    bt = [ctx.text[k] for k in _strip(ctx, b)]
    for n in _top_ops(ctx, a, (b"+",)):
        x, rest = a[:n], a[n + 1:]
        if not x or not rest:
            continue
        add = _value(ctx, rest)
        if add is not None:
            return x if add > 0 else None
        rt = [ctx.text[k] for k in rest]
        if rt[:len(bt)] == bt and rt[len(bt):] == [b"-", b"1"]:  # `b - 1` spelled out
            return x
        return [] if divisor is None else None
    return None


def _call(ctx: Context, code: list[int], hops: int, at: int) -> Empty | None:
    """`min(a, b)` is 0 when one of its arguments is; `max(x, 1)` never is; any other call cannot be told."""
    k = code[0]
    name = ctx.text[k]
    if ctx.t(ctx.next_code(k)) == b"::":
        name = name + b"::" + ctx.t(ctx.next_code(ctx.next_code(k)))
        k = ctx.next_code(ctx.next_code(k))
    args = ctx.call_args(k)
    if not args or ctx.match(ctx.next_code(k)) != code[-1]:
        return None
    if name in _MIN:
        for a, b in args:
            empty = _empty(ctx, _code(ctx, a, b), hops, at)
            if empty:
                return empty
    return None


def _follow(ctx: Context, k: int, hops: int, at: int) -> Empty | None:
    """A name: an object-like macro's value, or a local variable's initialiser (when it is not assigned again
    before the launch)."""
    if hops <= 0:
        return None
    name = ctx.text[k]
    body = ctx.macro_value(name)
    if body:
        return _empty(ctx, body, hops - 1, at)
    body_range = host_flow.function_body(ctx, at)
    if body_range is None:
        return None
    decl = host_flow.decl_before(ctx, name, k, body_range[0])
    if decl is None or _reassigned(ctx, name, decl, at):
        return None
    init = _init_tokens(ctx, decl)
    if not init:
        return None
    empty = _empty(ctx, init, hops - 1, at)
    return Empty(empty.why, empty.names | {name}) if empty else None


def _reassigned(ctx: Context, name: bytes, decl: int, before: int) -> bool:
    """Whether ``name`` (or a member of it) is assigned, incremented or has its address taken between ``decl``
    and ``before``."""
    # Each launch asks about the sizes it is given: the changes of a name are listed once, then searched.
    return bool(ctx.where_between(name, _changed_at, decl + 1, before))


def _changed_at(ctx: Context, k: int) -> bool:
    if ctx.kinds[k] != IDENT:
        return False
    p, q = ctx.prev_code(k), ctx.next_code(k)
    if ctx.t(p) in (b"&", b"++", b"--") and ctx.kinds[ctx.prev_code(p)] not in (IDENT, LITERAL):
        return True
    if ctx.t(q) == b".":
        q = ctx.next_code(ctx.next_code(q))
    return ctx.t(q) in (b"=", b"+=", b"-=", b"*=", b"/=", b"%=", b"<<=", b">>=", b"|=", b"&=", b"++", b"--")


def _dim3_decl(ctx: Context, name: bytes, before: int) -> int | None:
    """`dim3 name(...)`, `dim3 name{...}` or `dim3 name = ...` before ``before``."""
    found = ctx.where_between(name, _dim3_declared, 0, before)
    return found[-1] if found else None


def _dim3_declared(ctx: Context, k: int) -> bool:
    return ctx.kinds[k] == IDENT and ctx.t(ctx.prev_code(k)) == b"dim3" and ctx.t(ctx.next_code(k)) in (
        b"(", b"{", b"=")


def _dim3_init(ctx: Context, decl: int) -> list[list[int]] | None:
    """The x, y, z component expressions a `dim3` declaration gives."""
    q = ctx.next_code(decl)
    if ctx.t(q) == b"=":
        init = _init_tokens(ctx, decl)
        return _dim3_components(ctx, init) if init else None
    if ctx.t(q) in (b"(", b"{") and ctx.match(q) > q:
        return [_code(ctx, a, b) for a, b in _split(ctx, q + 1, ctx.match(q))]
    return None


def _dim3_components(ctx: Context, code: list[int]) -> list[list[int]] | None:
    """`dim3(a, b)` / `dim3{a, b}` / `{a, b}` -> [a, b]."""
    k = 0
    if ctx.text[code[0]] == b"dim3":
        k = 1
    if k >= len(code):
        return None
    open_ = code[k]
    if ctx.text[open_] not in (b"(", b"{") or ctx.match(open_) != code[-1] or (k == 0 and ctx.text[open_] != b"{"):
        return None
    return [_code(ctx, a, b) for a, b in _split(ctx, open_ + 1, code[-1])]


def _guarded(ctx: Context, launch: int, body: tuple[int, int], names: frozenset[bytes]) -> bool:
    """A condition the launch runs under, an early exit before it, or a check call before it, that tests one of
    ``names``."""
    names = set(names)
    if not names:
        return False
    for first, last in host_flow.controlling(ctx, launch, body):
        if host_flow.mentions(ctx, first, last, names):
            return True
    start = host_flow.own_start(ctx, launch)
    for m in _GUARD_WORDS.finditer(ctx.src, ctx.ends[body[0]], ctx.starts[start]):
        k = host_flow.token_at(ctx, m.start())
        if k is None or ctx.kinds[k] == COMMENT:
            continue
        if m.group(1):
            cond = host_flow.condition_of(ctx, k)
            br = host_flow.branches(ctx, k) if cond else None
            if cond and br and br[0][1] < start and host_flow.mentions(ctx, *cond, names) and \
                    (host_flow.leaves(ctx, *br[0]) or _skips(ctx, *br[0])):
                return True
        elif ctx.is_call(k):
            close = ctx.match(ctx.next_code(k))
            if close > k and host_flow.mentions(ctx, k + 1, close, names):
                return True
    return False


def _skips(ctx: Context, first: int, last: int) -> bool:
    return any(ctx.text[k] in (b"continue", b"break") for k in range(first, last + 1))


def _guard_edits(ctx: Context, name: int, close: int, conds: list[str]):
    """`if (c) ` before a launch that is a statement of its own (braces around both when an `else` follows)."""
    if not conds:
        return []
    start = host_flow.own_start(ctx, name)
    semi = ctx.next_code(close)
    if start != name or ctx.t(semi) != b";":
        return []
    cond = " && ".join(conds)
    from hipport.model import Edit

    if ctx.t(ctx.next_code(semi)) == b"else":
        return [Edit(ctx.starts[name], ctx.starts[name], f"{{ if ({cond}) ".encode()),
                Edit(ctx.ends[semi], ctx.ends[semi], b" }")]
    return [Edit(ctx.starts[name], ctx.starts[name], f"if ({cond}) ".encode())]
