"""Totals over a run: what was converted, what could not be, and what no rule knows."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from typing import TYPE_CHECKING

from hipport.model import FileResult

if TYPE_CHECKING:  # a type name only: a run without --verify loads none of it
    from hipport.convert.verify import VerifyResult


@dataclass(slots=True)
class NameTally:
    count: int
    path: str
    line: int
    col: int


@dataclass(slots=True)
class Summary:
    files_scanned: int = 0
    files_changed: int = 0
    files_failed: int = 0
    conversions: Counter = field(default_factory=Counter)          # category -> references converted
    findings: Counter = field(default_factory=Counter)             # (severity, rule id) -> count
    unsupported: dict[str, NameTally] = field(default_factory=dict)
    unknown: dict[str, NameTally] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    verify: VerifyResult | None = None  # `--verify`: how the converted tree compiled
    # Of the files above, those that were HIP already (brought forward, not ported): what changed in them and what
    # they leave for a person.
    hip_files: int = 0
    hip_changed: int = 0
    hip_conversions: Counter = field(default_factory=Counter)  # category -> references rewritten in HIP files
    hip_findings: int = 0
    # Files that already build for AMD (a HIP path: `#if` on the HIP macros, a compatibility header, `.hip`, CMake's
    # HIP language), the first of them and why; files only the other platform's branches include.
    hip_path_files: int = 0
    hip_path_first: tuple[str, str] | None = None
    other_platform_files: int = 0
    # `setup.py` files that build a PyTorch extension with `CUDAExtension` (`pytorch-extension`): PyTorch builds
    # those for ROCm itself.
    pytorch_builds: list[str] = field(default_factory=list)

    @property
    def converted_total(self) -> int:
        return sum(self.conversions.values())


def _tally(table: dict[str, NameTally], name: str, path: str, line: int, col: int) -> None:
    entry = table.get(name)
    if entry is None:
        table[name] = NameTally(1, path, line, col)
    else:
        entry.count += 1


def summarize(results: list[FileResult]) -> Summary:
    summary = Summary()
    defined: set[str] = set()
    for result in results:
        defined |= result.defines
    for result in results:
        summary.files_scanned += 1
        if result.error is not None:
            summary.files_failed += 1
            summary.errors.append(result.error)
            continue
        if result.changed:
            summary.files_changed += 1
        if result.hip_path:
            summary.hip_path_files += 1
            # The first file with a HIP path of its own, rather than one it has from a file including it.
            if summary.hip_path_first is None or (summary.hip_path_first[1].startswith("included by")
                                                  and not result.hip_path.startswith("included by")):
                summary.hip_path_first = (result.path, result.hip_path)
        if result.other_platform:
            summary.other_platform_files += 1
        for conv in result.conversions:
            summary.conversions[conv.category] += 1
        if result.hip:
            summary.hip_files += 1
            summary.hip_changed += result.changed
            summary.hip_conversions.update(conv.category for conv in result.conversions)
            summary.hip_findings += len(result.findings)
        for finding in result.findings:
            summary.findings[(finding.severity, finding.rule_id)] += 1
            if finding.rule_id == "pytorch-extension":
                summary.pytorch_builds.append(result.path)
            if finding.rule_id in ("unsupported-api", "removed-api", "unsupported-header"):
                _tally(summary.unsupported, finding.subject, result.path, finding.line, finding.col)
        for name, line, col in result.unknown:
            if name not in defined:  # the tree's own macros are the user's names, not CUDA's
                _tally(summary.unknown, name, result.path, line, col)
    return summary
