"""ROCm 7's wavefront width outside constant expressions (those are `warpsize.py`'s):

- `warpsize-host`: `warpSize` read in a host function's body: no host value from ROCm 7.0 (a compile error), 64
  whatever the GPU before. No patch: the fix is a device query whose result has to reach the code that used it.
- `wavefront-size-macro`: `__AMDGCN_WAVEFRONT_SIZE(__)`, deprecated since 6.3.2 and gone from 7.2's compiler (0 in
  `#if`: a wave64 test silently takes its wave32 branch). A comparison with a number, `defined(...)`, `#ifdef` and
  `#define W <macro>` get the target-macro test of rules/wavefront.toml as a patch, true exactly where the
  comparison held with 6.4; other uses are reported without one.
"""

from __future__ import annotations

from hipport.audit.checks.common import defined_by_project
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context
from hipport.wavefront import COMPARISONS, FLIPPED, load_wave_rules

HOST = "warpsize-host"
MACRO = "wavefront-size-macro"
_AFTER_PARAMS = {b")", b"const", b"noexcept", b"override", b"final", b"mutable"}
_EDGE_BEFORE = {b"(", b"&&", b"||"}
_EDGE_AFTER = {b")", b"&&", b"||"}


def check(ctx: Context) -> None:
    if HOST in ctx.hazards and b"warpSize" in ctx.words:
        _host_warpsize(ctx)
    if MACRO in ctx.hazards:
        rules = load_wave_rules()
        names = {n.encode() for n in rules.macro_names} & ctx.words
        if names:
            _wavefront_macro(ctx, rules, names)


# -- warpSize on the host -------------------------------------------------------------------------------------


def host_bodies(ctx: Context) -> list[tuple[int, int]]:
    """(`{`, `}`) of the bodies of functions that are not device functions (`ctx.functions`), outermost only:
    a `{` after a parameter list at namespace or class scope."""
    out = []
    i = 0
    device = {fn.body[0]: fn.body[1] for fn in ctx.functions}
    while i < ctx.n:
        if ctx.kinds[i] == COMMENT or ctx.in_directive[i] or ctx.text[i] != b"{":
            i += 1
            continue
        close = ctx.match(i)
        if i in device:
            i = device[i] + 1
            continue
        p = ctx.prev_code(i)
        while p >= 0 and ctx.text[p] in _AFTER_PARAMS and ctx.text[p] != b")":
            p = ctx.prev_code(p)
        if p >= 0 and ctx.text[p] == b")" and close > i:
            out.append((i, close))
            i = close + 1
            continue
        i += 1  # a namespace, class or initialiser: its functions are found inside
    return out


def _host_warpsize(ctx: Context) -> None:
    if b"warpSize" in ctx.macros or b"warpSize" in ctx.header_constants or defined_by_project(ctx, "warpSize"):
        # the project's own, here or in a header it includes (bm3d's `#define warpSize 32` in indices.hpp, through
        # bm3d.hpp): host code reads that macro's value (hip-name-collision judges the definition)
        return
    for a, b in host_bodies(ctx):
        uses = [k for k in range(a + 1, b) if ctx.text[k] == b"warpSize" and ctx.kinds[k] == IDENT
                and not ctx.in_directive[k] and not ctx.device[k]]
        if not uses or _declares_warpsize(ctx, a, b):
            continue
        for k in uses:
            if ctx.t(ctx.prev_code(k)) in (b".", b"->", b"::"):
                continue  # `prop.warpSize`
            ctx.report(HOST, k, "`warpSize` read in host code: ROCm 7.0 gives host code no value (a compile "
                       "error), older releases gave 64 whatever the GPU; ask the device with "
                       "`hipDeviceGetAttribute(&w, hipDeviceAttributeWarpSize, dev)`", subject="warpSize")


def _declares_warpsize(ctx: Context, a: int, b: int) -> bool:
    """The function declares a `warpSize` of its own (a parameter or a local), which its uses then name."""
    k = ctx.prev_code(a)
    while k >= 0 and ctx.text[k] != b")":
        k = ctx.prev_code(k)
    start = ctx.match(k) if k >= 0 else a
    return any(ctx.text[j] == b"warpSize" and ctx.is_decl_name(j) for j in range(max(start, 0), b))


# -- __AMDGCN_WAVEFRONT_SIZE ----------------------------------------------------------------------------------


def _wavefront_macro(ctx: Context, rules, names: set) -> None:
    directive_of = {}
    for d in ctx.structure.directives:
        for k in range(d.first, d.last):
            directive_of[k] = d
    for i in range(ctx.n):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in names:
            continue
        name = ctx.text[i].decode()
        d = directive_of.get(i)
        edits = _patch(ctx, rules, d, i) if d is not None else []
        if d is None:
            where = "in code it is undeclared"
            fix = ("in device code `::rocprim::arch::wavefront::max_size()` is the target's width as a constant "
                   "(`hipport convert` writes it), in host code ask the device "
                   "(`hipDeviceGetAttribute(&w, hipDeviceAttributeWarpSize, dev)`)")
        else:
            where = "`#if` reads it as 0: a wave64 test takes its wave32 branch"
            fix = f"`{rules.wave64}` is true exactly where it was 64"
        ctx.report(MACRO, i, f"`{name}` is gone from ROCm 7.2's compiler ({where}): {fix}",
                   edits=edits, subject=name)


def _patch(ctx: Context, rules, d, i: int) -> list:
    first = d.first + 2
    name = ctx.text[d.first + 1]
    if name in (b"ifdef", b"ifndef", b"elifdef", b"elifndef"):
        if ctx.next_code(d.first + 1) != i:
            return []
        directive = "if" if name in (b"ifdef", b"ifndef") else "elif"
        negate = "!" if name.endswith(b"ndef") else ""
        return [ctx.edit(d.first + 1, f"{directive} {negate}({rules.macro_defined})", i)]
    if name == b"define":
        code = [k for k in range(first, d.last) if ctx.kinds[k] != COMMENT]
        if len(code) in (2, 4) and code[1:] in ([i], [i - 1, i, i + 1]) and ctx.kinds[code[0]] == IDENT \
                and not (ctx.t(code[0] + 1) == b"(" and ctx.starts[code[0] + 1] == ctx.ends[code[0]]) \
                and (len(code) == 2 or ctx.t(i - 1) == b"(" and ctx.t(i + 1) == b")") \
                and not ctx.src[d.start:ctx.starts[d.first]].strip():
            head = ctx.span_text(d.first, code[0] + 1).decode("latin-1")
            return [ctx.edit(d.first, rules.width_define(head, _newline(ctx)), code[-1])]
        return []
    if name not in (b"if", b"elif"):
        return []
    p = ctx.prev_code(i)
    p = p if p >= first else -1
    if p >= 0 and ctx.text[p] == b"defined":
        return [ctx.edit(p, f"({rules.macro_defined})", i)]
    if p >= 0 and ctx.text[p] == b"(" and ctx.t(ctx.prev_code(p)) == b"defined" and ctx.prev_code(p) >= first \
            and ctx.t(ctx.next_code(i)) == b")":
        return [ctx.edit(ctx.prev_code(p), f"({rules.macro_defined})", ctx.next_code(i))]
    found = _comparison(ctx, i, first, d.last)
    if found is not None:
        op, value, (a, b) = found
        before, after = ctx.prev_code(a), ctx.next_code(b)
        if (before < first or ctx.text[before] in _EDGE_BEFORE) and \
                (after >= d.last or ctx.text[after] in _EDGE_AFTER):
            return [ctx.edit(a, f"({rules.macro_test(op, value)})", b)]
    return []


def _comparison(ctx: Context, i: int, first: int, last: int):
    n = ctx.next_code(i)
    if n < last and ctx.text[n].decode("latin-1") in COMPARISONS:
        v = ctx.next_code(n)
        if v < last and (value := _number(ctx, v)) is not None:
            return ctx.text[n].decode("latin-1"), value, (i, v)
    p = ctx.prev_code(i)
    if p >= first and ctx.text[p].decode("latin-1") in COMPARISONS:
        v = ctx.prev_code(p)
        if v >= first and (value := _number(ctx, v)) is not None:
            return FLIPPED[ctx.text[p].decode("latin-1")], value, (v, i)
    return None


def _number(ctx: Context, k: int) -> int | None:
    if ctx.kinds[k] != LITERAL:
        return None
    try:
        return int(ctx.text[k].rstrip(b"uUlL"), 0)
    except ValueError:
        return None


def _newline(ctx: Context) -> str:
    i = ctx.src.find(b"\n")
    return "\r\n" if i > 0 and ctx.src[i - 1] == 0x0D else "\n"
