"""`--report markdown`: a short summary for a pull-request comment (GitHub-flavoured Markdown)."""

from __future__ import annotations

import html

from hipport.report.model import SEVERITY_ORDER, SEVERITY_WEIGHT, AuditReport, percent

TOP_FILES = 10


def _cell(text) -> str:
    """Table-cell text: HTML escaped (GitHub renders inline HTML), pipes kept from splitting the cell, and `*` outside
    code spans kept from opening emphasis (`the *_sync built-ins`; GitHub leaves underscores inside words alone)."""
    parts = html.escape(str(text), quote=False).replace("|", "&#124;").replace("\n", " ").split("`")
    for k in range(0, len(parts), 2):  # even pieces lie outside code spans
        parts[k] = parts[k].replace("*", "\\*")
    return "`".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _verify(result) -> list[str]:
    """One line for `--verify`, then each unit that does not compile with its first error, cause and fix."""
    units, failed = len(result.units), result.failed
    version = f"HIP {result.hip_version[0]}.{result.hip_version[1]}" if result.hip_version else "HIP"
    verdict = (f"**{len(failed)} of {_plural(units, 'translation unit')} do not compile**" if failed else
               f"all {_plural(units, 'translation unit')} compile" if units else "no translation unit to compile")
    mode = "code generation" if result.codegen else "syntax only"
    out = [f"**Does it build?** The converted code, compiled with hipcc ({version}, HIP_PLATFORM=amd, {mode}) "
           f"for {_cell(', '.join(result.targets))}: {verdict}."]
    if failed:
        out.append("")
        for unit in failed:
            first = unit.errors[0] if unit.errors else None
            line = f"- {_cell(unit.shown)}"
            if first is not None:
                line += f": {_cell(first.location())}: {_cell(first.message)}"
                if first.cause is not None:
                    line += f". Cause: {_cell(first.cause_text)}. Fix: {_cell(first.fix)}"
            more = len(unit.errors) - 1 + unit.more
            if more > 0:
                line += f" (+{_plural(more, 'more error')})"
            out.append(line)
    out.append("")
    return out


def render_markdown(report: AuditReport) -> str:
    sev = report.by_severity
    parts = ", ".join(f"{sev[s]} {s}" for s in SEVERITY_ORDER if sev.get(s))
    out = [f"### hipport audit: {_plural(len(report.files), 'file')}, {_plural(report.findings, 'finding')}"
           + (f" ({parts})" if parts else ""), ""]
    weights = ", ".join(f"{s} {w}" for s, w in SEVERITY_WEIGHT.items())
    served = (f", {report.served} more are served already by the project's own HIP path (files that already "
              f"build for AMD: {report.files_built_for_amd})" if report.served else "")
    out.append(f"**Porting readiness: {percent(report.readiness)}**. {report.converted} CUDA references convert "
               f"automatically{served}; the findings weigh {report.manual} in hand work ({weights}). "
               f"Readiness = automatic / (automatic + hand work).")
    out.append("")
    out.append(f"{report.lines} lines audited for ROCm {_cell(report.rocm_version)} on "
               f"{_cell(', '.join(report.offload_arch))}; {report.files_changed} files change on conversion"
               + (f"; **{report.files_failed} could not be read**" if report.files_failed else "")
               + (f"; {report.baseline_hidden} findings accepted in the baseline are not counted"
                  if report.baseline_hidden else "") + ".")
    out.append("")
    if report.verify is not None:
        out += _verify(report.verify)
    rows = report.rule_severity_counts()
    if rows:
        files_per_rule: dict[str, int] = {}
        for f in report.files:
            for rule in f.by_rule:
                files_per_rule[rule] = files_per_rule.get(rule, 0) + 1
        out += ["| Rule | Errors | Warnings | Info | Files | What it means |",
                "| --- | ---: | ---: | ---: | ---: | --- |"]
        for rule, counts in rows:
            info = report.rules.get(rule)
            summary = _cell(info.summary if info else "")
            out.append(f"| `{_cell(rule)}` | {counts.get('error', 0)} | {counts.get('warning', 0)} | "
                       f"{counts.get('info', 0)} | {files_per_rule.get(rule, 0)} | {summary} |")
        out.append("")
        ranked = sorted((f for f in report.files if f.findings), key=lambda f: (-f.manual, f.path))
        out += ["**Files with the most hand work**", "", "| File | Readiness | Errors | Warnings | Info | Converted |",
                "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for f in ranked[:TOP_FILES]:
            c = f.by_severity
            amd = (f" (already builds for AMD: {_cell(f.hip_path)}; {f.served} served)" if f.hip_path and f.served
                   else f" (already builds for AMD: {_cell(f.hip_path)})" if f.hip_path else "")
            out.append(f"| {_cell(f.path)}{amd} | {percent(f.readiness)} | {c.get('error', 0)} | "
                       f"{c.get('warning', 0)} | {c.get('info', 0)} | {f.converted} |")
        if len(ranked) > TOP_FILES:
            out.append(f"\n…and {len(ranked) - TOP_FILES} more files with findings.")
    else:
        out.append("No findings: nothing needs hand work.")
    cats = sorted(report.by_category.items(), key=lambda kv: (-kv[1], kv[0]))
    if cats:
        out += ["", "<details><summary>Converted automatically, by category</summary>", "",
                ", ".join(f"{_cell(c)} {n}" for c, n in cats), "", "</details>"]
    out += ["", "_`hipport audit --report html` shows every finding with its note and suggested patch; "
                "`hipport rules show RULE-ID` explains a rule._"]
    return "\n".join(out) + "\n"
