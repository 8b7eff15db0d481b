"""Compatibility layers of single-source projects: which CUDA `*_sync` built-ins the AMD build's view of a file
(and of the headers it includes with quotes) maps onto HIP forms that take no mask.

`#define __shfl_xor_sync(mask, var, lane) __shfl_xor(var, lane)` drops the mask, so a call such as
`__shfl_xor_sync(0xffffffff, v, 1)` is a correct HIP shuffle on 64 lanes: its 32-bit mask and the `*_sync` form's
availability on the target release are no concern there. Whether the mapping itself is right is judged at the
macro (`compat-macro-wrong`, checks/names.py).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from hipport.audit import amd_view

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(__\w+_sync)\(([^)]*)\)[ \t]*(.*)$", re.M)
# HIP's mask-free forms (the mask is implicit: every active lane of the wavefront).
_MASK_FREE = re.compile(rb"\b(__shfl(?:_up|_down|_xor)?|__ballot|__any|__all)\s*\(\s*([A-Za-z_]\w*)?")


def mask_dropping(src: bytes) -> frozenset[bytes]:
    """Names of `*_sync` built-ins that ``src`` (already the AMD view) defines as a macro onto a mask-free HIP
    form, not handing the mask on as the first argument."""
    out, kept = set(), set()
    for m in _DEFINE.finditer(src):
        params = [p.strip() for p in m.group(2).split(b",")]
        call = _MASK_FREE.search(m.group(3))
        if call and params and params[0] not in re.findall(rb"\w+", m.group(3)):
            out.add(m.group(1))
        else:  # another definition in view hands the mask on: the AMD build may take that one
            kept.add(m.group(1))
    return frozenset(out - kept)


@lru_cache(maxsize=512)
def _of_header(path: str, mtime_ns: int, size: int, known: tuple) -> tuple[frozenset[bytes], tuple[str, ...]]:
    """The header's mask-dropping names and the quoted includes its AMD view keeps (resolved beside it)."""
    try:
        with open(path, "rb") as fh:
            src = fh.read(2_000_000)
    except OSError:
        return frozenset(), ()
    view = amd_view.view(src, dict(known))
    here = os.path.dirname(path)
    nested = tuple(os.path.normpath(os.path.join(here, m.group(1).decode("utf-8", "replace")))
                   for m in _INCLUDE.finditer(view))
    return mask_dropping(view), nested


# ggml's `argmax.cu` -> `common.cuh` -> `vendors/hip.h`: the mapping sits two includes down.
_MAX_DEPTH = 4


def _each_header(headers, read):
    """``read(header, mtime, size, known...)``'s results for ``headers`` and what they include, breadth first, each
    header once, at most _MAX_DEPTH includes down; ``read`` returns (..., the headers it includes)."""
    seen: set[str] = set()
    level = list(headers)
    for _ in range(_MAX_DEPTH):
        following = []
        for header in level:
            if header in seen:
                continue
            seen.add(header)
            try:
                st = os.stat(header)
            except OSError:
                continue
            *found, nested = read(header, st.st_mtime_ns, st.st_size)
            yield found
            following.extend(nested)
        level = following
        if not level:
            break


def _header_names(headers, known) -> set[bytes]:
    names: set[bytes] = set()
    for (found,) in _each_header(headers, lambda h, mtime, size: _of_header(h, mtime, size, known)):
        names |= found
    return names


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
_SOURCES = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".h", ".hpp", ".inl")
_MAX_SIBLINGS = 400


@lru_cache(maxsize=64)
def _include_index(here: str, mtime_ns: int) -> dict[str, tuple[tuple[str, ...], ...]]:
    """For a folder: header name -> for each file beside it that includes it, the quoted includes before it. Read
    once per folder (and again when the folder changes), not once per header."""
    index: dict[str, list[tuple[str, ...]]] = {}
    try:
        siblings = sorted(os.listdir(here))[:_MAX_SIBLINGS]
    except OSError:
        return {}
    for name in siblings:
        if not name.endswith(_SOURCES):
            continue
        try:
            with open(os.path.join(here, name), "rb") as fh:
                src = fh.read(2_000_000)
        except OSError:
            continue
        before: list[str] = []
        for m in _INCLUDE.finditer(src):
            target = m.group(1).decode("utf-8", "replace")
            index.setdefault(os.path.basename(target), []).append(tuple(before))
            before.append(target)
    return {k: tuple(v) for k, v in index.items()}


def _includers(path: str, known) -> set[bytes]:
    """For a header: the compat names every file beside it that includes it has in effect at that include (the
    headers it included before this one). A header such as `kernels.cuh`, compiled only inside `kernels.cu`
    after `compat.cuh`, sees those macros although it names no compat header itself."""
    here, base = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    try:
        mtime = os.stat(here).st_mtime_ns
    except OSError:
        return set()
    common: set[bytes] | None = None
    for before in _include_index(here, mtime).get(base, ()):
        names = _header_names([os.path.normpath(os.path.join(here, t)) for t in before], known)
        common = names if common is None else common & names
        if not common:
            break
    return common or set()


def mask_dropping_in(view_src: bytes, headers: list[str], options, path: str = "") -> frozenset[bytes]:
    """The file's own compat macros, those of the headers it includes (found by the engine) and, for a header,
    those in effect where the files beside it include it."""
    names = set(mask_dropping(view_src))
    if b"_sync" not in view_src:
        return frozenset(names)
    known = tuple(sorted(amd_view.defines_for(options).items()))
    names |= _header_names(headers, known)
    if path and not path.endswith((".cu", ".hip", ".cpp", ".cc")):
        names |= _includers(path, known)
    return frozenset(names)


# -- what a compatibility layer defines for AMD: macros and overloads ---------------------------------------------

_ANY_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
# `void atomicAdd(half2* address, half2 val)`: a function taking a pointer first, declared (a type word before the
# name, a parameter name after the `*`), not called.
_POINTER_FIRST = re.compile(rb"\b[A-Za-z_]\w*[ \t*&]+([A-Za-z_]\w*)\s*\(\s*(?:(?:const|volatile)\s+)*"
                            rb"([A-Za-z_]\w*)\s*\*\s*(?:__restrict__\s+)?[A-Za-z_]\w*\s*[,)]")


class Definitions:
    """What the AMD build's view of a file, the headers it includes with quotes and (for a header) the headers
    included before it where it is included, define: macro names, and for a function the pointee types of the
    first parameter of its overloads (`atomicAdd` -> {"half2"})."""

    __slots__ = ("macros", "overloads")

    def __init__(self, macros=frozenset(), overloads=None) -> None:
        self.macros = frozenset(macros)
        self.overloads = dict(overloads or {})

    def overloads_for(self, name: bytes, pointee: str) -> bool:
        """An overload of ``name`` takes a pointer to ``pointee`` first (`half2` and `__half2` are one type)."""
        want = pointee.strip().lstrip("_").encode()
        return any(t.lstrip(b"_") == want for t in self.overloads.get(name, ()))


def _definitions(view: bytes) -> tuple[frozenset, dict]:
    overloads: dict[bytes, set[bytes]] = {}
    for m in _POINTER_FIRST.finditer(view):
        overloads.setdefault(m.group(1), set()).add(m.group(2))
    return frozenset(m.group(1) for m in _ANY_DEFINE.finditer(view)), overloads


@lru_cache(maxsize=512)
def _defs_of_header(path: str, mtime_ns: int, size: int, known: tuple) -> tuple[frozenset, dict, tuple[str, ...]]:
    try:
        with open(path, "rb") as fh:
            src = fh.read(2_000_000)
    except OSError:
        return frozenset(), {}, ()
    view = amd_view.view(src, dict(known))
    here = os.path.dirname(path)
    nested = tuple(os.path.normpath(os.path.join(here, m.group(1).decode("utf-8", "replace")))
                   for m in _INCLUDE.finditer(view))
    return (*_definitions(view), nested)


def _header_definitions(headers, known) -> tuple[set, dict]:
    macros: set[bytes] = set()
    overloads: dict[bytes, set[bytes]] = {}
    for found, funcs in _each_header(headers, lambda h, mtime, size: _defs_of_header(h, mtime, size, known)):
        macros |= found
        for name, types in funcs.items():
            overloads.setdefault(name, set()).update(types)
    return macros, overloads


def definitions_in(view_src: bytes, headers: list[str], options, path: str = "") -> Definitions:
    """The file's own definitions (its AMD view), those of the headers it includes, and, for a header, those every
    file beside it that includes it has in effect there (the headers it included before: exllamav2's `cache_q.cuh`,
    compiled in `cache.cu` after `compat.cuh`, which defines `__stwb` for ROCm)."""
    macros, funcs = _definitions(view_src)
    overloads = {k: set(v) for k, v in funcs.items()}
    known = tuple(sorted(amd_view.defines_for(options).items()))
    more, more_funcs = _header_definitions(headers, known)
    macros = set(macros) | more
    for name, types in more_funcs.items():
        overloads.setdefault(name, set()).update(types)
    if path and not path.endswith((".cu", ".hip", ".cpp", ".cc")):
        here, base = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
        try:
            mtime = os.stat(here).st_mtime_ns
        except OSError:
            mtime = None
        common_macros: set | None = None
        common_funcs: dict | None = None
        for before in (_include_index(here, mtime).get(base, ()) if mtime is not None else ()):
            m, f = _header_definitions([os.path.normpath(os.path.join(here, t)) for t in before], known)
            if common_macros is None:
                common_macros, common_funcs = m, f
            else:
                common_macros &= m
                common_funcs = {k: v & f[k] for k, v in common_funcs.items() if k in f}
        macros |= common_macros or set()
        for name, types in (common_funcs or {}).items():
            overloads.setdefault(name, set()).update(types)
    return Definitions(macros, overloads)
