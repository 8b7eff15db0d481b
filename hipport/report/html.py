"""`--report html`: one self-contained page (no network, no external assets) drawn from the report model.

Every piece of text that comes from a source file, a path or a rule passes through `_esc` or Pygments, both of
which escape `& < > " '`; the only script on the page is the constant `_SCRIPT`, and a Content-Security-Policy
with its hash stops any other script from running and any request from leaving the page. The page works
without JavaScript: the script only adds sorting and filtering.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from functools import lru_cache

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer

from hipport.report.model import (
    READINESS_DEFINITION,
    SEVERITY_ORDER,
    SEVERITY_WEIGHT,
    AuditReport,
    FileReport,
    FindingReport,
    percent,
)

SEV_COLOUR = {"error": "#c62828", "warning": "#e67700", "info": "#1769aa"}
AUTO_COLOUR = "#2e7d32"
_CODE = re.compile(r"`([^`\n]+)`")


def _esc(text) -> str:
    return html.escape(str(text), quote=True)


def _rich(text: str) -> str:
    """Escaped text with `code` spans, as rule notes and messages write them."""
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", _esc(text))


def _note_html(note: str) -> str:
    paras = [" ".join(p.split()) for p in note.strip().split("\n\n") if p.strip()]
    return "".join(f"<p>{_rich(p)}</p>" for p in paras)


# -- syntax highlighting -------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _formatter() -> tuple[HtmlFormatter, re.Pattern]:
    formatter = HtmlFormatter(nowrap=True, style="default")
    # Spans of token types the style leaves uncoloured only cost bytes: drop them.
    plain = []
    for token, style in formatter.style:
        if not (style["color"] or style["bold"] or style["italic"] or style["bgcolor"] or style["underline"]):
            cls = formatter._get_css_class(token)
            if cls:
                plain.append(re.escape(cls))
    plain.append("w")  # whitespace: its colour never shows
    pattern = re.compile(r'<span class="(?:%s)">([^<]*)</span>' % "|".join(sorted(plain, key=len, reverse=True)))
    return formatter, pattern


def _highlight_lines(lines: list[str]) -> list[str]:
    """Each line as highlighted, escaped HTML (Pygments closes its spans at every line end)."""
    if not lines:
        return []
    return list(_highlight_cached(tuple(lines)))


@lru_cache(maxsize=8192)
def _highlight_cached(lines: tuple[str, ...]) -> tuple[str, ...]:
    # Identical hunks (the same fix in many files) are lexed once: Pygments does about 100 kB/s.
    formatter, plain = _formatter()
    text = "\n".join(lines) + "\n"
    out = highlight(text, CudaLexer(stripnl=False, ensurenl=False, stripall=False), formatter)
    out = _SHORT_CLASS.sub(r"<span class=\1>", plain.sub(r"\1", out))
    result = out.split("\n")
    if result and result[-1] == "":
        result.pop()
    if len(result) != len(lines):  # never trust a mismatch: fall back to plain escaped text
        return tuple(_esc(x) for x in lines)
    return tuple(result)


_SHORT_CLASS = re.compile(r'<span class="([a-z0-9]+)">')
_DIFF_KIND = {"+": "da", "-": "dd", " ": "dc"}


def _diff_html(diff_lines: list[str], highlight_code: bool = True) -> str:
    """A unified diff as a <pre>: +/- lines tinted and their code highlighted as CUDA/C++; context lines plain."""
    changed = [k for k, line in enumerate(diff_lines)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    lit = _highlight_lines([diff_lines[k][1:] for k in changed]) if highlight_code else []
    code = dict(zip(changed, lit))
    rows = []
    for k, line in enumerate(diff_lines):
        if k in code:
            rows.append(f'<span class={_DIFF_KIND[line[0]]}>{_esc(line[0])}{code[k]}\n</span>')
        elif line.startswith(("+++", "---", "@@")):
            rows.append(f'<span class=dh>{_esc(line)}\n</span>')
        else:
            kind = _DIFF_KIND.get(line[:1], "dn")
            rows.append(f'<span class={kind}>{_esc(line)}\n</span>')
    return '<pre class="diff hl">' + "".join(rows) + "</pre>"


class _Budget:
    """Keeps a big tree's page light: conversion diffs are highlighted while their raw size stays under
    HIGHLIGHT_BYTES, shown plain up to DIFF_BYTES, and left out past that (with the command that prints them)."""

    HIGHLIGHT_BYTES = 600_000
    DIFF_BYTES = 9_000_000

    def __init__(self) -> None:
        self.used = 0

    def take(self, size: int) -> str:
        self.used += size
        if self.used <= self.HIGHLIGHT_BYTES:
            return "highlight"
        return "plain" if self.used <= self.DIFF_BYTES else "omit"


# -- charts --------------------------------------------------------------------------------------------------

def _rule_chart(report: AuditReport) -> str:
    rows = report.rule_severity_counts()
    if not rows:
        return '<p class="muted">No findings: nothing needs hand work.</p>'
    # Wide enough for the longest rule id at the 12px label size (about 7.5px a character, dashes included), so
    # that `warp-builtin-unavailable` is not clipped at the chart's left edge.
    label_w = max(150, 16 + int(7.5 * max(len(rule) for rule, _ in rows)))
    bar_w, row_h = 300, 24
    top = max(sum(c.values()) for _, c in rows)
    height = row_h * len(rows) + 8
    parts = [f'<svg class="chart" role="img" aria-labelledby="chart-rules-title" width="{label_w + bar_w + 50}" '
             f'height="{height}" viewBox="0 0 {label_w + bar_w + 50} {height}" xmlns="http://www.w3.org/2000/svg">',
             '<title id="chart-rules-title">Findings by rule, coloured by severity</title>']
    for i, (rule, counts) in enumerate(rows):
        y = 4 + i * row_h
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" class="lbl">{_esc(rule)}</text>')
        x = float(label_w)
        for sev in SEVERITY_ORDER:
            n = counts.get(sev, 0)
            if not n:
                continue
            w = max(2.0, bar_w * n / top)
            parts.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" '
                         f'fill="{SEV_COLOUR[sev]}"><title>{_esc(rule)}: {n} {sev}</title></rect>')
            x += w
        parts.append(f'<text x="{x + 6:.1f}" y="{y + 16}" class="num">{sum(counts.values())}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _split_chart(report: AuditReport) -> str:
    auto, manual = report.converted, report.manual
    total = auto + manual
    width, bar_w = 560, 540
    parts = [f'<svg class="chart" role="img" aria-labelledby="chart-split-title" width="{width}" height="64" '
             f'viewBox="0 0 {width} 64" xmlns="http://www.w3.org/2000/svg">',
             '<title id="chart-split-title">Automatic conversions against hand work (weighted findings)</title>']
    if total == 0:
        parts.append('<text x="0" y="30" class="lbl">Nothing to port.</text>')
    else:
        aw = bar_w * auto / total
        parts.append(f'<rect x="0" y="4" width="{aw:.1f}" height="26" fill="{AUTO_COLOUR}">'
                     f'<title>automatic: {auto}</title></rect>')
        parts.append(f'<rect x="{aw:.1f}" y="4" width="{bar_w - aw:.1f}" height="26" fill="{SEV_COLOUR["warning"]}">'
                     f'<title>hand work: {manual}</title></rect>')
        parts.append(f'<text x="0" y="50" class="lbl">automatic: {auto} references ({percent(auto / total)})</text>')
        auto_pct = int(percent(auto / total).rstrip("%"))
        parts.append(f'<text x="{bar_w}" y="50" text-anchor="end" class="lbl">hand work: {manual} '
                     f'({100 - auto_pct if manual else 0}%)</text>')
    parts.append("</svg>")
    return "".join(parts)


def _category_chart(report: AuditReport) -> str:
    cats = sorted(report.by_category.items(), key=lambda kv: (-kv[1], kv[0]))
    if not cats:
        return '<p class="muted">No CUDA references to convert.</p>'
    label_w, bar_w, row_h = 110, 380, 20
    top = cats[0][1]
    height = row_h * len(cats) + 6
    parts = [f'<svg class="chart" role="img" aria-labelledby="chart-cat-title" width="{label_w + bar_w + 50}" '
             f'height="{height}" viewBox="0 0 {label_w + bar_w + 50} {height}" xmlns="http://www.w3.org/2000/svg">',
             '<title id="chart-cat-title">References converted automatically, by category</title>']
    for i, (cat, n) in enumerate(cats):
        y = 3 + i * row_h
        w = max(2.0, bar_w * n / top)
        parts.append(f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end" class="lbl">{_esc(cat)}</text>'
                     f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{AUTO_COLOUR}">'
                     f'<title>{_esc(cat)}: {n}</title></rect>'
                     f'<text x="{label_w + w + 6:.1f}" y="{y + 14}" class="num">{n}</text>')
    parts.append("</svg>")
    return "".join(parts)


# -- page parts ----------------------------------------------------------------------------------------------

def _badge(sev: str, n: int | None = None) -> str:
    text = sev if n is None else f"{n} {sev}"
    return f'<span class="badge {_esc(sev)}">{_esc(text)}</span>'


def _verify_badge(report: AuditReport, path: str) -> str:
    """`audit --verify`: whether the file, as a translation unit of its own, compiled ("" when not verified or
    not a unit)."""
    unit = report.unit(path)
    if unit is None:
        return ""
    if unit.ok:
        return ' <span class="badge vok" data-verify="ok" title="compiles with hipcc once converted">compiles</span>'
    return (' <span class="badge verror" data-verify="failed" title="does not compile with hipcc once converted">'
            'does not compile</span>')


def _verify_section(report: AuditReport) -> str:
    """`audit --verify`: one line for the run, then each unit that does not compile with its first errors and their
    known cause and fix; the units that compile, collapsed."""
    result = report.verify
    if result is None:
        return ""
    index = {f.path: i for i, f in enumerate(report.files)}

    def name(shown: str) -> str:
        i = index.get(shown)
        return f'<a href="#file-{i}">{_esc(shown)}</a>' if i is not None else _esc(shown)

    units, failed = len(result.units), result.failed
    version = f"HIP {result.hip_version[0]}.{result.hip_version[1]}" if result.hip_version else "HIP"
    verdict = (f'<strong class="err"><span id="verify-failed">{len(failed)}</span> of '
               f'<span id="verify-units">{units}</span> do not compile</strong>' if failed else
               f'all <span id="verify-units">{units}</span> compile<span id="verify-failed" hidden>0</span>')
    out = [f'<section id="verify"><h2>Does it build?</h2><p>The converted code (in a temporary copy: no file was '
           f'written), each translation unit compiled with hipcc ({_esc(version)}, <code>HIP_PLATFORM=amd</code>, '
           f'{"code generation" if result.codegen else "syntax only"}) for {_esc(", ".join(result.targets))}: '
           f'{verdict}.'
           + "".join(f" {_esc(t)} skipped ({_esc(why)})." for t, why in result.skipped_targets.items()) + "</p>"]
    for note in result.notes:
        out.append(f'<p class="muted">Note: {_esc(note)}</p>')
    if failed:
        out.append('<p class="muted">Line numbers are those of the converted text '
                   '(<code>hipport convert --diff</code> shows it).</p>')
    for unit in failed:
        items = []
        for e in unit.errors:
            cause = ""
            if e.cause is not None:
                cause = (f'<div class="cause"><strong>Cause</strong> (<code>{_esc(e.cause.id)}</code>): '
                         f'{_rich(e.cause_text)}' + (f'<br><strong>Fix</strong>: {_rich(e.fix)}' if e.fix else "")
                         + "</div>")
            items.append(f'<li class="cerr"><code class="loc">{_esc(e.location())}</code>: error: '
                         f'<code>{_esc(e.message)}</code>{cause}</li>')
        more = (f'<p class="muted">{unit.more} more error{"s" if unit.more != 1 else ""}</p>' if unit.more else "")
        out.append(f'<div class="unit failed" data-unit="{_esc(unit.shown)}"><h4>{name(unit.shown)} '
                   f'<span class="badge verror">does not compile</span></h4><ol class="cerrs">{"".join(items)}</ol>'
                   f'{more}</div>')
    ok = [u for u in result.units if u.ok]
    if ok:
        which = "unit that compiles" if len(ok) == 1 else "units that compile"
        out.append(f'<details id="verify-ok"><summary>{len(ok)} {which}</summary><ul class="plain">'
                   + "".join(f'<li class="unit ok" data-unit="{_esc(u.shown)}">{name(u.shown)}</li>' for u in ok)
                   + "</ul></details>")
    out.append("</section>")
    return "".join(out)


def _ready_class(value: float) -> str:
    return "r-good" if value >= 0.9 else ("r-mid" if value >= 0.6 else "r-low")


def _summary(report: AuditReport) -> str:
    sev = report.by_severity
    cats = ", ".join(f"{_esc(c)} {n}" for c, n in sorted(report.by_category.items(), key=lambda kv: (-kv[1], kv[0])))
    cards = [
        ("Files", f'<span id="total-files">{len(report.files)}</span>',
         f'{report.files_changed} converted automatically, {report.files_with_findings} with findings'
         + (f', <span id="total-failed">{report.files_failed}</span> unreadable' if report.files_failed else "")),
        ("Lines", f'<span id="total-lines">{report.lines}</span>', "of source audited"),
        ("Converted automatically", f'<span id="total-converted">{report.converted}</span>',
         f"CUDA references{': ' + cats if cats else ''}"),
        ("Findings (hand work)", f'<span id="total-findings">{report.findings}</span>',
         " ".join(f'<span class="badge {s}"><span id="count-{s}">{sev.get(s, 0)}</span> {s}</span>'
                  for s in SEVERITY_ORDER)),
        ("Porting readiness", f'<span id="readiness" class="{_ready_class(report.readiness)}">'
                              f'{percent(report.readiness)}</span>',
         f'{report.automatic} automatic'
         + (f' ({report.served} served by the project&rsquo;s own HIP path; files that already build for AMD: '
            f'{report.files_built_for_amd})' if report.served else "")
         + f' vs. {report.manual} hand-work points'),
    ]
    if report.verify is not None:
        failed = len(report.verify.failed)
        cards.append(("Builds with hipcc", f'<span class="{"r-low" if failed else "r-good"}">'
                                           f'{len(report.verify.units) - failed}/{len(report.verify.units)}</span>',
                      '<a href="#verify">translation units that compile once converted</a>'))
    out = ['<section id="summary" aria-label="Summary"><div class="cards">']
    for title, big, small in cards:
        out.append(f'<div class="card"><div class="ct">{title}</div><div class="big">{big}</div>'
                   f'<div class="small">{small}</div></div>')
    out.append("</div>")
    weights = ", ".join(f"{s} {w}" for s, w in SEVERITY_WEIGHT.items())
    out.append(f'<p class="definition" id="readiness-definition"><strong>How readiness is computed.</strong> '
               f'{_esc(READINESS_DEFINITION)} (weights: {weights}.)</p>')
    if report.baseline_hidden:
        out.append(f'<p class="muted">{report.baseline_hidden} findings accepted in the baseline are not shown.</p>')
    out.append('<div class="charts">'
               f'<figure><figcaption>Findings by rule</figcaption>{_rule_chart(report)}'
               f'<div class="legend">{"".join(_badge(s) for s in SEVERITY_ORDER)}</div></figure>'
               f'<figure><figcaption>Automatic / hand-work split</figcaption>{_split_chart(report)}'
               f'<figcaption>Converted automatically, by category</figcaption>{_category_chart(report)}</figure>'
               '</div></section>')
    return "".join(out)


def _todo(report: AuditReport) -> str:
    """What must be fixed by hand, rule by rule, most findings first, with how to fix it."""
    rows = report.rule_severity_counts()
    if not rows:
        return ('<section id="todo"><h2>What to fix by hand</h2><p>Nothing: every CUDA reference converts '
                'automatically and no hazard was found.</p></section>')
    out = ['<section id="todo"><h2>What to fix by hand</h2><table class="grid"><thead><tr><th>Rule</th>'
           '<th>Findings</th><th>What it means</th><th>Files</th></tr></thead><tbody>']
    files_per_rule: dict[str, int] = {}
    for f in report.files:
        for rule in f.by_rule:
            files_per_rule[rule] = files_per_rule.get(rule, 0) + 1
    for rule, counts in rows:
        info = report.rules.get(rule)
        summary = info.summary if info else ""
        badges = " ".join(_badge(s, counts[s]) for s in SEVERITY_ORDER if counts.get(s))
        out.append(f'<tr data-rule="{_esc(rule)}"><td><a href="#rule-{_esc(rule)}"><code>{_esc(rule)}</code></a></td>'
                   f'<td class="num" data-v="{sum(counts.values())}">{badges}</td><td>{_rich(summary)}</td>'
                   f'<td class="num">{files_per_rule.get(rule, 0)}</td></tr>')
    out.append('</tbody></table><p class="muted">Each rule links to its explanation and fix; each finding below '
               'carries its suggested patch where one can be given.</p></section>')
    return "".join(out)


def _file_table(report: AuditReport) -> str:
    rules = sorted(report.by_rule)
    opts_rule = "".join(f'<option value="{_esc(r)}">{_esc(r)}</option>' for r in rules)
    out = ['<section id="files"><h2>Files</h2>',
           '<form id="filters" class="js-only" role="search">'
           '<label>Severity <select id="f-sev"><option value="">any</option>'
           + "".join(f'<option value="{s}">{s}</option>' for s in SEVERITY_ORDER)
           + '</select></label> <label>Rule <select id="f-rule"><option value="">any</option>' + opts_rule
           + '</select></label> <label>Path <input id="f-q" type="search" placeholder="part of a path"></label> '
             '<label><input id="f-only" type="checkbox"> only files with findings</label> '
             '<button type="button" id="f-reset">Reset</button> '
             '<span id="shown-count" aria-live="polite"></span></form>',
           '<table id="file-table" class="grid"><thead><tr>'
           '<th data-type="s">File</th><th data-type="n">Lines</th><th data-type="n">Converted</th>'
           '<th data-type="n">Errors</th><th data-type="n">Warnings</th><th data-type="n">Info</th>'
           '<th data-type="n">Readiness</th><th data-type="s">Rules</th></tr></thead><tbody>']
    for i, f in enumerate(report.files):
        sev = f.by_severity
        sevs = " ".join(s for s in SEVERITY_ORDER if sev.get(s))
        rule_ids = " ".join(sorted(f.by_rule))
        ready = f.readiness
        cells = [
            f'<td data-v="{_esc(f.path)}"><a href="#file-{i}">{_esc(f.path)}</a>'
            + (' <span class="badge error">unreadable</span>' if f.error else "") + _verify_badge(report, f.path)
            + "</td>",
            f'<td class="num" data-v="{f.lines}">{f.lines}</td>',
            f'<td class="num" data-v="{f.converted}">{f.converted}</td>',
        ]
        for s in SEVERITY_ORDER:
            n = sev.get(s, 0)
            cells.append(f'<td class="num{" " + s if n else ""}" data-v="{n}">{n or ""}</td>')
        cells.append(f'<td class="num {_ready_class(ready)}" data-v="{ready:.4f}">{percent(ready)}</td>')
        cells.append(f'<td data-v="{_esc(rule_ids)}">{_esc(", ".join(sorted(f.by_rule)))}</td>')
        out.append(f'<tr class="frow" data-file="{i}" data-sev="{sevs}" data-rules="{_esc(rule_ids)}" '
                   f'data-path="{_esc(f.path.lower())}" data-findings="{len(f.findings)}">{"".join(cells)}</tr>')
    out.append("</tbody></table></section>")
    return "".join(out)


def _finding_html(x: FindingReport, report: AuditReport) -> str:
    info = report.rules.get(x.rule)
    head = (f'{_badge(x.severity)} <a class="rule" href="#rule-{_esc(x.rule)}"><code>{_esc(x.rule)}</code></a> '
            f'<span class="loc">line {x.line}, column {x.col}</span>'
            f' <span class="muted">&middot; confidence: {_esc(x.confidence)}</span>'
            + (' <span class="muted">(left by the conversion)</span>' if x.source == "convert" else ""))
    parts = [f'<li class="finding" data-sev="{_esc(x.severity)}" data-rule="{_esc(x.rule)}">'
             f'<div class="fh">{head}</div><p class="msg">{_rich(x.message)}</p>']
    if x.patch:
        parts.append('<div class="sub">Suggested patch</div>' + _diff_html(x.patch))
    elif x.source_line:
        parts.append(f'<pre class="src hl"><span class="ln">{x.line}</span> '
                     f'{_highlight_lines([x.source_line])[0]}</pre>')
    if info is not None and info.note:
        # The note is printed once, in the Rules section; the script copies it here when opened, and without
        # the script the link leads there. Repeating it for every finding would weigh megabytes on a big tree.
        parts.append(f'<details class="note" data-rule="{_esc(x.rule)}"><summary>Why, and how to fix</summary>'
                     f'<p class="see">See <a href="#rule-{_esc(x.rule)}">the {_esc(x.rule)} rule</a>.</p></details>')
    parts.append("</li>")
    return "".join(parts)


def _amd_note(f: FileReport) -> str:
    """Why a file of a project that keeps CUDA counts as ready for AMD, or ""."""
    if f.other_platform:
        return (f' <span class="muted amd">only the NVIDIA build compiles it ({_rich(f.other_platform)}): '
                'no work for AMD</span>')
    if not f.hip_path:
        return ""
    served = f": {f.served} CUDA reference{'s' if f.served != 1 else ''} served by its HIP path" if f.served else ""
    return f' <span class="muted amd">already builds for AMD ({_rich(f.hip_path)}){served}</span>'


def _file_section(i: int, f: FileReport, report: AuditReport, budget: _Budget) -> str:
    sev = f.by_severity
    badges = " ".join(_badge(s, sev[s]) for s in SEVERITY_ORDER if sev.get(s))
    cats = ", ".join(f"{_esc(c)} {n}" for c, n in sorted(f.by_category.items(), key=lambda kv: (-kv[1], kv[0])))
    rule_ids = " ".join(sorted(f.by_rule))
    sevs = " ".join(s for s in SEVERITY_ORDER if sev.get(s))
    head = (f'<summary><span class="path">{_esc(f.path)}</span> <span class="muted">{f.lines} lines, '
            f'{f.converted} converted automatically, readiness {percent(f.readiness)}</span>{_amd_note(f)} {badges}'
            f'{_verify_badge(report, f.path)}</summary>')
    body = []
    if f.error:
        body.append(f'<p class="err">Not audited: {_esc(f.error)}</p>')
    if f.findings:
        body.append('<h4>Findings</h4><ol class="findings">'
                    + "".join(_finding_html(x, report) for x in f.findings) + "</ol>")
    if f.diff:
        mode = budget.take(len(f.diff))
        if mode == "omit":
            diff = (f'<p class="muted">Diff left out to keep this page light; <code>hipport convert --diff '
                    f'{_esc(f.path)}</code> prints it.</p>')
        else:
            diff = _diff_html(f.diff.rstrip("\n").split("\n"), highlight_code=mode == "highlight")
        body.append(f'<details class="conv"><summary>Automatic conversion: {f.converted} references'
                    f'{" (" + cats + ")" if cats else ""} &mdash; show the diff</summary>'
                    f'{diff}</details>')
    elif not f.error:
        body.append('<p class="muted">The conversion changes nothing in this file.</p>')
    return (f'<section class="file" id="file-{i}" data-file="{i}" data-sev="{sevs}" data-rules="{_esc(rule_ids)}" '
            f'data-path="{_esc(f.path.lower())}" data-findings="{len(f.findings)}">'
            f'<details{" open" if f.findings or f.error else ""}>{head}{"".join(body)}</details></section>')


def _details(report: AuditReport) -> str:
    out = ['<section id="details"><h2>File by file</h2>']
    quiet = []
    budget = _Budget()
    for i, f in enumerate(report.files):
        unit = report.unit(f.path)
        if not f.findings and not f.diff and not f.error and (unit is None or unit.ok):
            quiet.append((i, f))
            continue
        out.append(_file_section(i, f, report, budget))
    if quiet:
        # Files with nothing to port: one collapsed list, so a large tree stays a light page.
        items = "".join(f'<li class="file" id="file-{i}" data-file="{i}" data-sev="" data-rules="" '
                        f'data-path="{_esc(f.path.lower())}" data-findings="0">{_esc(f.path)}{_amd_note(f)}'
                        f'{_verify_badge(report, f.path)}</li>'
                        for i, f in quiet)
        out.append(f'<details id="unchanged"><summary>{len(quiet)} file{"s" if len(quiet) != 1 else ""} with '
                   f'nothing to convert and no findings</summary><ul class="plain">{items}</ul></details>')
    out.append("</section>")
    return "".join(out)


def _rules(report: AuditReport) -> str:
    used = set(report.by_rule)
    out = ['<section id="rules"><h2>Rules</h2><p class="muted">Every rule hipport audits, with why it matters '
           'and how to fix it. Rules marked &ldquo;conversion&rdquo; report what renaming left for a person.</p>']
    for rid, r in sorted(report.rules.items(), key=lambda kv: (kv[0] not in used, kv[0])):
        if r.source == "convert" and rid not in used:
            continue
        count = report.by_rule.get(rid, 0)
        out.append(f'<details class="rule" id="rule-{_esc(rid)}"{" open" if count else ""}>'
                   f'<summary><code>{_esc(rid)}</code> {_badge(r.severity)}<span class="muted small">by default</span> '
                   f'{_rich(r.summary)} '
                   f'<span class="muted">{count} finding{"s" if count != 1 else ""}'
                   f'{"; conversion" if r.source == "convert" else ""}</span></summary>'
                   f'<div class="note-body">{_note_html(r.note)}</div>'
                   f'<p class="muted">More: {_esc(r.help_uri)}</p></details>')
    out.append("</section>")
    return "".join(out)


_CSS = """
:root{--fg:#1d2330;--muted:#5f6b7a;--line:#d9dee5;--bg:#fff;--soft:#f5f7fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1280px;padding:16px 24px 48px}
h1{font-size:22px;margin:4px 0 2px}h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid var(--line);
padding-bottom:4px}h4{margin:10px 0 6px}
code,pre{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
p code,td code,summary code,.msg code{background:var(--soft);padding:0 3px;border-radius:3px}
.muted{color:var(--muted)}.err{color:#c62828}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.card{flex:1 1 180px;border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:var(--soft)}
.ct{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.big{font-size:28px;font-weight:650}.small{font-size:12.5px;color:var(--muted)}
.definition{background:#fffbe6;border:1px solid #f0e2a8;border-radius:6px;padding:8px 12px}
.charts{display:flex;flex-wrap:wrap;gap:24px}figure{margin:8px 0}figcaption{font-weight:600;margin:6px 0}
.chart .lbl{font-size:12px;fill:#1d2330}.chart .num{font-size:12px;fill:#5f6b7a}
.legend{margin-top:4px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;color:#fff;background:#777;
white-space:nowrap}
.badge.vok{background:#2e7d32}.badge.verror{background:#8e1b1b}
div.unit{border:1px solid var(--line);border-left:4px solid #8e1b1b;border-radius:6px;margin:8px 0;padding:4px 12px}
ol.cerrs{padding-left:22px}li.cerr{margin:0 0 8px}.cause{margin:4px 0 0;font-size:13px}
.badge.error{background:#c62828}.badge.warning{background:#e67700}.badge.info{background:#1769aa}
td.error{color:#c62828;font-weight:600}td.warning{color:#b35900;font-weight:600}td.info{color:#1769aa}
.r-good{color:#2e7d32}.r-mid{color:#b35900}.r-low{color:#c62828}
table.grid{border-collapse:collapse;width:100%}
.grid th,.grid td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
.grid th{background:var(--soft);position:sticky;top:0}.grid td.num{text-align:right;font-variant-numeric:tabular-nums}
.grid th button{all:unset;cursor:pointer}.grid th button:focus{outline:2px solid #1769aa}
.grid th[aria-sort=ascending] button::after{content:" \\25B2"}
.grid th[aria-sort=descending] button::after{content:" \\25BC"}
#filters{margin:8px 0;padding:8px;background:var(--soft);border-radius:6px}
#filters label{margin-right:10px}#shown-count{color:var(--muted);margin-left:8px}
.js-only{display:none}.js .js-only{display:block}
section.file{border:1px solid var(--line);border-radius:8px;margin:10px 0;padding:0}
section.file>details>summary{padding:8px 12px;cursor:pointer;background:var(--soft);border-radius:8px}
section.file>details>*:not(summary){margin-left:14px;margin-right:14px}
.path{font-weight:600;font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace}
ol.findings{padding-left:22px}li.finding{margin:0 0 14px}.fh{margin-bottom:2px}.msg{margin:2px 0 6px}
.loc{color:var(--muted)}.sub{font-size:12px;color:var(--muted);margin-top:4px}
details.note{margin:6px 0 0;border-left:3px solid #f0e2a8;padding-left:10px}details.note p{margin:4px 0}
details.conv{margin:8px 0 12px}details.conv>summary{cursor:pointer;color:#1769aa}
pre.diff,pre.src{background:#fbfcfd;border:1px solid var(--line);border-radius:6px;padding:6px 0;margin:4px 0;
overflow-x:auto}
pre.diff>span{display:block;padding:0 10px;white-space:pre}pre.src{padding:6px 10px}
.da{background:#e6ffec}.dd{background:#ffebe9}.dh{color:#6e40c9;background:#f5f0ff}.dn,.dc{color:#57606a}
.ln{color:var(--muted);user-select:none}
ul.plain{columns:2;font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px}
details.rule{margin:6px 0}details.rule>summary{cursor:pointer}details.rule p{margin:4px 0 4px 18px}
#js-errors{border:2px solid #c62828;color:#c62828;padding:8px;white-space:pre-wrap}
.hidden{display:none!important}
"""

# Sorting and filtering. Static text: nothing from the report is ever placed inside this script.
_SCRIPT = r"""
(function () {
  "use strict";
  var errBox = document.getElementById("js-errors");
  function report(msg) {
    errBox.hidden = false;
    errBox.textContent += msg + "\n";
  }
  window.onerror = function (message, source, line, col) {
    report(String(message) + " (" + line + ":" + col + ")");
  };
  window.addEventListener("unhandledrejection", function (e) { report("unhandled rejection: " + e.reason); });
  document.documentElement.classList.add("js");

  var sev = document.getElementById("f-sev"), rule = document.getElementById("f-rule");
  var q = document.getElementById("f-q"), only = document.getElementById("f-only");
  var shown = document.getElementById("shown-count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#file-table tbody tr.frow"));
  var blocks = Array.prototype.slice.call(document.querySelectorAll("#details .file"));

  function params() {
    var text = location.hash.indexOf("=") >= 0 ? location.hash.slice(1) : location.search.slice(1);
    var out = {};
    text.split("&").forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf("="), k = i < 0 ? kv : kv.slice(0, i), v = i < 0 ? "" : kv.slice(i + 1);
      out[decodeURIComponent(k)] = decodeURIComponent(v.replace(/\+/g, " "));
    });
    return out;
  }
  function setSelect(el, value) {
    for (var i = 0; i < el.options.length; i++) {
      if (el.options[i].value === value) { el.selectedIndex = i; return; }
    }
    el.selectedIndex = 0;
  }
  function matches(el, s, r, text, onlyFindings) {
    var sevs = (el.getAttribute("data-sev") || "").split(" ");
    var rules = (el.getAttribute("data-rules") || "").split(" ");
    if (s && sevs.indexOf(s) < 0) return false;
    if (r && rules.indexOf(r) < 0) return false;
    if (text && (el.getAttribute("data-path") || "").indexOf(text) < 0) return false;
    if (onlyFindings && el.getAttribute("data-findings") === "0") return false;
    return true;
  }
  function apply(updateUrl) {
    var s = sev.value, r = rule.value, text = q.value.trim().toLowerCase(), o = only.checked;
    var n = 0;
    rows.forEach(function (tr) {
      var ok = matches(tr, s, r, text, o);
      tr.classList.toggle("hidden", !ok);
      if (ok) n++;
    });
    blocks.forEach(function (b) {
      b.classList.toggle("hidden", !matches(b, s, r, text, o));
      Array.prototype.forEach.call(b.querySelectorAll("li.finding"), function (li) {
        var ok = (!s || li.getAttribute("data-sev") === s) && (!r || li.getAttribute("data-rule") === r);
        li.classList.toggle("hidden", !ok);
      });
    });
    shown.textContent = n + " of " + rows.length + " files shown";
    document.body.setAttribute("data-shown", String(n));
    if (updateUrl) {
      var parts = [];
      if (s) parts.push("severity=" + encodeURIComponent(s));
      if (r) parts.push("rule=" + encodeURIComponent(r));
      if (text) parts.push("path=" + encodeURIComponent(text));
      if (o) parts.push("findings=1");
      history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
    }
  }
  function load() {
    var p = params();
    setSelect(sev, p.severity || "");
    setSelect(rule, p.rule || "");
    q.value = p.path || "";
    only.checked = p.findings === "1";
    apply(false);
  }
  [sev, rule, only].forEach(function (el) { el.addEventListener("change", function () { apply(true); }); });
  q.addEventListener("input", function () { apply(true); });
  document.getElementById("filters").addEventListener("submit", function (e) { e.preventDefault(); });
  document.getElementById("f-reset").addEventListener("click", function () {
    sev.selectedIndex = 0; rule.selectedIndex = 0; q.value = ""; only.checked = false; apply(true);
  });
  window.addEventListener("hashchange", function () { if (location.hash.indexOf("=") >= 0) load(); });

  // Rule notes: copied (as nodes, never as markup) from the Rules section into a finding when it is opened.
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (!d.classList || !d.classList.contains("note") || !d.open || d.getAttribute("data-filled")) return;
    var body = document.querySelector("#rule-" + CSS.escape(d.getAttribute("data-rule")) + " .note-body");
    if (!body) return;
    d.setAttribute("data-filled", "1");
    var see = d.querySelector(".see");
    if (see) see.classList.add("hidden");
    d.appendChild(body.cloneNode(true));
  }, true);

  // Sorting: each header becomes a button; numbers sort by data-v, text by locale.
  var table = document.getElementById("file-table");
  var ths = Array.prototype.slice.call(table.querySelectorAll("thead th"));
  ths.forEach(function (th, col) {
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = th.textContent;
    th.textContent = "";
    th.appendChild(b);
    b.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      ths.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var numeric = th.getAttribute("data-type") === "n";
      var tbody = table.tBodies[0];
      var sorted = rows.slice().sort(function (a, c) {
        var x = a.cells[col].getAttribute("data-v"), y = c.cells[col].getAttribute("data-v");
        var d = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        if (d === 0) d = parseInt(a.getAttribute("data-file"), 10) - parseInt(c.getAttribute("data-file"), 10);
        return asc ? d : -d;
      });
      sorted.forEach(function (tr) { tbody.appendChild(tr); });
    });
  });
  load();
})();
"""


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def render_html(report: AuditReport) -> str:
    formatter, _ = _formatter()
    css = _CSS + formatter.get_style_defs(".hl")
    csp = (f"default-src 'none'; style-src {_csp_hash(css)}; script-src {_csp_hash(_SCRIPT)}; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    targets = ", ".join(report.offload_arch)
    total = len(report.files)
    head = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{_esc(csp)}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="hipport {_esc(report.tool_version)}">'
            f'<title>hipport audit: {total} file{"s" if total != 1 else ""}, {report.findings} findings</title>'
            f'<style>{css}</style></head>')
    body = [
        f'<body data-shown="{total}"><header><h1>hipport audit report</h1>'
        f'<p class="muted">{total} file{"s" if total != 1 else ""} audited for ROCm {_esc(report.rocm_version)} on '
        f'{_esc(targets)} by hipport {_esc(report.tool_version)}. The conversion ran in memory: no file was '
        f'written. <a href="#todo">What to fix by hand</a> &middot; <a href="#files">Files</a> &middot; '
        f'<a href="#details">File by file</a> &middot; <a href="#rules">Rules</a>'
        + (' &middot; <a href="#verify">Does it build?</a>' if report.verify is not None else "") + '</p></header>',
        '<div id="js-errors" role="alert" hidden></div>',
        _summary(report), _verify_section(report), _todo(report), _file_table(report), _details(report),
        _rules(report),
        f"<script>{_SCRIPT}</script></body></html>\n",
    ]
    return head + "".join(body)
