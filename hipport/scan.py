"""Lexing with libclang: source bytes in, token kinds and byte spans out.

Only the lexer is used here, never the parser's view of the file: conversion must work with no CUDA toolkit,
no ROCm and no system headers, on files that do not compile. libclang only tokenizes a file it has parsed, and
parsing costs 20-30x the lexing; so the buffer handed to it is the source wrapped in `#if 0` ... `#endif`,
which the preprocessor skips at raw-lexing speed. Tokenizing is raw lexing of the bytes whatever the
preprocessor made of them, so an unbalanced `#endif` in the source only costs speed, never tokens.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import sys
from array import array
from dataclasses import dataclass
from operator import itemgetter

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
    _firsts: bytes | None = None

    def __len__(self) -> int:
        return len(self.kinds)

    def first_bytes(self) -> bytes:
        """Each token's first byte, one byte a token: a pass looking for brackets or `#` searches this with a
        regex, whose match positions are token indices, instead of visiting every token in Python."""
        if self._firsts is None:
            src, starts = self.src, self.starts
            parts = []
            for at in range(0, len(starts), _BLOCK_TOKENS):
                block = starts[at:at + _BLOCK_TOKENS]
                parts.append(bytes(itemgetter(*block)(src)) if len(block) > 1 else bytes(src[i] for i in block))
            self._firsts = b"".join(parts)
        return self._firsts

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


# Files lexed ahead, together (see `lexed_ahead`), until their turn comes.
_AHEAD: dict[bytes, Tokens] = {}


def lex(src: bytes, piece: int = _PIECE, margin: int = _MARGIN) -> Tokens:
    """Tokenize ``src`` with libclang's lexer (comments kept as tokens). The arrays of the result are shared with
    any later lex of the same bytes: read them, never change them."""
    if _AHEAD and piece == _PIECE:
        tokens = _AHEAD.get(src)
        if tokens is not None:
            return tokens
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


# libclang spends about 1.7 ms setting up each buffer it parses, more than lexing a typical 10 KB source takes;
# files up to this size are lexed many to a buffer.
_AHEAD_MAX_FILE = 1 << 18
_AHEAD_SEPARATOR = b"\n"
_BLANKS = b" \t\n\r\f\v"
_SPLICE_BLANKS = b" \t\r\f\v"  # what may stand between a backslash and the newline it splices


@contextlib.contextmanager
def lexed_ahead(sources: list[bytes]):
    """Within the block, `lex` of any of ``sources`` returns tokens made for all of them together: one libclang
    buffer per megabyte instead of one per file. The tokens are the same as a lex of each alone."""
    _AHEAD.update(lex_many(sources))
    try:
        yield
    finally:
        _AHEAD.clear()


def lex_many(sources: list[bytes]) -> dict[bytes, Tokens]:
    """The tokens of each of ``sources`` (small files; larger ones are left to `lex`), lexed a group at a time.

    A group is joined with newlines, so each file starts at the start of a line, as when alone. What a file
    leaves open at its end (a block comment, a raw string, a line splice) would run into the next one: a file
    with a token crossing its end or ending in a backslash, one whose first token is not where its text starts,
    and their neighbours are lexed again alone."""
    out: dict[bytes, Tokens] = {}
    group: list[bytes] = []
    size = 0
    for src in dict.fromkeys(s for s in sources if 0 < len(s) <= _AHEAD_MAX_FILE):
        if group and size + len(src) > _PIECE:
            _lex_group(group, out)
            group, size = [], 0
        group.append(src)
        size += len(src) + len(_AHEAD_SEPARATOR)
    if group:
        _lex_group(group, out)
    return out


def _lex_group(group: list[bytes], out: dict[bytes, Tokens]) -> None:
    if len(group) == 1:
        out[group[0]] = _lex(group[0], _PIECE, _MARGIN)
        return
    joined = _AHEAD_SEPARATOR.join(group)
    kinds, starts, ends = _lex_piece(joined, 0, len(joined))
    alone: set[int] = set()
    spans = []  # (first, last) token indices of each file
    at = first = 0
    for n, src in enumerate(group):
        stop = at + len(src)
        last = bisect.bisect_left(starts, stop, first)
        # A file starts afresh only if its first token is where its text starts (comments are tokens): else what
        # the files before it left open (an unterminated comment libclang does not report) swallowed its start.
        text_at = len(src) - len(src.lstrip(_BLANKS))
        if text_at < len(src) and (last == first or starts[first] != at + text_at):
            alone.add(n)
            back = n - 1
            while back >= 0:  # ... so the files back to the last one with tokens are in doubt too
                alone.add(back)
                if spans[back][1] > spans[back][0]:
                    break
                back -= 1
        if last > first and ends[last - 1] > stop:  # its last token runs past its end, into the next
            alone.update((n, n + 1))
        if src.rstrip(_SPLICE_BLANKS).endswith(b"\\"):
            # A file ending in a backslash: alone, libclang's lexing stops there and the backslash is a token; with
            # a newline after it, it joins the next file's first line to this one
            alone.update((n, n + 1))
        spans.append((first, last))
        at = stop + len(_AHEAD_SEPARATOR)
        first = last
    at = 0
    for n, src in enumerate(group):
        if n in alone:
            out[src] = _lex(src, _PIECE, _MARGIN)
        else:
            first, last = spans[n]
            out[src] = Tokens(src, kinds[first:last], _plus(starts[first:last], -at), _plus(ends[first:last], -at))
        at += len(src) + len(_AHEAD_SEPARATOR)


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
            block = _plus(raw[1::_UINTS_PER_TOKEN], -base)
            starts.extend(block)
            ends.extend(_sum(block, raw[2::_UINTS_PER_TOKEN]))
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


# Offsets are shifted a whole array at a time, as one big integer holding every value in a 32-bit field: adding a
# constant to each field (or two arrays field by field) is one integer addition, since no field over- or
# underflows (offsets are below 4 GiB and never below the amount taken off). Five to eight times faster than a
# Python addition per token, which was the larger part of lexing a file.
_ORDER = sys.byteorder
assert array("I").itemsize == 4


def _plus(values: array, delta: int) -> array:
    """``values`` with ``delta`` added to each (every result in 0 .. 2**32 - 1)."""
    n = len(values)
    if n == 0 or delta == 0:
        return array("I", values)
    packed = int.from_bytes(values, _ORDER)
    ones = int.from_bytes(abs(delta).to_bytes(4, _ORDER) * n, _ORDER)
    packed = packed + ones if delta > 0 else packed - ones
    out = array("I")
    out.frombytes(packed.to_bytes(4 * n, _ORDER))
    return out


def _sum(a: array, b: array) -> array:
    """``a[i] + b[i]`` for each i (every sum below 2**32)."""
    out = array("I")
    if len(a):
        out.frombytes((int.from_bytes(a, _ORDER) + int.from_bytes(b, _ORDER)).to_bytes(4 * len(a), _ORDER))
    return out
