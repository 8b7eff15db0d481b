"""A content-addressed cache of per-file results, so a full-tree run (`pre-commit run --all-files`, CI) only
analyses files that changed. Entries are keyed by the file's bytes and by everything else that decides the
result (hipport's version, the rule files, the options): changing any of those starts a fresh namespace.
Writes go through a temporary file and a rename, so concurrent runs never see half an entry."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from hipport import __version__
from hipport.rules import builtin_rules_dir, cache_dir


def rules_fingerprint(extra_files: list[Path] = ()) -> str:
    """Hash of every rule file's bytes, and of hipport's own modules' sizes and times: a rule change, an
    upgrade or a local edit of a check all invalidate the cache, not only a new version number. (Plain
    strings, not pathlib: every run computes this, and pathlib's walking and sorting took half its time.)"""
    h = hashlib.sha256()
    base = str(builtin_rules_dir())
    below = base + os.sep
    for path in sorted([*_files_under(base, ".toml"), *map(str, extra_files)], key=_path_order):
        h.update((path[len(below):] if path.startswith(below) else path).encode())
        with open(path, "rb") as fh:
            h.update(fh.read())
    for module in sorted(_files_under(os.path.dirname(os.path.abspath(__file__)), ".py"), key=_path_order):
        st = os.stat(module)
        h.update(f"{os.path.basename(module)}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _files_under(root: str, suffix: str) -> list[str]:
    return [os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names if name.endswith(suffix)]


def _path_order(path: str) -> list[str]:
    return path.split(os.sep)  # as pathlib sorts: folder by folder


class ResultCache:
    def __init__(self, kind: str, salt: str, directory: Path | None = None) -> None:
        namespace = hashlib.sha256(f"{kind}\0{__version__}\0{salt}".encode()).hexdigest()[:20]
        self.root = (directory or cache_dir()) / f"{kind}-{namespace}"
        self.enabled = True

    def _path(self, data: bytes) -> Path:
        key = hashlib.sha256(data).hexdigest()
        return self.root / key[:2] / key[2:]

    def get(self, data: bytes):
        if not self.enabled:
            return None
        try:
            with self._path(data).open("rb") as fh:
                return pickle.load(fh)
        except FileNotFoundError:
            return None
        except Exception:  # truncated by a crash or written by another Python: recompute
            return None

    def put(self, data: bytes, value) -> None:
        if not self.enabled:
            return
        path = self._path(data)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            self.enabled = False  # a read-only or full disk only costs speed
