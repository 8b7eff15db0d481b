"""The end-of-run summary for a terminal or a log, drawn with rich."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from hipport.files import one_line

if TYPE_CHECKING:  # type names only: a run without --verify loads none of it
    from hipport.convert.summary import Summary
    from hipport.convert.verify import CompileError, VerifyResult

_LIST_LIMIT = 20


def _print_names(console: Console, title: str, tallies: dict, limit: int) -> None:
    # Plain lines rather than a table: logs and CI output must keep full paths, never an ellipsis.
    console.print(f"{title}:")
    ordered = sorted(tallies.items(), key=lambda kv: (-kv[1].count, kv[0]))
    for name, t in ordered[:limit]:
        console.print(f"  {name} x{t.count}  first at {t.path}:{t.line}:{t.col}", soft_wrap=True, markup=False)
    if len(ordered) > limit:
        console.print(f"  ... and {len(ordered) - limit} more (-v lists them all)")


def render_summary(console: Console, summary: Summary, *, verbose: bool, action: str,
                   verify_copy: bool = False, target: str = "") -> None:
    """``target``: the release converted for and where that came from (`ROCm 5.2 (the installed HIP)`)."""
    files = f"{summary.files_scanned} file{'s' if summary.files_scanned != 1 else ''} scanned"
    console.print(f"[bold]hipport[/bold]: {files}, {summary.files_changed} {action}, "
                  f"{summary.converted_total} references converted"
                  + (f", [red]{summary.files_failed} failed[/red]" if summary.files_failed else ""))
    if target and summary.files_scanned:  # nothing scanned: nothing was converted for any release
        console.print(f"  targeting {escape(target)}", highlight=False, soft_wrap=True)
    if summary.conversions:
        console.print(f"  by category: {_categories(summary.conversions)}", highlight=False, soft_wrap=True)
    if summary.hip_files:  # HIP input is brought forward to the release, not ported: said apart from the CUDA
        files = f"{summary.hip_files} file{'s' if summary.hip_files != 1 else ''}"
        changed = f"{summary.hip_changed} {action}" + (
            f" ({_categories(summary.hip_conversions)})" if summary.hip_conversions else "")
        left = f"{summary.hip_findings} finding{'s' if summary.hip_findings != 1 else ''} left for a person"
        console.print(f"  HIP input, brought forward (not ported): {files}, {changed}, {left}", highlight=False,
                      soft_wrap=True, markup=False)
    if summary.hip_path_files or summary.other_platform_files:  # a project that keeps CUDA and builds for AMD too
        console.print(f"  {hip_path_line(summary)}", highlight=False, soft_wrap=True, markup=False)
    if summary.pytorch_builds:
        first = one_line(summary.pytorch_builds[0])
        more = f" (and {len(summary.pytorch_builds) - 1} more)" if len(summary.pytorch_builds) > 1 else ""
        console.print(f"  PyTorch extension: {first}{more} builds it with `torch.utils.cpp_extension`, which hipifies "
                      "its sources itself on ROCm; c10/ATen names are left for that build (pytorch-name)",
                      highlight=False, soft_wrap=True, markup=False)
    if summary.findings:
        order = {"error": 0, "warning": 1, "info": 2}
        items = sorted(summary.findings.items(), key=lambda kv: (order.get(kv[0][0], 3), kv[0][1]))
        text = ", ".join(f"{rule} {n} ({severity})" for (severity, rule), n in items)
        console.print(f"  findings: {text}" + ("" if verbose else " (-v lists them)"), highlight=False,
                      soft_wrap=True, markup=False)
    limit = 10**9 if verbose else _LIST_LIMIT
    if summary.unsupported:
        _print_names(console, "CUDA names with no HIP equivalent (left as they are)", summary.unsupported, limit)
    if summary.unknown:
        _print_names(console, "CUDA-looking names no rule knows (check them)", summary.unknown, limit)
    for error in summary.errors:
        console.print(f"[red]error[/red]: {escape(error)}", highlight=False, soft_wrap=True)
    if summary.verify is not None:
        render_verify(console, summary.verify, verbose=verbose, copy=verify_copy)


def hip_path_line(summary: Summary) -> str:
    """One line: how many files already build for AMD (and the first, with why), and how many only the other
    platform's branches include; what `convert` left alone in them."""
    n, other = summary.hip_path_files, summary.other_platform_files
    parts = []
    if n:
        first = summary.hip_path_first
        where = f" (first: {one_line(first[0])}: {first[1]})" if first else ""
        parts.append(f"{n} file{'s' if n != 1 else ''} with a HIP path{where}: their other-platform branches, and "
                     "the code nvcc also builds, left as they are")
    if other:
        parts.append(f"{other} file{'s' if other != 1 else ''} only the other platform's branches include, "
                     "left alone")
    return "already builds for AMD: " + "; ".join(parts)


def _categories(counts) -> str:
    return ", ".join(f"{cat} {n}" for cat, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _version(v) -> str:
    return f"HIP {v[0]}.{v[1]}" if v else "HIP of unknown version"


def render_verify(console: Console, result: VerifyResult, *, verbose: bool, copy: bool = False) -> None:
    """`convert --verify`: one line for the run, then each translation unit that does not compile with its first
    errors (file:line:col, one line each) and, under each, the known cause and its fix."""
    units, failed = len(result.units), result.failed
    targets = ",".join(result.targets)
    skipped = "".join(f"; {t} skipped ({why})" for t, why in result.skipped_targets.items())
    verdict = (f"[red]{len(failed)} of {units} do not compile[/red]" if failed else
               ("it compiles" if units == 1 else f"all {units} compile") if units else "no translation unit to compile")
    compiler = escape(result.compiler) if result.compiler else \
        f"hipcc ({_version(result.hip_version)}, HIP_PLATFORM=amd{', code generation' if result.codegen else ''})"
    console.print(f"[bold]verify[/bold]: {units} translation unit{'s' if units != 1 else ''}, {compiler} "
                  f"for {targets}: {verdict}{escape(skipped)}", highlight=False, soft_wrap=True)
    for note in result.notes:
        console.print(f"  note: {note}", highlight=False, soft_wrap=True, markup=False)
    if copy and failed:
        console.print("  (line numbers are those of the converted text)", highlight=False)
    for unit in failed:
        console.print(f"  [red]FAILED[/red] {escape(one_line(unit.shown))}", highlight=False, soft_wrap=True)
        told = set()  # a cause is explained once per unit
        for e in unit.errors:
            console.print(f"    {one_line(e.location())}: error: {one_line(e.message)}", highlight=False,
                          soft_wrap=True, markup=False)
            if e.cause is not None and e.cause.id not in told:
                told.add(e.cause.id)
                console.print(f"      cause: {explained(e)}", highlight=False, soft_wrap=True, markup=False)
        if unit.more:
            console.print(f"    ... {unit.more} more error{'s' if unit.more != 1 else ''}", highlight=False)
    if verbose:
        for unit in result.units:
            if unit.ok:
                console.print(f"  ok {escape(one_line(unit.shown))}", highlight=False, soft_wrap=True)


def explained(error: CompileError) -> str:
    """`<cause>; fix: <fix>` of a matched error."""
    return f"{error.cause_text}; fix: {error.fix}" if error.fix else error.cause_text
