"""Run the engine over many files and put the results where the chosen mode says. No terminal output here."""

from __future__ import annotations

import contextlib
import difflib
import errno
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from hipport.engine import ConvertOptions, convert_source
from hipport.files import (InputError, Source, binary_reason, critical, defer_signal, is_read_only,
                           on_deferred_signal, read_source, remove_stale_temps, show, write_atomic)
from hipport.model import FileResult
from hipport.rules import RuleSet
from hipport.scan import LexError


BOM = b"\xef\xbb\xbf"


class Interrupted(BaseException):
    """SIGINT or SIGTERM stopped a run between two writes (a write under way was completed first)."""

    def __init__(self, signum: int, results: list[FileResult] | None = None) -> None:
        super().__init__(signum)
        self.signum = signum
        self.results = results or []

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _read_error(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return f"{show(path)}: vanished before hipport could read it; skipped"
    if exc.errno == errno.ELOOP:
        return f"{show(path)}: symlink loop; skipped"
    return f"{show(path)}: cannot read ({exc.strerror}); check permissions"


def convert_one(source: Source, rules: RuleSet, options: ConvertOptions) -> tuple[FileResult, object]:
    """Convert one file; a file that cannot be read, is binary or cannot be lexed comes back with ``error`` set
    (a one-line message naming it), never raises."""
    path = str(source.path)
    if source.skip is not None:
        return FileResult(path, b"", None, error=source.skip), None
    try:
        src, st = read_source(source.path)
    except InputError as exc:
        return FileResult(path, b"", None, error=str(exc)), None
    except OSError as exc:
        return FileResult(path, b"", None, error=_read_error(source.path, exc)), None
    reason = binary_reason(src)
    if reason is not None:
        return FileResult(path, src, None, error=f"{show(path)}: {reason}"), st
    # A UTF-8 byte-order mark is encoding, not text: the engine sees what follows it, the mark is put back.
    bom = BOM if src.startswith(BOM) else b""
    try:
        result = convert_source(src[len(bom):], rules, options, path)
    except LexError as exc:
        return FileResult(path, src, None, error=f"{show(path)}: {exc}; file left unchanged"), st
    except Exception as exc:  # an engine bug must cost one file, not the run
        return FileResult(path, src, None, error=f"{show(path)}: internal error ({type(exc).__name__}: "
                                                 f"{str(exc)[:200]}); file left unchanged, please report it"), st
    if bom:
        result.before = src
        if result.after is not None:
            result.after = bom + result.after
    return result, st


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


# Below this many files a worker pool costs more to start than it saves.
PARALLEL_MIN_FILES = 16


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _process(source: Source, rules: RuleSet, options: ConvertOptions, write: str,
             output_dir: Path | None, force: bool = False, stop=None) -> FileResult | None:
    result, st = convert_one(source, rules, options)
    if result.error is not None or write == "none":
        return result
    if stop is not None and stop.is_set():
        return None  # the run was interrupted while this file was being converted: leave it as it is
    target = source.path
    try:
        if write == "inplace" and result.changed:
            if is_read_only(st) and not force:
                result.error = (f"{show(source.path)}: read-only; not converted "
                                "(--force replaces it, keeping it read-only)")
                return result
            # Through a symlink (in the tree, or followed on request) the file it points to is rewritten; the
            # link stays a link.
            target = Path(os.path.realpath(source.path))
            write_atomic(target, result.after, expect=st, expect_data=result.before)
        elif write == "outdir":
            target = output_dir / source.rel
            if os.path.realpath(target) == os.path.realpath(source.path):
                result.error = f"{show(target)}: the output would overwrite its own source; not written"
                return result
            write_atomic(target, result.after, within=output_dir)
    except InputError as exc:
        result.error = str(exc)
    except OSError as exc:
        result.error = f"{show(target)}: cannot write ({exc.strerror}); file left as it was"
    return result


_worker_state: tuple | None = None
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _init_worker(state: tuple) -> None:
    """Workers ignore SIGINT and SIGTERM, even sent to the whole process group: the main process handles them and
    sets the stop event, which a worker checks before each file and before each write. A worker is never stopped
    part-way, so neither a file nor the pool's queues are ever left half-written."""
    global _worker_state
    _worker_state = state
    for s in _SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)


def _work(source: Source) -> FileResult | None:
    rules, options, write, output_dir, force, stop = _worker_state
    if stop.is_set():
        return None
    return _process(source, rules, options, write, output_dir, force, stop)


def _raise_interrupted(signum: int) -> None:
    raise Interrupted(signum)


def _main_signal(signum, frame) -> None:
    if not defer_signal(signum):
        raise Interrupted(signum)


@contextlib.contextmanager
def signals_handled() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C: both raise Interrupted in the main thread, never in the middle of a write
    (one under way is completed first). Nestable; a no-op outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in _SIGNALS}
    old_action = on_deferred_signal(_raise_interrupted)
    for s in _SIGNALS:
        signal.signal(s, _main_signal)
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        on_deferred_signal(old_action)


def _stale_temp_dirs(sources: list[Source], write: str, output_dir: Path | None) -> set[Path]:
    if write == "inplace":
        return {Path(os.path.realpath(s.path)).parent for s in sources if s.skip is None}
    if write == "outdir" and output_dir is not None:
        return {(output_dir / s.rel).parent for s in sources if s.skip is None}
    return set()


def convert_tree(
    sources: Iterable[Source],
    rules: RuleSet,
    options: ConvertOptions,
    *,
    write: str,  # "inplace" | "outdir" | "none"
    output_dir: Path | None = None,
    on_result: Callable[[Source, FileResult], None] | None = None,
    jobs: int = 1,
    force: bool = False,
) -> list[FileResult]:
    """Convert every source; results come back in input order whatever ``jobs`` is, so output is identical.

    ``force`` rewrites read-only files in place too (they stay read-only). SIGINT and SIGTERM raise
    :class:`Interrupted` (carrying the results so far) once no write is under way: every file is wholly old or
    wholly new. Temporary files of killed earlier runs are removed from the directories written to."""
    sources = list(sources)
    results: list[FileResult] = []
    with signals_handled():
        try:
            remove_stale_temps(_stale_temp_dirs(sources, write, output_dir))
            if jobs > 1 and len(sources) >= PARALLEL_MIN_FILES:
                _convert_parallel(sources, rules, options, write, output_dir, on_result, jobs, force, results)
                return results
            for source in sources:
                result = _process(source, rules, options, write, output_dir, force)
                results.append(result)
                if on_result is not None:
                    on_result(source, result)
        except Interrupted as exc:
            exc.results = results
            raise
    return results


def _convert_parallel(sources, rules, options, write, output_dir, on_result, jobs, force, results) -> None:
    # fork shares the loaded rule index with the workers instead of pickling it to each.
    context = multiprocessing.get_context("fork")
    chunk = max(1, min(32, len(sources) // (jobs * 8)))
    stop = context.Event()
    # Workers and the pool's threads start with SIGINT/SIGTERM blocked (a worker unblocks them once it ignores
    # them): signals go to this thread only, and one arriving now is held until the pool exists.
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        pool = context.Pool(jobs, initializer=_init_worker,
                            initargs=((rules, options, write, output_dir, force, stop),))
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    try:
        for source, result in zip(sources, pool.imap(_work, sources, chunksize=chunk)):
            results.append(result)
            if on_result is not None:
                on_result(source, result)
    except BaseException:
        # Interrupted: workers finish the write they are in, skip the rest, and end; a second signal waits.
        stop.set()
        with critical():
            pool.close()
            pool.join()
        raise
    pool.close()
    pool.join()
