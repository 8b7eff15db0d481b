"""The project's own switches for its AMD build (`-DUSE_ROCM`, `add_compile_definitions(GGML_USE_HIP)`), read
from its Makefiles and CMake files, and from the Python scripts a PyTorch extension builds with (`setup.py`, a JIT
loader calling `torch.utils.cpp_extension.load`: `py_switches.py`), for the AMD view of each audited file
(`amd_view.defines_for`) and the conversion's (`ConvertOptions.defines`).

Finding them walks the project, which a pre-commit hook does on every commit: in a tree of thousands of folders
that walk would cost more than the audit of the changed file. So what a walk saw is remembered in the user cache
(each folder it listed and each build file it read, with their times, sizes and inodes) and a later run
only checks those with one `stat` each. A folder's times change when an entry is added, removed or renamed in
it, a file's when it is written; the change time (ctime) cannot be set back as the modification time can, so an
unchanged record means the walk would see exactly what it saw."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import time
from pathlib import Path

from hipport.audit.py_switches import python_switches
from hipport.rules import store_pickle

_BUILD_NAMES = ("Makefile", "makefile", "GNUmakefile", "CMakeLists.txt")
_BUILD_SUFFIXES = (".mk", ".cmake")
# Installed packages are no build of the project's (PyTorch's own cpp_extension.py lists both builds' flags).
_SKIPPED_DIRS = ("build", "node_modules", "third_party", "site-packages", "__pycache__")
_D_FLAG = re.compile(rb"(?:-D[ \t]*|add_compile_definitions\([^)]*?\b|target_compile_definitions\([^)]*?\b)"
                     rb"([A-Za-z_]\w*)(?:=(\w+))?")
# A switch named after the AMD stack; `-DCUDA_...`/`NVIDIA` ones are the other build's.
_AMD_SWITCH = re.compile(rb"ROCM|HIP|AMD", re.I)
_NOT_AMD = re.compile(rb"CUDA|NVIDIA|NVCC", re.I)
_MAX_BUILD_BYTES = 1_000_000
# Python files are many in a Python project and few of them build anything: they have a budget of their own, so
# they never crowd the Makefiles out of the walk's.
_PY_LIMIT = 200
# A time this close to the walk may still change within the file system's clock tick without the time changing
# (the "racy" entries of git's index): such a walk is not remembered.
_RACY_SECONDS = 2.0
_CACHE_FORMAT = 4


def build_defines(root: str, limit: int = 200, max_dirs: int = 5000, cache_dir: str | None = None) -> tuple[str, ...]:
    """`-D` switches named for ROCm/HIP/AMD in the project's build files under ``root``, sorted. At most
    ``limit`` build files and ``max_dirs`` folders are read, so a huge tree costs no more than a moment. With
    ``cache_dir``, a walk whose folders and files are unchanged since the last one is not made again."""
    return _record(root, limit, max_dirs, cache_dir)["defines"]


def build_macros(root: str, limit: int = 200, max_dirs: int = 5000, cache_dir: str | None = None) -> tuple[str, ...]:
    """Every name the project's build files pass with `-D` (`VERIFY` under `ifeq ($(VERIFY),yes)` too), sorted: what
    some configuration of its build may define, for opt-in switches (`#ifdef PTX`) nothing else defines."""
    return _record(root, limit, max_dirs, cache_dir)["macros"]


def _record(root: str, limit: int, max_dirs: int, cache_dir: str | None) -> dict:
    if cache_dir is None:
        defines, seen, macros = _walk(root, limit, max_dirs)
        return {"defines": defines, "macros": macros}
    path = _cache_path(cache_dir, root, limit, max_dirs)
    remembered = _read(path)
    if remembered is not None and _unchanged(remembered["seen"]):
        return remembered
    started = time.time()
    defines, seen, macros = _walk(root, limit, max_dirs)
    record = {"format": _CACHE_FORMAT, "defines": defines, "seen": seen, "macros": macros}
    if all(stamp[0] / 1e9 < started - _RACY_SECONDS for _, stamp in seen):
        store_pickle(Path(path), record, "build-switches")
    return record


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What changes when a file or folder does: the later of its two times first (for the racy test)."""
    return (max(st.st_ctime_ns, st.st_mtime_ns), st.st_mtime_ns, st.st_size, st.st_ino)


_MISSING = (-1, -1, -1, -1)


def _walk(root: str, limit: int, max_dirs: int) -> tuple[tuple[str, ...], list[tuple[str, tuple]], tuple[str, ...]]:
    """(the AMD switches, (path, stamp) of every folder listed and build file read, every `-D` name)."""
    found: set[str] = set()
    mentioned: set[str] = set()
    seen: list[tuple[str, tuple]] = []
    files_read = py_read = 0
    for count, (folder, dirs, files) in enumerate(os.walk(root)):
        if count > max_dirs:
            break
        try:
            seen.append((folder, _stamp(os.stat(folder))))
        except OSError:
            seen.append((folder, _MISSING))
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS]
        if "pyvenv.cfg" in files:  # a virtual environment: installed packages only
            dirs[:] = []
            continue
        for name in files:
            python = name.endswith(".py")
            if not python and name not in _BUILD_NAMES and not name.endswith(_BUILD_SUFFIXES):
                continue
            if python:
                py_read += 1
                if py_read > _PY_LIMIT:
                    continue
            else:
                files_read += 1
                if files_read > limit:
                    return tuple(sorted(found)), seen, tuple(sorted(mentioned))
            file_path = os.path.join(folder, name)
            try:
                with open(file_path, "rb") as fh:
                    st = os.fstat(fh.fileno())
                    seen.append((file_path, _stamp(st)))
                    # Asked for no more than the file holds: a read of 1 MB allocates 1 MB, and 200 of them
                    # were most of this walk's time.
                    text = fh.read(min(st.st_size, _MAX_BUILD_BYTES) if st.st_size else _MAX_BUILD_BYTES)
            except OSError:
                seen.append((file_path, _MISSING))
                continue
            if python:
                amd, named = python_switches(text)
                found.update(amd)
                mentioned.update(named)
                continue
            for m in _D_FLAG.finditer(text):
                word = m.group(1)
                mentioned.add(word.decode())
                if _AMD_SWITCH.search(word) and not _NOT_AMD.search(word) and not word.startswith(b"__"):
                    found.add(word.decode() + (f"={m.group(2).decode()}" if m.group(2) else ""))
    if not seen:  # no folder there (yet): remember that, so that one made later is walked
        try:
            seen.append((root, _stamp(os.stat(root))))
        except OSError:
            seen.append((root, _MISSING))
    return tuple(sorted(found)), seen, tuple(sorted(mentioned))


def _unchanged(seen) -> bool:
    for path, stamp in seen:
        try:
            now = _stamp(os.stat(path))
        except OSError:
            now = _MISSING
        if now != stamp:
            return False
    return True


def _cache_path(cache_dir: str, root: str, limit: int, max_dirs: int) -> str:
    key = hashlib.sha256(f"{os.path.abspath(root)}\0{limit}\0{max_dirs}".encode("utf-8", "surrogateescape"))
    return os.path.join(cache_dir, "build-switches", key.hexdigest()[:24] + ".pickle")


def _read(path: str) -> dict | None:
    try:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
    except Exception:  # missing, truncated, or from another Python: walk again
        return None
    return data if isinstance(data, dict) and data.get("format") == _CACHE_FORMAT else None
