"""Run the engine over many files and put the results where the chosen mode says. No terminal output here."""

from __future__ import annotations

import difflib
import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from hipport.engine import ConvertOptions, convert_source
from hipport.files import InputError, Source, read_source, write_atomic
from hipport.model import FileResult
from hipport.rules import RuleSet
from hipport.scan import LexError


def convert_one(source: Source, rules: RuleSet, options: ConvertOptions) -> tuple[FileResult, object]:
    """Convert one file; a file that cannot be read or lexed comes back with ``error`` set, never raises."""
    path = str(source.path)
    try:
        src, st = read_source(source.path)
    except OSError as exc:
        return FileResult(path, b"", None, error=f"{path}: cannot read ({exc.strerror}); check permissions"), None
    try:
        return convert_source(src, rules, options, path), st
    except LexError as exc:
        return FileResult(path, src, None, error=f"{path}: {exc}; file left unchanged"), st


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
             output_dir: Path | None) -> FileResult:
    result, st = convert_one(source, rules, options)
    if result.error is None and write != "none":
        try:
            if write == "inplace" and result.changed:
                write_atomic(source.path, result.after, expect=st)
            elif write == "outdir":
                write_atomic(output_dir / source.rel, result.after)
        except InputError as exc:
            result.error = str(exc)
        except OSError as exc:
            target = source.path if write == "inplace" else output_dir / source.rel
            result.error = f"{target}: cannot write ({exc.strerror}); file left as it was"
    return result


_worker_state: tuple | None = None


def _init_worker(state: tuple) -> None:
    global _worker_state
    _worker_state = state


def _work(source: Source) -> FileResult:
    rules, options, write, output_dir = _worker_state
    return _process(source, rules, options, write, output_dir)


def convert_tree(
    sources: Iterable[Source],
    rules: RuleSet,
    options: ConvertOptions,
    *,
    write: str,  # "inplace" | "outdir" | "none"
    output_dir: Path | None = None,
    on_result: Callable[[Source, FileResult], None] | None = None,
    jobs: int = 1,
) -> list[FileResult]:
    """Convert every source; results come back in input order whatever ``jobs`` is, so output is identical."""
    sources = list(sources)
    results: list[FileResult] = []
    if jobs > 1 and len(sources) >= PARALLEL_MIN_FILES:
        # fork shares the loaded rule index with the workers instead of pickling it to each.
        context = multiprocessing.get_context("fork")
        chunk = max(1, min(32, len(sources) // (jobs * 8)))
        with ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker,
                                 initargs=((rules, options, write, output_dir),)) as pool:
            for source, result in zip(sources, pool.map(_work, sources, chunksize=chunk)):
                results.append(result)
                if on_result is not None:
                    on_result(source, result)
        return results
    for source in sources:
        result = _process(source, rules, options, write, output_dir)
        results.append(result)
        if on_result is not None:
            on_result(source, result)
    return results
