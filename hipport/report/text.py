"""The end-of-run summary for a terminal or a log, drawn with rich."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from hipport.summary import Summary

_LIST_LIMIT = 20


def _names_table(title: str, tallies: dict, limit: int) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("name")
    table.add_column("count", justify="right")
    table.add_column("first seen")
    ordered = sorted(tallies.items(), key=lambda kv: (-kv[1].count, kv[0]))
    for name, t in ordered[:limit]:
        table.add_row(name, str(t.count), f"{t.path}:{t.line}:{t.col}")
    if len(ordered) > limit:
        table.add_row(f"… {len(ordered) - limit} more (use -v)", "", "")
    return table


def render_summary(console: Console, summary: Summary, *, verbose: bool, action: str) -> None:
    files = f"{summary.files_scanned} file{'s' if summary.files_scanned != 1 else ''} scanned"
    console.print(f"[bold]hipport[/bold]: {files}, {summary.files_changed} {action}, "
                  f"{summary.converted_total} references converted"
                  + (f", [red]{summary.files_failed} failed[/red]" if summary.files_failed else ""))
    if summary.conversions:
        cats = ", ".join(f"{cat} {n}" for cat, n in sorted(summary.conversions.items(), key=lambda kv: (-kv[1], kv[0])))
        console.print(f"  by category: {cats}", highlight=False)
    limit = 10**9 if verbose else _LIST_LIMIT
    if summary.unsupported:
        console.print(_names_table("CUDA names with no HIP equivalent (left as they are)", summary.unsupported, limit))
    if summary.unknown:
        console.print(_names_table("CUDA-looking names no rule knows (check them)", summary.unknown, limit))
    for error in summary.errors:
        console.print(f"[red]error[/red]: {error}", highlight=False)
