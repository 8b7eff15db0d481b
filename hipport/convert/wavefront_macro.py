"""`__AMDGCN_WAVEFRONT_SIZE` for a target of ROCm 7.0 or later (rules/wavefront.toml).

ROCm 7.2's compiler no longer defines it: `#if __AMDGCN_WAVEFRONT_SIZE == 64` sees 0 and takes the wave32 branch
on every target, silently, and code that names it does not compile. A comparison with a number in `#if`/`#elif`
becomes a test of the target macros true exactly where it held with ROCm 6.4 (64 in the host pass and the
gfx8/gfx9 device passes, 32 in the RDNA ones), `defined(...)`/`#ifdef` the test of where it was defined, and
`#define W __AMDGCN_WAVEFRONT_SIZE` a choice between `#define W 64` and `#define W 32` on the wave64 test; in a
device function's body it is the compile-time width of `wave_width.py`. Anything else is reported, under the
audit's rule id (`wavefront-size-macro`) so that `hipport audit` shows it once.
"""

from __future__ import annotations

from hipport.convert.calls import next_code, prev_code
from hipport.convert.context import ConversionContext
from hipport.convert.wave_width import CATEGORY, RULE, device_bodies, include_width, inside, width_spelling
from hipport.scan import COMMENT, IDENT, LITERAL
from hipport.wavefront import COMPARISONS, FLIPPED, WaveRules, load_wave_rules

MACRO_RULE = "wavefront-size-macro"
_CONDITIONS = {b"if", b"elif"}
_PRESENCE = {b"ifdef": "", b"ifndef": "!", b"elifdef": "", b"elifndef": "!"}
_EDGE_BEFORE = {b"(", b"&&", b"||"}
_EDGE_AFTER = {b")", b"&&", b"||"}


def rewrite_wavefront_macro(ctx: ConversionContext) -> None:
    rules = load_wave_rules()
    if ctx.options.rocm_version[:2] < rules.macro_from:
        return
    names = {n.encode() for n in rules.macro_names if n.encode() in ctx.src}
    if names:
        _macro(ctx, rules, names)


def _macro(ctx: ConversionContext, rules: WaveRules, names: set) -> None:
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    bodies = device_bodies(ctx)
    spelling = width_spelling(ctx, rules)
    wrote = False
    handled: set[int] = set()
    for d in ctx.structure.directives:
        uses = [k for k in range(d.first, d.last) if kinds[k] == IDENT and tokens.text(k) in names]
        if not uses:
            continue
        if d.name in _CONDITIONS:
            for k in uses:
                if _condition_use(ctx, rules, d, k):
                    handled.add(k)
        elif d.name in _PRESENCE and len(uses) == 1 and uses[0] == next_code(tokens, d.first + 2):
            _presence_directive(ctx, rules, d, uses[0])
            handled.add(uses[0])
        elif d.name == b"define" and _width_define(ctx, rules, d, uses):
            handled.update(uses)
    for i in range(len(tokens)):
        if kinds[i] != IDENT or tokens.text(i) not in names or i in handled or i in ctx.claimed:
            continue
        name = tokens.text(i).decode()
        if not ctx.structure.in_directive[i] and inside(bodies, i):
            ctx.claimed.add(i)
            ctx.convert(tokens.starts[i], tokens.ends[i], spelling.encode(), name, CATEGORY)
            wrote = True
            continue
        # the audit's rule, at the same place: `hipport audit` shows one finding, not two
        ctx.finding(MACRO_RULE, "error", tokens.starts[i],
                    f"`{name}` is gone from ROCm 7.2 (0 in `#if`, undeclared in code); not rewritable here: test "
                    f"`{rules.wave64}` for wave64, or ask the device (`hipDeviceAttributeWarpSize`) in host code",
                    subject=name)
    if handled:
        first = min(handled)
        ctx.finding(RULE, "info", tokens.starts[first],
                    f"`{tokens.text(first).decode()}` is gone from ROCm 7.2's compiler (`#if` reads it as 0, so a "
                    "wave64 test takes its wave32 branch on every target): its tests are now the target macros "
                    "`__GFX8__`/`__GFX9__`, true where it was 64 (the host pass too, as before)",
                    subject=tokens.text(first).decode())
    if wrote:
        include_width(ctx, rules, spelling)


def _condition_use(ctx: ConversionContext, rules: WaveRules, d, k: int) -> bool:
    """`M == 64` (either side, `!=`, `<`, ... against 32 or 64), `defined(M)` or `M` alone as a truth value, in an
    `#if`/`#elif`: rewritten to the test true exactly where the comparison held."""
    tokens = ctx.tokens
    first = d.first + 2
    p = _prev_in(tokens, k, first)
    if p is not None and tokens.text(p) == b"(":
        q = _prev_in(tokens, p, first)
        close = _next_in(tokens, k, d.last)
        if q is not None and tokens.text(q) == b"defined" and close is not None and tokens.text(close) == b")":
            _replace(ctx, tokens.starts[q], tokens.ends[close], rules.macro_defined, k)
            return True
    if p is not None and tokens.text(p) == b"defined":
        _replace(ctx, tokens.starts[p], tokens.ends[k], rules.macro_defined, k)
        return True
    n = _next_in(tokens, k, d.last)
    found = comparison(tokens, k, first, d.last)
    if found is not None:
        op, value, span = found
        before = _prev_in(tokens, span[0], first)
        after = _next_in(tokens, span[1], d.last)
        if not _edge(tokens, before, after):
            return False
        _replace(ctx, tokens.starts[span[0]], tokens.ends[span[1]], rules.macro_test(op, value), k)
        return True
    before, after = p, n
    if before is not None and tokens.text(before) == b"!":
        before = _prev_in(tokens, before, first)
    if _edge(tokens, before, after):  # `#if M`: defined and non-zero, which it was wherever defined
        _replace(ctx, tokens.starts[k], tokens.ends[k], rules.macro_defined, k)
        return True
    return False


def comparison(tokens, k: int, first: int, last: int) -> tuple[str, int, tuple[int, int]] | None:
    """(operator, number, (first token, last token)) of `M <op> N` or `N <op> M` around the macro at ``k``, the
    operator written as for `M <op> N`; None when ``k`` is compared with no number."""
    n = _next_in(tokens, k, last)
    if n is not None and tokens.text(n).decode("latin-1") in COMPARISONS:
        value = _next_in(tokens, n, last)
        if value is not None and (number := _number(tokens, value)) is not None:
            return tokens.text(n).decode("latin-1"), number, (k, value)
    p = _prev_in(tokens, k, first)
    if p is not None and tokens.text(p).decode("latin-1") in COMPARISONS:
        value = _prev_in(tokens, p, first)
        if value is not None and (number := _number(tokens, value)) is not None:
            return FLIPPED[tokens.text(p).decode("latin-1")], number, (value, k)
    return None


def _edge(tokens, before, after) -> bool:
    """The span stands alone in the condition: nothing binds tighter on either side."""
    return (before is None or tokens.text(before) in _EDGE_BEFORE) and \
        (after is None or tokens.text(after) in _EDGE_AFTER)


def _replace(ctx: ConversionContext, start: int, end: int, test: str, k: int) -> None:
    ctx.claimed.add(k)
    ctx.convert(start, end, f"({test})".encode(), ctx.tokens.text(k).decode(), CATEGORY)


def _presence_directive(ctx: ConversionContext, rules: WaveRules, d, k: int) -> None:
    """`#ifdef M` -> `#if (defined(__HIP__))`, `#ifndef M` -> `#if !(defined(__HIP__))`."""
    tokens = ctx.tokens
    name = tokens.text(d.first + 1)
    directive = b"if" if name in (b"ifdef", b"ifndef") else b"elif"
    ctx.claimed.add(k)
    ctx.convert(tokens.starts[d.first + 1], tokens.ends[k],
                directive + b" " + _PRESENCE[name].encode() + f"({rules.macro_defined})".encode(),
                tokens.text(k).decode(), CATEGORY)


def _width_define(ctx: ConversionContext, rules: WaveRules, d, uses: list[int]) -> bool:
    """`#define W M` (or `(M)`) alone on its line: a choice between `#define W 64` and `#define W 32`."""
    tokens = ctx.tokens
    code = [k for k in range(d.first + 2, d.last) if tokens.kinds[k] != COMMENT]
    if len(code) < 2 or tokens.kinds[code[0]] != IDENT or tokens.starts[code[0] + 1] == tokens.ends[code[0]] \
            and tokens.text(code[0] + 1) == b"(":
        return False  # a function-like macro
    body = [tokens.text(k) for k in code[1:]]
    if body not in ([tokens.text(uses[0])], [b"(", tokens.text(uses[0]), b")"]) or len(uses) != 1:
        return False
    if ctx.src[d.start:tokens.starts[d.first]].strip():
        return False
    head = ctx.src[tokens.starts[d.first]:tokens.ends[code[0]]].decode("latin-1")
    text = rules.width_define(head, ctx.newline().decode()).encode()
    end = tokens.ends[code[-1]]
    ctx.claimed.update(uses)
    ctx.convert(tokens.starts[d.first], end, text, tokens.text(uses[0]).decode(), CATEGORY)
    return True


def _prev_in(tokens, k: int, first: int):
    j = prev_code(tokens, k - 1)
    return j if j >= first else None


def _next_in(tokens, k: int, last: int):
    j = next_code(tokens, k + 1)
    return j if j < last else None


def _number(tokens, k: int) -> int | None:
    if tokens.kinds[k] != LITERAL:
        return None
    text = tokens.text(k).rstrip(b"uUlL")
    try:
        return int(text, 0)
    except ValueError:
        return None


