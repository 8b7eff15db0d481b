"""The end-of-run summary for a terminal or a log, drawn with rich."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from hipport.convert.summary import Summary

_LIST_LIMIT = 20


def _print_names(console: Console, title: str, tallies: dict, limit: int) -> None:
    # Plain lines rather than a table: logs and CI output must keep full paths, never an ellipsis.
    console.print(f"{title}:")
    ordered = sorted(tallies.items(), key=lambda kv: (-kv[1].count, kv[0]))
    for name, t in ordered[:limit]:
        console.print(f"  {name} x{t.count}  first at {t.path}:{t.line}:{t.col}", soft_wrap=True, markup=False)
    if len(ordered) > limit:
        console.print(f"  ... and {len(ordered) - limit} more (-v lists them all)")


def render_summary(console: Console, summary: Summary, *, verbose: bool, action: str) -> None:
    files = f"{summary.files_scanned} file{'s' if summary.files_scanned != 1 else ''} scanned"
    console.print(f"[bold]hipport[/bold]: {files}, {summary.files_changed} {action}, "
                  f"{summary.converted_total} references converted"
                  + (f", [red]{summary.files_failed} failed[/red]" if summary.files_failed else ""))
    if summary.conversions:
        cats = ", ".join(f"{cat} {n}" for cat, n in sorted(summary.conversions.items(), key=lambda kv: (-kv[1], kv[0])))
        console.print(f"  by category: {cats}", highlight=False, soft_wrap=True)
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
