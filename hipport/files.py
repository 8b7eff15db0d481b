"""Finding the sources to work on, and writing results without ever leaving a half-written file.

Safety rules, all enforced here:

* A write goes to a temporary file in the target's directory (``.NAME.PID.XXXXXXXX.hipport-tmp``), is flushed
  and fsync'ed, gets the original's permission bits (and owner, when allowed), and is renamed over the target:
  every file is wholly old or wholly new. SIGINT/SIGTERM arriving during those steps are held until the rename
  (or the clean-up) is done; see :func:`critical`.
* A file that changed on disk since it was read (size, time, inode or content) is not overwritten.
* Symlinked files whose target lies outside the input paths, and symlinked directories, are not followed unless
  asked (``follow_symlinks``); a followed link is written through (the link stays a link).
* Under an output directory nothing is written outside it, whatever symlinks the output tree holds.
* Before anything is written, :func:`check_outputs` refuses an output that would land on an input, inside an input
  tree, or on another output of the same run (letter case and Unicode normalisation ignored).
* Convert and audit read a source through :func:`load_source` alone, so a file either command cannot use gets
  the same one-line message from both.
* Temporary files left by a killed run (SIGKILL, power loss) carry the dead process's id; the next writing run
  removes those of dead processes in the directories it writes to (:func:`remove_stale_temps`).
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import posixpath
import re
import signal
import stat
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SOURCE_SUFFIXES = frozenset({".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".inl", ".inc"})
_SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
# Build files converted with the sources (unless build-file conversion is off): name -> kind.
MAKEFILE_NAMES = frozenset({"Makefile", "makefile", "GNUmakefile"})
CMAKE_NAMES = frozenset({"CMakeLists.txt"})
# A Python package's build script: read for PyTorch's `CUDAExtension` (which builds for ROCm itself), never changed.
SETUP_NAMES = frozenset({"setup.py"})
# Build files whose conversion writes the GPU targets (`--offload-arch`): only these wait for hipcc's answer.
TARGETED_BUILD_KINDS = ("make", "cmake")
TEMP_SUFFIX = ".hipport-tmp"
# .NAME.PID.XXXXXXXX.hipport-tmp, as written by write_atomic (mkstemp's random part is 8 characters).
_TEMP_NAME = re.compile(r"^\..*\.(\d+)\.[A-Za-z0-9_]{8}" + re.escape(TEMP_SUFFIX) + r"$", re.S)
BINARY_SAMPLE = 8192
BINARY_SHARE = 0.10  # with a NUL byte in the sample, more than this share of control bytes means binary
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\v\b\x1b")  # control bytes text files do hold; NUL is not one


class InputError(Exception):
    """A path cannot be used; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Source:
    path: Path              # where to read it
    rel: Path               # where it goes under an output directory
    skip: str | None = None  # why it is not processed at all (a one-line message naming it), or None
    build: str | None = None  # a build file's kind ("make" or "cmake"), None for a source


def real_file_path(path: os.PathLike | str, folders: dict[str, str], link: bool | None = None) -> str:
    """os.path.realpath(path) of a file, each folder resolved once (``folders`` keeps them): a file that is no
    symlink (``link``: whether it is one, when known) is its resolved folder and its name. A tree of thousands of
    files costs a few thousand system calls instead of one per path component per file."""
    if link is None:
        link = os.path.islink(path)
    if link:
        return os.path.realpath(path)
    folder, name = os.path.split(os.fspath(path))
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = os.path.realpath(folder)
    return os.path.join(real, name)


def build_file_kind(name: os.PathLike | str) -> str | None:
    """"make" for `Makefile`, `makefile`, `GNUmakefile` and `*.mk`; "cmake" for `CMakeLists.txt` and `*.cmake`;
    "setuptools" for `setup.py`; None for anything else."""
    base = os.path.basename(os.fspath(name))
    if base in MAKEFILE_NAMES or base.endswith(".mk"):
        return "make"
    if base in CMAKE_NAMES or base.endswith(".cmake"):
        return "cmake"
    if base in SETUP_NAMES:
        return "setuptools"
    return None


def show(path: os.PathLike | str) -> str:
    """A path for a message: undecodable bytes in file names come out as \\xNN instead of breaking the output."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def one_line(text: str) -> str:
    """``text`` with its line breaks as `\\n`-style escapes: a name holding one still prints as one line."""
    return text if len(f"{text}x".splitlines()) == 1 else \
        "".join(c.encode("unicode_escape").decode() if f"{c}x".splitlines()[0] == "" else c for c in text)


def _excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) or fnmatch.fnmatch(rel, p.rstrip("/") + "/*")
               for p in patterns)


def _excluded_chain(rel: str, patterns: tuple[str, ...]) -> bool:
    """``rel`` or one of the directories it lies in matches: what a directory walk from the top would skip."""
    if not patterns or rel in ("", "."):
        return False
    parts = rel.split("/")
    return any(_excluded("/".join(parts[:i]), patterns) for i in range(1, len(parts) + 1))


def _where(path: os.PathLike | str) -> str:
    """An absolute path naming the same directory entry: the directories resolved (symlinks, `..`), the last
    component kept as it is (a symlinked file stays the link)."""
    head, name = os.path.split(os.fspath(path))
    if name in ("", ".", ".."):
        return os.path.realpath(path)
    return os.path.join(os.path.realpath(head or os.curdir), name)


def project_path(path: os.PathLike | str, base: os.PathLike | str) -> str:
    """``path`` relative to the project directory ``base`` as a POSIX path (``../`` when outside it): the same
    file gives the same text whatever the current directory and however it was spelt (absolute, ``a/../a/f.cu``,
    through a symlinked directory)."""
    return Path(os.path.relpath(_where(path), os.path.realpath(base))).as_posix()


def _outside(rel: str) -> bool:
    return rel == ".." or rel.startswith("../")


def _inside(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _link_problem(path: Path, roots: list[str], follow: bool) -> str | None:
    """For a symlinked file: why it is not converted, or None when it may be (its target is a file in the tree,
    or links are followed)."""
    target = os.readlink(path)
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{show(path)}: symlink loop; skipped"
        return f"{show(path)}: broken symlink (its target {show(target)} does not exist); skipped"
    if follow or _inside(real, roots):
        return None
    return f"{show(path)}: symlink to {show(real)}, outside the input tree; not followed without --follow-symlinks"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def collect_sources(paths: list[Path], exclude: tuple[str, ...] = (), follow_symlinks: bool = False,
                    report_skipped: bool = False, *, project_exclude: tuple[str, ...] = (),
                    project_dir: Path | None = None, build_files: bool = False) -> list[Source]:
    """Source files under ``paths``, sorted, each once. A single directory is mirrored as its contents;
    with several inputs each keeps its own name under an output directory.

    A file or directory is left out when its name or relative path matches a pattern: ``exclude`` (the command
    line's) by the path below the input directory it was found in, or for a file named as an input by the path
    as given; ``project_exclude`` (the settings') by the path relative to ``project_dir``, whichever way the
    file was reached (named, or found from any directory; outside ``project_dir``, as for ``exclude``). A
    directory that matches excludes everything in it.

    Symlinked directories are entered only with ``follow_symlinks`` (each real directory once, so loops end).
    A symlinked file is converted when its target is a file inside one of ``paths`` (once, under its real name)
    or with ``follow_symlinks``; otherwise, like broken links, link loops and FIFOs or devices with a source name,
    it comes back with ``skip`` set when ``report_skipped`` (else it is left out).

    With ``build_files``, Makefiles and CMake files (:func:`build_file_kind`) are collected too, with ``build`` set
    to their kind, and so is such a file named as an input."""
    found: dict[str, Source] = {}
    skipped: list[Source] = []
    several = len(paths) > 1
    roots = [os.path.realpath(p) for p in paths if p.is_dir()]
    roots += [os.path.realpath(p) for p in paths if not p.is_dir()]
    project_exclude = tuple(project_exclude)
    base = os.path.realpath(project_dir) if project_dir is not None and project_exclude else None

    def in_project(where: str) -> str | None:
        """``where`` (absolute, resolved) relative to the project directory, or None outside it or without one."""
        if base is None:
            return None
        rel = Path(os.path.relpath(where, base)).as_posix()
        return None if _outside(rel) else ("" if rel == "." else rel)

    real_dirs: dict[str, str] = {}

    def add(path: Path, rel: Path, explicit: bool = False) -> None:
        link = path.is_symlink()
        if link and not explicit:
            problem = _link_problem(path, roots, follow_symlinks)
            if problem is not None:
                skipped.append(Source(path, rel, problem))
                return
        try:
            st = path.stat()
        except OSError as exc:
            skipped.append(Source(path, rel, f"{show(path)}: cannot read ({exc.strerror}); skipped"))
            return
        if not stat.S_ISREG(st.st_mode):
            skipped.append(Source(path, rel, f"{show(path)}: {_kind(st.st_mode)}, not a source file; skipped"))
            return
        real = real_file_path(path, real_dirs, link)
        old = found.get(real)
        # Two names for one file (a link inside the tree): convert it once, under its own name rather than the link's.
        if old is None or (old.path.is_symlink() and not link):
            found[real] = Source(path, rel, build=build_file_kind(path) if build_files else None)

    for root in paths:
        if not root.exists() and not root.is_symlink():
            raise InputError(f"{show(root)}: no such file or directory")
        if not root.is_dir():
            project_rel = in_project(_where(root))
            if _excluded_chain(Path(os.path.normpath(root)).as_posix(), exclude) or (
                    _excluded_chain(project_rel, project_exclude) if project_rel is not None
                    else _excluded(root.name, project_exclude)):
                continue
            add(root, Path(root.name), explicit=True)
            continue
        project_root = in_project(os.path.realpath(root))
        if project_root is not None and _excluded_chain(project_root, project_exclude):
            continue

        def dropped(rel: str, project_root: str | None = project_root) -> bool:
            """``rel`` (below ``root``) is excluded by a command-line or a project pattern."""
            return _excluded(rel, exclude) or _excluded(
                rel if project_root is None else posixpath.join(project_root, rel), project_exclude)

        prefix = Path(os.path.basename(os.path.realpath(root))) if several else Path()
        seen_dirs: set[tuple[int, int]] = set()
        for dirpath, dirnames, filenames in os.walk(root, followlinks=follow_symlinks):
            if follow_symlinks:
                try:
                    st = os.stat(dirpath)
                except OSError:
                    dirnames[:] = []
                    continue
                if (st.st_dev, st.st_ino) in seen_dirs:  # a link loop, or a second way into one directory
                    dirnames[:] = []
                    continue
                seen_dirs.add((st.st_dev, st.st_ino))
            rel_dir = Path(dirpath).relative_to(root)
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not dropped((rel_dir / d).as_posix()))
            if not follow_symlinks:
                # os.walk does not enter a symlinked directory: name it, unless its files are reached anyway.
                for d in [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                    link = Path(dirpath) / d
                    real = os.path.realpath(link)
                    if not _inside(real, roots):
                        skipped.append(Source(link, prefix / rel_dir / d,
                                              f"{show(link)}: symlink to the directory {show(real)}, outside the "
                                              "input tree; not followed without --follow-symlinks"))
            for name in sorted(filenames):
                rel = rel_dir / name
                if (Path(name).suffix.lower() not in SOURCE_SUFFIXES
                        and not (build_files and build_file_kind(name))) or dropped(rel.as_posix()):
                    continue
                add(Path(dirpath) / name, prefix / rel)
    chosen = list(found.values()) + (skipped if report_skipped else [])
    return sorted(chosen, key=lambda s: s.rel.as_posix())


def tree_rest(paths: list[Path], sources: list[Source], follow_symlinks: bool = False) -> list[Source]:
    """Every other file under the input directories (headers without a known extension, build files left alone,
    data, scripts, excluded folders), with the name it takes under an output directory: what `convert -o` copies as
    it is, so the output tree builds as the input did. `.git`-style folders are not; a symlink is kept a symlink
    (``skip`` says why one is not: a FIFO or device)."""
    taken = {s.rel.as_posix() for s in sources}
    several = len(paths) > 1
    rest: list[Source] = []
    for root in paths:
        if not root.is_dir():
            continue
        prefix = Path(os.path.basename(os.path.realpath(root))) if several else Path()
        for dirpath, dirnames, filenames in os.walk(root, followlinks=follow_symlinks):
            rel_dir = Path(dirpath).relative_to(root)
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            names = list(filenames)
            if not follow_symlinks:  # a symlinked folder is not entered: it is copied as the link it is
                names += [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
            for name in sorted(names):
                rel = prefix / rel_dir / name
                if rel.as_posix() in taken:
                    continue
                path = Path(dirpath) / name
                skip = None
                try:
                    st = path.lstat()
                    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                        skip = f"{show(path)}: {_kind(st.st_mode)}; not copied"
                except OSError as exc:
                    skip = f"{show(path)}: cannot read ({exc.strerror}); not copied"
                rest.append(Source(path, rel, skip))
    return sorted(rest, key=lambda s: s.rel.as_posix())


def copy_as_is(source: Source, target: Path, within: Path) -> None:
    """Copy one file of the tree to ``target`` unconverted, atomically, with its permission bits (a symlink as a
    symlink with the same target). Raises InputError (one line) where it cannot, never writing outside
    ``within``."""
    root = os.path.realpath(within)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not _inside(os.path.realpath(target.parent), [root]):
        raise InputError(f"{show(target)}: would be written outside the output directory (through a symlink); "
                         "not written")
    with critical():
        if source.path.is_symlink():
            link = os.readlink(source.path)
            tmp = target.parent / f".{target.name[:120]}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}"
            os.symlink(link, tmp)
            os.replace(tmp, target)
            return
        import shutil

        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:120]}.{os.getpid()}.",
                                   suffix=TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as out, open(source.path, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
            os.chmod(tmp, stat.S_IMODE(os.stat(source.path).st_mode))
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def binary_reason(data: bytes) -> str | None:
    """Why ``data`` is not text hipport can convert, or None. Binary: a NUL byte in the first 8 KB and more than
    10 % control bytes there (a stray NUL in a comment is still text). UTF-16/32 byte-order marks are named."""
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        return "UTF-32 text; hipport reads 8-bit text only (UTF-8, Latin-1...); skipped"
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "UTF-16 text; hipport reads 8-bit text only (UTF-8, Latin-1...); skipped"
    sample = data[:BINARY_SAMPLE]
    if b"\x00" not in sample:
        return None
    controls = sum(1 for b in sample if b < 0x20 and b not in _TEXT_CONTROLS) + sample.count(0x7F)
    if controls > BINARY_SHARE * len(sample):
        return "looks binary; skipped"
    return None


def read_source(path: Path) -> tuple[bytes, os.stat_result]:
    """The file's bytes and the stat taken when it was opened. A FIFO or device under a source name is refused
    (InputError) without blocking on it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{show(path)}: {_kind(st.st_mode)}, not a source file; skipped")
        with open(fd, "rb", closefd=False) as fh:
            return fh.read(), st
    finally:
        os.close(fd)


def read_error(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return f"{show(path)}: vanished before hipport could read it; skipped"
    if exc.errno == errno.ELOOP:
        return f"{show(path)}: symlink loop; skipped"
    return f"{show(path)}: cannot read ({exc.strerror}); check permissions"


def load_source(source: Source) -> tuple[bytes, os.stat_result]:
    """The bytes of a source to convert or audit, and the stat taken when it was opened: the one way both commands
    read a file. Whatever makes it unusable (skipped when collected, unreadable, a FIFO or device, binary,
    UTF-16/32) raises InputError with the one-line message naming it."""
    if source.skip is not None:
        raise InputError(source.skip)
    try:
        data, st = read_source(source.path)
    except OSError as exc:
        raise InputError(read_error(source.path, exc)) from None
    reason = binary_reason(data)
    if reason is not None:
        raise InputError(f"{show(source.path)}: {reason}")
    return data, st


def is_read_only(st: os.stat_result) -> bool:
    """The owner's write permission is off: somebody marked the file as not to be edited."""
    return not st.st_mode & stat.S_IWUSR


# -- where outputs go -----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Output:
    path: Path  # where it would be written
    what: str   # what it is, for a message: "the output of src/k.cu", "the json report"


def output_path(output_dir: Path, source: Source) -> Path:
    """Where a source's conversion goes under an output directory."""
    return output_dir / source.rel


def _fold(path: str) -> str:
    """A path as a case-insensitive (and normalisation-insensitive, as on macOS) file system sees it."""
    return unicodedata.normalize("NFC", path).casefold()


def check_outputs(outputs: Iterable[Output], inputs: Iterable[os.PathLike | str],
                  trees: Iterable[os.PathLike | str] = ()) -> None:
    """The check made before anything is written: InputError (one line, naming both sides) when an output would
    land on an input (the link itself or what it points to), inside one of the input ``trees``, or where another
    output of the same run goes. Directories are resolved first; paths that differ only in letter case or Unicode
    normalisation count as one, since they are one file on case-insensitive file systems."""
    taken: dict[str, tuple[str, str]] = {}  # folded path -> (path as written, input as given)
    for path in inputs:
        for where in dict.fromkeys((_where(path), os.path.realpath(path))):
            taken.setdefault(_fold(where), (where, show(path)))
    # Each input tree by its folded path without a trailing separator, the first given where two fold alike: an
    # output is inside one when a folder above it is one (a look-up per folder, not a test per tree).
    tree_keys: dict[str, tuple[int, str]] = {}
    for order, t in enumerate(trees):
        tree_keys.setdefault(_fold(os.path.realpath(t)).rstrip(os.sep), (order, show(t)))
    planned: dict[str, tuple[str, Output]] = {}
    for out in outputs:
        where = _where(out.path)
        key = _fold(where)
        if key in taken:
            exact, name = taken[key]
            case = "" if exact == where else " where letter case is ignored"
            raise InputError(f"{show(out.path)}: {out.what} would overwrite the input {name}{case}; nothing written")
        inside = []
        k = key.find(os.sep)
        while k != -1:
            if key[:k] in tree_keys:
                inside.append(tree_keys[key[:k]])
            k = key.find(os.sep, k + 1)
        if inside:
            raise InputError(f"{show(out.path)}: {out.what} would be written inside the input tree {min(inside)[1]}; "
                             "nothing written")
        if key in planned:
            exact, first = planned[key]
            case = "" if exact == where else \
                f" where letter case is ignored (as {show(first.path)} and {show(out.path)})"
            raise InputError(f"{show(out.path)}: {first.what} and {out.what} would both be written here{case}; "
                             "nothing written")
        planned[key] = (where, out)


def plan_output_dir(output_dir: Path, sources: list[Source], inputs: Iterable[Path]) -> None:
    """Check an output directory for a conversion run before anything is written (InputError when it cannot be
    used): it is not a file nor inside an input directory, and no output lands on an input, inside an input
    tree, or on another output. ``sources``: the converted files and those copied as they are (`tree_rest`)."""
    inputs = list(inputs)
    if output_dir.exists() and not output_dir.is_dir():
        raise InputError(f"{output_dir}: --output-dir must be a directory, and this is a file")
    out = output_dir.resolve()
    for p in inputs:
        root = p.resolve()
        if root.is_dir() and (out == root or root in out.parents):
            raise InputError(f"{output_dir}: --output-dir is inside the input tree {p}; choose a directory "
                             "outside it")
    check_outputs((Output(output_path(output_dir, s), f"the output of {show(s.path)}") for s in sources
                   if s.skip is None),
                  [*(s.path for s in sources), *(p for p in inputs if not p.is_dir())],
                  [p for p in inputs if p.is_dir()])


# -- signals --------------------------------------------------------------------------------------------------

class Interrupted(BaseException):
    """SIGINT or SIGTERM stopped a run, never in the middle of a write (one under way is completed first). A
    BaseException, so that neither ``except Exception`` nor click's own Ctrl-C handling takes it."""

    def __init__(self, signum: int, results: list | None = None) -> None:
        super().__init__(signum)
        self.signum = signum
        self.results = results or []

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _Hold:
    depth = 0
    pending: int | None = None
    action: Callable[[int], None] | None = None
    swallowed: int | None = None  # a signal whose Interrupted was raised where it could not propagate
    raised = 0  # how many Interrupted the handler has raised: a count, so a caller can tell one happened since
    last: int | None = None


def interrupt(signum: int, frame=None) -> None:
    """The signal handler for SIGINT/SIGTERM in hipport's main thread: raise Interrupted, or, while a write is under
    way, once it is done (see :func:`critical`; the action is set by :func:`on_deferred_signal`)."""
    if not defer_signal(signum):
        _Hold.raised += 1
        _Hold.last = signum
        raise Interrupted(signum)


def interrupts_raised() -> int:
    """A count of the Interrupted raised so far; compare two readings to learn whether one was raised between."""
    return _Hold.raised


def reraise_if_interrupted_since(count: int) -> None:
    """Raise Interrupted when a signal was raised since ``count`` was read. ctypes turns an exception raised
    while it converts arguments (a signal landing inside a libclang call) into ``ArgumentError``, a plain
    Exception that an ``except Exception`` would report as a bug and go on."""
    if _Hold.raised != count and _Hold.last is not None:
        raise Interrupted(_Hold.last)


def _unraisable(hook):
    def report(unraisable) -> None:
        # An exception raised inside a ctypes callback (libclang's AST visitor) is only reported, never propagated:
        # remember the signal for raise_if_interrupted instead of printing it.
        if isinstance(unraisable.exc_value, Interrupted):
            _Hold.swallowed = unraisable.exc_value.signum
            return
        hook(unraisable)

    report.hipport = True
    return report


def raise_if_interrupted() -> None:
    """Raise the Interrupted a signal raised where it could not propagate (in a ctypes callback). Called between
    files."""
    if _Hold.swallowed is not None:
        signum, _Hold.swallowed = _Hold.swallowed, None
        raise Interrupted(signum)


@contextlib.contextmanager
def catching_swallowed_interrupts() -> Iterator[None]:
    """Within: an Interrupted raised in a ctypes callback is remembered for :func:`raise_if_interrupted`."""
    old = sys.unraisablehook
    if getattr(old, "hipport", False):
        yield
        return
    _Hold.swallowed = None
    sys.unraisablehook = _unraisable(old)
    try:
        yield
    finally:
        sys.unraisablehook = old
        _Hold.swallowed = None


def defer_signal(signum: int) -> bool:
    """Called by a signal handler: True when a write is in progress, in which case the signal is acted on
    (through the action given to :func:`on_deferred_signal`) as soon as the write is complete."""
    if _Hold.depth:
        _Hold.pending = signum
        return True
    return False


def on_deferred_signal(action: Callable[[int], None] | None) -> Callable[[int], None] | None:
    """Set what a signal held during a write does once the write is complete; returns the previous action."""
    old, _Hold.action = _Hold.action, action
    return old


@contextlib.contextmanager
def critical() -> Iterator[None]:
    _Hold.depth += 1
    try:
        yield
    finally:
        _Hold.depth -= 1
    if _Hold.depth == 0 and _Hold.pending is not None:
        signum, _Hold.pending = _Hold.pending, None
        if _Hold.action is not None:
            _Hold.action(signum)


# -- writing --------------------------------------------------------------------------------------------------

def _same_file_as_read(path: Path, expect: os.stat_result, expect_data: bytes | None) -> str | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return f"{show(path)}: vanished while hipport was working; not written"
    if (st.st_mtime_ns, st.st_size, st.st_ino) != (expect.st_mtime_ns, expect.st_size, expect.st_ino):
        return f"{show(path)}: changed on disk while hipport was working; not overwritten, run again"
    if expect_data is not None:
        try:
            now = path.read_bytes()
        except OSError:
            now = None
        if now != expect_data:
            return f"{show(path)}: changed on disk while hipport was working; not overwritten, run again"
    return None


def new_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0666 less the umask (mkstemp's 0600 is for temporary files)."""
    if _Umask.value is None:
        # The umask can only be read by setting it; once per process, before any worker thread writes.
        _Umask.value = os.umask(0o022)
        os.umask(_Umask.value)
    return 0o666 & ~_Umask.value


class _Umask:
    value: int | None = None


def write_atomic(path: Path, data: bytes, expect: os.stat_result | None = None, *,
                 expect_data: bytes | None = None, within: Path | None = None, mode: int | None = None,
                 batch: AtomicBatch | None = None) -> None:
    """Write through a temporary file in the same directory and rename it over the target, so a crash or
    Ctrl-C leaves the old file or the new one, never a mix. With ``expect`` (and ``expect_data``), refuse to
    overwrite a file that changed on disk since it was read. With ``within``, refuse to write anywhere but
    inside that directory (symlinks in the way are not written through). The file gets ``mode`` when given (a
    converted copy keeps its source's), else the mode of the file it replaces, else what the umask allows. With
    ``batch``, the temporary file is written but made durable and renamed only by ``batch.commit()``."""
    if within is not None:
        root = os.path.realpath(within)
        parent = os.path.realpath(path.parent)
        if not _inside(parent, [root]):
            raise InputError(f"{show(path)}: would be written outside the output directory (through a symlink); "
                             "not written")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not _inside(os.path.realpath(path.parent), [root]):
            raise InputError(f"{show(path)}: would be written outside the output directory (through a symlink); "
                             "not written")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    with critical():
        st = None
        try:
            st = path.stat()
        except FileNotFoundError:
            pass
        if expect is not None:
            problem = _same_file_as_read(path, expect, expect_data)
            if problem is not None:
                raise InputError(problem)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        prefix = f".{path.name[:120]}.{os.getpid()}."
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                if batch is None:
                    os.fsync(fh.fileno())
            os.chmod(tmp, mode if mode is not None else stat.S_IMODE(st.st_mode) if st is not None
                     else new_file_mode())
            if st is not None:
                if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(OSError):
                        os.chown(tmp, st.st_uid, st.st_gid)
            if batch is None:
                os.replace(tmp, path)
            else:
                batch.pending.append((tmp, path, expect, expect_data))
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


class AtomicBatch:
    """Writes whose renames wait for one flush to disk: a file system syncs a batch of temporary files in about
    the time one ``fsync`` takes (4 ms each on ext4 here, most of a run's wall time for a tree of small files).
    The guarantee is write_atomic's: a temporary file is renamed over its target only once its data is on disk,
    so a crash at any point leaves every file wholly old or wholly new (and stale temporary files, removed by
    the next run)."""

    def __init__(self) -> None:
        self.pending: list[tuple[str, Path, os.stat_result | None, bytes | None]] = []

    def commit(self) -> dict[Path, str]:
        """Flush the temporary files, rename each over its target (checking again that the target did not change
        since it was read) and flush their folders. Returns the one-line error of each target not written."""
        pending, self.pending = self.pending, []
        errors: dict[Path, str] = {}
        if not pending:
            return errors
        with critical():
            try:
                _flush([tmp for tmp, *_ in pending])
            except OSError as exc:
                for tmp, path, *_ in pending:
                    _unlink_quietly(tmp)
                    errors[path] = f"{show(path)}: cannot write ({exc.strerror}); file left as it was"
                return errors
            folders = set()
            for tmp, path, expect, expect_data in pending:
                problem = _same_file_as_read(path, expect, expect_data) if expect is not None else None
                if problem is None:
                    try:
                        os.replace(tmp, path)
                        folders.add(path.parent)
                        continue
                    except OSError as exc:
                        problem = f"{show(path)}: cannot write ({exc.strerror}); file left as it was"
                _unlink_quietly(tmp)
                errors[path] = problem
            for folder in folders:  # the renames themselves, so a crash after the run cannot undo them
                with contextlib.suppress(OSError):
                    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
        return errors

    def discard(self) -> None:
        pending, self.pending = self.pending, []
        for tmp, *_ in pending:
            _unlink_quietly(tmp)


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _flush(paths: list[str]) -> None:
    """Put the data of ``paths`` on disk: one ``syncfs`` per file system where Linux has it, else an ``fsync``
    each."""
    syncfs = _syncfs()
    done: set[int] = set()
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            dev = os.fstat(fd).st_dev
            if syncfs is not None:
                if dev in done:
                    continue
                if syncfs(fd) == 0:
                    done.add(dev)
                    continue
            os.fsync(fd)
        finally:
            os.close(fd)


def _syncfs():
    if _Syncfs.fn is None:
        _Syncfs.fn = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                import ctypes
                _Syncfs.fn = ctypes.CDLL(None, use_errno=True).syncfs
    return _Syncfs.fn or None


class _Syncfs:
    fn = None


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(directories: Iterable[Path]) -> list[Path]:
    """Delete hipport temporary files left in ``directories`` by runs that were killed (their process is gone).
    Returns what was removed. Temporary files of a run still going are left alone."""
    removed = []
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            m = _TEMP_NAME.match(name) if name.endswith(TEMP_SUFFIX) else None
            if m is None or _pid_alive(int(m.group(1))):
                continue
            path = Path(directory) / name
            with contextlib.suppress(OSError):
                if path.is_file() and not path.is_symlink():
                    path.unlink()
                    removed.append(path)
    return removed
