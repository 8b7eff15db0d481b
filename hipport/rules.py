"""Load and validate the rule data in ``rules/`` into one index, once, before any source is read."""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

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
    """A rule file is malformed; the message names the file and the entry, on one line whatever the names hold."""

    def __init__(self, message: str) -> None:
        super().__init__(message.replace("\r", "\\r").replace("\n", "\\n"))


class NameRule(NamedTuple):
    """One CUDA name's rule. A named tuple, not a dataclass: the rule cache holds ~9,000 of these, and a tuple is
    rebuilt from the cache without a Python call (`__reduce__`), a third of the time a frozen dataclass takes
    (46 -> 16 ms of a pre-commit hook's run)."""

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

    def __reduce__(self):
        # Interned, a family or a version is stored once in the cache, not 9,000 times.
        return (tuple.__new__, (NameRule, (_intern(self.cuda), _intern(self.family), _intern(self.hip),
                                           _intern(self.roc), _intern(self.section),
                                           {_intern(k): _intern(v) for k, v in self.versions.items()})))


class HeaderRule(NamedTuple):
    cuda: str
    hip: str | None
    roc: str | None
    remove: bool
    unsupported: str | None

    def target(self, roc: bool) -> str | None:
        return (self.roc if roc and self.roc else self.hip)

    def __reduce__(self):  # as NameRule's
        return (tuple.__new__, (HeaderRule, (self.cuda, _intern(self.hip), _intern(self.roc), self.remove,
                                             _intern(self.unsupported))))


def _intern(text: str | None) -> str | None:
    return text if text is None else sys.intern(text)


@dataclass(slots=True)
class RuleSet:
    names: dict[str, NameRule] = field(default_factory=dict)
    headers: dict[str, HeaderRule] = field(default_factory=dict)
    namespaces: dict[str, str] = field(default_factory=dict)
    family_notes: dict[str, str] = field(default_factory=dict)  # families reported, not renamed (hip target)
    # `[[unmapped]]` of headers.toml: (glob, note) for `<...>` CUDA headers no [headers] entry names; first wins
    unmapped_headers: list[tuple[str, str]] = field(default_factory=list)
    family_counts: dict[str, int] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    # rules/overrides.toml: names whose HIP target hipport sets otherwise than HIPIFY's tables -> (HIPIFY's, why)
    overrides: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    # rules/releases.toml: (first ROCm release, {CUDA header: HIP header}, {CUDA name: HIP name}), oldest first
    since: list[tuple[tuple, dict[str, str], dict[str, str]]] = field(default_factory=list)

    # [vector_operators] of releases.toml: (first ROCm release, operators HIP_vector_type has), oldest first
    vector_operators: list[tuple[tuple, frozenset]] = field(default_factory=list)

    def vector_operators_of(self, target: tuple) -> frozenset:
        """The operators on two vectors of one type that HIP_vector_type declares itself in ROCm ``target``."""
        found = self.vector_operators[0][1] if self.vector_operators else frozenset()
        for since, ops in self.vector_operators:
            if tuple(target[:2]) >= since:
                found = ops
        return found

    def later_release(self, cuda: str, target: tuple) -> tuple[tuple, str] | None:
        """(the first release after ``target`` that releases.toml gives a HIP name for ``cuda``, that name), or None:
        what a name HIP lacks in ``target`` is called from then on (`__nv_bfloat162` -> `__hip_bfloat162` from 6.0)."""
        for since, _headers, names in self.since:
            if since > tuple(target[:2]) and names.get(cuda) is not None:
                return since, names[cuda]
        return None

    def for_release(self, kind: str, cuda: str, target: tuple) -> str | None:
        """The HIP form of a CUDA header (``kind="headers"``) or name (``"names"``) that releases.toml gives
        ``target`` (a (major, minor) ROCm release), or None where the tables' form stands."""
        found = None
        for since, headers, names in self.since:
            if tuple(target[:2]) >= since:
                found = (headers if kind == "headers" else names).get(cuda, found)
        return found


def builtin_rules_dir() -> Path:
    """``rules/`` ships inside the wheel as ``hipport/rules``; in a source checkout it sits beside the package."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules", here.parent / "rules"):
        if (candidate / "headers.toml").is_file():
            return candidate
    raise RuleError(f"{here}: the bundled `rules/` folder is missing; reinstall hipport")


def _read_toml(path: Path) -> dict:
    import tomllib  # here: a run whose rules all come from the user cache parses no TOML

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{path}: not valid TOML ({exc}); fix the file or remove it") from None
    except UnicodeDecodeError:
        raise RuleError(f"{path}: not UTF-8 text; rule files must be UTF-8 TOML") from None
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


def _load_mapping_file(path: Path, data: dict, rules: RuleSet, override: bool) -> None:
    family = data.get("family", {})
    if not isinstance(family, dict) or not isinstance(family.get("name"), str):
        raise RuleError(f"{path}: missing `[family]` table with a `name`")
    fam = family["name"]
    names = data.get("names", {})
    if not isinstance(names, dict):
        raise RuleError(f"{path}: `[names]` must be a table")
    if "import" in data:
        _merge_imported(path, data, rules, fam, names)
        return
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


def _merge_imported(path: Path, data: dict, rules: RuleSet, fam: str, names: dict) -> None:
    """A file with an `[import]` table (hipify-perl's, see hipport/hipify_perl.py) merges: a name already loaded
    takes its `hip`/`roc` but keeps its family, section and versions (the versions given are added); entries of
    `[versions]` only add versions to names already loaded."""
    versions_only = data.get("versions", {})
    if not isinstance(versions_only, dict):
        raise RuleError(f"{path}: `[versions]` must be a table")
    count = 0
    for table, create in ((names, True), (versions_only, False)):
        for cuda, entry in table.items():
            if not _IDENT.match(cuda):
                raise RuleError(f"{path}: entry `{cuda}` is not a C identifier")
            entry = _check_entry(path, cuda, entry, NAME_KEYS)
            versions = {k: v for k, v in entry.items() if k in VERSION_KEYS}
            old = rules.names.get(cuda)
            if cuda in rules.overrides and entry.get("hip", old.hip if old else None) == rules.overrides[cuda][0]:
                entry = {k: v for k, v in entry.items() if k != "hip"}  # hipify-perl repeats HIPIFY's choice
            if old is not None:
                merged = {**versions, **{k: v for k, v in old.versions.items() if versions.get(k, "unknown") == "unknown"}}
                rules.names[cuda] = NameRule(cuda, old.family, entry.get("hip", old.hip), entry.get("roc", old.roc),
                                             old.section or entry.get("section", ""), merged)
            elif create:
                rules.names[cuda] = NameRule(cuda, fam, entry.get("hip"), entry.get("roc"), entry.get("section", ""),
                                             versions)
                count += 1
    rules.family_counts[fam] = rules.family_counts.get(fam, 0) + count


def _section(path: Path, data: dict, key: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise RuleError(f"{path}: `{key}` must be a table (`[{key}]`)")
    return value


def _load_headers_file(path: Path, data: dict, rules: RuleSet) -> None:
    for cuda, entry in _section(path, data, "headers").items():
        entry = _check_entry(path, cuda, entry, HEADER_KEYS)
        if not (entry.get("hip") or entry.get("remove") or entry.get("unsupported")):
            raise RuleError(f"{path}: header `{cuda}` needs one of `hip`, `remove` or `unsupported`")
        if "import" in data and cuda in rules.headers:
            continue  # an imported table (hipify-perl's) only adds headers; hipport's header table stays
        rules.headers[cuda] = HeaderRule(cuda, entry.get("hip"), entry.get("roc"), bool(entry.get("remove")),
                                         entry.get("unsupported"))
    for ns, entry in _section(path, data, "namespaces").items():
        entry = _check_entry(path, ns, entry, frozenset({"hip"}))
        if "hip" not in entry:
            raise RuleError(f"{path}: namespace `{ns}` needs `hip = \"...\"`")
        parts, target = ns.split("::"), entry["hip"].split("::")
        if not all(_IDENT.match(x) for x in (*parts, *target)) or len(parts) > 2 or len(target) != len(parts) \
                or parts[:-1] != target[:-1]:
            raise RuleError(f"{path}: namespace `{ns}` must be a name, or `outer::inner` renamed to `outer::other`")
        rules.namespaces[ns] = entry["hip"]
    for fam, entry in _section(path, data, "families").items():
        if not isinstance(entry, dict) or set(entry) - {"rename", "note"} or entry.get("rename") is not False \
                or not isinstance(entry.get("note"), str):
            raise RuleError(f"{path}: family `{fam}` must be `{{ rename = false, note = \"...\" }}`")
        rules.family_notes[fam] = entry["note"]
    unmapped = data.get("unmapped", [])
    if not isinstance(unmapped, list):
        raise RuleError(f"{path}: `unmapped` must be an array of tables (`[[unmapped]]`)")
    for n, entry in enumerate(unmapped, 1):
        globs = entry.get("match") if isinstance(entry, dict) else None
        globs = [globs] if isinstance(globs, str) else globs
        if set(entry) != {"match", "note"} or not isinstance(entry["note"], str) or not entry["note"] \
                or not isinstance(globs, list) or not globs or not all(isinstance(g, str) and g for g in globs):
            raise RuleError(f"{path}: `[[unmapped]]` #{n} needs exactly `match` (a glob or a list of globs) and "
                            "`note`, non-empty")
        rules.unmapped_headers.extend((g, entry["note"]) for g in globs)


OVERRIDE_KEYS = frozenset({"hip", "source", "why"})
# `family`: a name HIPIFY's tables lack altogether (CUDA's `nv_bfloat16` typedef), added to that family.
OVERRIDE_OPTIONAL = frozenset({"family"})


def _load_overrides(path: Path, data: dict, rules: RuleSet) -> None:
    """`[names]` of rules/overrides.toml: `cudaHostAlloc = { hip = "hipHostMalloc", source = "...", why = "..." }`
    replaces the HIP name HIPIFY's tables give a CUDA name (family, section and versions stay). Loaded after the
    tables; an imported hipify-perl that repeats HIPIFY's name does not undo it, a --rules folder does."""
    for cuda, entry in _section(path, data, "names").items():
        if not isinstance(entry, dict) or set(entry) - OVERRIDE_KEYS - OVERRIDE_OPTIONAL or not all(
                isinstance(entry.get(k), str) and entry[k] for k in OVERRIDE_KEYS | (set(entry) & OVERRIDE_OPTIONAL)):
            raise RuleError(f"{path}: entry `{cuda}` needs exactly `hip`, `source` and `why` (and, for a name no "
                            f"mapping table has, `family`), non-empty strings")
        old = rules.names.get(cuda)
        if old is None and "family" in entry:
            families = {r.family for r in rules.names.values()}
            if entry["family"] not in families:
                raise RuleError(f"{path}: entry `{cuda}` names family `{entry['family']}`, which no mapping table "
                                f"has (one of: {', '.join(sorted(families))})")
            old = NameRule(cuda, entry["family"], None, None, "hipport's own (rules/overrides.toml)", {})
        elif "family" in entry:
            raise RuleError(f"{path}: entry `{cuda}` has `family`, but a mapping table has the name already: drop it")
        if old is None:
            raise RuleError(f"{path}: entry `{cuda}` overrides a name no mapping table has (give its `family` to "
                            f"add it)")
        rules.overrides[cuda] = (old.hip, entry["why"])
        rules.names[cuda] = NameRule(cuda, old.family, entry["hip"], old.roc, old.section, old.versions)


def _load_releases(path: Path, data: dict, rules: RuleSet) -> None:
    """`[[since]]` of rules/releases.toml: `rocm = "6.0"`, `why`, and `headers` / `names` tables of strings."""
    for version, ops in data.get("vector_operators", {}).items():
        if not re.fullmatch(r"\d+\.\d+", version) or not isinstance(ops, list) or not all(
                isinstance(o, str) and re.fullmatch(r"[-+*/%&|^<>=]+", o) for o in ops):
            raise RuleError(f"{path}: `vector_operators.\"{version}\"` needs an \"X.Y\" key and a list of operators")
        rules.vector_operators.append((tuple(int(x) for x in version.split(".")), frozenset(ops)))
    rules.vector_operators.sort(key=lambda e: e[0])
    entries = data.get("since")
    if not isinstance(entries, list):
        raise RuleError(f"{path}: expected `[[since]]` entries")
    for n, entry in enumerate(entries, 1):
        tables = [entry.get(k, {}) for k in ("headers", "names")] if isinstance(entry, dict) else []
        if not tables or set(entry) - {"rocm", "why", "headers", "names"} or not isinstance(entry.get("why"), str) \
                or not re.fullmatch(r"\d+\.\d+", str(entry.get("rocm"))) or not all(
                    isinstance(t, dict) and all(isinstance(v, str) and v for v in t.values()) for t in tables):
            raise RuleError(f"{path}: `[[since]]` #{n} needs `rocm` (\"X.Y\"), `why`, and `headers`/`names` tables "
                            "of non-empty strings")
        for cuda in tables[1]:
            if cuda not in rules.names:
                raise RuleError(f"{path}: `[[since]]` #{n} names `{cuda}`, which no mapping table has")
        rules.since.append((tuple(int(x) for x in entry["rocm"].split(".")), *tables))
    rules.since.sort(key=lambda e: e[0])


def _family_key(path: Path) -> tuple[int, str]:
    stem = path.stem
    return (FAMILY_ORDER.index(stem) if stem in FAMILY_ORDER else len(FAMILY_ORDER), stem)


def cache_dir() -> Path:
    base = os.environ.get("HIPPORT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "hipport")
    return Path(base)


def _rule_files(extra_dirs) -> list[Path]:
    base = builtin_rules_dir()
    files = [*sorted((base / "mappings").glob("*.toml"), key=_family_key), base / "headers.toml"]
    if (base / "overrides.toml").is_file():
        files.append(base / "overrides.toml")
    if (base / "releases.toml").is_file():
        files.append(base / "releases.toml")
    for extra in extra_dirs:
        extra = Path(extra)
        if not extra.is_dir():
            raise RuleError(f"{extra}: rule folder not found")
        files.extend(sorted(extra.glob("**/*.toml")))
    return files


def _cache_key(files: list[Path]) -> str:
    from hipport import __version__

    h = hashlib.sha256(__version__.encode())
    for path in files:
        try:
            st = os.stat(path)
        except OSError:  # a file that is missing: the build reports it
            h.update(f"{os.path.abspath(path)}\0missing\0".encode())
            continue
        # Absolute, not resolved: resolving each file's every folder would cost more than reading the cache.
        h.update(f"{os.path.abspath(path)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:24]


def load_rules(extra_dirs: list[Path] | tuple = (), use_cache: bool = True) -> RuleSet:
    """Load the built-in rules, then each of ``extra_dirs`` (whose entries win).

    Parsing ~9,000 TOML entries costs about half a second, too slow for a pre-commit hook, so the validated
    index is pickled in the user cache (`load_cached`)."""
    files = _rule_files(extra_dirs)
    if not use_cache:
        return _parse_rules(files)
    # This module too: the pickled RuleSet's fields are its code.
    return load_cached("rules", [Path(__file__), *files], lambda: _parse_rules(files))


def load_rules_later(extra_dirs: list[Path] | tuple = ()):
    """`load_rules` as a function to call when the rules are first needed, for a run that may need none (an audit
    whose files are all in the result cache): the rules are checked now, so a malformed file still stops the run
    before any source is read, but rules already in the user cache, valid as they were stored, are only read
    from it on that first call."""
    files = _rule_files(extra_dirs)
    keyed = [Path(__file__), *files]
    if not _cache_path("rules", keyed).is_file():
        rules = load_rules(extra_dirs)
        return lambda: rules
    loaded: list[RuleSet] = []

    def rules() -> RuleSet:
        if not loaded:
            loaded.append(load_cached("rules", keyed, lambda: _parse_rules(files)))
        return loaded[0]

    return rules


def _cache_path(kind: str, files: list[Path]) -> Path:
    return cache_dir() / f"{kind}-{_cache_key(files)}.pickle"


def load_cached(kind: str, files: list[Path], build):
    """``build()``, validated data read from ``files``, pickled in the user cache under a key of hipport's version
    and the files' paths, sizes and times (list the module whose classes it holds among them too). A file that
    fails to parse raises from ``build`` and nothing is stored, so an edit that breaks a file is never hidden."""
    cached = _cache_path(kind, files)
    try:
        with cached.open("rb") as fh:
            return _unpickle(fh.read())
    except Exception:  # missing, truncated or from another Python: rebuild it
        pass
    value = build()
    store_pickle(cached, value, kind)
    return value


def _unpickle(data: bytes):
    """Without the garbage collector: it would walk the objects unpickled so far after every few hundred, a fifth
    of the load's time, and rules hold no cycles to collect."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data)
    finally:
        if enabled:
            gc.enable()


def store_pickle(path: Path, value, kind: str) -> None:
    """``value`` pickled to ``path`` through a temporary file and a rename (a reader never sees half of it); a
    folder that cannot be written only costs the next run its time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{kind}-", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # concurrent runs each write a whole file; the last rename wins
    except OSError:
        pass  # a read-only home only costs speed


def _parse_rules(files: list[Path]) -> RuleSet:
    rules = RuleSet(files=files)
    builtin = builtin_rules_dir()
    for path in files:
        data = _read_toml(path)
        override = builtin not in path.parents
        if path == builtin / "overrides.toml":
            _load_overrides(path, data, rules)
        elif path == builtin / "releases.toml":
            _load_releases(path, data, rules)
        elif "headers" in data or "namespaces" in data or "families" in data or "unmapped" in data:
            _load_headers_file(path, data, rules)
        else:
            _load_mapping_file(path, data, rules, override=override)
    return rules
