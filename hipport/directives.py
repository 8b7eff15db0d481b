"""Preprocessor structure of a token stream: where each directive starts and ends, and which
conditional block it sits in. Raw lexing gives ``#`` and names as ordinary tokens; this puts them back together."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hipport.scan import COMMENT, IDENT, KEYWORD, LITERAL, PUNCT, Lines, Tokens

_OPENERS = {b"if", b"ifdef", b"ifndef"}
_HASH = re.compile(rb"#")
_BRANCHES = {b"elif", b"else", b"elifdef", b"elifndef"}


@dataclass(slots=True)
class Directive:
    name: bytes          # b"include", b"define", b"if", ... (b"" for a null directive)
    first: int           # index of the `#` token
    last: int            # index one past the directive's last token
    start: int           # byte offset of the start of the line holding `#`
    end: int             # byte offset one past the directive's last newline (or end of source)
    block: tuple         # ids of the enclosing conditional blocks, outermost first


@dataclass(slots=True)
class Structure:
    directives: list[Directive]
    in_directive: bytearray  # per token: 1 when the token belongs to a directive line
    guard: Directive | None  # the `#define` of an include guard, or `#pragma once` (includes go after it)
    guard_block: int | None  # the block id the guard opens (not counted as nesting)


def _logical_line_end(src: bytes, lines: Lines, pos: int) -> int:
    """Offset of the newline ending the line that holds ``pos``, following backslash continuations."""
    end = lines.line_end(pos)
    while end != -1:
        k = end - 1
        if k >= 0 and src[k] == 0x0D:
            k -= 1
        if k < 0 or src[k] != 0x5C:
            return end
        end = lines.line_end(end + 1)
    return len(src)


def _directive_end(src: bytes, tokens: Tokens, lines: Lines, first: int) -> tuple[int, int]:
    """(index one past the directive's tokens, byte offset after its final newline)."""
    starts, ends = tokens.starts, tokens.ends
    limit = _logical_line_end(src, lines, starts[first])
    j = first + 1
    n = len(tokens)
    while j < n and starts[j] < limit:
        if ends[j] > limit:  # a block comment running over the newline carries the directive with it
            limit = _logical_line_end(src, lines, ends[j])
        j += 1
    return j, min(limit + 1, len(src))


def analyse(tokens: Tokens, lines: Lines) -> Structure:
    src = tokens.src
    kinds, starts, ends = tokens.kinds, tokens.starts, tokens.ends
    n = len(tokens)
    in_directive = bytearray(n)
    directives: list[Directive] = []
    stack: list[int] = []
    next_block = 0
    after = 0  # index one past the last directive's tokens
    # Only the `#` tokens are visited (a token starting with `#` is `#` or `##`; one in a comment or a string is
    # inside that token), not every token of the file.
    for m in _HASH.finditer(tokens.first_bytes()):
        i = m.start()
        if i < after or ends[i] - starts[i] != 1:
            continue  # in a directive already (a stringizing `#` of a macro), or `##`
        # What ends last before it: the last token that is not a comment, or the previous directive's last.
        k = i - 1
        while k >= after and kinds[k] == COMMENT:
            k -= 1
        prev_end = ends[k] if k >= 0 else -1
        line_start = lines.line_start(starts[i])
        if prev_end > line_start or src[line_start:starts[i]].strip():
            continue  # not at the start of its line: an ordinary `#`
        last, end = _directive_end(src, tokens, lines, i)
        name = b""
        if i + 1 < last and kinds[i + 1] in (IDENT, KEYWORD):
            name = tokens.text(i + 1)
        if name in _OPENERS:
            stack.append(next_block)
            next_block += 1
        block = tuple(stack)
        if name == b"endif" and stack:
            stack.pop()
        directives.append(Directive(name, i, last, line_start, end, block))
        in_directive[i:last] = b"\x01" * (last - i)
        after = last
    guard, guard_block = _find_guard(tokens, directives)
    return Structure(directives, in_directive, guard, guard_block)


def _pragma_once(tokens: Tokens, d: Directive) -> bool:
    return d.name == b"pragma" and d.first + 2 < d.last + 1 and tokens.text(d.first + 2) == b"once"


def _find_guard(tokens: Tokens, directives: list[Directive]) -> tuple[Directive | None, int | None]:
    """`#pragma once`, or `#ifndef X` / `#if !defined(X)` followed by `#define X`, before any code. When a `#pragma
    once` stands between the `#ifndef` and its `#define`, the `#ifndef` is returned: what goes after the guard goes
    right after it, where hipify-clang writes it (HIPIFY's headers_test_11), and the lines after it stay as they
    were."""
    kinds = tokens.kinds
    first_code = next((i for i in range(len(tokens)) if kinds[i] != COMMENT), len(tokens))
    if not directives or directives[0].first != first_code:
        return None, None
    d0 = directives[0]
    if _pragma_once(tokens, d0):
        return d0, None
    if len(directives) < 2 or d0.name not in (b"ifndef", b"if"):
        return None, None

    def follows(k: int) -> bool:  # nothing but comments between directive k - 1 and directive k
        return all(kinds[j] == COMMENT for j in range(directives[k - 1].last, directives[k].first))

    k = 1
    while k < len(directives) and _pragma_once(tokens, directives[k]) and follows(k):
        k += 1
    if k == len(directives):
        return None, None
    d1 = directives[k]
    if d1.name != b"define" or not follows(k):
        return None, None
    guard_name = tokens.text(d1.first + 2) if d1.first + 2 < d1.last else None
    words = [tokens.text(j) for j in range(d0.first + 2, d0.last) if kinds[j] == IDENT]
    if guard_name and guard_name in words and (d0.name == b"ifndef" or b"defined" in words):
        return (d1 if k == 1 else d0), d0.block[-1]
    return None, None


def include_target(tokens: Tokens, d: Directive) -> tuple[int, int, bytes] | None:
    """Span and text of the header name inside `#include "x"` / `#include <x>` (without the delimiters)."""
    if d.name not in (b"include", b"include_next", b"import") or d.first + 2 >= d.last:
        return None
    k = d.first + 2
    src = tokens.src
    if tokens.kinds[k] == LITERAL and src[tokens.starts[k]] == 0x22:
        return tokens.starts[k] + 1, tokens.ends[k] - 1, src[tokens.starts[k] + 1 : tokens.ends[k] - 1]
    if tokens.kinds[k] == PUNCT and tokens.text(k) == b"<":
        open_at = tokens.starts[k]
        close_at = src.find(b">", open_at, d.end)
        if close_at != -1:
            return open_at + 1, close_at, src[open_at + 1 : close_at]
    return None
