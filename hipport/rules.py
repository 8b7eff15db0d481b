"""Load and validate the rule data in ``rules/`` into one index, once, before any source is read."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

VERSION_KEYS = frozenset(
    {
        "hip_added", "hip_deprecated", "hip_changed", "hip_removed", "experimental",
        "roc_added", "roc_deprecated", "roc_changed", "roc_removed",
        "cuda_added", "cuda_deprecated", "cuda_changed", "cuda_removed",
    }
)
NAME_KEYS = VERSION_KEYS | {"hip", "roc", "section"}
HEADER_KEYS = frozenset({"hip", "roc", "remove", "unsupported"})
_VERSION = re.compile(r"^(?:\d+(?:\.\d+){0,2}|unknown)$")  # "unknown": a [DEPRECATED] section with no version
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Earlier families win when two tables map the same CUDA name; the runtime API is the one most code means.
FAMILY_ORDER = ("runtime", "device", "driver", "rtc", "cucomplex", "cublas", "curand", "cufft",
                "cusparse", "cusolver", "cudnn", "cub")


class RuleError(Exception):
    """A rule file is malformed; the message names the file and the entry."""


@dataclass(frozen=True, slots=True)
class NameRule:
    cuda: str
    family: str
    hip: str | None
    roc: str | None
    section: str
    versions: dict

    def target(self, roc: bool) -> str | None:
        """The name to write, or None when there is no equivalent (unsupported)."""
        if roc and self.roc:
            return self.roc
        return self.hip


@dataclass(frozen=True, slots=True)
class HeaderRule:
    cuda: str
    hip: str | None
    roc: str | None
    remove: bool
    unsupported: str | None

    def target(self, roc: bool) -> str | None:
        return (self.roc if roc and self.roc else self.hip)


@dataclass(slots=True)
class RuleSet:
    names: dict[str, NameRule] = field(default_factory=dict)
    headers: dict[str, HeaderRule] = field(default_factory=dict)
    namespaces: dict[str, str] = field(default_factory=dict)
    family_counts: dict[str, int] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def builtin_rules_dir() -> Path:
    """``rules/`` ships inside the wheel as ``hipport/rules``; in a source checkout it sits beside the package."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules", here.parent / "rules"):
        if (candidate / "headers.toml").is_file():
            return candidate
    raise RuleError(f"{here}: the bundled `rules/` folder is missing; reinstall hipport")


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{path}: not valid TOML ({exc}); fix the file or remove it") from None
    except OSError as exc:
        raise RuleError(f"{path}: cannot read rule file ({exc.strerror})") from None


def _check_entry(path: Path, name: str, entry: object, allowed: frozenset) -> dict:
    if not isinstance(entry, dict):
        raise RuleError(f"{path}: entry `{name}` must be a table like `{{ hip = \"...\" }}`")
    for key, value in entry.items():
        if key not in allowed:
            raise RuleError(f"{path}: entry `{name}` has unknown key `{key}` (allowed: {', '.join(sorted(allowed))})")
        if key in VERSION_KEYS and not (isinstance(value, str) and _VERSION.match(value)):
            raise RuleError(f"{path}: entry `{name}` key `{key}` must be a version string like \"6.2.0\"")
        if key in ("hip", "roc", "section", "unsupported") and not (isinstance(value, str) and value):
            raise RuleError(f"{path}: entry `{name}` key `{key}` must be a non-empty string")
        if key == "remove" and not isinstance(value, bool):
            raise RuleError(f"{path}: entry `{name}` key `remove` must be true or false")
    return entry


def _load_mapping_file(path: Path, rules: RuleSet, override: bool) -> None:
    data = _read_toml(path)
    family = data.get("family", {})
    if not isinstance(family, dict) or not isinstance(family.get("name"), str):
        raise RuleError(f"{path}: missing `[family]` table with a `name`")
    fam = family["name"]
    names = data.get("names", {})
    if not isinstance(names, dict):
        raise RuleError(f"{path}: `[names]` must be a table")
    count = 0
    for cuda, entry in names.items():
        if not _IDENT.match(cuda):
            raise RuleError(f"{path}: entry `{cuda}` is not a C identifier")
        entry = _check_entry(path, cuda, entry, NAME_KEYS)
        if not override and cuda in rules.names:
            continue
        versions = {k: v for k, v in entry.items() if k in VERSION_KEYS}
        rules.names[cuda] = NameRule(cuda, fam, entry.get("hip"), entry.get("roc"), entry.get("section", ""), versions)
        count += 1
    rules.family_counts[fam] = rules.family_counts.get(fam, 0) + count


def _load_headers_file(path: Path, rules: RuleSet) -> None:
    data = _read_toml(path)
    for cuda, entry in data.get("headers", {}).items():
        entry = _check_entry(path, cuda, entry, HEADER_KEYS)
        if not (entry.get("hip") or entry.get("remove") or entry.get("unsupported")):
            raise RuleError(f"{path}: header `{cuda}` needs one of `hip`, `remove` or `unsupported`")
        rules.headers[cuda] = HeaderRule(cuda, entry.get("hip"), entry.get("roc"), bool(entry.get("remove")),
                                         entry.get("unsupported"))
    for ns, entry in data.get("namespaces", {}).items():
        entry = _check_entry(path, ns, entry, frozenset({"hip"}))
        rules.namespaces[ns] = entry["hip"]


def _family_key(path: Path) -> tuple[int, str]:
    stem = path.stem
    return (FAMILY_ORDER.index(stem) if stem in FAMILY_ORDER else len(FAMILY_ORDER), stem)


def load_rules(extra_dirs: list[Path] | tuple = ()) -> RuleSet:
    """Load the built-in rules, then each of ``extra_dirs`` (whose entries win)."""
    rules = RuleSet()
    base = builtin_rules_dir()
    mapping_files = sorted((base / "mappings").glob("*.toml"), key=_family_key)
    for path in mapping_files:
        _load_mapping_file(path, rules, override=False)
    _load_headers_file(base / "headers.toml", rules)
    rules.files = [*mapping_files, base / "headers.toml"]
    for extra in extra_dirs:
        extra = Path(extra)
        if not extra.is_dir():
            raise RuleError(f"{extra}: rule directory not found")
        for path in sorted(extra.glob("**/*.toml")):
            data_kind = _read_toml(path)
            if "headers" in data_kind or "namespaces" in data_kind:
                _load_headers_file(path, rules)
            else:
                _load_mapping_file(path, rules, override=True)
            rules.files.append(path)
    return rules
