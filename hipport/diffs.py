"""Unified diffs of a conversion, byte-exact (a file's encoding is never assumed)."""

from __future__ import annotations

import difflib

from hipport.model import FileResult


def unified_diff(result: FileResult, label: str) -> bytes:
    if not result.changed:
        return b""
    lines = difflib.diff_bytes(
        difflib.unified_diff,
        result.before.splitlines(keepends=True),
        result.after.splitlines(keepends=True),
        fromfile=(label if label.startswith("/") else f"a/{label}").encode(),
        tofile=(label if label.startswith("/") else f"b/{label}").encode(),
    )
    out = []
    for line in lines:
        out.append(line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n")
    return b"".join(out)
