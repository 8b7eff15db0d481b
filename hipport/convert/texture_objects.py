"""Texture and surface objects used as integers.

CUDA's `cudaTextureObject_t` / `cudaSurfaceObject_t` are `unsigned long long`; HIP's are pointers to an opaque
struct. Renaming keeps `if (tex)`, `tex = 0`, passing them around and a C-style cast to a 64-bit integer and back
working, but arithmetic on them, a cast to a narrower integer (`(int)tex`) or a `static_cast` to any integer type
does not compile. Each such use is named where it is;
nothing is rewritten (what the project meant by the integer is for a person to decide).
"""

from __future__ import annotations

import re

from hipport.convert.context import ConversionContext
from hipport.scan import COMMENT, IDENT

RULE = "texture-object-integer"
_TYPES = (b"cudaTextureObject_t", b"cudaSurfaceObject_t", b"CUtexObject", b"CUsurfObject")
_DECLARED = re.compile(rb"\b(?:cudaTextureObject_t|cudaSurfaceObject_t|CUtexObject|CUsurfObject)\s*(?:const\s*)?"
                       rb"[&*]?\s*([A-Za-z_]\w*)")
_INTEGER_WORDS = {b"int", b"unsigned", b"long", b"short", b"char", b"size_t", b"uint32_t", b"int32_t", b"uint64_t",
                  b"int64_t", b"uintptr_t", b"intptr_t", b"uint", b"ulong", b"ull"}
_WIDE = {b"size_t", b"uint64_t", b"int64_t", b"uintptr_t", b"intptr_t", b"ulong", b"ull"}
_ARITHMETIC = {b"+", b"-", b"*", b"/", b"%", b"<<", b">>", b"|", b"^", b"+=", b"-=", b"*=", b"/=", b"%=", b"|=",
               b"^=", b"<<=", b">>=", b"++", b"--"}


def report_texture_integers(ctx: ConversionContext) -> None:
    if not any(t in ctx.src for t in _TYPES):
        return
    names = {m.group(1) for m in _DECLARED.finditer(ctx.src)}
    if not names:
        return
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    n = len(tokens)

    def code(i: int, step: int) -> int | None:
        i += step
        while 0 <= i < n and kinds[i] == COMMENT:
            i += step
        return i if 0 <= i < n else None

    reported = set()
    for i in range(n):
        if kinds[i] != IDENT or ctx.skip[i] or tokens.text(i) not in names:
            continue
        prev, nxt = code(i, -1), code(i, 1)
        p = tokens.text(prev) if prev is not None else b""
        q = tokens.text(nxt) if nxt is not None else b""
        if p in (b".", b"->", b"::") or q == b"(":
            continue  # a member or a function of that name
        how = None
        if p == b")" and _integer_cast_before(tokens, kinds, prev):
            how = "cast to an integer type"
        elif p == b"(" and _static_cast_before(tokens, kinds, prev):
            how = "`static_cast` to an integer type"
        elif q in _ARITHMETIC or p in (b"++", b"--", b"%", b"/", b"<<", b">>", b"|", b"^"):
            how = "integer arithmetic"
        if how is None or tokens.starts[i] in reported:
            continue
        reported.add(tokens.starts[i])
        name = tokens.text(i).decode("latin-1")
        ctx.finding(RULE, "warning", tokens.starts[i],
                    f"`{name}` is a texture/surface object used as an integer ({how}): HIP's handle is a pointer, "
                    f"not CUDA's 64-bit integer; keep it as `hipTextureObject_t`/`hipSurfaceObject_t` (an array or "
                    f"parameter of that type) instead of an integer", subject=name)


def _integer_cast_before(tokens, kinds, close: int) -> bool:
    """`(int)` / `(unsigned long)` / `(uint32_t)` just before: the tokens between `(` and ``close`` are integer
    type words."""
    k = close - 1
    words = []
    while k >= 0 and tokens.text(k) != b"(":
        if kinds[k] == COMMENT:
            k -= 1
            continue
        words.append(tokens.text(k))
        k -= 1
    # a C-style cast to a 64-bit integer compiles on HIP too and converts back: not reported
    wide = b"long" in words or any(w in _WIDE for w in words)
    return bool(words) and all(w in _INTEGER_WORDS for w in words) and not wide


def _static_cast_before(tokens, kinds, open_: int) -> bool:
    """`static_cast<unsigned long long>(` just before."""
    k = open_ - 1
    if k < 0 or tokens.text(k) not in (b">", b">>"):
        return False
    words = []
    k -= 1
    while k >= 0 and tokens.text(k) != b"<":
        words.append(tokens.text(k))
        k -= 1
    return k >= 1 and tokens.text(k - 1) == b"static_cast" and bool(words) and all(w in _INTEGER_WORDS for w in words)
