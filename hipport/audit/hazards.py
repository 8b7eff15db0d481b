"""Load and validate the hazard rules in ``rules/hazards/*.toml``: id, severity, summary, note, and the
conditions under which a target (ROCm version, offload architecture) changes the severity. The findings of the
conversion (``rules/findings/*.toml``, family "convert") are records of the same shape: `load_all_rules` is the one
registry every path that takes a rule id reads (select/ignore, suppressions, baselines, `rules show`, reports).

A broken file stops the tool at load time with one line naming the file and the key, never halfway through a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hipport.rocm import WAVE64_PREFIXES, wave_size  # noqa: F401  (the audit's checks import them from here)
from hipport.rules import RuleError, builtin_rules_dir, load_cached

SEVERITIES = ("info", "warning", "error")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
CONFIDENCES = ("low", "medium", "high")
_TOP_KEYS = frozenset({"id", "severity", "summary", "note", "family", "when", "fixed_by_convert",
                       "instantiated_only"})
_REQUIRED = ("id", "severity", "summary", "note", "family")
_WHEN_KEYS = frozenset({"rocm_at_least", "rocm_below", "arch_wave32", "arch_wave64", "severity"})
_VERSION = re.compile(r"^\d+(?:\.\d+){0,2}$")
_ID = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
FIXED_BY_CONVERT = ("warp", "shim", "wavefront", "guard")  # conversion categories: see Hazard.fixed_by_convert


class HazardError(Exception):
    """A hazard rule file is malformed; the message names the file and the key."""


def parse_version(text: str) -> tuple[int, ...]:
    if not _VERSION.match(text):
        raise ValueError(f"not a version: {text!r} (expected e.g. 6.2 or 7.0)")
    return tuple(int(p) for p in text.split("."))


@dataclass(frozen=True, slots=True)
class SeverityWhen:
    severity: str
    rocm_at_least: tuple[int, ...] | None = None
    rocm_below: tuple[int, ...] | None = None
    arch_wave32: bool = False
    arch_wave64: bool = False

    def applies(self, rocm: tuple[int, ...], archs: tuple[str, ...]) -> bool:
        if self.rocm_at_least is not None and rocm < self.rocm_at_least:
            return False
        if self.rocm_below is not None and rocm >= self.rocm_below:
            return False
        if self.arch_wave32 and not any(wave_size(a) == 32 for a in archs):
            return False
        if self.arch_wave64 and not any(wave_size(a) == 64 for a in archs):
            return False
        return True


@dataclass(frozen=True, slots=True)
class Hazard:
    id: str
    family: str
    severity: str
    summary: str
    note: str
    when: tuple[SeverityWhen, ...] = ()
    # The conversion categories that settle this finding by themselves, so that it is converted work, not hand
    # work: "warp", a rewrite of the bytes it points at (a full 32-bit mask, a `*_sync` call the target lacks);
    # "shim", a stand-in definition of the name it says is missing (its error; a warning about what a call means
    # stays); "wavefront", a rewrite of the bytes it points at for ROCm 7's wavefront width (convert/wave_width.py);
    # "guard", a guard around the definition it names (convert/sync_builtins.py, convert/redefinitions.py).
    fixed_by_convert: tuple[str, ...] = ()
    # The hazard exists only in code the compiler instantiates: a value that goes wrong at run time, or a
    # static_assert inside HIP's own templates (the `*_sync` masks), which clang checks where the calling template
    # is instantiated, not where it is written (rocm7-hipcc: a 32-bit `__syncwarp` mask in a template nothing uses
    # compiles). In a template nothing in the project names it is an info (audit/uninstantiated.py).
    instantiated_only: bool = False

    def severity_for(self, rocm: tuple[int, ...], archs: tuple[str, ...]) -> str:
        """The last matching `when` entry wins; with none, the default severity."""
        result = self.severity
        for w in self.when:
            if w.applies(rocm, archs):
                result = w.severity
        return result


def _hazard_dir(name: str = "hazards") -> Path:
    try:
        candidate = builtin_rules_dir() / name
    except RuleError as exc:
        raise HazardError(str(exc)) from None
    if not candidate.is_dir():
        raise HazardError(f"{candidate}: the bundled {name} rules are missing; reinstall hipport")
    return candidate


def _load_one(path: Path) -> Hazard:
    import tomllib  # here: the rules come from the user cache while no file changed

    name = path.name
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HazardError(f"{name}: cannot be read: {exc}") from None
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise HazardError(f"{name}: unknown key `{unknown[0]}` (allowed: {', '.join(sorted(_TOP_KEYS))})")
    for key in _REQUIRED:
        if key not in data:
            raise HazardError(f"{name}: missing key `{key}`")
        if not isinstance(data[key], str) or not data[key].strip():
            raise HazardError(f"{name}: key `{key}` must be a non-empty string")
    if data["id"] != path.stem:
        raise HazardError(f"{name}: key `id` is {data['id']!r} but the file name says {path.stem!r}")
    if not _ID.match(data["id"]):
        raise HazardError(f"{name}: key `id` must be lower-case words joined by '-'")
    if data["severity"] not in SEVERITIES:
        raise HazardError(f"{name}: key `severity` must be one of {', '.join(SEVERITIES)}")
    if "\n" in data["summary"].strip():
        raise HazardError(f"{name}: key `summary` must be one line")
    when = []
    raw_when = data.get("when", [])
    if not isinstance(raw_when, list):
        raise HazardError(f"{name}: key `when` must be an array of tables ([[when]])")
    for k, entry in enumerate(raw_when):
        where = f"{name}: when[{k}]"
        if not isinstance(entry, dict):
            raise HazardError(f"{where}: must be a table")
        bad = sorted(set(entry) - _WHEN_KEYS)
        if bad:
            raise HazardError(f"{where}: unknown key `{bad[0]}` (allowed: {', '.join(sorted(_WHEN_KEYS))})")
        if entry.get("severity") not in SEVERITIES:
            raise HazardError(f"{where}: key `severity` must be one of {', '.join(SEVERITIES)}")
        versions = {}
        for key in ("rocm_at_least", "rocm_below"):
            if key in entry:
                try:
                    versions[key] = parse_version(str(entry[key]))
                except ValueError as exc:
                    raise HazardError(f"{where}: key `{key}`: {exc}") from None
        for key in ("arch_wave32", "arch_wave64"):
            if key in entry and not isinstance(entry[key], bool):
                raise HazardError(f"{where}: key `{key}` must be true or false")
        when.append(SeverityWhen(entry["severity"], versions.get("rocm_at_least"), versions.get("rocm_below"),
                                 entry.get("arch_wave32", False), entry.get("arch_wave64", False)))
    fixed = data.get("fixed_by_convert", [])
    if not isinstance(fixed, list) or not set(fixed) <= set(FIXED_BY_CONVERT):
        raise HazardError(f"{name}: key `fixed_by_convert` must be a list of "
                          + ", ".join(f"\"{c}\"" for c in FIXED_BY_CONVERT))
    if not isinstance(data.get("instantiated_only", False), bool):
        raise HazardError(f"{name}: key `instantiated_only` must be true or false")
    return Hazard(data["id"], data["family"], data["severity"], data["summary"].strip(),
                  data["note"].strip(), tuple(when), tuple(fixed), data.get("instantiated_only", False))


def _load_dir(root: Path, family: str | None = None) -> dict[str, Hazard]:
    """The rules of a folder by id (the file name), each of ``family`` if given, from the user cache while no
    file changed: parsing the TOML would cost a pre-commit hook's cached run a tenth of its time."""
    files = sorted(root.glob("*.toml"))

    def parse() -> dict[str, Hazard]:
        rules = {}
        for path in files:
            rule = _load_one(path)
            if family is not None and rule.family != family:
                raise HazardError(f"{path.name}: key `family` must be \"{family}\" in rules/{root.name}")
            rules[rule.id] = rule
        return rules

    return load_cached("hazards", [Path(__file__), *files], parse)


@lru_cache(maxsize=None)
def load_hazards(directory: str | None = None) -> dict[str, Hazard]:
    """All hazard rules by id. Raises HazardError for the first malformed file."""
    root = Path(directory) if directory else _hazard_dir()
    hazards = _load_dir(root)
    if not hazards:
        raise HazardError(f"{root}: no hazard rules (*.toml) found")
    return hazards


@lru_cache(maxsize=None)
def load_findings() -> dict[str, Hazard]:
    """The conversion's findings by id (``rules/findings/*.toml``): each of family "convert"."""
    return _load_dir(_hazard_dir("findings"), family="convert")


@lru_cache(maxsize=None)
def load_all_rules() -> dict[str, Hazard]:
    """Every rule id a finding can carry, the audit's hazards and the conversion's findings, by id."""
    hazards = load_hazards()
    found = load_findings()
    both = sorted(set(hazards) & set(found))
    if both:
        raise HazardError(f"{both[0]}: both rules/hazards and rules/findings define it; keep one")
    return {**hazards, **found}


def describe_rule(rule_id: str) -> str:
    """What `hipport rules show RULE-ID` prints: id, severity (and when it changes), summary and the note."""
    import textwrap

    hazards = load_all_rules()
    hazard = hazards.get(rule_id)
    if hazard is None:
        close = [h for h in hazards if rule_id in h or h in rule_id]
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known rules: {', '.join(sorted(hazards))}"
        raise KeyError(f"no audit or convert rule `{rule_id}`{hint}")
    lines = [f"{hazard.id} ({hazard.family}): {hazard.summary}", f"default severity: {hazard.severity}"]
    for w in hazard.when:
        conds = []
        if w.rocm_at_least:
            conds.append("ROCm >= " + ".".join(map(str, w.rocm_at_least)))
        if w.rocm_below:
            conds.append("ROCm < " + ".".join(map(str, w.rocm_below)))
        if w.arch_wave32:
            conds.append("a wave32 target (gfx10+) is selected")
        if w.arch_wave64:
            conds.append("a wave64 target (gfx8/gfx9) is selected")
        lines.append(f"  {w.severity} when {' and '.join(conds) or 'always'}")
    lines.append("")
    for para in hazard.note.split("\n\n"):
        lines.append(textwrap.fill(" ".join(para.split()), width=100))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
