"""Lexing with libclang: source bytes in, token kinds and byte spans out.

Only the lexer is used here, never the parser's view of the file: conversion must work with no CUDA toolkit,
no ROCm and no system headers, on files that do not compile. A forced ``-include`` of a file that cannot exist
makes clang stop before it reads a single line of the source, so the cost is the lexing alone, yet libclang
still holds the whole buffer and tokenizes all of it, comments included.
"""

from __future__ import annotations

import bisect
import ctypes
from array import array
from itertools import repeat
from dataclasses import dataclass

import clang.cindex as ci

PUNCT, KEYWORD, IDENT, LITERAL, COMMENT = 0, 1, 2, 3, 4

_VIRTUAL_NAME = "hipport-input.cu"
_ARGS = ["-x", "c++", "-std=c++17", "-nostdinc", "-nostdinc++", "-include", "/nonexistent/hipport-stop-here.h"]
_UINTS_PER_TOKEN = ctypes.sizeof(ci.Token) // 4

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
    try:
        tu = _get_index().parse(_VIRTUAL_NAME, args=_ARGS, unsaved_files=[(_VIRTUAL_NAME, src)], options=0)
    except ci.TranslationUnitLoadError as exc:
        raise LexError(f"libclang could not read the file: {exc}") from None
    f = tu.get_file(_VIRTUAL_NAME)
    extent = ci.SourceRange.from_locations(
        ci.SourceLocation.from_offset(tu, f, 0), ci.SourceLocation.from_offset(tu, f, len(src))
    )
    memory = ctypes.POINTER(ci.Token)()
    count = ctypes.c_uint()
    ci.conf.lib.clang_tokenize(tu, extent, ctypes.byref(memory), ctypes.byref(count))
    n = count.value
    if n == 0:
        return empty
    try:
        # Reading the token structs in one block avoids a ctypes call per token; int_data holds the kind,
        # the raw source-location encoding and the length.
        raw = array("I")
        raw.frombytes(ctypes.string_at(memory, n * ctypes.sizeof(ci.Token)))
        first = ci.Token()
        first.int_data = memory[0].int_data
        first.ptr_data = memory[0].ptr_data
        first._tu = tu
        base = raw[1] - first.location.offset
    finally:
        ci.conf.lib.clang_disposeTokens(tu, memory, count)
    kinds = raw[0::_UINTS_PER_TOKEN]
    starts = array("I", map(int.__sub__, raw[1::_UINTS_PER_TOKEN], repeat(base)))
    ends = array("I", map(int.__add__, starts, raw[2::_UINTS_PER_TOKEN]))
    return Tokens(src, kinds, starts, ends)
