"""Renderers: results in, text or bytes out. No porting logic lives here."""

from __future__ import annotations

REPORT_FORMATS = ("text", "html", "json", "sarif", "markdown")
DEFAULT_NAMES = {"text": "hipport-report.txt", "html": "hipport-report.html", "json": "hipport-report.json",
                 "sarif": "hipport-report.sarif", "markdown": "hipport-report.md"}


def render(fmt: str, report) -> bytes:
    """One report (hipport.report.model.AuditReport) in one of the file formats, as bytes."""
    if fmt == "html":
        from hipport.report.html import render_html
        return render_html(report).encode("utf-8")
    if fmt == "json":
        from hipport.report.json_report import render_json
        return render_json(report).encode("utf-8")
    if fmt == "sarif":
        from hipport.report.sarif import render_sarif
        return render_sarif(report).encode("utf-8")
    if fmt == "markdown":
        from hipport.report.markdown import render_markdown
        return render_markdown(report).encode("utf-8")
    raise ValueError(f"no renderer for report format {fmt!r}")
