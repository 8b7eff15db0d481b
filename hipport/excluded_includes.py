"""Headers that only excluded files include. A project leaves files out of its AMD build (CTranslate2's HIP build
drops `awq/*_gpu.cu`), and the user says so with `--exclude`; the headers those files alone include are out of
that build too, so the audit does not judge them as its code. A header that no file of the tree includes stays
in (a library's public header), and so does one any file left in includes."""

from __future__ import annotations

import os
import re

from hipport.platforms import resolve_quoted

_QUOTED = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
_HEADERS = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc")
_MAX_BYTES = 2_000_000


def _includes(path: str) -> list[str]:
    try:
        with open(path, "rb") as fh:
            src = fh.read(_MAX_BYTES)
    except OSError:
        return []
    out = []
    for m in _QUOTED.finditer(src):
        target = resolve_quoted(m.group(1).decode("utf-8", "replace"), path)
        if target is not None:
            out.append(os.path.normpath(target))
    return out


def only_excluded_include(kept: list[str], excluded: list[str]) -> dict[str, str]:
    """Of ``kept`` (absolute paths), the headers that some of ``excluded`` include and nothing else of ``kept``
    does (directly, or through headers that are such themselves): path -> the excluded file that includes it."""
    if not excluded:
        return {}
    kept = [os.path.normpath(p) for p in kept]
    includers: dict[str, set[str]] = {}
    for path in [*kept, *(os.path.normpath(p) for p in excluded)]:
        for target in _includes(path):
            if target != path:
                includers.setdefault(target, set()).add(path)
    out_of_build = {os.path.normpath(p) for p in excluded}
    why: dict[str, str] = {}
    changed = True
    while changed:  # grows only: a header whose every includer is out of the build is out too
        changed = False
        for header in kept:
            if header in out_of_build or not header.lower().endswith(_HEADERS):
                continue
            by = includers.get(header, set())
            if by and by <= out_of_build:
                out_of_build.add(header)
                first = sorted(by)[0]
                why[header] = why.get(first, os.path.basename(first))
                changed = True
    return why
