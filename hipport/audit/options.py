"""What the audit of one file depends on besides its bytes: the run's options, and the headers the file includes
with quotes (both go into the result cache's key). Kept light on purpose: the command line needs them before it
knows whether any check runs at all (a cached file runs none)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from hipport.rocm import DEFAULT_ARCHS, NEWEST_ROCM


@dataclass(frozen=True)
class AuditOptions:
    offload_arch: tuple[str, ...] = DEFAULT_ARCHS
    rocm_version: tuple[int, ...] = NEWEST_ROCM
    select: frozenset[str] = field(default_factory=frozenset)   # empty: every rule
    ignore: frozenset[str] = field(default_factory=frozenset)
    # Folders searched for `#include "..."` headers after the including file's own (the project's -I folders).
    include_dirs: tuple[str, ...] = ()
    # The project's own switches for its AMD build (`USE_ROCM`, `GGML_USE_HIP=1`), from settings and build files.
    defines: tuple[str, ...] = ()
    # Names some configuration of the project may define: every `-D` of its build files, every `#define` of the
    # run's files. An opt-in switch none of them names (`#ifdef PTX`) is never defined.
    project_macros: tuple[str, ...] = ()
    # The project directory (the settings' folder, else the repository root): the top of the project a file's
    # templates are looked up in (hipport/project_sources.py). Empty: the repository root above the file.
    project_dir: str = ""

    def wants(self, rule_id: str) -> bool:
        return (not self.select or rule_id in self.select) and rule_id not in self.ignore


_QUOTED_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def quoted_includes(src: bytes, path: str, include_dirs: tuple[str, ...] = ()) -> list[tuple[str, os.stat_result]]:
    """The headers ``src`` includes with quotes that exist, found as a compiler finds them (beside the file, then
    in ``include_dirs``), each with its `stat`."""
    here = os.path.dirname(os.path.abspath(path))
    found = []
    for m in _QUOTED_INCLUDE.finditer(src):
        name = m.group(1).decode("utf-8", "replace")
        for folder in (here, *include_dirs):
            candidate = os.path.normpath(os.path.join(folder, name))
            try:
                st = os.stat(candidate)
            except OSError:
                continue
            found.append((candidate, st))
            break
    return found


def dependency_key(src: bytes, path: str, include_dirs: tuple[str, ...] = (),
                   includes: list[tuple[str, os.stat_result]] | None = None) -> bytes:
    """What a file's audit depends on besides its own bytes: the headers it includes with quotes, by path, size
    and modification time, so that a cached result is not reused after one of them changed. ``includes``:
    `quoted_includes` of the file, when known. An audit that asked about the whole project (a template nothing
    names, an operator nothing applies) depends on every source of it too: the result cache keeps the project's
    `stamp` with such a result and checks it on reuse (cli/audit.py), so that a file whose audit asked nothing
    costs no walk of the project."""
    if includes is None:
        includes = quoted_includes(src, path, include_dirs)
    parts = [f"{candidate}\0{st.st_size}\0{st.st_mtime_ns}" for candidate, st in includes]
    return "\n".join(parts).encode("utf-8", "surrogateescape")
