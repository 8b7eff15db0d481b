"""Run the engine over many files and put the results where the chosen mode says. No terminal output here."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
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


def convert_tree(
    sources: Iterable[Source],
    rules: RuleSet,
    options: ConvertOptions,
    *,
    write: str,  # "inplace" | "outdir" | "none"
    output_dir: Path | None = None,
    on_result: Callable[[Source, FileResult], None] | None = None,
) -> list[FileResult]:
    results = []
    for source in sources:
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
        results.append(result)
        if on_result is not None:
            on_result(source, result)
    return results
