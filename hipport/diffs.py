"""Unified diffs of a conversion, byte-exact (a file's encoding is never assumed)."""

from __future__ import annotations

import difflib
import os

from hipport.model import FileResult


def unified_diff(result: FileResult, label: str) -> bytes:
    if not result.changed:
        return b""
    lines = difflib.diff_bytes(
        difflib.unified_diff,
        result.before.splitlines(keepends=True),
        result.after.splitlines(keepends=True),
        # fsencode: a file name that is not UTF-8 comes back as its own bytes. An absolute name gets the prefixes
        # too ("a//abs"), so `patch -p1` and `git apply` read every diff the same way.
        fromfile=b"a/" + os.fsencode(label),
        tofile=b"b/" + os.fsencode(label),
    )
    out = []
    for line in lines:
        out.append(line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n")
    return b"".join(out)
