"""`warpSize` where C++ needs a constant expression, for a target of ROCm 7.0 or later (rules/wavefront.toml).

From ROCm 7.0 `warpSize` is no constant expression. In a device function's body, where C++ needs one (an array
bound, a `constexpr` initialiser, a template argument), it becomes rocPRIM's `max_size()` (hipCUB's
`HIPCUB_DEVICE_WARP_THREADS` in a file using hipCUB), with the include it needs: the target's width in each device
pass, as `warpSize` was up to 6.4. Elsewhere (a namespace-scope constant, a kernel's signature, `static_assert`,
`enable_if`, host code) the host and device passes would disagree or the code needs a run-time value: `hipport
audit` reports those (`warpsize-constexpr`, `warpsize-host`).
"""

from __future__ import annotations

import re
from bisect import bisect_left

from hipport import directives as dirs
from hipport.convert.calls import matching_close, next_code, prev_code, template_close
from hipport.convert.context import ConversionContext, break_before, token_at, top_of_file
from hipport.convert.quick import wake_on
from hipport.scan import COMMENT, IDENT, KEYWORD
from hipport.wavefront import WaveRules, load_wave_rules

CATEGORY = "wavefront"
RULE = "wavefront-width"
_DEVICE_WORDS = {b"__global__", b"__device__"}
_INTEREST = re.compile(rb"__global__|__device__|[{};]")
_WARPSIZE = re.compile(rb"\bwarpSize\b")
# Words before `name[` that make it an expression, not a declaration (`return s[warpSize]`).
_NOT_A_TYPE = {b"return", b"case", b"new", b"delete", b"else", b"do", b"throw", b"sizeof", b"goto", b"co_return",
               b"co_yield", b"alignof", b"decltype", b"typeid"}
_AFTER_BOUND = {b";", b"=", b"[", b",", b"{"}
_TEMPLATE_STOP = {b";", b"{", b"}", b"(", b"[", b"&&", b"||", b"=", b"?", b"return", b":"}
_AFTER_TEMPLATE = {b"(", b"::", b"{", b">", b"&", b"*", b"&&"}

# HIP device code always has a `__` word (`__global__`, `__device__`), which wakes the engine already; a header of
# templates whose only word of interest is `warpSize` needs this.
wake_on(["warpSize"])


def rewrite_wave_width(ctx: ConversionContext) -> None:
    rules = load_wave_rules()
    if ctx.options.rocm_version[:2] < rules.width_from or b"warpSize" not in ctx.src:
        return
    bodies = device_bodies(ctx)
    if not bodies or _declares_own(ctx):
        return  # no device code, or the file's own `warpSize` (a variable, a macro): not HIP's
    spelling = width_spelling(ctx, rules)
    if _warpsize(ctx, bodies, spelling):
        include_width(ctx, rules, spelling)


# -- where device code is -------------------------------------------------------------------------------------


def device_bodies(ctx: ConversionContext) -> list[tuple[int, int]]:
    """(`{`, `}`) token indices of the bodies of device functions and `__device__` lambdas, outermost only: a
    `__global__`/`__device__` (or a macro of the file that stands for one) seen outside a body makes the next `{`
    open one, a `;` before it ends the declaration."""
    tokens, kinds, in_directive = ctx.tokens, ctx.tokens.kinds, ctx.structure.in_directive
    words = set(_DEVICE_WORDS)
    words |= {m.encode() for m, v in ctx.macro_values.items() if any(w.decode() in v for w in _DEVICE_WORDS)}
    pattern = _INTEREST if words == _DEVICE_WORDS else re.compile(
        rb"|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)) + rb"|[{};]")
    out: list[tuple[int, int]] = []
    pending = False
    src, at = ctx.src, 0
    # A search, not `finditer`: after a body the search goes on past its `}` (nothing inside one matters here, and
    # no word searched for holds a `}`).
    while (m := pattern.search(src, at)) is not None:
        at = m.end()
        i = token_at(tokens, m.start())
        if i is None or kinds[i] == COMMENT or in_directive[i] or tokens.text(i) != m.group():
            continue
        t = m.group()
        if t == b"{":
            if pending:
                close = matching_close(tokens, i)
                if close is not None:
                    out.append((i, close))
                    at = max(at, tokens.ends[close])
            pending = False
        elif t == b";":
            pending = False
        elif t in words:
            pending = True
    return out


def inside(bodies: list[tuple[int, int]], i: int) -> bool:
    # `device_bodies` gives them in order and apart: only the last body opening before ``i`` can hold it.
    k = bisect_left(bodies, (i,)) - 1
    return k >= 0 and i < bodies[k][1]


# -- `warpSize` in constant expressions --------------------------------------------------------------------------


def warpsize_tokens(ctx: ConversionContext) -> list[int]:
    """Indices of the `warpSize` identifiers outside directives, found by a regex (the file's tokens are many)."""
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    out = []
    for m in _WARPSIZE.finditer(ctx.src):
        i = token_at(tokens, m.start())
        if i is not None and kinds[i] == IDENT and tokens.ends[i] == m.end() and not ctx.structure.in_directive[i]:
            out.append(i)
    return out


def _warpsize(ctx: ConversionContext, bodies, spelling: str) -> bool:
    tokens = ctx.tokens
    first = None
    for i in warpsize_tokens(ctx):
        if not inside(bodies, i) or ctx.skip[i] or i in ctx.claimed:
            continue
        p = prev_code(tokens, i - 1)
        if p >= 0 and tokens.text(p) in (b".", b"->", b"::") or constant_context(ctx, i) is None:
            continue
        ctx.claimed.add(i)
        ctx.convert(tokens.starts[i], tokens.ends[i], spelling.encode(), "warpSize", CATEGORY)
        first = i if first is None else first
    if first is not None:
        ctx.finding(RULE, "info", tokens.starts[first],
                    f"`warpSize` is no constant expression from ROCm 7.0: where device code needs one it is now "
                    f"`{spelling}`, the target's wavefront width at compile time (64 on gfx8/gfx9, 32 on RDNA)",
                    subject="warpSize")
    return first is not None


def _declares_own(ctx: ConversionContext) -> bool:
    if "warpSize" in ctx.macro_values:
        return True
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    for i in warpsize_tokens(ctx):
        p, q = prev_code(tokens, i - 1), next_code(tokens, i + 1)
        if p >= 0 and kinds[p] in (IDENT, KEYWORD) and tokens.text(p) not in _NOT_A_TYPE \
                and q < len(tokens) and tokens.text(q) in (b"=", b";", b"{", b"(", b","):
            return True
    return False


def constant_context(ctx: ConversionContext, i: int) -> str | None:
    """"array bound", "constexpr initialiser" or "template argument" where the expression holding token ``i``
    must be a constant, else None (a `static_assert` or `case` label is left to the audit)."""
    if _array_bound(ctx, i):
        return "array bound"
    if _template_argument(ctx, i):
        return "template argument"
    if _constexpr_initialiser(ctx, i):
        return "constexpr initialiser"
    return None


def _enclosing(ctx: ConversionContext, i: int) -> int:
    """The innermost unclosed `(`, `[` or `{` before token ``i`` (-1 if none)."""
    tokens = ctx.tokens
    depth = 0
    for k in range(i - 1, -1, -1):
        t = tokens.text(k)
        if t in (b")", b"]", b"}"):
            depth += 1
        elif t in (b"(", b"[", b"{"):
            if depth == 0:
                return k
            depth -= 1
    return -1


def _array_bound(ctx: ConversionContext, i: int) -> bool:
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    b = _enclosing(ctx, i)
    if b < 0 or tokens.text(b) != b"[":
        return False
    close = matching_close(tokens, b)
    if close is None:
        return False
    after = next_code(tokens, close + 1)
    if after >= len(tokens) or tokens.text(after) not in _AFTER_BOUND:
        return False
    p = prev_code(tokens, b - 1)
    if p < 0:
        return False
    if tokens.text(p) == b"]":  # a later dimension: the first must be a declaration's
        first = _open_of(ctx, p)
        return first is not None and _declared_name_before(ctx, first)
    return _declared_name_before(ctx, b)


def _open_of(ctx: ConversionContext, close: int) -> int | None:
    k = _enclosing(ctx, close)
    return k if k >= 0 and matching_close(ctx.tokens, k) == close else None


def _declared_name_before(ctx: ConversionContext, bracket: int) -> bool:
    """`T name[`: a name after a type word (or after `*`/`&` after one)."""
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    p = prev_code(tokens, bracket - 1)
    if p < 0 or kinds[p] != IDENT:
        return False
    pp = prev_code(tokens, p - 1)
    if pp < 0:
        return False
    if tokens.text(pp) in (b"*", b"&"):
        pp = prev_code(tokens, pp - 1)
    return pp >= 0 and kinds[pp] in (IDENT, KEYWORD) and tokens.text(pp) not in _NOT_A_TYPE


def _template_argument(ctx: ConversionContext, i: int) -> bool:
    """`name<..., warpSize, ...>` followed by what follows a template-id (`(`, `::`, a declared name ...); after a
    `;`, `,` or `)` only where `<` cannot be a comparison (a qualified name, or a `using`/`typedef`)."""
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    k = i - 1
    depth = 0
    while k >= 0:
        t = tokens.text(k)
        if kinds[k] == COMMENT:
            k -= 1
            continue
        if t in (b")", b"]"):
            opened = _open_of(ctx, k)
            if opened is None:
                return False
            k = opened - 1
            continue
        if t in _TEMPLATE_STOP:
            return False
        if t == b">":
            depth += 1
        elif t == b"<":
            if depth == 0:
                break
            depth -= 1
        k -= 1
    if k < 0:
        return False
    name = prev_code(tokens, k - 1)
    if name < 0 or kinds[name] != IDENT:
        return False
    close = template_close(tokens, k)
    if close is None or close < i:
        return False
    after = next_code(tokens, close + 1)
    if after >= len(tokens):
        return False
    follower = tokens.text(after)
    if follower in _AFTER_TEMPLATE or kinds[after] == IDENT:
        return True
    if follower in (b";", b",", b")"):
        q = prev_code(tokens, name - 1)
        if q >= 0 and tokens.text(q) == b"::":
            return True
        start = _statement_start(ctx, k)
        return tokens.text(start) in (b"using", b"typedef")
    return False


def _statement_start(ctx: ConversionContext, i: int, through_brackets: bool = False) -> int:
    """The first token of the statement holding token ``i``; an enclosing `(` or `[` ends the search unless
    ``through_brackets``."""
    tokens = ctx.tokens
    k = i
    while True:
        j = prev_code(tokens, k - 1)
        if j < 0 or ctx.structure.in_directive[j] or tokens.text(j) in (b";", b"{", b"}"):
            return k
        if tokens.text(j) in (b")", b"]"):
            opened = _open_of(ctx, j)
            if opened is None:
                return k
            k = opened
            continue
        if tokens.text(j) in (b"(", b"[") and not through_brackets:
            return k
        k = j


def _constexpr_initialiser(ctx: ConversionContext, i: int) -> bool:
    tokens = ctx.tokens
    start = _statement_start(ctx, i, through_brackets=True)
    texts = [tokens.text(k) for k in range(start, i) if tokens.kinds[k] != COMMENT]
    return b"constexpr" in texts[:4] and b"=" in texts and b"(" not in texts[:texts.index(b"=")]


# -- the width's spelling and its include --------------------------------------------------------------------


def _includes(ctx: ConversionContext) -> list[tuple[object, bytes]]:
    out = []
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if target is not None:
            out.append((d, target[2]))
    return out


def width_spelling(ctx: ConversionContext, rules: WaveRules) -> str:
    for header in _included(ctx):
        for prefix, spelling in rules.width_spellings.items():
            if header.startswith(prefix):
                return spelling
    return rules.width


def _included(ctx: ConversionContext) -> list[str]:
    """The headers the file includes, each as the conversion writes it (`cub/cub.cuh` as `hipcub/hipcub.hpp`)."""
    out = []
    for _, header in _includes(ctx):
        name = header.decode("latin-1")
        rule = ctx.rules.headers.get(name)
        out.append(rule.target(ctx.options.roc) or name if rule is not None else name)
    return out


def include_width(ctx: ConversionContext, rules: WaveRules, spelling: str) -> None:
    """`#include <rocprim/intrinsics/arch.hpp>` after the file's last include outside any conditional (at the top
    when it has none), once, unless ``spelling`` is a library's own or a rocPRIM or hipCUB header is included."""
    if spelling != rules.width or "include:width" in ctx.once:
        return
    ctx.once.add("include:width")
    if any(h.startswith(p) for h in _included(ctx) for p in rules.width_provided_by):
        return
    top_blocks = {(), (ctx.structure.guard_block,)}
    last = None
    for d, _ in _includes(ctx):
        if tuple(d.block) in top_blocks:
            last = d
    nl = ctx.newline()
    line = f"#include <{rules.width_include}>".encode() + nl
    if last is not None:
        at = last.end
        ctx.convert(at, at, break_before(ctx, at) + line, rules.width_include, "include")
        return
    at = top_of_file(ctx)
    if at is not None:
        ctx.convert(at, at, break_before(ctx, at) + line, rules.width_include, "include")
