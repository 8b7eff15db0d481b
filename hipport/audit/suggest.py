"""`convert --apply-suggestions`: audit a converted file and apply the patches of the opted-in rules. The command
line hands `fixer(...)` to the convert runner, so conversion itself never imports the audit."""

from __future__ import annotations

import functools

from hipport.audit.engine import AuditOptions, audit_source
from hipport.model import CONFIDENCE_LEVELS, Conversion, FileResult, apply_suggestions

_BOM = b"\xef\xbb\xbf"


def fixer(rocm_version: tuple, select: frozenset, level: str = "high"):
    """A picklable step for the runner: ``select`` empty means every rule; ``level`` the least confidence a
    patch needs to be applied."""
    return functools.partial(apply_to_result, rocm_version=tuple(rocm_version), select=frozenset(select),
                             level=level)


def apply_to_result(result: FileResult, *, rocm_version: tuple, select: frozenset, level: str = "high") -> None:
    """The audit runs on the HIP text (a byte-order mark set aside, as the converter does)."""
    text = result.after
    bom = text.startswith(_BOM)
    if bom:
        text = text[len(_BOM):]
    findings = audit_source(text, result.path, AuditOptions(rocm_version=rocm_version, select=select))
    allowed = CONFIDENCE_LEVELS[: CONFIDENCE_LEVELS.index(level) + 1]
    fixable = [f for f in findings if f.edits and f.confidence in allowed]
    if not fixable:
        return
    text = apply_suggestions(text, fixable, select, level)
    result.after = _BOM + text if bom else text
    for f in fixable:
        result.conversions.append(Conversion(f.rule_id, "suggestion", "suggestion", f.line))
