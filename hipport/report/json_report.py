"""`--report json`: the audit report as versioned data. The schema is documented in docs/report-schema.md;
any change that removes or renames a key, or changes a value's meaning, bumps SCHEMA."""

from __future__ import annotations

import json

from hipport.convert.verify import VerifyResult
from hipport.report.model import (
    READINESS_DEFINITION,
    SEVERITY_ORDER,
    SEVERITY_WEIGHT,
    AuditReport,
    FileReport,
)

SCHEMA = "hipport-audit/1"


def _severities(counter) -> dict[str, int]:
    return {s: counter.get(s, 0) for s in SEVERITY_ORDER}


def _file(f: FileReport, report: AuditReport) -> dict:
    unit = report.unit(f.path)
    return {
        "path": f.path,
        "uri": f.uri,
        "lines": f.lines,
        "bytes": f.size,
        "error": f.error,
        "readiness": round(f.readiness, 4),
        "manual_work": f.manual,
        "converted": f.converted,
        "converted_by_category": dict(sorted(f.by_category.items())),
        "served": f.served,
        "hip_path": f.hip_path or None,
        "other_platform": f.other_platform or None,
        "findings_by_severity": _severities(f.by_severity),
        "conversions": [dict(c) for c in f.conversions],
        "diff": f.diff,
        "compiles": None if unit is None else unit.ok,
        "findings": [{
            "rule": x.rule,
            "severity": x.severity,
            "confidence": x.confidence,
            "source": x.source,
            "location": {"line": x.line, "column": x.col},
            "message": x.message,
            "source_line": x.source_line,
            "fix": {"patch": "\n".join(x.patch) + "\n", "edits": x.edits} if x.patch else None,
        } for x in f.findings],
    }


def _verify(result: VerifyResult | None) -> dict | None:
    if result is None:
        return None
    version = result.hip_version
    return {
        "compiler": {"name": "hipcc", "hip_version": f"{version[0]}.{version[1]}" if version else None,
                     "platform": "amd", "code_generation": result.codegen},
        "targets": list(result.targets),
        "skipped_targets": dict(result.skipped_targets),
        "notes": list(result.notes),
        "units": len(result.units),
        "units_failed": len(result.failed),
        "results": [{
            "path": u.shown,
            "ok": u.ok,
            "errors": [{
                "path": e.path,
                "line": e.line,
                "column": e.col,
                "message": e.message,
                "cause": None if e.cause is None else {"id": e.cause.id, "cause": e.cause_text, "fix": e.fix},
            } for e in u.errors],
            "more_errors": u.more,
        } for u in result.units],
    }


def report_data(report: AuditReport) -> dict:
    used = {x.rule for f in report.files for x in f.findings}
    rules = {rid: {"severity": r.severity, "summary": r.summary, "note": r.note, "source": r.source,
                   "help_uri": r.help_uri}
             for rid, r in sorted(report.rules.items()) if r.source == "audit" or rid in used}
    return {
        "schema": SCHEMA,
        "tool": {"name": "hipport", "version": report.tool_version},
        "target": {"offload_arch": list(report.offload_arch), "rocm_version": report.rocm_version},
        "readiness_definition": READINESS_DEFINITION,
        "severity_weights": dict(SEVERITY_WEIGHT),
        "totals": {
            "files": len(report.files),
            "files_changed": report.files_changed,
            "files_with_findings": report.files_with_findings,
            "files_failed": report.files_failed,
            "lines": report.lines,
            "converted": report.converted,
            "converted_by_category": dict(sorted(report.by_category.items())),
            "served": report.served,
            "files_built_for_amd": report.files_built_for_amd,
            "findings": report.findings,
            "findings_by_severity": _severities(report.by_severity),
            "findings_by_rule": dict(sorted(report.by_rule.items())),
            "manual_work": report.manual,
            "readiness": round(report.readiness, 4),
            "baseline_hidden": report.baseline_hidden,
        },
        "rules": rules,
        "verify": _verify(report.verify),
        "files": [_file(f, report) for f in report.files],
    }


def render_json(report: AuditReport) -> str:
    return json.dumps(report_data(report), indent=1, ensure_ascii=False) + "\n"
