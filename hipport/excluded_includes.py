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


_FUNCTION_MACRO = re.compile(rb'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(', re.M)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(_MAX_BYTES)
    except OSError:
        return b""


def macro_bodies_only_excluded_expand(kept: list[str], excluded: list[str], as_built=None) -> dict[str, set[int]]:
    """Of ``kept`` (absolute paths), the lines (1-based) of function-like macro definitions that only ``excluded``
    files use: path -> lines. CTranslate2's `CUDNN_CHECK` in `utils.h`, which every HIP source includes, wraps cuDNN
    calls, but only `conv1d_cudnn_gpu.cu`, out of the HIP build, expands it: its body is never compiled for AMD. A
    macro nothing uses stays in (a header's macro is for its users), and so does one any kept file names, even in a
    comment: a name that appears is taken as used. ``as_built(src, path)``, when given, is a kept file as the AMD
    build compiles it (its dead branches blanked): a use there on a branch that build drops (CTranslate2's
    `utils.cc`, under `#ifdef CT2_WITH_CUDNN`) is no use."""
    if not excluded:
        return {}
    texts = {p: _read(p) for p in kept}
    spans: dict[bytes, list[tuple[str, int, int]]] = {}
    for path, src in texts.items():
        if b"define" not in src:
            continue
        lines = src.split(b"\n")
        for m in _FUNCTION_MACRO.finditer(src):
            first = last = src.count(b"\n", 0, m.start()) + 1
            while last < len(lines) and lines[last - 1].rstrip(b"\r").endswith(b"\\"):  # continued
                last += 1
            spans.setdefault(m.group(1), []).append((path, first, last))
    if not spans:
        return {}
    names = re.compile(rb"\b(" + b"|".join(re.escape(n) for n in sorted(spans, key=len, reverse=True)) + rb")\b")
    used: dict[bytes, int] = dict.fromkeys(spans, 0)
    for path, src in texts.items():
        if as_built is not None and names.search(src):
            src = as_built(src, path)
        for m in names.finditer(src):
            used[m.group(1)] += 1
    outside: set[bytes] = set()
    for path in excluded:
        src = _read(path)
        outside.update(m.group(1) for m in names.finditer(src))
    out: dict[str, set[int]] = {}
    for name, defs in spans.items():
        if name in outside and used[name] <= len(defs):  # each live definition names it once; nothing kept uses it
            for path, first, last in defs:
                out.setdefault(path, set()).update(range(first, last + 1))
    return out
