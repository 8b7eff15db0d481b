"""Patches for a project that keeps CUDA as its main source, written as branches of the AMD build.

A fix for AMD (a 64-bit mask, a shuffle width of 32, `unsafeAtomicAdd`) must not change what nvcc builds. Each
group of edits becomes one branch over the whole lines it touches:

    #if defined(__HIP_PLATFORM_AMD__)
        <the lines with the edits applied>
    #else
        <the lines as they were>
    #endif

Whole lines, because a directive must start its own line; logical lines, because a `#define` continued with `\\`
is one directive and cannot hold another. Edits whose lines touch or overlap make one branch. A line range that
starts or ends inside a block comment gets no branch (``skipped``): the directives would be comment text there.
"""

from __future__ import annotations

import re

from hipport.model import Edit, apply_edits

AMD_TEST = "defined(__HIP_PLATFORM_AMD__)"


def _line_start(src: bytes, offset: int) -> int:
    """Start of the logical line holding ``offset``: before it, lines ending in a backslash continue."""
    start = src.rfind(b"\n", 0, offset) + 1
    while start >= 2:
        prev_end = start - 1  # the newline ending the line before
        body_end = prev_end - 1 if prev_end >= 1 and src[prev_end - 1:prev_end] == b"\r" else prev_end
        if body_end >= 1 and src[body_end - 1:body_end] == b"\\":
            start = src.rfind(b"\n", 0, prev_end) + 1
        else:
            break
    return start


def _line_end(src: bytes, offset: int) -> int:
    """End of the logical line holding ``offset`` (after its newline, or the end of the text)."""
    pos = offset
    while True:
        nl = src.find(b"\n", pos)
        if nl < 0:
            return len(src)
        body_end = nl - 1 if nl >= 1 and src[nl - 1:nl] == b"\r" else nl
        if body_end >= 1 and src[body_end - 1:body_end] == b"\\":
            pos = nl + 1
            continue
        return nl + 1


_COMMENT_OR_STRING = re.compile(rb'/\*.*?(?:\*/|\Z)|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def _inside_comment(spans: list[tuple[int, int]], offset: int) -> bool:
    return any(a < offset < b for a, b in spans)


def as_amd_branches(src: bytes, edits: list[Edit]) -> tuple[list[Edit], list[Edit]]:
    """(one edit per branch, replacing its lines; the edits that could not be branched). Edits are on ``src``."""
    if not edits:
        return [], []
    block_comments = [m.span() for m in _COMMENT_OR_STRING.finditer(src) if m.group().startswith(b"/*")]
    groups: list[list] = []  # [start, end, [edits]]
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        a = _line_start(src, e.start)
        b = _line_end(src, max(e.end - 1, e.start))
        if groups and a <= groups[-1][1]:
            groups[-1][1] = max(groups[-1][1], b)
            groups[-1][2].append(e)
        else:
            groups.append([a, b, [e]])
    nl = b"\r\n" if b"\r\n" in src[:4096] else b"\n"
    out, skipped = [], []
    for a, b, group in groups:
        if _inside_comment(block_comments, a) or _inside_comment(block_comments, b):
            skipped.extend(group)
            continue
        old = src[a:b]
        new = apply_edits(old, [Edit(e.start - a, e.end - a, e.new) for e in group])
        if new == old:
            continue
        if not old.endswith(b"\n"):  # the last line of a file without a final newline
            old += nl
            new += nl
        elif not new.endswith(b"\n"):
            new += nl
        text = b"#if " + AMD_TEST.encode() + nl + new + b"#else" + nl + old + b"#endif" + nl
        out.append(Edit(a, b, text))
    return out, skipped
