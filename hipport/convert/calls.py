"""Finding the parts of calls and launches in a token stream: matching brackets and argument lists.

Arguments are split on top-level commas. Parentheses, brackets and braces nest (lambdas included); strings are
single tokens already. `<` only opens a template argument list when it follows a name and a matching `>`
closes it before anything that cannot sit inside one (`;`, `{`, `}`, `&&`, `||` or an unbalanced `)`), so
`a < b, c > d` in a call splits as two arguments only when it cannot be a template.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass

from hipport.scan import COMMENT, IDENT, PUNCT, Tokens

_OPEN = {b"(": b")", b"[": b"]", b"{": b"}"}
_CLOSE = {b")", b"]", b"}"}
_TEMPLATE_STOP = {b";", b"{", b"}", b"&&", b"||"}


@dataclass(frozen=True, slots=True)
class Arg:
    first: int   # token index of the first token (== last when the argument is empty)
    last: int    # token index one past the last token
    start: int   # byte offsets of the argument's text, without surrounding whitespace
    end: int


def next_code(tokens: Tokens, i: int) -> int:
    """Index of the first non-comment token at or after ``i`` (len(tokens) if none)."""
    kinds, n = tokens.kinds, len(tokens)
    while i < n and kinds[i] == COMMENT:
        i += 1
    return i


def prev_code(tokens: Tokens, i: int) -> int:
    """Index of the last non-comment token at or before ``i`` (-1 if none)."""
    kinds = tokens.kinds
    while i >= 0 and kinds[i] == COMMENT:
        i -= 1
    return i


def template_close(tokens: Tokens, lt: int, limit: int | None = None) -> int | None:
    """Index of the `>` closing the `<` at ``lt``, or None when it is a less-than."""
    n = len(tokens) if limit is None else limit
    depth = 0
    angle = 1
    i = lt + 1
    while i < n:
        if tokens.kinds[i] == PUNCT:
            t = tokens.text(i)
            if t in _OPEN:
                depth += 1
            elif t in _CLOSE:
                if depth == 0:
                    return None
                depth -= 1
            elif depth == 0:
                if t == b"<" and tokens.kinds[i - 1] == IDENT:
                    angle += 1
                elif t == b">":
                    angle -= 1
                elif t == b">>":
                    angle -= 2
                    if angle < 0:
                        return None
                elif t in _TEMPLATE_STOP:
                    return None
                if angle == 0:
                    return i
        i += 1
    return None


def matching_close(tokens: Tokens, open_index: int) -> int | None:
    """Index of the bracket closing the one at ``open_index``. Brackets of any kind nest alike, as a count of
    depth would have them; the pairs are found once per token stream, since a pass asks for many."""
    table = tokens.brackets
    if table is None:
        table = tokens.brackets = _bracket_pairs(tokens)
    j = table.get(open_index, -1) if isinstance(table, dict) else \
        (table[open_index] if 0 <= open_index < len(table) else -1)
    return j if j >= 0 else None


_BRACKET = re.compile(rb"[][(){}]")
_OPENING = frozenset(b"([{")


def _bracket_pairs(tokens: Tokens) -> array | dict:
    """Per token the index of its closing bracket (-1 if none); as a dict of the pairs when brackets are rare
    (a generated table of millions of numbers has two), else as an array of 4 bytes a token. A token whose first
    byte is a bracket is one (no literal, comment or name starts with one)."""
    firsts = tokens.first_bytes()
    src = tokens.src
    sparse = 16 * (src.count(b"(") + src.count(b"[") + src.count(b"{")) < len(firsts)
    table: array | dict = {} if sparse else array("i", [-1]) * len(firsts)
    stack: list[int] = []
    for m in _BRACKET.finditer(firsts):
        i = m.start()
        if firsts[i] in _OPENING:
            stack.append(i)
        elif stack:
            table[stack.pop()] = i
    return table


def split_args(tokens: Tokens, open_index: int, close_index: int) -> list[Arg]:
    """Arguments between the bracket at ``open_index`` and its match at ``close_index``."""
    args: list[Arg] = []
    depth = 0
    first = open_index + 1
    i = first
    while i < close_index:
        if tokens.kinds[i] == PUNCT:
            t = tokens.text(i)
            if t in _OPEN:
                depth += 1
            elif t in _CLOSE:
                depth -= 1
            elif t == b"<" and depth == 0 and i > 0 and tokens.kinds[i - 1] == IDENT:
                close = template_close(tokens, i, close_index)
                if close is not None:
                    i = close + 1
                    continue
            elif t == b"," and depth == 0:
                args.append(_arg(tokens, first, i))
                first = i + 1
        i += 1
    if first < close_index or args:
        args.append(_arg(tokens, first, close_index))
    return args


def _arg(tokens: Tokens, first: int, last: int) -> Arg:
    a = next_code(tokens, first)
    b = prev_code(tokens, last - 1)
    if a >= last or b < a:
        pos = tokens.ends[first - 1] if first > 0 else 0
        return Arg(first, first, pos, pos)
    return Arg(a, b + 1, tokens.starts[a], tokens.ends[b])


def call_args(tokens: Tokens, name_index: int) -> tuple[int, int, list[Arg]] | None:
    """For a name followed by `(`: (open index, close index, arguments)."""
    open_index = next_code(tokens, name_index + 1)
    if open_index >= len(tokens) or tokens.text(open_index) != b"(":
        return None
    close_index = matching_close(tokens, open_index)
    if close_index is None:
        return None
    return open_index, close_index, split_args(tokens, open_index, close_index)
