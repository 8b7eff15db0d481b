"""C++ that nvcc accepts and HIP-Clang, compiling as C++17, does not: the `register` storage class.

nvcc compiles CUDA as C++14 or accepts `register` with a warning; C++17 removed the storage class, and HIP-Clang
(ROCm 6+ compiles HIP as C++17 by default) rejects it ("ISO C++17 does not allow 'register' storage class
specifier"). The keyword has had no effect for decades: dropping it changes nothing else. Each one dropped counts
in the summary under the category `c++17`."""

from __future__ import annotations

import re

from hipport.convert.context import ConversionContext, token_at
from hipport.scan import KEYWORD

CATEGORY = "c++17"
_REGISTER = re.compile(rb"\bregister\b")


def drop_register(ctx: ConversionContext) -> None:
    """`register int i` -> `int i` (the keyword and the blanks after it), in code and in macro bodies; comments,
    strings and directive names are not tokens of that kind."""
    src, tokens = ctx.src, ctx.tokens
    for m in _REGISTER.finditer(src):
        i = token_at(tokens, m.start())
        if i is None or tokens.kinds[i] != KEYWORD or tokens.ends[i] != m.end():
            continue
        start, end = m.start(), m.end()
        while end < len(src) and src[end] in b" \t":
            end += 1
        if end == len(src) or src[end] in b"\r\n\\":  # ending a line: the blanks before it go instead
            end = m.end()
            while start > 0 and src[start - 1] in b" \t":
                start -= 1
        ctx.convert(start, end, b"", "register", CATEGORY)
        ctx.claimed.add(i)
