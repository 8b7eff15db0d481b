"""What a ROCm release removed or changed in HIP's own names (rules/forward.toml): the current form of a HIP name
for a targeted release, and the words that tell a file written for an older release. Validated with one-line
errors; `semantic.load_semantic` caches the result with the other hand-written tables."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hipport.rules import RuleError

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RELEASE = re.compile(r"^\d+\.\d+$")
_KEYS = {
    "suffix": {"rocm", "prefix", "drop", "why", "source"},
    "rename": {"rocm", "names", "note", "why", "source"},
    "constructor": {"rocm", "calls", "why", "source"},
    "argument": {"rocm", "calls", "values", "keep", "note", "why", "source"},
}


@dataclass(frozen=True, slots=True)
class Suffix:
    since: tuple
    prefix: str
    drop: str


@dataclass(frozen=True, slots=True)
class Rename:
    since: tuple
    names: dict          # old HIP name -> current one
    note: str            # reported once a file where one is renamed ("" for none)


@dataclass(frozen=True, slots=True)
class Argument:
    since: tuple
    calls: dict          # function -> argument position
    values: dict         # argument text -> replacement
    keep: str            # an argument starting with this is already right
    note: str


@dataclass(frozen=True, slots=True)
class Forward:
    suffixes: tuple = ()
    renames: tuple = ()
    constructors: tuple = ()   # (since, {type: function})
    arguments: tuple = ()

    @property
    def first(self) -> tuple:
        """The oldest release any entry applies to ((999, 0) when there is none)."""
        entries = (*self.suffixes, *self.renames, *self.arguments)
        return min([e.since for e in entries] + [c[0] for c in self.constructors], default=(999, 0))

    def current(self, name: str, target: tuple) -> str:
        """``name`` as ROCm ``target`` spells it: `hipblasGemmEx_v2` -> `hipblasGemmEx` from 7.0 on."""
        for s in self.suffixes:
            if tuple(target[:2]) >= s.since and name.startswith(s.prefix):
                name = re.sub(re.escape(s.drop) + "(?=_|$)", "", name, count=1)  # not `_v2x`'s
        return name

    def renamed(self, target: tuple) -> tuple[dict, dict]:
        """({old name: current name}, {old name: note}) of the `[[rename]]` entries for ROCm ``target``."""
        names, notes = {}, {}
        for r in self.renames:
            if tuple(target[:2]) >= r.since:
                names.update(r.names)
                if r.note:
                    notes.update(dict.fromkeys(r.names, r.note))
        return names, notes

    def triggers(self) -> re.Pattern[bytes]:
        """A pattern that finds every word the forward pass acts on in a file's bytes (the `[[argument]]` calls
        excepted: alone, they are the current API). Exposed for a fast path that decides whether to look at a file."""
        words = sorted({n for r in self.renames for n in r.names} | {n for c in self.constructors for n in c[1]},
                       key=len, reverse=True)
        parts = [re.escape(w) for w in words]
        parts += [rf"{re.escape(s.prefix)}\w*?{re.escape(s.drop)}(?:_\w*)?" for s in self.suffixes]
        return re.compile(rb"\b(?:" + "|".join(parts).encode() + rb")\b" if parts else rb"(?!)")


def _release(where: str, value) -> tuple:
    if not isinstance(value, str) or not _RELEASE.match(value):
        raise RuleError(f"{where}: `rocm` must be a release like \"7.0\"")
    return tuple(int(x) for x in value.split("."))


def _names(where: str, key: str, value, ints: bool = False) -> dict:
    ok = isinstance(value, dict) and value and all(
        _IDENT.match(k) and (isinstance(v, int) and not isinstance(v, bool) and v >= 0 if ints
                             else isinstance(v, str) and _IDENT.match(v)) for k, v in value.items())
    if not ok:
        what = "non-negative argument positions" if ints else "C identifiers"
        raise RuleError(f"{where}: `{key}` must map C identifiers to {what}")
    return dict(value)


def _text(where: str, entry: dict, key: str, required: bool = True) -> str:
    value = entry.get(key, "")
    if (required or key in entry) and not (isinstance(value, str) and value.strip()):
        raise RuleError(f"{where}: `{key}` must be a non-empty string")
    return value


def parse_forward(path: Path, data: dict) -> Forward:
    """The entries of rules/forward.toml, each checked; a malformed one raises `RuleError` naming it."""
    for key in data:
        if key not in _KEYS:
            raise RuleError(f"{path}: unknown table `{key}` (allowed: {', '.join(f'[[{k}]]' for k in _KEYS)})")
    out: dict[str, list] = {k: [] for k in _KEYS}
    for kind, allowed in _KEYS.items():
        entries = data.get(kind, [])
        if not isinstance(entries, list):
            raise RuleError(f"{path}: `{kind}` must be an array of tables (`[[{kind}]]`)")
        for n, entry in enumerate(entries, 1):
            where = f"{path}: `[[{kind}]]` #{n}"
            if not isinstance(entry, dict):
                raise RuleError(f"{where} must be a table")
            unknown = sorted(set(entry) - allowed)
            if unknown:
                raise RuleError(f"{where} has unknown key `{unknown[0]}` (allowed: {', '.join(sorted(allowed))})")
            since = _release(where, entry.get("rocm"))
            _text(where, entry, "why")
            _text(where, entry, "source")
            if kind == "suffix":
                prefix, drop = _text(where, entry, "prefix"), _text(where, entry, "drop")
                if not _IDENT.match(prefix) or not re.fullmatch(r"\w+", drop):
                    raise RuleError(f"{where}: `prefix` and `drop` must be parts of a C identifier")
                out[kind].append(Suffix(since, prefix, drop))
            elif kind == "rename":
                out[kind].append(Rename(since, _names(where, "names", entry.get("names")),
                                        _text(where, entry, "note", required=False)))
            elif kind == "constructor":
                out[kind].append((since, _names(where, "calls", entry.get("calls"))))
            else:
                values = entry.get("values")
                if not isinstance(values, dict) or not all(
                        _IDENT.match(k) and isinstance(v, str) and _IDENT.match(v) for k, v in values.items()):
                    raise RuleError(f"{where}: `values` must map argument texts (C identifiers) to C identifiers")
                keep = _text(where, entry, "keep")
                if not re.fullmatch(r"\w+", keep):
                    raise RuleError(f"{where}: `keep` must be the start of a C identifier")
                out[kind].append(Argument(since, _names(where, "calls", entry.get("calls"), ints=True), dict(values),
                                          keep, _text(where, entry, "note")))
    return Forward(tuple(out["suffix"]), tuple(out["rename"]), tuple(out["constructor"]), tuple(out["argument"]))
