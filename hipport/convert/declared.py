"""The type a call's argument was declared with, read back from the file's own declaration of that variable.

A few argument rewrites depend on it: CUDA's C++ overloads pick the symbol's address for a `void*` variable but the
pointer itself for a `const void*` one, and a cast to the type the argument already has is needless. Only a
declaration still in scope at the call counts (a local or parameter of the enclosing function, or one at file
scope), and anything unsure (a member, a name declared in a header, several declarators, a template type) gives
None: the rewrite then does what it does without knowing the type."""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from hipport.scan import COMMENT, IDENT, KEYWORD, PUNCT

if TYPE_CHECKING:
    from hipport.convert.calls import Arg
    from hipport.convert.context import ConversionContext

_AFTER_NAME = {b"=", b";", b",", b")", b"{"}
_BEFORE_TYPE = {b";", b"{", b"}", b"(", b",", b")"}
# Words of a declaration that are not its type.
_SPECIFIERS = {b"static", b"extern", b"inline", b"thread_local", b"mutable", b"register", b"__shared__",
               b"__device__", b"__constant__", b"__managed__", b"__host__", b"__restrict__", b"__restrict"}
# Words that make what precedes a name a statement, not a declaration.
_NOT_TYPES = {b"return", b"case", b"goto", b"throw", b"new", b"delete", b"sizeof", b"else", b"do", b"typedef",
              b"using", b"operator", b"co_return", b"co_yield", b"co_await", b"alignof", b"decltype", b"template",
              b"typename", b"auto"}


def declared_type(conv: "ConversionContext", arg: "Arg") -> tuple[int, int] | None:
    """Token range (first, last) of the declared type of ``arg`` when it is one variable whose declaration in this
    file is in scope at the call: `const void* const p = ...;` gives the tokens of `const void* const`."""
    tokens = conv.tokens
    if arg.last - arg.first != 1 or tokens.kinds[arg.first] != IDENT:
        return None
    name = tokens.text(arg.first)
    in_directive = conv.structure.in_directive
    n = len(tokens)
    places = _positions(conv).get(name, ())
    for k in reversed(places[:bisect.bisect_left(places, arg.first)]):
        if in_directive[k]:
            continue
        nxt = _next_code(tokens, k + 1)
        if nxt >= n or tokens.text(nxt) not in _AFTER_NAME:
            continue
        first = k
        j = _prev_code(tokens, k - 1)
        while j >= 0 and not in_directive[j] and _type_token(tokens, j):
            first = j
            j = _prev_code(tokens, j - 1)
        if first == k:
            continue  # nothing before the name that could be a type: a use of it
        words = [tokens.text(t) for t in range(first, k) if tokens.kinds[t] != COMMENT]
        if any(w in _NOT_TYPES for w in words):
            continue
        if j >= 0 and not in_directive[j] and tokens.text(j) not in _BEFORE_TYPE:
            continue  # `a * b` in an expression, `x = y` ...
        if not any(w not in _SPECIFIERS and w not in (b"*", b"&", b"&&", b"::", b"const", b"volatile")
                   for w in words):
            continue  # `f(a, *p)`: a use
        if _in_scope(conv, k, arg.first):
            return first, k
        # out of scope at the call (another function's local or parameter): an outer declaration may still be
    return None


def canonical(type_text: bytes) -> bytes:
    """A type's text in one spelling, for comparing: specifiers dropped, `T const` written `const T`, no blanks
    around `*` and `&`, and the top-level `const` of the variable itself dropped (`const void** const` and
    `const void**` convert the same way)."""
    words = [w for w in re.findall(rb"[A-Za-z_]\w*|::|&&|[*&]", type_text) if w not in _SPECIFIERS]
    if len(words) >= 2 and words[1] == b"const" and words[0] != b"const":
        words[0], words[1] = words[1], words[0]
    while words and words[-1] == b"const" and len(words) >= 2 and words[-2] in (b"*", b"&"):
        words.pop()
    out = b""
    for w in words:
        if w in (b"*", b"&", b"&&", b"::") or out.endswith((b"*", b"&", b"::")) or not out:
            out += w
        else:
            out += b" " + w
    return out


def _positions(conv: "ConversionContext") -> dict:
    """Token indices of each identifier, in order, made once a file (only a file with such a call asks)."""
    found = getattr(conv, "_identifier_positions", None)
    if found is None:
        found = {}
        tokens = conv.tokens
        for k, kind in enumerate(tokens.kinds):
            if kind == IDENT:
                found.setdefault(tokens.text(k), []).append(k)
        conv._identifier_positions = found
    return found


def _type_token(tokens, j: int) -> bool:
    kind = tokens.kinds[j]
    if kind in (IDENT, KEYWORD):
        return True
    return kind == PUNCT and tokens.text(j) in (b"*", b"&", b"&&", b"::")


def _next_code(tokens, i: int) -> int:
    kinds, n = tokens.kinds, len(tokens)
    while i < n and kinds[i] == COMMENT:
        i += 1
    return i


def _prev_code(tokens, i: int) -> int:
    kinds = tokens.kinds
    while i >= 0 and kinds[i] == COMMENT:
        i -= 1
    return i


def _in_scope(conv: "ConversionContext", decl: int, use: int) -> bool:
    """Whether the declaration at token ``decl`` is still in scope at token ``use``: no `}` between them closes the
    block it is in, and a parameter's `)` is followed by its function's body."""
    tokens, in_directive = conv.tokens, conv.structure.in_directive
    braces = parens = 0
    j = decl + 1
    while j < use:
        if tokens.kinds[j] == PUNCT and not in_directive[j]:
            t = tokens.text(j)
            if t == b"(":
                parens += 1
            elif t == b")":
                parens -= 1
                if parens < 0:  # the parameter list the declaration is in ends here
                    body = _next_code(tokens, j + 1)
                    if body >= use or tokens.text(body) != b"{":
                        return False
                    parens, j = 0, body  # its scope is that body, opened here
            elif t == b"{":
                braces += 1
            elif t == b"}":
                braces -= 1
                if braces < 0:
                    return False
        j += 1
    return True
