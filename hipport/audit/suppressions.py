"""`// hipport: ignore` comments: which findings they silence, and the `unused-suppression` findings for those that
silence nothing or name a rule that does not exist.

A directive sits in any comment: `hipport: ignore` (bare: every rule) or `hipport: ignore[rule-a, rule-b]`, and
applies to the comment's own line(s) and the line below; the rest of the comment is the reason. The engine runs
this after every check, on the findings before `--select`/`--ignore`, so a suppression whose finding is merely not
selected in this run still counts as used."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from hipport.audit.hazards import load_all_rules
from hipport.model import Edit, Finding
from hipport.scan import COMMENT

RULE_ID = "unused-suppression"

# `ignore` as a whole word (not `ignored`, not `ignore-next-line`), then an optional `[...]` list. A directive
# quoted in prose (`hipport: ignore`, "hipport: ignore") is documentation, not a suppression.
_DIRECTIVE = re.compile(rb"(?<![`'\"\w])hipport:[ \t]*ignore(?![\w-])(?:[ \t]*\[([^\]\n]*)\])?")
_OPENER = re.compile(rb"(?://+!?|/\*+!?)[ \t]*")
_BLANK = b" \t"


@dataclass
class Suppression:
    start: int                    # the directive's bytes in the source
    end: int
    comment: tuple[int, int]      # the comment token holding it
    lines: frozenset[int]         # lines whose findings it silences
    ids: tuple[str, ...] | None   # None: bare, every rule
    list_span: tuple[int, int] | None = None   # the text between `[` and `]`
    used: set[str] = field(default_factory=set)   # ids that silenced something ("*" for the bare form)
    present: set[str] = field(default_factory=set)   # rules with a finding on its lines, silenced or not

    def silences(self, rule_id: str) -> bool:
        return self.ids is None or rule_id in self.ids


def find_suppressions(ctx) -> list[Suppression]:
    out = []
    for i in range(ctx.n):
        if ctx.kinds[i] != COMMENT:
            continue
        text = ctx.text[i]
        if b"hipport" not in text:
            continue
        start, end = ctx.starts[i], ctx.ends[i]
        first = ctx.lines.line_col(start)[0]
        last = ctx.lines.line_col(max(end - 1, start))[0]
        lines = frozenset({first, last, last + 1} | set(range(first, last + 1)))
        for m in _DIRECTIVE.finditer(text):
            if m.group(1) is None:
                ids, span = None, None
            else:
                ids = tuple(x.strip().decode("utf-8", "replace") for x in m.group(1).split(b",") if x.strip())
                span = (start + m.start(1), start + m.end(1))
            out.append(Suppression(start + m.start(), start + m.end(), (start, end), lines, ids, span))
    return out


def apply(ctx, findings: list[Finding]) -> tuple[list[Finding], list[Suppression]]:
    """The findings no suppression silences, and the suppressions with what each one silenced."""
    sups = find_suppressions(ctx)
    if not sups:
        return list(findings), sups
    by_line: dict[int, list[Suppression]] = {}
    for s in sups:
        for line in s.lines:
            by_line.setdefault(line, []).append(s)
    kept = []
    for f in findings:
        hit = False
        for s in by_line.get(f.line, ()):
            s.present.add(f.rule_id)
            if s.silences(f.rule_id):
                s.used.add("*" if s.ids is None else f.rule_id)
                hit = True
        if not hit:
            kept.append(f)
    return kept, sups


def report_unused(ctx, sups: list[Suppression]) -> list[Finding]:
    """One info finding per directive that silences nothing or names an unknown rule, with a patch that removes it
    (or, when some of its ids are in use, the ids that are not)."""
    known = set(load_all_rules())  # a conversion finding can be silenced too
    hazard = ctx.hazards[RULE_ID]
    severity = hazard.severity_for(ctx.rocm, tuple(ctx.options.offload_arch))
    out = []
    for s in sups:
        directive = ctx.src[s.start:s.end].decode("utf-8", "replace")
        if s.ids is None:
            if s.used:
                continue
            message = f"`{directive}` silences nothing: no finding on this line or the next; remove it"
            edit = _remove(ctx, s)
        else:
            unknown = [i for i in s.ids if i not in known or i == RULE_ID]
            unused = [i for i in s.ids if i not in unknown and i not in s.used]
            if s.ids and not unknown and not unused:
                continue
            problems = []
            fixes: dict[str, str] = {}   # misspelt id -> the rule it names, when that rule has a finding here
            for i in unknown:
                if i == RULE_ID:
                    problems.append(f"`{i}` cannot be silenced by a comment (use --ignore {RULE_ID})")
                    continue
                close = difflib.get_close_matches(i, sorted(known - {RULE_ID}), n=1, cutoff=0.6)
                if close and close[0] in s.present and close[0] not in s.ids:
                    fixes[i] = close[0]
                    problems.append(f"`{i}` is not a rule id; `{close[0]}` has a finding here")
                else:
                    problems.append(f"`{i}` is not a rule id" + (f" (did you mean `{close[0]}`?)" if close else ""))
            if unused:
                names = ", ".join(f"`{i}`" for i in unused)
                problems.append(f"{names} silence{'s' if len(unused) == 1 else ''} nothing: no such finding on "
                                f"this line or the next")
            if not s.ids:
                problems.append("it names no rule (a bare `hipport: ignore` silences every rule)")
            keep = list(dict.fromkeys(fixes.get(i, i) for i in s.ids if i in s.used or i in fixes))
            if keep:
                message = f"`{directive}`: " + "; ".join(problems) + f"; write `ignore[{', '.join(keep)}]`"
                edit = Edit(s.list_span[0], s.list_span[1], ", ".join(keep).encode())
            else:
                message = f"`{directive}`: " + "; ".join(problems) + "; remove it"
                edit = _remove(ctx, s)
        line, col = ctx.lines.line_col(s.start)
        out.append(Finding(RULE_ID, severity, line, col, message, "high", (edit,), directive))
    return out


def _remove(ctx, s: Suppression) -> Edit:
    """Delete the directive: the whole comment when the directive opens it (the rest is its reason), and the whole
    line when the comment is all there is on it; otherwise only the directive's text."""
    src = ctx.src
    c_start, c_end = s.comment
    if c_end > c_start and src[c_end - 1:c_end] == b"\r":  # keep a CRLF line ending whole
        c_end -= 1
    opener = _OPENER.match(src, c_start, c_end)
    if opener is None or opener.end() != s.start:
        start = s.start
        while start > c_start and src[start - 1] in _BLANK:
            start -= 1
        return Edit(start, s.end, b"")
    line_start = src.rfind(b"\n", 0, c_start) + 1
    eol = src.find(b"\n", c_end)
    eol = len(src) if eol == -1 else eol
    before = src[line_start:c_start]
    after = src[c_end:eol]
    if not before.strip(_BLANK) and not after.strip(_BLANK + b"\r"):
        return Edit(line_start, eol + 1 if eol < len(src) else eol, b"")  # the line goes, newline and all
    if not after.strip(_BLANK + b"\r"):
        start = c_start
        while start > line_start and src[start - 1] in _BLANK:
            start -= 1
        end = c_end
        while end < eol and src[end] in _BLANK:
            end += 1
        return Edit(start, end, b"")
    end = c_end
    while end < eol and src[end] in _BLANK:
        end += 1
    return Edit(c_start, end, b"")
