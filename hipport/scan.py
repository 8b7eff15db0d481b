"""Lexing with libclang: source bytes in, token kinds and byte spans out.

Only the lexer is used here, never the parser's view of the file: conversion must work with no CUDA toolkit,
no ROCm and no system headers, on files that do not compile. libclang only tokenizes a file it has parsed, and
parsing costs 20-30x the lexing; so the buffer handed to it is the source wrapped in `#if 0` ... `#endif`,
which the preprocessor skips at raw-lexing speed. Tokenizing is raw lexing of the bytes whatever the
preprocessor made of them, so an unbalanced `#endif` in the source only costs speed, never tokens.
"""

from __future__ import annotations

import bisect
import ctypes
from array import array
from dataclasses import dataclass
from itertools import repeat

import clang.cindex as ci

PUNCT, KEYWORD, IDENT, LITERAL, COMMENT = 0, 1, 2, 3, 4

_VIRTUAL_NAME = "hipport-input.cu"
_ARGS = ["-x", "c++", "-std=c++17", "-nostdinc", "-nostdinc++"]
_PREFIX = b"#if 0\n"
_SUFFIX = b"\n#endif\n"
_UINTS_PER_TOKEN = ctypes.sizeof(ci.Token) // 4
_BLOCK_TOKENS = 1 << 16

_index: ci.Index | None = None


class LexError(Exception):
    """libclang could not read the buffer at all."""


@dataclass(slots=True)
class Tokens:
    """Parallel arrays: kind, start and end byte offset of every token, in source order."""

    src: bytes
    kinds: array
    starts: array
    ends: array
    brackets: array | dict | None = None  # the bracket pairs, made when first asked for: calls.matching_close

    def __len__(self) -> int:
        return len(self.kinds)

    def text(self, i: int) -> bytes:
        return self.src[self.starts[i] : self.ends[i]]


class Lines:
    """Maps byte offsets to 1-based line and column numbers."""

    def __init__(self, src: bytes) -> None:
        starts = [0]
        find = src.find
        pos = find(b"\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find(b"\n", pos + 1)
        self.starts = starts

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def line_start(self, offset: int) -> int:
        return self.starts[bisect.bisect_right(self.starts, offset) - 1]

    def line_end(self, offset: int) -> int:
        """Offset of the newline that ends the line holding ``offset`` (or len of the source)."""
        line = bisect.bisect_right(self.starts, offset)
        return self.starts[line] - 1 if line < len(self.starts) else -1


def _get_index() -> ci.Index:
    global _index
    if _index is None:
        _index = ci.Index.create(excludeDecls=True)
    return _index


# Above this size a file is lexed a piece at a time, so that libclang's token structs (24 bytes each, millions in
# a generated one-line table) exist for one piece only. A piece's last tokens, those ending within the margin of
# its end, are lexed again at the start of the next piece: a comment, string or raw string cut by the piece's end
# runs to that end, so it is never kept from the shorter piece.
_PIECE = 1 << 20
_MARGIN = 1 << 16


# The last few files lexed, kept for the next lex of the same bytes: the audit converts each file in memory and
# then judges the same bytes (or the AMD build's view of them, the same object where no branch is dead), and
# libclang is the largest cost of both. Small and large files are not kept (a parameter list, a generated table).
_RECENT: list[tuple[bytes, Tokens]] = []
_RECENT_SIZES = (256, 1 << 20)


def lex(src: bytes, piece: int = _PIECE, margin: int = _MARGIN) -> Tokens:
    """Tokenize ``src`` with libclang's lexer (comments kept as tokens). The arrays of the result are shared with
    any later lex of the same bytes: read them, never change them."""
    keep = _RECENT_SIZES[0] <= len(src) <= _RECENT_SIZES[1] and piece == _PIECE
    if keep:
        for seen, tokens in _RECENT:
            if seen is src or seen == src:
                return tokens
    tokens = _lex(src, piece, margin)
    if keep:
        _RECENT.insert(0, (src, tokens))
        del _RECENT[2:]
    return tokens


def _lex(src: bytes, piece: int, margin: int) -> Tokens:
    kinds, starts, ends = array("I"), array("I"), array("I")
    at, size = 0, len(src)
    while at < size:
        stop = size if size - at <= piece else at + piece
        k, s, e = _lex_piece(src, at, stop)
        if stop < size:
            keep = bisect.bisect_left(e, stop - margin)  # tokens ending before the margin are final
            if keep == 0:  # one token longer than the margin (a huge comment): lex the rest whole
                stop, (k, s, e) = size, _lex_piece(src, at, size)
            else:
                del k[keep:], s[keep:], e[keep:]
        kinds.extend(k)
        starts.extend(s)
        ends.extend(e)
        if stop >= size:
            break
        at = e[-1]
    return Tokens(src, kinds, starts, ends)


def _lex_piece(src: bytes, at: int, stop: int) -> tuple[array, array, array]:
    """Kinds, starts and ends (offsets in ``src``) of the tokens of ``src[at:stop]``."""
    kinds, starts, ends = array("I"), array("I"), array("I")
    if stop <= at:
        return kinds, starts, ends
    buffer = _PREFIX + src[at:stop] + _SUFFIX
    try:
        tu = _get_index().parse(_VIRTUAL_NAME, args=_ARGS, unsaved_files=[(_VIRTUAL_NAME, buffer)], options=0)
    except ci.TranslationUnitLoadError as exc:
        raise LexError(f"libclang could not read the file: {exc}") from None
    del buffer
    f = tu.get_file(_VIRTUAL_NAME)
    first_offset, last_offset = len(_PREFIX), len(_PREFIX) + stop - at
    extent = ci.SourceRange.from_locations(
        ci.SourceLocation.from_offset(tu, f, first_offset), ci.SourceLocation.from_offset(tu, f, last_offset)
    )
    memory = ctypes.POINTER(ci.Token)()
    count = ctypes.c_uint()
    ci.conf.lib.clang_tokenize(tu, extent, ctypes.byref(memory), ctypes.byref(count))
    n = count.value
    if n == 0:
        return kinds, starts, ends
    try:
        first = ci.Token()
        first.int_data = memory[0].int_data
        first.ptr_data = memory[0].ptr_data
        first._tu = tu
        base = memory[0].int_data[1] - first.location.offset + first_offset - at
        # The token structs are read a block at a time (no ctypes call per token, and never a second copy of
        # them all); int_data holds the kind, the raw source-location encoding and the length.
        size_of = ctypes.sizeof(ci.Token)
        address = ctypes.addressof(memory.contents)
        for block_at in range(0, n, _BLOCK_TOKENS):
            raw = array("I")
            raw.frombytes(ctypes.string_at(address + block_at * size_of, min(_BLOCK_TOKENS, n - block_at) * size_of))
            kinds.extend(raw[0::_UINTS_PER_TOKEN])
            block = array("I", map(int.__sub__, raw[1::_UINTS_PER_TOKEN], repeat(base)))
            starts.extend(block)
            ends.extend(array("I", map(int.__add__, block, raw[2::_UINTS_PER_TOKEN])))
    finally:
        ci.conf.lib.clang_disposeTokens(tu, memory, count)
    del tu  # libclang's copy of the piece and its lexer state go now
    # Tokens of the wrapper are outside the range asked for, except where the piece leaves a comment or raw
    # string open: then that token runs into the suffix and is cut back to the end of the piece.
    while len(starts) and starts[-1] >= stop:
        kinds.pop(), starts.pop(), ends.pop()
    if len(ends) and ends[-1] > stop:
        ends[-1] = stop
    return kinds, starts, ends
