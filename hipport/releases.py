"""What a ROCm release has: the names, headers, warp built-ins and arities of each release, as generated from the
release's real headers by tools/gen_releases.py into rules/rocm/releases.toml.

Only the releases whose trees were read are in the data (the "data releases"). Any other target is answered by a
data release of the same major version: the nearest one at or above it (7.0 and 7.1 by 7.2, 6.3 by 6.4), else the
newest of that major (5.7 by 5.2). That choice follows how ROCm changes: a major release brings the breaking
changes (hipBLAS 3 and default `*_sync` built-ins in 7.0), minor ones add. A question about a name or header of a
library the chosen release's tree lacks gets None: no claim either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hipport.rules import RuleError, builtin_rules_dir, load_cached

SYNC_STATES = ("absent", "opt-in", "default")


@dataclass(frozen=True)
class ReleaseData:
    releases: tuple[tuple[int, int], ...]
    source: dict[tuple[int, int], str] = field(default_factory=dict)
    libraries: dict[tuple[int, int], frozenset[str]] = field(default_factory=dict)
    sync: dict[tuple[int, int], tuple[str, str]] = field(default_factory=dict)  # (state, macro)
    names: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    library: dict[str, str] = field(default_factory=dict)  # name -> the library whose headers have it
    headers: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    arity: dict[str, dict[tuple[int, int], tuple[int, ...]]] = field(default_factory=dict)
    cooperative_groups: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)

    def data_release(self, target: tuple) -> tuple[int, int]:
        """The data release that answers for ``target`` (see the module's doc)."""
        return _answering(self.releases, target)

    def sync_state(self, target: tuple) -> tuple[str, str]:
        """("absent" | "opt-in" | "default", the macro that turns them on or off) of the `*_sync` built-ins."""
        return self.sync[self.data_release(target)]

    def has_name(self, name: str, target: tuple) -> bool | None:
        """Whether ``target``'s headers have ``name``; None where the data says nothing (the name is in every
        data release or in none, or its library's headers are not in the tree read for that release)."""
        have = self.names.get(name)
        if have is None:
            return None
        rel = self.data_release(target)
        if self.library[name] not in self.libraries[rel]:
            return None
        return rel in have

    def releases_with(self, name: str) -> tuple[tuple[int, int], ...]:
        return tuple(sorted(self.names.get(name, ())))

    def has_header(self, header: str, target: tuple) -> bool | None:
        have = self.headers.get(header)
        if have is None:
            return None
        return self.data_release(target) in have

    def arities(self, name: str, target: tuple) -> tuple[int, ...] | None:
        return self.arity.get(name, {}).get(self.data_release(target))

    def cg_declares(self, name: str, target: tuple) -> bool | None:
        """Whether the HIP cooperative-groups headers of the release answering for ``target`` declare CUDA's
        cooperative-groups name ``name``; None for a name the generator did not probe."""
        have = self.cooperative_groups.get(name)
        return None if have is None else self.data_release(target) in have


def _answering(releases: tuple[tuple[int, int], ...], target: tuple) -> tuple[int, int]:
    t = tuple(target[:2])
    same = [r for r in releases if r[0] == t[0]]
    if same:
        above = [r for r in same if r >= t]
        return min(above) if above else max(same)
    below = [r for r in releases if r <= t]
    return max(below) if below else min(releases)


@dataclass(frozen=True)
class SameNames:
    """rules/rocm/same_names.toml: CUDA names the rename tables give no HIP name that a release declares under the
    same spelling (tools/gen_same_names.py compiles each with the release's compiler)."""
    releases: tuple[tuple[int, int], ...]
    names: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)

    def declares(self, name: str, target: tuple) -> bool:
        """Whether the release answering for ``target`` declares ``name`` as CUDA spells it."""
        have = self.names.get(name)
        return bool(have) and bool(self.releases) and _answering(self.releases, target) in have


def _version(text: str, where: str) -> tuple[int, int]:
    try:
        major, minor = text.split(".")
        return int(major), int(minor)
    except ValueError:
        raise RuleError(f"{where}: `{text}` is not a release like 7.2; rerun tools/gen_releases.py") from None


def _parse(path: Path) -> ReleaseData:
    from hipport.rules import _read_toml

    data = _read_toml(path)
    rel_table = data.get("release")
    if not isinstance(rel_table, dict) or not rel_table:
        raise RuleError(f"{path}: no [release.\"X.Y\"] tables; rerun tools/gen_releases.py")
    releases, source, libraries, sync = [], {}, {}, {}
    for text, entry in rel_table.items():
        r = _version(text, str(path))
        state = entry.get("sync_builtins")
        if state not in SYNC_STATES or not isinstance(entry.get("libraries"), list):
            raise RuleError(f"{path}: [release.\"{text}\"] needs `libraries` and `sync_builtins` "
                            f"(one of {', '.join(SYNC_STATES)}); rerun tools/gen_releases.py")
        releases.append(r)
        source[r] = str(entry.get("source", ""))
        libraries[r] = frozenset(entry["libraries"])
        sync[r] = (state, str(entry.get("sync_macro", "")))

    def sets(table: dict, key: str) -> dict[str, frozenset]:
        out = {}
        for name, have in table.items():
            if not isinstance(have, list):
                raise RuleError(f"{path}: [{key}] `{name}` must list releases; rerun tools/gen_releases.py")
            out[name] = frozenset(_version(v, f"{path} [{key}] {name}") for v in have)
        return out

    names: dict[str, frozenset] = {}
    library: dict[str, str] = {}
    for lib, table in data.get("names", {}).items():
        if not isinstance(table, dict):
            raise RuleError(f"{path}: [names.{lib}] must be a table; rerun tools/gen_releases.py")
        for name, have in sets(table, f"names.{lib}").items():
            names[name] = have
            library[name] = lib

    arity = {name: {_version(k, f"{path} [arity] {name}"): tuple(v) for k, v in per.items()}
             for name, per in data.get("arity", {}).items()}
    headers = sets(data.get("headers", {}), "headers")
    cg = sets(data.get("cooperative_groups", {}), "cooperative_groups")
    return ReleaseData(tuple(sorted(releases)), source, libraries, sync, names, library, headers, arity, cg)


def _parse_same_names(path: Path) -> SameNames:
    from hipport.rules import _read_toml

    data = _read_toml(path)
    releases = tuple(sorted(_version(text, str(path)) for text in data.get("release", {})))
    names = {}
    for name, entry in data.get("names", {}).items():
        have = entry.get("releases") if isinstance(entry, dict) else None
        if not isinstance(have, list) or not have:
            raise RuleError(f"{path}: [names] `{name}` needs `releases`; rerun tools/gen_same_names.py")
        names[name] = frozenset(_version(v, f"{path} [names] {name}") for v in have)
        if not names[name] <= set(releases):
            raise RuleError(f"{path}: [names] `{name}` names a release without a [release] table; rerun "
                            "tools/gen_same_names.py")
    return SameNames(releases, names)


@lru_cache(maxsize=1)
def same_names() -> SameNames:
    path = builtin_rules_dir() / "rocm" / "same_names.toml"
    if not path.is_file():
        return SameNames(())
    return load_cached("same-names", [Path(__file__), path], lambda: _parse_same_names(path))


def _parse_system_atomics(path: Path) -> dict[tuple[int, int], frozenset[str]]:
    from hipport.rules import _read_toml

    out = {}
    for text, entry in _read_toml(path).get("release", {}).items():
        ops = entry.get("cas_loop") if isinstance(entry, dict) else None
        if not isinstance(ops, list) or not all(isinstance(op, str) for op in ops):
            raise RuleError(f"{path}: [release.\"{text}\"] needs `cas_loop`, a list of names; rerun "
                            "tools/gen_system_atomics.py")
        out[_version(text, str(path))] = frozenset(ops)
    return out


@lru_cache(maxsize=1)
def _system_atomics() -> dict[tuple[int, int], frozenset[str]]:
    path = builtin_rules_dir() / "rocm" / "system_atomics.toml"
    if not path.is_file():
        return {}
    return load_cached("system-atomics", [Path(__file__), path], lambda: _parse_system_atomics(path))


def system_cas_loops(target: tuple) -> frozenset[str]:
    """The `*_system` atomics the compiler of ``target`` expands into a compare-and-swap loop
    (rules/rocm/system_atomics.toml): those of the newest listed release of the same major version at or below it.
    Compiler behaviour is only claimed from a release that was compiled with on, so 7.0 says nothing."""
    data = _system_atomics()
    t = tuple(target[:2])
    known = [r for r in data if r[0] == t[0] and r <= t]
    return data[max(known)] if known else frozenset()


def data_file() -> Path:
    return builtin_rules_dir() / "rocm" / "releases.toml"


@lru_cache(maxsize=1)
def release_data() -> ReleaseData:
    path = data_file()
    return load_cached("releases", [Path(__file__), path], lambda: _parse(path))


def sync_enabled_from(data: ReleaseData) -> tuple[int, int]:
    """The first release whose `*_sync` built-ins are on by default: the data releases after the last one where
    they are not, from the start of that release's major version when the one before is of an older major."""
    last_off = max((r for r in data.releases if data.sync[r][0] != "default"), default=None)
    later = [r for r in data.releases if last_off is None or r > last_off]
    if not later:
        return (99, 0)
    first = min(later)
    if last_off is None or last_off[0] < first[0]:
        return (first[0], 0)
    return (last_off[0], last_off[1] + 1)
