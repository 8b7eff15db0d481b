"""Stand-in definitions for names the targeted ROCm release lacks (rules/shims.toml).

`__syncwarp` arrived in ROCm 7.0 and `hipsparseGetErrorString` in 6.0: renamed code that calls them does not
build with an older release, and each such file is a program the user must debug by hand. Where a stand-in is
known to be right, it is written once into the file, before the top-level declaration that first needs it, under
the guard of rules/shims.toml (false where HIP has the name, so the same output builds with newer releases) and
under a `HIPPORT_SHIM_<name>` macro, so that a header and the file including it do not define it twice. A file
that declares the name itself, or includes (with quotes) a header that defines it, is left alone, which also makes
a second run change nothing. A stand-in for a whole
header (`include` in rules/shims.toml: `<cooperative_groups/reduce.h>`) takes the place of its include line
instead (include_shim, from the include pass); the include is gone afterwards, so a second run finds nothing to do.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache

from hipport.convert.calls import next_code
from hipport.convert.context import ConversionContext, break_before, top_of_file
from hipport.scan import COMMENT, IDENT, KEYWORD
from hipport.semantic import NEVER, load_semantic

CATEGORY = "shim"
_OPENERS = {b"if", b"ifdef", b"ifndef"}
# A name preceded by one of these is called, not declared (`return __syncwarp();`, `x ? f() : __syncwarp()`).
# Words after which a name followed by `(` is called, not declared (`return __syncwarp();`).
_STATEMENT_WORDS = {b"return", b"else", b"do", b"case", b"throw", b"co_return", b"co_yield", b"sizeof", b"decltype"}


def add_shims(ctx: ConversionContext) -> None:
    shims = ctx.semantic.shims or {}
    target = ctx.options.rocm_version
    present = set()
    for prefix, pattern in _name_patterns(tuple(shims)):
        if prefix in ctx.src:
            present.update(pattern.findall(ctx.src))
    if not present:
        return
    for name, shim in shims.items():
        if shim.include or target[:2] >= shim.hip_from[:2] or not any(c.encode() in present for c in shim.cuda):
            continue
        if ctx.options.roc and any(getattr(ctx.rules.names.get(c), "roc", None) for c in shim.cuda):
            continue  # --roc writes the ROC library's name (rocsparse_get_status_description), not this one
        uses, declared = _uses(ctx, {c.encode() for c in shim.cuda} | {name.encode()})
        # A call on the other platform's branch (`#else return __dp4a(a, b, c);` of `#ifdef USE_HIP`) needs nothing.
        uses = [i for i in uses if not ctx.platform.branches.in_other(ctx.tokens.starts[i])]
        if declared or not uses or f"HIPPORT_SHIM_{name}".encode() in ctx.src:
            continue
        if any(ctx.platform.defines(n) for n in (name, *shim.cuda)):
            continue  # the project's own (here or in a header it includes): a second definition would clash
        in_code = [i for i in uses if not ctx.structure.in_directive[i]]
        first = in_code[0] if in_code else uses[0]
        at = _insertion_point(ctx, first)
        nl = ctx.newline()
        macro = f"HIPPORT_SHIM_{name}"
        body = shim.code.strip("\n").replace("\n", nl.decode())
        never = shim.hip_from >= NEVER
        why = (f"HIP has no `{name}`; this stands in for it" if never else
               f"HIP has `{name}` from ROCm {_v(shim.hip_from)}; this stands in for it before")
        text = (f"#if !defined({macro}) && {shim.guard}{nl.decode()}#define {macro}{nl.decode()}"
                f"// hipport: {why}{nl.decode()}{body}{nl.decode()}#endif{nl.decode()}").encode()
        ctx.convert(at, at, break_before(ctx, at) + text, name, CATEGORY)
        ctx.once.add(f"shim:{name}")
        missing = "has no HIP form" if never else \
            f"is in HIP from ROCm {_v(shim.hip_from)}, not {_v(target)}"
        ctx.finding("shim-added", "info", ctx.tokens.starts[first],
                    f"`{name}` {missing}: hipport defines it here under `#if {shim.guard}`; {shim.note}",
                    subject=name)


def include_shim(ctx: ConversionContext, shim, start: int, end: int, at: int, prefix: bytes) -> None:
    """Replace the include spanning bytes ``start``..``end`` (the `#` to the closing `>`; a comment after it stays)
    by ``prefix`` (the includes the definition needs) and the guarded definition of ``shim``; ``at`` is the header
    name's offset, where the finding points."""
    nl = ctx.newline().decode()
    macro = f"HIPPORT_SHIM_{shim.name}"
    body = shim.code.strip("\n").replace("\n", nl)
    if shim.hip_header:  # a HIP that ships the header builds with its own definitions, not these
        text = (f"#if __has_include(<{shim.hip_header}>){nl}#include <{shim.hip_header}>{nl}"
                f"#elif !defined({macro}) && {shim.guard}{nl}#define {macro}{nl}"
                f"// hipport: where HIP lacks <{shim.hip_header}>, this stands in for <{shim.include}>{nl}")
    else:
        text = (f"#if !defined({macro}) && {shim.guard}{nl}#define {macro}{nl}"
                f"// hipport: HIP has no <{shim.include}>; this stands in for it{nl}")
    text = (text + f"{body}{nl}#endif").encode()
    ctx.convert(start, end, prefix + text, shim.include, CATEGORY)
    ctx.once.add(f"shim:{shim.name}")
    later = f" (later HIP: `<{shim.hip_header}>`, used if present)" if shim.hip_header else ""
    ctx.finding("shim-added", "info", at, f"HIP {_v(ctx.options.rocm_version)} has no `<{shim.include}>`{later}: "
                f"hipport writes a stand-in under `#if {shim.guard}`; {shim.note}", subject=shim.include)


@lru_cache(maxsize=4)
def _name_patterns(names: tuple) -> list[tuple[bytes, re.Pattern]]:
    """The CUDA names stand-ins answer, grouped by their first three characters: a substring test per group (fast)
    decides whether the group's regex runs over the file at all."""
    groups: dict[bytes, set] = {}
    for n in names:
        if (load_semantic().shims or {})[n].include:
            continue  # answered by its header's include, not by a call of these names
        for c in (load_semantic().shims or {})[n].cuda:
            groups.setdefault(c.encode()[:3], set()).add(c.encode())
    return [(prefix, re.compile(rb"\b(?:" + b"|".join(re.escape(c) for c in sorted(cs, key=len, reverse=True))
                                + rb")\b")) for prefix, cs in sorted(groups.items())]


def _uses(ctx: ConversionContext, names: set) -> tuple[list[int], bool]:
    """Token indices where one of ``names`` is called (in code or in a macro body), and whether the file declares
    one of them itself (a function or a macro of that name)."""
    tokens, kinds, structure = ctx.tokens, ctx.tokens.kinds, ctx.structure
    firsts = [d.first for d in structure.directives]
    uses, declared = [], False
    n = len(tokens)
    for i in range(n):
        if kinds[i] != IDENT or ctx.skip[i] or tokens.text(i) not in names:
            continue
        if structure.in_directive[i]:
            d = structure.directives[bisect.bisect_right(firsts, i) - 1]
            if d.name != b"define":
                continue
            macro_name = _next_code(ctx, d.first + 1, d.last)
            macro_name = _next_code(ctx, macro_name + 1, d.last) if macro_name is not None else None
            if macro_name == i:
                declared = True
            elif (after := _next_code(ctx, i + 1, d.last)) is not None and tokens.text(after) == b"(":
                uses.append(i)
            continue
        j = _next_code(ctx, i + 1, n)
        if j is None or tokens.text(j) != b"(":
            continue
        if _declares(ctx, i):
            declared = True  # `void __syncwarp(...)`, `inline const char *hipsparseGetErrorString(...)`
        else:
            uses.append(i)
    return uses, declared


def _prev_code(ctx: ConversionContext, i: int) -> int | None:
    kinds = ctx.tokens.kinds
    i -= 1
    while i >= 0 and kinds[i] == COMMENT:
        i -= 1
    return i if i >= 0 and not ctx.structure.in_directive[i] else None


def _declares(ctx: ConversionContext, i: int) -> bool:
    """Whether the name at ``i``, followed by `(`, is declared there: a type word before it (`void f(`,
    `unsigned int f(`, `T f(`), or `*`/`&` after a type keyword (`const char *f(`)."""
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    k = _prev_code(ctx, i)
    if k is None:
        return False
    text = tokens.text(k)
    if text in _STATEMENT_WORDS:
        return False
    if kinds[k] in (IDENT, KEYWORD):
        return True
    if text in (b"*", b"&"):
        j = _prev_code(ctx, k)
        return j is not None and kinds[j] == KEYWORD and tokens.text(j) not in _STATEMENT_WORDS
    return False


def _next_code(ctx: ConversionContext, i: int, limit: int) -> int | None:
    """calls.next_code, bounded: None when the next code token lies at or past ``limit``."""
    j = next_code(ctx.tokens, i)
    return j if j < limit else None


def _insertion_point(ctx: ConversionContext, first: int) -> int:
    """The byte offset of the line start before the top-level declaration holding token ``first``: after the
    last `;`, `}` or directive that ends at brace depth 0 outside any conditional block before it."""
    tokens, kinds, structure = ctx.tokens, ctx.tokens.kinds, ctx.structure
    directives = {d.first: d for d in structure.directives}
    guard_block = structure.guard_block
    point = top_of_file(ctx)
    point = len(ctx.src) if point is None else point
    braces = conds = 0
    i = 0
    while i < first:
        d = directives.get(i)
        if d is not None:
            opens = d.name in _OPENERS and not (guard_block is not None and _opens_guard(structure, d))
            if opens:
                conds += 1
            elif d.name == b"endif" and conds:
                conds -= 1
            if braces == 0 and conds == 0 and not opens and d.end <= tokens.starts[first]:
                point = max(point, d.end)
            i = max(d.last, i + 1)
            continue
        if kinds[i] != COMMENT and not structure.in_directive[i]:
            t = tokens.text(i)
            if t == b"{":
                braces += 1
            elif t == b"}":
                braces = max(0, braces - 1)
            if braces == 0 and conds == 0 and t in (b";", b"}"):
                after = ctx.lines.line_end(tokens.starts[i])
                nxt = after + 1 if after != -1 else len(ctx.src)
                if nxt <= tokens.starts[first] and (i + 1 >= len(tokens) or tokens.starts[i + 1] >= nxt
                                                   or kinds[i + 1] == COMMENT):
                    point = max(point, nxt)
        i += 1
    return point


def _opens_guard(structure, d) -> bool:
    """Whether directive ``d`` is the `#ifndef` of the include guard (its block is not nesting)."""
    g = structure.guard
    return g is not None and g.name == b"define" and d.first < g.first and not d.block


def _v(version: tuple) -> str:
    return ".".join(map(str, version[:2]))
