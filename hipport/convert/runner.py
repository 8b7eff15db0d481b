"""Run the engine over many files and put the results where the chosen mode says. No terminal output here."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from hipport.cache import ResultCache
from hipport.convert.context import ConvertOptions
from hipport.convert.engine import convert_source, lexed_input
from hipport.convert.hip_input import is_hip_input
from hipport.files import (
    AtomicBatch,
    InputError,
    Interrupted,
    Source,
    TARGETED_BUILD_KINDS,
    catching_swallowed_interrupts,
    critical,
    interrupt,
    is_read_only,
    load_source,
    on_deferred_signal,
    output_path,
    interrupts_raised,
    real_file_path,
    raise_if_interrupted,
    reraise_if_interrupted_since,
    remove_stale_temps,
    show,
    write_atomic,
)
from hipport.model import FileResult
from hipport.rules import RuleSet
from hipport.scan import LexError, lexed_ahead
from hipport.workers import PARALLEL_MIN_FILES

# A step run on each converted result before it is cached or written; it must be picklable (worker processes).
PostStep = Callable[[FileResult], None]




Loaded = tuple  # (bytes, os.stat_result, what the result cache holds for them or None), or the InputError raised


def load(source: Source, cache: ResultCache | None) -> Loaded:
    try:
        src, st = load_source(source)
    except InputError as exc:
        return exc
    # A build file's entry depends on its targets, which may not be known yet (`LaterTargets`): looked up later.
    return src, st, cache.get(_cache_key(source, src)) if cache is not None and source.build is None else None


def convert_one(source: Source, rules: RuleSet, options: ConvertOptions,
                cache: ResultCache | None = None, post: PostStep | None = None,
                loaded: Loaded | InputError | None = None) -> tuple[FileResult, object]:
    """Convert one file; a file that cannot be read, is binary or cannot be lexed comes back with ``error`` set
    (a one-line message naming it), never raises. ``post``, when given, works on the converted result before it
    is cached or written (the audit's suggested patches, wired in by the command line). ``loaded``: what `load`
    gave for it, when it was read already."""
    path = str(source.path)
    if loaded is None:
        loaded = load(source, cache)
    if isinstance(loaded, InputError):
        return FileResult(path, b"", None, error=str(loaded)), None
    src, st, cached = loaded
    if source.build is not None and cache is not None:
        cached = cache.get(_cache_key(source, src, options.offload_arch))
    if cached is not None:
        findings, unknown, defines, *platform = cached
        result = FileResult(path, src, src, findings=findings, unknown=unknown, defines=defines)
        if len(platform) == 3:  # why it builds for AMD already / is the other platform's (summary), served
            result.hip_path, result.other_platform, result.served = platform
        if source.build is None:
            result.hip = is_hip_input(result, src, rules)
        return result, st
    signals_before = interrupts_raised()
    try:
        if source.build is not None:  # a Makefile or CMake file: its own rules, no audit step
            from hipport.convert.build import convert_build_text  # here: a run of sources only loads none of it

            result = convert_build_text(src, source.build, options, path)[0]
        else:
            result = convert_source(src, rules, options, path)
            result.hip = is_hip_input(result, src, rules)
            if post is not None:
                post(result)
    except LexError as exc:
        return FileResult(path, src, None, error=f"{show(path)}: {exc}; file left unchanged"), st
    except Exception as exc:  # an engine bug must cost one file, not the run
        reraise_if_interrupted_since(signals_before)  # ... but a Ctrl-C that ctypes disguised stops it
        return FileResult(path, src, None, error=f"{show(path)}: internal error ({type(exc).__name__}: "
                                                 f"{str(exc)[:200]}); file left unchanged, please report it"), st
    if cache is not None and not result.changed:
        # Only files with nothing to change are remembered: a changed file is written now and is one next time.
        cache.put(_cache_key(source, src, options.offload_arch if source.build else ()),
                  (result.findings, result.unknown, result.defines, result.hip_path, result.other_platform,
                   result.served))
    return result, st


def _cache_key(source: Source, src: bytes, targets: tuple = ()) -> bytes:
    build = f"build:{source.build}:{','.join(targets)}\0".encode() if source.build else b""
    return os.fsencode(str(source.path)) + b"\0" + build + src


# Sources read ahead of their conversion, so that they are lexed together (`scan.lexed_ahead`), up to this many
# bytes at a time: a batch of large files is read one at a time as before.
READ_AHEAD_BYTES = 1 << 20


def read_ahead(batch: list[Source], rules: RuleSet, cache: ResultCache | None) -> tuple[list, list[bytes]]:
    """What `load` gives for the first sources of ``batch`` (up to READ_AHEAD_BYTES; None for the rest), and the
    bytes among them the engine will lex: those not in the result cache."""
    loaded: list = []
    ahead: list[bytes] = []
    size = 0
    for source in batch:
        if size >= READ_AHEAD_BYTES:
            loaded.append(None)
            continue
        item = load(source, cache)
        loaded.append(item)
        if isinstance(item, InputError) or source.build is not None:
            continue
        size += len(item[0])
        if item[2] is not None:
            continue
        text = lexed_input(item[0], rules, str(source.path))
        if text is not None:
            ahead.append(text)
    return loaded, ahead


class LaterTargets:
    """The AMD targets for build files, while the installed hipcc is asked for them in a thread of the main process
    (half a second of waiting on hipcc, `build/targets.py`): sources are converted meanwhile, and whoever meets a
    build file waits for the answer. Made before the worker processes are forked, so they share its answer, but
    asked (`start`) only once they exist: workers forked while the thread starts hipcc would hold the ends of its
    pipes, and the question would wait for them while they wait for its answer."""

    _SIZE = 4096

    def __init__(self, ask: Callable[[], object], fallback: tuple[str, ...]) -> None:
        import multiprocessing

        context = multiprocessing.get_context("fork")
        self._ready = context.Event()
        self._shared = context.Array("c", self._SIZE, lock=False)
        self._fallback = fallback
        self._answer: object = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._ask, args=(ask,), name="hipport-targets", daemon=True)
        self._started = False

    def start(self) -> None:
        """Ask now (main process; once, however often it is called)."""
        if not self._started:
            self._started = True
            self._thread.start()

    def _ask(self, ask: Callable[[], object]) -> None:
        try:
            self._answer = ask()
            text = ",".join(self._answer.targets).encode()
            if len(text) >= self._SIZE:
                raise ValueError(f"{len(text)} bytes of target names")
        except BaseException as exc:  # the main thread raises it in `answer`; the build files get the fallback
            self._error = exc
            text = ",".join(self._fallback).encode()
        self._shared.value = text
        self._ready.set()

    def wait(self, stop=None) -> tuple[str, ...] | None:
        """The targets; None when ``stop`` was set first."""
        while not self._ready.wait(0.1):
            if stop is not None and stop.is_set():
                return None
            raise_if_interrupted()
        return tuple(self._shared.value.decode().split(","))

    def answer(self) -> object:
        """What ``ask`` returned (main process only)."""
        self.start()  # a run that ended before converting anything never asked
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._answer


def _process(source: Source, rules: RuleSet, options: ConvertOptions, write: str,
             output_dir: Path | None, force: bool = False, stop=None, cache=None, post=None,
             batch: _Batch | None = None, loaded: Loaded | InputError | None = None,
             later: LaterTargets | None = None) -> FileResult | None:
    """Convert one source and write it; with ``batch``, the write is completed by ``batch.commit()``. A build
    file waits for ``later``'s targets, when given."""
    if later is not None and source.build in TARGETED_BUILD_KINDS:
        targets = later.wait(stop)
        if targets is None:
            return None  # the run was stopped while the targets were being asked for
        options = dataclasses.replace(options, offload_arch=targets)
    result, st = convert_one(source, rules, options, cache, post, loaded)
    if result.error is not None or write == "none":
        return result
    if stop is not None and stop.is_set():
        return None  # the run was interrupted while this file was being converted: leave it as it is
    target = source.path
    try:
        if write == "inplace" and result.changed:
            if is_read_only(st) and not force:
                result.error = (f"{show(source.path)}: read-only; not converted (--skip-read-only; without it the "
                                "file is replaced and stays read-only)")
                return result
            # Through a symlink (in the tree, or followed on request) the file it points to is rewritten; the
            # link stays a link.
            target = Path(real_file_path(source.path, batch.folders if batch is not None else {}))
            write_atomic(target, result.after, expect=st, expect_data=result.before,
                         batch=batch and batch.staged(target, result))
        elif write == "outdir":
            target = output_path(output_dir, source)
            if os.path.realpath(target) == os.path.realpath(source.path):
                result.error = f"{show(target)}: the output would overwrite its own source; not written"
                return result
            write_atomic(target, result.after, within=output_dir, mode=stat.S_IMODE(st.st_mode),
                         batch=batch and batch.staged(target, result))
    except InputError as exc:
        result.error = str(exc)
    except OSError as exc:
        result.error = f"{show(target)}: cannot write ({exc.strerror}); file left as it was"
    result.release_text()  # written: only the diff and stdout modes (write == "none") show the texts
    return result


# Files written per flush to disk when a run converts one file after another.
BATCH_FILES = 32


class _Batch(AtomicBatch):
    """An AtomicBatch that knows whose file each write is, so a rename that fails lands on its result."""

    def __init__(self) -> None:
        super().__init__()
        self.owners: dict[Path, FileResult] = {}
        self.folders: dict[str, str] = {}  # resolved folders of the files written in place (`real_file_path`)

    def staged(self, target: Path, result: FileResult) -> _Batch:
        self.owners[target] = result
        return self

    def keep_only(self, recorded: list[FileResult]) -> None:
        """Drop the writes of files whose result was never recorded (the run stopped inside them): they stay
        as they were, as the results say."""
        ids = {id(r) for r in recorded}
        drop = [entry for entry in self.pending if id(self.owners.get(entry[1])) not in ids]
        self.pending = [entry for entry in self.pending if id(self.owners.get(entry[1])) in ids]
        for tmp, *_ in drop:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def commit(self) -> dict[Path, str]:
        owners, self.owners = self.owners, {}
        errors = super().commit()
        for target, message in errors.items():
            owners[target].error = message
        return errors


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


def _work(batch: list[Source]) -> list[FileResult | None]:
    rules, options, write, output_dir, force, stop, cache, post, later = _worker_state
    written = _Batch()
    try:
        loaded, ahead = read_ahead(batch, rules, cache)
        with lexed_ahead(ahead):
            return [None if stop.is_set() else
                    _process(source, rules, options, write, output_dir, force, stop, cache, post, written, item, later)
                    for source, item in zip(batch, loaded)]
    finally:
        written.commit()


def _raise_interrupted(signum: int) -> None:
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
        signal.signal(s, interrupt)
    try:
        with catching_swallowed_interrupts():
            yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        on_deferred_signal(old_action)


def _stale_temp_dirs(sources: list[Source], write: str, output_dir: Path | None) -> set[Path]:
    if write == "inplace":
        folders: dict[str, str] = {}
        return {Path(real_file_path(s.path, folders)).parent for s in sources if s.skip is None}
    if write == "outdir" and output_dir is not None:
        return {output_path(output_dir, s).parent for s in sources if s.skip is None}
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
    cache: ResultCache | None = None,
    post: PostStep | None = None,
    later_targets: LaterTargets | None = None,
) -> list[FileResult]:
    """Convert every source; results come back in input order whatever ``jobs`` is, so output is identical.
    With ``later_targets``, build files are converted for the targets it gives once it has them (sources meanwhile).

    ``force`` rewrites read-only files in place too (they stay read-only). SIGINT and SIGTERM raise
    :class:`Interrupted` (carrying the results so far) once no write is under way: every file is wholly old or
    wholly new. Temporary files of killed earlier runs are removed from the directories written to."""
    sources = list(sources)
    results: list[FileResult] = []
    with signals_handled():
        try:
            remove_stale_temps(_stale_temp_dirs(sources, write, output_dir))
            if jobs > 1 and len(sources) >= PARALLEL_MIN_FILES:
                _convert_parallel(sources, rules, options, write, output_dir, on_result, jobs, force, results, cache,
                                  post, later_targets)
                return results
            if later_targets is not None:
                later_targets.start()
            for first in range(0, len(sources), BATCH_FILES):
                chunk = sources[first:first + BATCH_FILES]
                written = _Batch()
                try:
                    loaded, ahead = read_ahead(chunk, rules, cache)
                    with lexed_ahead(ahead):
                        for source, item in zip(chunk, loaded):
                            raise_if_interrupted()
                            results.append(_process(source, rules, options, write, output_dir, force, cache=cache,
                                                    post=post, batch=written, loaded=item, later=later_targets))
                except BaseException:
                    written.keep_only(results[first:])
                    raise
                finally:
                    # Interrupted too: what was converted is written, so the results so far tell the truth.
                    written.commit()
                if on_result is not None:
                    for source, result in zip(chunk, results[first:]):
                        on_result(source, result)
        except Interrupted as exc:
            exc.results = results
            raise
    return results


class _WorkerDied(Exception):
    pass


WORKER_DIED = ("{path}: not known to be converted: a worker process died (killed from outside, out of memory?); "
               "the file is wholly old or wholly new, run again (--jobs 1 shows which file)")


def _worker_pids(pool) -> set:
    return {p.pid for p in getattr(pool, "_pool", ())}


def _next_result(it, pool, pids: set, timeout: float = 0.5):
    """The next result, raising _WorkerDied when a worker vanished (its task would never come back)."""
    import multiprocessing

    while True:
        try:
            return it.next(timeout=timeout)
        except multiprocessing.TimeoutError:
            if _worker_pids(pool) != pids:
                raise _WorkerDied from None


def _abandon(pool, stop, it, pids: set, done: int, total: int) -> None:  # done, total: batches
    """Stop the pool without hanging. Workers see ``stop`` and skip what is left; normally every result then comes
    back and the pool is joined. If a worker died, its task never returns: once the others have gone quiet (any
    write they were in is finished; a write cut anyway leaves only a stale temporary file, never a half file),
    they are killed and the pool is left behind."""
    import multiprocessing.pool

    stop.set()
    lost = False
    try:
        quiet_since = None
        while done < total:
            try:
                it.next(timeout=0.2)
                done += 1
                quiet_since = None
            except StopIteration:
                break
            except multiprocessing.TimeoutError:
                if _worker_pids(pool) != pids:
                    lost = True
                    quiet_since = quiet_since or time.monotonic()
                    if time.monotonic() - quiet_since > 2.0:
                        break
            except Exception:  # a worker's own failure: stop waiting for the pool
                lost = True
                break
    finally:
        if not lost:
            pool.close()
            pool.join()
        else:
            # The pool would replace the killed workers and, at exit, wait for workers that ignore SIGTERM: stop
            # its upkeep, kill what it has, and drop its final clean-up (which would wait for the lost task).
            handler = getattr(pool, "_worker_handler", None)
            if handler is not None:
                handler._state = multiprocessing.pool.TERMINATE
                time.sleep(0.3)  # an upkeep pass under way ends
            for p in list(getattr(pool, "_pool", ())):
                with contextlib.suppress(OSError):
                    os.kill(p.pid, signal.SIGKILL)
                p.join(2.0)
            finalizer = getattr(pool, "_terminate", None)
            if finalizer is not None:
                finalizer.cancel()


def _convert_parallel(sources, rules, options, write, output_dir, on_result, jobs, force, results,
                      cache=None, post=None, later_targets=None) -> None:
    import multiprocessing  # here: a run of one process (the pre-commit hook's) needs none of it

    # fork shares the loaded rule index with the workers instead of pickling it to each.
    context = multiprocessing.get_context("fork")
    chunk = max(1, min(32, len(sources) // (jobs * 8)))
    stop = context.Event()
    # Workers and the pool's threads start with SIGINT/SIGTERM blocked (a worker unblocks them once it ignores
    # them): signals go to this thread only, and one arriving now is held until the pool exists.
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        pool = context.Pool(jobs, initializer=_init_worker,
                            initargs=((rules, options, write, output_dir, force, stop, cache, post, later_targets),))
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    if later_targets is not None:
        later_targets.start()  # now that every worker is forked (see `LaterTargets`)
    pids = _worker_pids(pool)
    # Batches as single tasks: imap then returns an iterator whose next() takes a timeout, so a worker that
    # vanished (its batch would never come back) is noticed instead of waited for.
    batches = [sources[i:i + chunk] for i in range(0, len(sources), chunk)]
    it = pool.imap(_work, batches)
    done = 0
    try:
        for batch in batches:
            batch_results = _next_result(it, pool, pids)
            done += 1
            for source, result in zip(batch, batch_results):
                results.append(result)
                if on_result is not None:
                    on_result(source, result)
    except _WorkerDied:
        with critical():
            _abandon(pool, stop, it, pids, done, len(batches))
        for source in sources[len(results):]:
            result = FileResult(str(source.path), b"", None, error=WORKER_DIED.format(path=show(source.path)))
            results.append(result)
            if on_result is not None:
                on_result(source, result)
        return
    except BaseException:
        # Interrupted: workers finish the write they are in, skip the rest, and end; a second signal waits.
        with critical():
            _abandon(pool, stop, it, pids, done, len(batches))
        raise
    pool.close()
    pool.join()
