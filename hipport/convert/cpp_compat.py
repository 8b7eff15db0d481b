"""Words nvcc accepts and HIP-Clang rejects, whose removal changes nothing else (rules/dropped.toml).

nvcc compiles CUDA as C++14 or accepts `register` with a warning; C++17 removed the storage class, and HIP-Clang
(ROCm 6+ compiles HIP as C++17 by default) rejects it ("ISO C++17 does not allow 'register' storage class
specifier"). `__grid_constant__` marks a const kernel parameter whose address is taken; HIP-Clang does not know the
attribute. Each word dropped counts in the summary under its category."""

from __future__ import annotations

import re
from functools import lru_cache

from hipport.convert.context import ConversionContext, token_at
from hipport.rules import RuleError, _read_toml, builtin_rules_dir
from hipport.scan import IDENT, KEYWORD


@lru_cache(maxsize=1)
def _dropped() -> tuple[dict, re.Pattern]:
    path = builtin_rules_dir() / "dropped.toml"
    data = _read_toml(path)
    for word, e in data.items():
        if not isinstance(e, dict) or not isinstance(e.get("category"), str) or not isinstance(e.get("why"), str) \
                or not isinstance(e.get("report", False), bool) or set(e) - {"category", "why", "report"}:
            raise RuleError(f"{path}: `[{word}]` takes `category`, `why` (strings) and `report` (true/false)")
    pattern = re.compile(rb"\b(?:" + b"|".join(re.escape(w.encode()) for w in data) + rb")\b")
    return data, pattern


def drop_register(ctx: ConversionContext) -> None:
    """`register int i` -> `int i`, `const __grid_constant__ P p` -> `const P p` (the word and the blanks after it),
    in code and in macro bodies; comments, strings and directive names are not tokens of those kinds."""
    words, pattern = _dropped()
    src, tokens = ctx.src, ctx.tokens
    if not any(w.encode() in src for w in words):  # substring tests are many times faster than the pattern's scan
        return
    defined = _macro_names(ctx)  # a project defining the word itself (empty for old compilers) keeps it
    for m in pattern.finditer(src):
        i = token_at(tokens, m.start())
        if i is None or tokens.kinds[i] not in (KEYWORD, IDENT) or tokens.ends[i] != m.end():
            continue
        word = m.group().decode()
        if m.group() in defined or i in ctx.claimed:
            continue
        if tokens.kinds[i] == IDENT and ctx.structure.in_directive[i] and not _in_define_body(ctx, i):
            continue  # `#ifdef __grid_constant__`
        if word == "register" and _binds_a_register(ctx, i):
            continue  # `register float w __asm__("f24")`: the storage class is what binds it; C++17 allows it there
        start, end = m.start(), m.end()
        while end < len(src) and src[end] in b" \t":
            end += 1
        if end == len(src) or src[end] in b"\r\n\\":  # ending a line: the blanks before it go instead
            end = m.end()
            while start > 0 and src[start - 1] in b" \t":
                start -= 1
        ctx.convert(start, end, b"", word, words[word]["category"])
        ctx.claimed.add(i)
        if words[word].get("report") and f"dropped:{word}" not in ctx.once:
            ctx.once.add(f"dropped:{word}")
            ctx.finding("dropped-word", "info", m.start(), f"`{word}` dropped: {words[word]['why']}", subject=word)


_ASM = {b"asm", b"__asm__", b"__asm"}
_DECLARATOR_ENDS = {b";", b"=", b",", b")", b"{", b"}"}


def _binds_a_register(ctx: ConversionContext, i: int) -> bool:
    """Whether the declaration `register` starts at token ``i`` names a hardware register (`asm("r0")` after the
    declarator): GNU's explicit register variable, which inline assembly relies on and needs the word."""
    tokens = ctx.tokens
    depth = 0
    for k in range(i + 1, min(len(tokens), i + 64)):
        t = tokens.text(k)
        if t in (b"(", b"["):
            depth += 1
        elif t in (b")", b"]"):
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and t in _DECLARATOR_ENDS:
            return False
        elif t in _ASM:
            return True
    return False


def _macro_names(ctx: ConversionContext) -> set:
    names = set()
    tokens = ctx.tokens
    for d in ctx.structure.directives:
        if d.name == b"define" and d.first + 2 < d.last:
            names.add(tokens.text(d.first + 2))
    return names


def _in_define_body(ctx: ConversionContext, i: int) -> bool:
    for d in ctx.structure.directives:
        if d.first < i < d.last:
            return d.name == b"define" and i > d.first + 2
    return False
