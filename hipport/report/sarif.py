"""`--report sarif`: SARIF 2.1.0 as GitHub code scanning reads it.

One run; tool.driver lists every hazard rule (and the conversion rules that produced a result) with short and
full descriptions, help text and markdown, a help URI and the default level. Each result has a ruleId, level,
message, one physical location (a URI relative to the working directory, start line and column) and, where the
audit suggests a patch, a fix whose replacements give the deleted region both as line/column and as bytes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hipport.report.model import INFORMATION_URI, AuditReport, RuleInfo

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
PROBLEM_SEVERITY = {"error": "error", "warning": "warning", "info": "recommendation"}


def _camel(rule_id: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in rule_id.split("-"))


def _plain(note: str) -> str:
    return "\n\n".join(" ".join(p.split()) for p in note.strip().split("\n\n") if p.strip())


def _rule(r: RuleInfo) -> dict:
    note = _plain(r.note) or r.summary
    return {
        "id": r.id,
        "name": _camel(r.id),
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": note},
        "help": {"text": note, "markdown": f"**{r.summary}**\n\n{note}\n\nMore: {r.help_uri}"},
        "helpUri": r.help_uri,
        "defaultConfiguration": {"level": LEVEL.get(r.severity, "warning")},
        "properties": {"tags": ["hip", "portability", r.source], "problem.severity":
                       PROBLEM_SEVERITY.get(r.severity, "warning")},
    }


def _fingerprint(uri: str, rule: str, line_text: str) -> str:
    key = "\0".join((uri, rule, " ".join(line_text.split())))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def sarif_data(report: AuditReport) -> dict:
    used = {x.rule for f in report.files for x in f.findings}
    ids = sorted(rid for rid, r in report.rules.items() if r.source == "audit" or rid in used)
    ids += sorted(used - set(ids))  # a finding whose rule the table lacks still gets a descriptor
    rules = []
    for rid in ids:
        info = report.rules.get(rid) or RuleInfo(rid, "warning", rid, "", "convert", INFORMATION_URI)
        rules.append(_rule(info))
    index = {rid: k for k, rid in enumerate(ids)}
    results = []
    notifications = []
    for f in report.files:
        if f.error:
            notifications.append({"level": "error", "message": {"text": f.error},
                                  "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.uri}}}]})
        for x in f.findings:
            location = {"physicalLocation": {
                "artifactLocation": {"uri": f.uri, **({} if ":" in f.uri else {"uriBaseId": "%SRCROOT%"})},
                "region": {"startLine": x.line, "startColumn": x.col,
                           **({"snippet": {"text": x.source_line}} if x.source_line else {})},
            }}
            result = {
                "ruleId": x.rule,
                "ruleIndex": index[x.rule],
                "level": LEVEL.get(x.severity, "warning"),
                "message": {"text": x.message},
                "locations": [location],
                "partialFingerprints": {"hipportLineHash/v1": _fingerprint(f.uri, x.rule, x.source_line)},
                "properties": {"confidence": x.confidence, "source": x.source},
            }
            if x.edits:
                result["fixes"] = [{
                    "description": {"text": "Suggested patch:\n" + "\n".join(x.patch)},
                    "artifactChanges": [{
                        "artifactLocation": {"uri": f.uri, **({} if ":" in f.uri else {"uriBaseId": "%SRCROOT%"})},
                        "replacements": [{
                            "deletedRegion": {"startLine": e["start_line"], "startColumn": e["start_col"],
                                              "endLine": e["end_line"], "endColumn": e["end_col"],
                                              "byteOffset": e["start"], "byteLength": e["end"] - e["start"]},
                            "insertedContent": {"text": e["new"]},
                        } for e in x.edits],
                    }],
                }]
            results.append(result)
    run = {
        "tool": {"driver": {"name": "hipport", "version": report.tool_version,
                            "semanticVersion": report.tool_version, "informationUri": INFORMATION_URI,
                            "rules": rules}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().resolve().as_uri() + "/"}},
        "invocations": [{"executionSuccessful": not notifications,
                         "toolExecutionNotifications": notifications}],
        "properties": {"offloadArch": list(report.offload_arch), "rocmVersion": report.rocm_version},
        "results": results,
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(report: AuditReport) -> str:
    return json.dumps(sarif_data(report), indent=1, ensure_ascii=False) + "\n"
