"""Finding the sources to work on, and writing results without ever leaving a half-written file."""

from __future__ import annotations

import fnmatch
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

SOURCE_SUFFIXES = frozenset({".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".inl", ".inc"})
_SKIP_DIRS = frozenset({".git", ".hg", ".svn"})


class InputError(Exception):
    """A path given on the command line cannot be used; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Source:
    path: Path      # where to read it
    rel: Path       # where it goes under an output directory


def _excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p.rstrip("/") + "/*")
               for p in patterns)


def collect_sources(paths: list[Path], exclude: tuple[str, ...] = ()) -> list[Source]:
    """Source files under ``paths``, sorted, each once. A single directory is mirrored as its contents;
    with several inputs each keeps its own name under an output directory."""
    found: dict[Path, Source] = {}
    several = len(paths) > 1
    for root in paths:
        if not root.exists():
            raise InputError(f"{root}: no such file or directory")
        if root.is_file():
            found.setdefault(root.resolve(), Source(root, Path(root.name)))
            continue
        prefix = Path(root.resolve().name) if several else Path()
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = Path(dirpath).relative_to(root)
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in _SKIP_DIRS and not _excluded((rel_dir / d).as_posix(), exclude))
            for name in sorted(filenames):
                rel = rel_dir / name
                if Path(name).suffix.lower() not in SOURCE_SUFFIXES or _excluded(rel.as_posix(), exclude):
                    continue
                path = Path(dirpath) / name
                found.setdefault(path.resolve(), Source(path, prefix / rel))
    return sorted(found.values(), key=lambda s: s.rel.as_posix())


def read_source(path: Path) -> tuple[bytes, os.stat_result]:
    st = path.stat()
    return path.read_bytes(), st


def write_atomic(path: Path, data: bytes, expect: os.stat_result | None = None) -> None:
    """Write through a temporary file in the same directory and rename it over the target, so a crash or
    Ctrl-C leaves the old file or the new one, never a mix. With ``expect``, refuse to overwrite a file that
    changed on disk since it was read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    try:
        st = path.stat()
        mode = st.st_mode & 0o7777
        if expect is not None and (st.st_mtime_ns, st.st_size) != (expect.st_mtime_ns, expect.st_size):
            raise InputError(f"{path}: changed on disk while hipport was working; not overwritten, run again")
    except FileNotFoundError:
        if expect is not None:
            raise InputError(f"{path}: vanished while hipport was working; not written") from None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".hipport-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
