"""Plain data passed between the scanner, the engine and the reports."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace bytes ``[start, end)`` of the original source with ``new``."""

    start: int
    end: int
    new: bytes


@dataclass(frozen=True, slots=True)
class Finding:
    """Something the user should know about a place in a file."""

    rule_id: str
    severity: str  # "error" | "warning" | "info"
    line: int
    col: int
    message: str
    confidence: str = "high"  # "high" | "medium" | "low"
    edits: tuple[Edit, ...] = ()
    subject: str = ""  # the CUDA name or header the finding is about, for tallies


@dataclass(slots=True)
class Conversion:
    """One automatic rename, kept for the summary and reports."""

    cuda: str
    hip: str
    category: str
    line: int
    # The bytes rewritten (-1: not known): the audit leaves a finding on them to the conversion.
    start: int = -1
    end: int = -1


@dataclass(slots=True)
class FileResult:
    """Everything one file produced. ``after`` is None when the file could not be processed."""

    path: str
    before: bytes
    after: bytes | None
    conversions: list[Conversion] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unknown: list[tuple[str, int, int]] = field(default_factory=list)  # (name, line, col)
    defines: set[str] = field(default_factory=set)  # macros the file defines, so they are not "unknown"
    error: str | None = None
    changed_flag: bool | None = None  # set once the texts are released
    hip: bool = False  # the input was HIP code already: brought forward to the targeted release, not ported
    # Why the file already builds for AMD (`#ifdef USE_HIP` at line 3, a compatibility header it includes, a `.hip`
    # file, CMake's `enable_language(HIP)`), or "": such a file's other-platform code is left as it is.
    hip_path: str = ""
    # Why the file is the other platform's (only NVIDIA branches include it: ggml's `vendors/cuda.h`), or "": such a
    # file is left as it is.
    other_platform: str = ""
    # CUDA references the file's HIP path serves already (names its compatibility layer maps, conditions its AMD
    # build evaluates as written): left as they are, yet AMD work done, which the readiness counts as automatic.
    served: int = 0

    @property
    def changed(self) -> bool:
        if self.changed_flag is not None:
            return self.changed_flag
        return self.after is not None and self.after != self.before

    def release_text(self) -> None:
        """Drop the file's bytes once written: a 10,000-file run must not hold (or ship between processes)
        every file twice just for the summary."""
        self.changed_flag = self.changed
        self.before = b""
        if self.after is not None:
            self.after = b""


def apply_edits(src: bytes, edits: list[Edit]) -> bytes:
    """Apply edits back to front so earlier offsets stay valid; an edit overlapping one already applied is dropped."""
    if not edits:
        return src
    view = memoryview(src)  # slices of a view are not copies: the join makes the one new copy
    out = []
    pos = len(src)
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        if edit.end > pos:
            continue
        out.append(view[edit.end : pos])
        out.append(edit.new)
        pos = edit.start
    out.append(view[:pos])
    return b"".join(reversed(out))


# A finding's confidence, most certain first. `high` is kept for patches that are mechanical and proven by a
# fixture (a reviewed `.fixed.cu`, and for warp-level code one run on 64 lanes); `convert --apply-suggestions`
# applies only those unless asked for more.
CONFIDENCE_LEVELS = ("high", "medium", "low")


def apply_suggestions(src: bytes, findings, select: set[str] | frozenset[str] | None = None,
                      level: str = "low") -> bytes:
    """Apply the edits of the findings whose rule is in ``select`` (all when empty or None) and whose confidence
    is ``level`` or higher. Identical edits from several findings are applied once; an edit overlapping one
    already taken is skipped."""
    edits: list[Edit] = []
    seen = set()
    allowed = CONFIDENCE_LEVELS[: CONFIDENCE_LEVELS.index(level) + 1]
    for f in findings:
        if (select and f.rule_id not in select) or f.confidence not in allowed:
            continue
        for e in f.edits:
            key = (e.start, e.end, e.new)
            if key not in seen:
                seen.add(key)
                edits.append(e)
    return apply_edits(src, edits)
