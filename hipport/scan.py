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
    brackets: array | None = None  # per token, the index of the bracket closing it (-1): see calls.matching_close

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


def lex(src: bytes) -> Tokens:
    """Tokenize ``src`` with libclang's lexer (comments kept as tokens)."""
    empty = Tokens(src, array("I"), array("I"), array("I"))
    if not src:
        return empty
    buffer = _PREFIX + src + _SUFFIX
    try:
        tu = _get_index().parse(_VIRTUAL_NAME, args=_ARGS, unsaved_files=[(_VIRTUAL_NAME, buffer)], options=0)
    except ci.TranslationUnitLoadError as exc:
        raise LexError(f"libclang could not read the file: {exc}") from None
    f = tu.get_file(_VIRTUAL_NAME)
    first_offset, last_offset = len(_PREFIX), len(_PREFIX) + len(src)
    extent = ci.SourceRange.from_locations(
        ci.SourceLocation.from_offset(tu, f, first_offset), ci.SourceLocation.from_offset(tu, f, last_offset)
    )
    memory = ctypes.POINTER(ci.Token)()
    count = ctypes.c_uint()
    ci.conf.lib.clang_tokenize(tu, extent, ctypes.byref(memory), ctypes.byref(count))
    n = count.value
    if n == 0:
        return empty
    kinds, starts, ends = array("I"), array("I"), array("I")
    try:
        first = ci.Token()
        first.int_data = memory[0].int_data
        first.ptr_data = memory[0].ptr_data
        first._tu = tu
        base = memory[0].int_data[1] - first.location.offset + first_offset
        # The token structs are read a block at a time (no ctypes call per token, and never a second copy of
        # them all: a one-line file of 28 MB has millions); int_data holds the kind, the raw source-location
        # encoding and the length.
        size_of = ctypes.sizeof(ci.Token)
        address = ctypes.addressof(memory.contents)
        for at in range(0, n, _BLOCK_TOKENS):
            raw = array("I")
            raw.frombytes(ctypes.string_at(address + at * size_of, min(_BLOCK_TOKENS, n - at) * size_of))
            kinds.extend(raw[0::_UINTS_PER_TOKEN])
            block = array("I", map(int.__sub__, raw[1::_UINTS_PER_TOKEN], repeat(base)))
            starts.extend(block)
            ends.extend(array("I", map(int.__add__, block, raw[2::_UINTS_PER_TOKEN])))
    finally:
        ci.conf.lib.clang_disposeTokens(tu, memory, count)
    del tu  # libclang's copy of the file and its lexer state go now, not when the conversion is done
    size = len(src)
    # Tokens of the wrapper are outside the range asked for, except where the source leaves a comment or raw
    # string open: then that token runs into the suffix and is cut back to the end of the source.
    while len(starts) and starts[-1] >= size:
        kinds.pop(), starts.pop(), ends.pop()
    if len(ends) and ends[-1] > size:
        ends[-1] = size
    return Tokens(src, kinds, starts, ends)
