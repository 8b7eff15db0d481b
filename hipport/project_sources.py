"""What a project's sources name, read once a run: every identifier outside comments with how often it occurs,
the class templates explicitly instantiated, and which files its translation units compile (themselves and the
headers they include). The audit asks it whether anything in the project uses a template at all: C++ compiles a
function template, or a member of a class template, only where something names it.

The project is the outermost folder from a file's own up to the project directory (the settings' folder, else the
repository root) that holds a build file: in a tree of separate programs (HeCBench's `src/<name>-cuda/Makefile`)
each program is its own project, in a CMake project the top. Headers its build reaches outside that folder (a
Makefile's `-I../other`, the run's include folders) are read too, as they compile with it."""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field

_SOURCES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".cpp", ".cc", ".cxx", ".c", ".hip", ".inl", ".ipp",
            ".tpp", ".inc")
_UNITS = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip")  # what a build compiles; the rest only when included
_BUILD_FILES = frozenset({"Makefile", "makefile", "GNUmakefile", "CMakeLists.txt", "setup.py", "meson.build",
                          "BUILD", "BUILD.bazel", "SConstruct"})
# A tree larger than this is not read: the question is then left unanswered (every name counts as used).
MAX_FILES = 20_000
MAX_BYTES = 200_000_000

_COMMENT_OR_STRING = re.compile(rb'//[^\n]*|/\*.*?\*/|("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')', re.S)
_WORD = re.compile(rb"[A-Za-z_]\w*")
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)
# `template class Box<int>;`, `extern template struct Box<float>;`: every member of that class is compiled.
_CLASS_INSTANCE = re.compile(rb"\btemplate\s+(?:class|struct)\s+(?:[A-Za-z_]\w*\s*::\s*)*([A-Za-z_]\w*)\s*<")
_MAKE_I = re.compile(rb"(?<![\w-])-I[ \t]*([^\s$()'\"]+)")
_CMAKE_I = re.compile(rb"include_directories\s*\(([^)]*)\)", re.I)


@dataclass
class ProjectIndex:
    root: str
    words: Counter = field(default_factory=Counter)
    class_instances: set[bytes] = field(default_factory=set)
    compiled: set[str] = field(default_factory=set)   # normalised paths of units and the headers they reach
    paths: list[str] = field(default_factory=list)     # every source read: the project's and those its build reaches
    memo: dict = field(default_factory=dict)  # what other modules derive from these sources: stale with the index
    # The files each name occurs in, up to _FILES_KEPT (a longer list is cut to _FILES_KEPT + 1 entries).
    files: dict[bytes, list[str]] = field(default_factory=dict)
    _heads: dict[tuple[bytes, str], int] = field(default_factory=dict)

    def mentions(self, name: bytes) -> int:
        """How often ``name`` occurs in the project's code (strings included, comments not)."""
        return self.words[name]

    def definitions_elsewhere(self, name: bytes, path: str) -> int:
        """How many of ``name``'s mentions in files other than ``path`` are the name of a function definition
        (`T name(...) {`: a definition, not a use; DeepSpeed's XPU copy of `reduce_block_into_lanes`). Whatever
        else the name does there (a call, a declaration, a body's recursion) stays a use. 0 when the name is in
        too many files to read them."""
        files = self.files.get(name, ())
        if len(files) > _FILES_KEPT:
            return 0
        me = _norm(path)
        total = 0
        for f in files:
            if _norm(f) != me:
                if (name, f) not in self._heads:
                    self._heads[name, f] = _definition_heads(f, name)
                total += self._heads[name, f]
        return total

    def compiles(self, path: str) -> bool:
        """``path`` is a translation unit of the project or a header one of them includes, directly or not."""
        return _norm(path) in self.compiled


_FILES_KEPT = 8
_BLANKED = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_AFTER_PARAMS = re.compile(rb"(?:\s|\bconst\b|\bvolatile\b|\bnoexcept\b|\boverride\b|\bfinal\b|&)*\{")


def _definition_heads(path: str, name: bytes) -> int:
    """Mentions of ``name`` in ``path`` (comments and strings left out) that name a function being defined: not
    after `.` or `->`, followed by a parameter list and, past qualifiers, the body's `{`."""
    try:
        with open(path, "rb") as fh:
            code = _BLANKED.sub(b" ", fh.read(MAX_BYTES))
    except OSError:
        return 0
    heads = 0
    for m in re.finditer(rb"\b" + re.escape(name) + rb"\b", code):
        b = m.start() - 1
        while b >= 0 and code[b:b + 1].isspace():
            b -= 1
        if code[b:b + 1] == b"." or code[max(b - 1, 0):b + 1] == b"->":
            continue
        k = m.end()
        while k < len(code) and code[k:k + 1].isspace():
            k += 1
        if code[k:k + 1] != b"(":
            continue
        depth = 0
        for j in range(k, len(code)):
            c = code[j:j + 1]
            depth += c == b"("
            depth -= c == b")"
            if depth == 0:
                break
        else:
            continue
        if _AFTER_PARAMS.match(code, j + 1):
            heads += 1
    return heads


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def _effective_top(path: str, top: str) -> str:
    """``top`` when ``path`` lies under it; else the repository root above ``path``, else its own folder."""
    here = os.path.dirname(_norm(path))
    top = _norm(top) if top else ""
    if not top or not _under(here, top):
        top = next((d for d in _upwards(here) if os.path.exists(os.path.join(d, ".git"))), here)
    return top


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def project_root(path: str, top: str = "") -> str:
    """The outermost folder from ``path``'s own up to ``top`` (when ``path`` lies under it; else the repository
    root above ``path``, else its own folder) that holds a build file; ``top`` itself when none does."""
    top = _effective_top(path, top)
    found = top
    for folder in _upwards(os.path.dirname(_norm(path))):
        if _has_build_file(folder):
            found = folder
        if folder == top:
            break
    return found


def _has_build_file(folder: str) -> bool:
    return any(os.path.isfile(os.path.join(folder, b)) for b in _BUILD_FILES)


def _upwards(folder: str):
    while True:
        yield folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


_INDEXES: dict[tuple, ProjectIndex | None] = {}
_ASKED: set[str] = set()  # the files whose project something asked about in this process


def asked(path: str) -> bool:
    """Whether something asked about ``path``'s project in this process (`index_for`): what was found for
    ``path`` then depends on the project's other sources, and a cached result must carry the project's `stamp`."""
    return _norm(path) in _ASKED


def index_for(path: str, top: str = "", include_dirs: tuple[str, ...] = ()) -> ProjectIndex | None:
    """The index of the project holding ``path`` (read once per process and root), or None when its tree is too
    large to read or cannot be listed, or a file outside any program includes one of it."""
    _ASKED.add(_norm(path))
    top = _effective_top(path, top)
    root = project_root(path, top)
    try:
        stamp = os.stat(root).st_mtime_ns
    except OSError:
        return None
    key = (root, top, tuple(include_dirs), stamp)
    if key not in _INDEXES:
        others = _includers(root, top)
        _INDEXES[key] = None if others is None else _read_project(root, others,
                                                                  tuple(_norm(d) for d in include_dirs))
    return _INDEXES[key]


def _includers(root: str, top: str) -> list[str] | None:
    """The other programs under ``top`` that include a file of ``root`` (HeCBench's blockexchange-cuda reads
    ../warpexchange-cuda/warp_exchange.h through its Makefile's `-I`): what they name instantiates templates
    there too. None when a file in no program includes one, or the tree is too large to read."""
    if root == top:
        return []
    tree = _tree(top)
    if tree is None:
        return None
    programs = {prog for target, progs in tree.items() if _under(target, root) for prog in progs}
    programs.discard(root)
    return None if "" in programs else sorted(programs)


_TREES: dict[tuple, dict[str, set[str]] | None] = {}


def _tree(top: str) -> dict[str, set[str]] | None:
    """Every file under ``top`` some source includes (beside itself, or through its program's `-I` folders), with
    the programs (outermost folders holding a build file; "" for a file in none) that include it. Read once per
    process: one walk of the tree for all the programs in it."""
    try:
        key = (top, os.stat(top).st_mtime_ns)
    except OSError:
        return None
    if key in _TREES:
        return _TREES[key]
    program_of: dict[str, str] = {}
    search: dict[str, list[str]] = {}
    sources: list[tuple[str, str]] = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        parent = program_of.get(os.path.dirname(folder), "")
        names_set = set(names)
        prog = parent or (folder if names_set & _BUILD_FILES else "")
        program_of[folder] = prog
        for name in sorted(names):
            full = os.path.join(folder, name)
            if name.endswith(_SOURCES):
                sources.append((full, prog))
            elif prog and (name in _BUILD_FILES or name.endswith((".mk", ".cmake"))):
                search.setdefault(prog, []).extend(_build_include_dirs(full))
        if len(sources) > MAX_FILES:
            _TREES[key] = None
            return None
    found: dict[str, set[str]] = {}
    total = 0
    for full, prog in sources:
        try:
            with open(full, "rb") as fh:
                text = fh.read(MAX_BYTES)
        except OSError:
            continue
        total += len(text)
        if total > MAX_BYTES:
            _TREES[key] = None
            return None
        for target in _INCLUDE.findall(text):
            name = target.decode("utf-8", "replace")
            for folder in (os.path.dirname(full), *search.get(prog, ())):
                candidate = os.path.normpath(os.path.join(folder, name))
                if _under(candidate, top) and os.path.isfile(candidate):
                    found.setdefault(candidate, set()).add(prog)
                    break
    _TREES[key] = found
    return found


def _read_project(root: str, others: list[str], include_dirs: tuple[str, ...]) -> ProjectIndex | None:
    index = ProjectIndex(root)
    files: list[str] = []
    search = list(include_dirs)
    for walked in (root, *others):
        for folder, dirs, names in os.walk(walked):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                full = os.path.join(folder, name)
                if name.endswith(_SOURCES):
                    files.append(full)
                elif name in _BUILD_FILES or name.endswith((".mk", ".cmake")):
                    search += _build_include_dirs(full)
            if len(files) > MAX_FILES:
                return None
    includes: dict[str, list[bytes]] = {}
    by_name: dict[str, list[str]] = {}
    total = 0
    queue = list(files)
    while queue:
        full = queue.pop()
        if full in includes:
            continue
        try:
            with open(full, "rb") as fh:
                text = fh.read(MAX_BYTES)
        except OSError:
            includes[full] = []
            continue
        total += len(text)
        if total > MAX_BYTES or len(includes) > MAX_FILES:
            return None
        includes[full] = _INCLUDE.findall(text)
        by_name.setdefault(os.path.basename(full), []).append(full)
        code = _COMMENT_OR_STRING.sub(lambda m: m.group(1) or b" ", text)
        words = _WORD.findall(code)
        index.words.update(words)
        for word in set(words):
            kept = index.files.setdefault(word, [])
            if len(kept) <= _FILES_KEPT:
                kept.append(full)
        index.class_instances.update(_CLASS_INSTANCE.findall(code))
        for target in includes[full]:  # a header the build reaches outside the programs compiles with them
            found = _resolve_outside(full, target.decode("utf-8", "replace"), search, (root, *others))
            if found is not None and found not in includes:
                queue.append(found)
    reached = [f for f in files if f.endswith(_UNITS)]
    seen = set(reached)
    while reached:
        here = reached.pop()
        for target in includes.get(here, ()):
            for found in _resolve(here, target.decode("utf-8", "replace"), search, by_name):
                if found not in seen:
                    seen.add(found)
                    reached.append(found)
    index.compiled = {_norm(f) for f in seen}
    index.paths = sorted(f for f in includes if os.path.isfile(f))
    return index


def _build_include_dirs(path: str) -> list[str]:
    """Folders a Makefile's `-I` or CMake's `include_directories` name, relative to the build file; names made of
    variables (`$(CUDA)/include`) are left out."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(1_000_000)
    except OSError:
        return []
    words = _MAKE_I.findall(text)
    for m in _CMAKE_I.finditer(text):
        words += [w for w in m.group(1).split() if b"$" not in w and w.upper() not in (b"SYSTEM", b"BEFORE",
                                                                                       b"AFTER")]
    here = os.path.dirname(path)
    out = []
    for w in words:
        folder = _norm(os.path.join(here, w.decode("utf-8", "replace").strip("\"'")))
        if os.path.isdir(folder):
            out.append(folder)
    return out


def _resolve_outside(including: str, target: str, search: list[str], roots: tuple[str, ...]) -> str | None:
    """The header ``target`` names when a compiler finds it outside the programs read (beside the including file,
    then in the search folders), else None."""
    for folder in (os.path.dirname(including), *search):
        candidate = os.path.normpath(os.path.join(folder, target))
        if os.path.isfile(candidate):
            inside = any(_under(candidate, r) for r in roots)
            return None if inside or not candidate.endswith(_SOURCES) else candidate
    return None


def _resolve(including: str, target: str, search: list[str], by_name: dict[str, list[str]]) -> list[str]:
    """The files an include may name: the one a compiler finds (beside the including file, in the search folders),
    else every file read whose path ends with the name (a folder the build adds that was not seen)."""
    for folder in (os.path.dirname(including), *search):
        candidate = os.path.normpath(os.path.join(folder, target))
        if candidate in by_name.get(os.path.basename(candidate), ()):
            return [candidate]
    tail = os.sep + os.path.normpath(target).lstrip(os.sep)
    return [f for f in by_name.get(os.path.basename(target), ()) if f.endswith(tail)]


_STAMPS: dict[tuple, str] = {}


def stamp(path: str, top: str = "", include_dirs: tuple[str, ...] = ()) -> str:
    """The sizes and times of every source and build file under ``path``'s project directory, in one string (a
    stat of each, once per process): an audit result that asked the project anything is stale when this changes.
    The whole directory, as other programs in it may include the file's."""
    top = _effective_top(path, top)
    try:
        key = (top, tuple(include_dirs), os.stat(top).st_mtime_ns)
    except OSError:
        return ""
    if key not in _STAMPS:
        parts = []
        for folder, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if name.endswith(_SOURCES) or name in _BUILD_FILES or name.endswith((".mk", ".cmake")):
                    try:
                        st = os.stat(os.path.join(folder, name))
                    except OSError:
                        continue
                    parts.append(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}")
            if len(parts) > MAX_FILES:
                break
        digest = hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
        _STAMPS[key] = f"project {top} {digest}"
    return _STAMPS[key]


def forget() -> None:
    """Drop what this process read: the next question reads the project again (a long-lived caller's new run)."""
    _INDEXES.clear()
    _ASKED.clear()
    _STAMPS.clear()
    _TREES.clear()
