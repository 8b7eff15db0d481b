"""The audit report as plain data: what every renderer (HTML, JSON, SARIF, Markdown) draws from.

Built once per run from each file's bytes, its audit findings and an in-memory conversion (nothing is written).
No formatting happens here; the renderers only read these objects.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hipport import __version__
from hipport.files import show
from hipport.model import Edit, FileResult, Finding

if TYPE_CHECKING:  # `hipport audit` imports this module to show a patch: without the lexer and the compiler driver
    from hipport.convert.verify import UnitResult, VerifyResult
    from hipport.scan import Lines

SEVERITY_ORDER = ("error", "warning", "info")
# Hand work per finding, counted in "references' worth" against the references converted automatically.
SEVERITY_WEIGHT = {"error": 4, "warning": 2, "info": 1}

READINESS_DEFINITION = (
    "Porting readiness = A / (A + M), where A is the number of CUDA references hipport converts automatically "
    "and M is the hand work left: each finding counts 4 for an error, 2 for a warning and 1 for info. "
    "A file with neither converted references nor findings is 100% ready (nothing to port). "
    "In a project that already builds for AMD, A also counts the CUDA references its own HIP path serves (names its "
    "compatibility layer maps, the HIP runtime header it includes, conditions its AMD build evaluates as written), "
    "and a file only the NVIDIA build includes counts nothing."
)

HIP_GUIDE = "https://rocm.docs.amd.com/projects/HIP/en/latest/how-to/hip_porting_guide.html"
HIP_LANGUAGE = "https://rocm.docs.amd.com/projects/HIP/en/latest/how-to/hip_cpp_language_extensions.html"
ROCM_ATOMICS = "https://rocm.docs.amd.com/en/latest/reference/gpu-atomics-operation.html"
# hipport has no public home page yet; SARIF's tool.informationUri points at the porting guide it follows.
INFORMATION_URI = HIP_GUIDE

_FAMILY_URI = {"atomics": ROCM_ATOMICS}


@dataclass(frozen=True, slots=True)
class RuleInfo:
    id: str
    severity: str          # the default severity
    summary: str
    note: str
    source: str            # "audit" (hazard rules) or "convert" (what the conversion left)
    help_uri: str


@dataclass(slots=True)
class FindingReport:
    rule: str
    severity: str
    line: int
    col: int
    message: str
    confidence: str
    source: str                         # "audit" | "convert"
    source_line: str                    # the text of the line, stripped
    patch: list[str] = field(default_factory=list)          # unified-diff hunk lines ("@@ ...", "-...", "+...")
    edits: list[dict] = field(default_factory=list)         # byte offsets and line/col of each replacement


@dataclass(slots=True)
class FileReport:
    path: str                           # as given on the command line (joined with the walked directory)
    uri: str                            # relative posix path from the working directory, else a file:// URI
    lines: int = 0
    size: int = 0                       # bytes
    conversions: list[dict] = field(default_factory=list)   # {"cuda", "hip", "category", "line"}
    diff: str = ""                      # unified diff of the automatic conversion ("" when unchanged)
    findings: list[FindingReport] = field(default_factory=list)
    error: str | None = None            # the file could not be read or lexed
    hip_path: str = ""                  # why the file already builds for AMD (FileResult.hip_path), or ""
    other_platform: str = ""            # why only the NVIDIA build compiles it (FileResult.other_platform), or ""
    served: int = 0                     # CUDA references its HIP path serves already (FileResult.served)

    @property
    def converted(self) -> int:
        return len(self.conversions)

    @property
    def automatic(self) -> int:
        """A of the readiness: converted, or served by the project's own HIP path; none in the NVIDIA build's file."""
        return 0 if self.other_platform else self.converted + self.served

    @property
    def counted_manual(self) -> int:
        """M of the readiness: the other platform's file is no work for AMD."""
        return 0 if self.other_platform else self.manual

    @property
    def by_category(self) -> Counter:
        return Counter(c["category"] for c in self.conversions)

    @property
    def by_severity(self) -> Counter:
        return Counter(f.severity for f in self.findings)

    @property
    def by_rule(self) -> Counter:
        return Counter(f.rule for f in self.findings)

    @property
    def manual(self) -> int:
        return sum(SEVERITY_WEIGHT.get(f.severity, 1) for f in self.findings)

    @property
    def readiness(self) -> float:
        return readiness(self.automatic, self.counted_manual)

    @property
    def changed(self) -> bool:
        return bool(self.diff)


@dataclass(slots=True)
class AuditReport:
    files: list[FileReport]
    rules: dict[str, RuleInfo]          # every rule that a finding refers to, plus all hazard rules
    offload_arch: tuple[str, ...] = ()
    rocm_version: str = ""
    tool_version: str = __version__
    baseline_hidden: int = 0            # findings accepted by --baseline and left out
    verify: VerifyResult | None = None  # `audit --verify`: the converted tree compiled with hipcc (None: not run)
    _units: dict | None = field(default=None, init=False, repr=False, compare=False)

    def unit(self, path: str) -> UnitResult | None:
        """The verify result of the file at ``path`` (a FileReport's path), or None: not verified, or not a
        translation unit of its own (a header, a file another #includes)."""
        if self.verify is None:
            return None
        if self._units is None:
            self._units = {u.shown: u for u in self.verify.units}
        return self._units.get(path)

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def converted(self) -> int:
        return sum(f.converted for f in self.files)

    @property
    def by_category(self) -> Counter:
        total: Counter = Counter()
        for f in self.files:
            total.update(f.by_category)
        return total

    @property
    def by_severity(self) -> Counter:
        total: Counter = Counter()
        for f in self.files:
            total.update(f.by_severity)
        return total

    @property
    def by_rule(self) -> Counter:
        total: Counter = Counter()
        for f in self.files:
            total.update(f.by_rule)
        return total

    @property
    def findings(self) -> int:
        return sum(len(f.findings) for f in self.files)

    @property
    def manual(self) -> int:
        return sum(f.manual for f in self.files)

    @property
    def served(self) -> int:
        return sum(f.served for f in self.files if not f.other_platform)

    @property
    def automatic(self) -> int:
        return sum(f.automatic for f in self.files)

    @property
    def files_built_for_amd(self) -> int:
        return sum(1 for f in self.files if f.hip_path and not f.other_platform)

    @property
    def readiness(self) -> float:
        return readiness(self.automatic, sum(f.counted_manual for f in self.files))

    @property
    def files_changed(self) -> int:
        return sum(1 for f in self.files if f.changed)

    @property
    def files_with_findings(self) -> int:
        return sum(1 for f in self.files if f.findings)

    @property
    def files_failed(self) -> int:
        return sum(1 for f in self.files if f.error is not None)

    def rule_severity_counts(self) -> list[tuple[str, Counter]]:
        """(rule id, Counter of severities) for every rule with findings, the most hand work first."""
        table: dict[str, Counter] = {}
        for f in self.files:
            for x in f.findings:
                table.setdefault(x.rule, Counter())[x.severity] += 1
        def weight(c: Counter) -> int:
            return sum(SEVERITY_WEIGHT.get(s, 1) * n for s, n in c.items())

        return sorted(table.items(), key=lambda kv: (-weight(kv[1]), -kv[1].get("error", 0), kv[0]))


def readiness(automatic: int, manual: int) -> float:
    """Share of the porting work that is automatic, 0..1 (1 when there is nothing to do)."""
    total = automatic + manual
    return 1.0 if total == 0 else automatic / total


def percent(value: float) -> str:
    """A readiness as a whole percentage that never rounds a remaining finding up to 100%."""
    p = value * 100
    return f"{int(p)}%" if p < 100 else "100%"


def rule_table(rules: dict) -> dict[str, RuleInfo]:
    """Report records of every rule in ``rules`` (audit.hazards.load_all_rules: the hazards and the conversion's
    findings, family "convert")."""
    return {h.id: RuleInfo(h.id, h.severity, h.summary, h.note, "convert", HIP_GUIDE) if h.family == "convert"
            else RuleInfo(h.id, h.severity, h.summary, h.note, "audit", _FAMILY_URI.get(h.family, HIP_LANGUAGE))
            for h in rules.values()}


def unknown_rule(rule_id: str, severity: str) -> RuleInfo:
    return RuleInfo(rule_id, severity, rule_id, "", "convert", HIP_GUIDE)


def display_uri(path: Path) -> str:
    """A path relative to the working directory in posix form (what SARIF consumers resolve against the
    repository root), or a file:// URI when the file lies outside it."""
    try:
        rel = os.path.relpath(path.resolve(), Path.cwd().resolve())
    except ValueError:  # another drive on Windows
        return path.resolve().as_uri()
    if rel.startswith(".."):
        return path.resolve().as_uri()
    return show(Path(rel).as_posix())  # a name that is not UTF-8 as \xNN: every report format is UTF-8 text


def count_lines(src: bytes) -> int:
    if not src:
        return 0
    return src.count(b"\n") + (0 if src.endswith(b"\n") else 1)


def suggestion_hunk(src: bytes, finding: Finding) -> list[str]:
    """The finding's edits as a unified-diff hunk over the lines they touch (empty when it has none)."""
    from hipport.model import apply_suggestions

    if not finding.edits:
        return []
    first = min(e.start for e in finding.edits)
    last = max(e.end for e in finding.edits)
    line_start = src.rfind(b"\n", 0, first) + 1
    line_end = src.find(b"\n", last)
    if line_end == -1:
        line_end = len(src)
    old = src[line_start:line_end]
    shifted = tuple(Edit(e.start - line_start, e.end - line_start, e.new) for e in finding.edits)
    new = apply_suggestions(old, [Finding(finding.rule_id, finding.severity, finding.line, finding.col,
                                          finding.message, finding.confidence, shifted)])
    old_lines = old.decode("utf-8", "replace").split("\n")
    new_lines = new.decode("utf-8", "replace").split("\n")
    line_no = src.count(b"\n", 0, line_start) + 1

    def rng(n: int) -> str:
        return f"{line_no}" if n == 1 else f"{line_no},{n}"

    out = [f"@@ -{rng(len(old_lines))} +{rng(len(new_lines))} @@"]
    out += ["-" + x.rstrip("\r") for x in old_lines]
    out += ["+" + x.rstrip("\r") for x in new_lines]
    return out


def _edit_records(src: bytes, lines: Lines, edits: tuple[Edit, ...]) -> list[dict]:
    out = []
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        start_line, start_col = lines.line_col(e.start)
        end_line, end_col = lines.line_col(e.end)
        out.append({"start": e.start, "end": e.end, "start_line": start_line, "start_col": start_col,
                    "end_line": end_line, "end_col": end_col, "new": e.new.decode("utf-8", "replace")})
    return out


def file_report(path: Path, src: bytes, findings: list[Finding], conversion: FileResult | None,
                convert_findings: bool = True, convert_ids: frozenset = frozenset()) -> FileReport:
    """One file's record. ``findings`` are the audit's (after baseline and suppressions); those whose rule is in
    ``convert_ids`` came from the conversion (the command line merges both into one set). ``conversion`` is the
    in-memory result of the convert engine on the same bytes, whose own findings join the list when
    ``convert_findings``."""
    from hipport.diffs import unified_diff
    from hipport.scan import Lines

    report = FileReport(show(path), display_uri(path), count_lines(src), len(src))
    text_lines = src.split(b"\n")
    lines = Lines(src)

    def line_text(n: int) -> str:
        raw = text_lines[n - 1] if 0 < n <= len(text_lines) else b""
        return raw.decode("utf-8", "replace").rstrip("\r").strip()

    for f in findings:
        report.findings.append(FindingReport(f.rule_id, f.severity, f.line, f.col, f.message, f.confidence,
                                             "convert" if f.rule_id in convert_ids else "audit",
                                             line_text(f.line), suggestion_hunk(src, f),
                                             _edit_records(src, lines, f.edits)))
    if conversion is not None:
        if conversion.error is not None:
            report.error = conversion.error
        else:
            report.conversions = [{"cuda": c.cuda, "hip": c.hip, "category": c.category, "line": c.line}
                                  for c in conversion.conversions]
            report.diff = unified_diff(conversion, report.uri).decode("utf-8", "replace")
            report.hip_path, report.other_platform = conversion.hip_path, conversion.other_platform
            report.served = conversion.served
            if convert_findings:
                for f in conversion.findings:
                    report.findings.append(FindingReport(f.rule_id, f.severity, f.line, f.col, f.message,
                                                         f.confidence, "convert", line_text(f.line)))
    report.findings.sort(key=lambda x: (x.line, x.col, x.rule))
    return report


def failed_file(path: Path, error: str) -> FileReport:
    return FileReport(show(path), display_uri(path), error=error)
