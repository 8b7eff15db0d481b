"""The build-file rule data (`rules/build/make.toml`, `rules/build/cmake.toml`), loaded and checked once.

A malformed file stops the run with one line naming the file and the entry (`RuleError`), like the rename tables."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hipport.rules import RuleError, builtin_rules_dir

VALUE_KINDS = ("none", "required")
FLAG_KINDS = ("replace", "unwrap", "arch", "drop")
_FLAG_KEYS = {"id", "cuda", "value", "kind", "hip", "values", "keep_others", "nvcc_only", "note"}


@dataclass(frozen=True, slots=True)
class FlagRule:
    id: str
    cuda: tuple[str, ...]
    value: str = "none"          # "none" | "required"
    kind: str = "replace"        # "replace" | "unwrap" | "arch" | "drop"
    hip: str | None = None       # the HIP form ({value} stands for the flag's value); "" drops it
    values: dict = field(default_factory=dict)  # value -> HIP flag
    keep_others: bool = False    # a value not in `values` stays as it is, without a finding
    nvcc_only: bool = False
    note: str = ""


@dataclass(frozen=True, slots=True)
class LibraryRule:
    cuda: str
    hip: str | None
    roc: str | None
    note: str


@dataclass(frozen=True, slots=True)
class MakeRules:
    path: Path
    compilers: dict            # CUDA compiler -> HIP compiler
    flags: tuple[FlagRule, ...]
    by_spelling: dict          # spelling -> FlagRule
    libraries: dict            # name -> LibraryRule
    path_variables: tuple[str, ...]
    path_prefixes: tuple[str, ...]
    hip_variable: str
    hip_prefix: str
    subdirs: dict
    arch_variable: str = ""    # Makefiles: the variable literal GPU architectures become ("": written out)


@dataclass(frozen=True, slots=True)
class CMakeRules:
    path: Path
    languages: dict
    variables: dict            # name -> {"hip"?, "arch"?, "note"?}
    properties: dict
    drop_properties: dict
    separable: dict
    packages: dict
    targets: dict              # name (without CUDA::) -> {"hip"?, "package"?, "roc"?, "roc_package"?, "note"?}
    commands: dict
    findcuda: dict


def build_rules_dir() -> Path:
    return builtin_rules_dir() / "build"


def _load(path: Path) -> dict:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise RuleError(f"{path}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{path}: not valid TOML ({exc})") from None


def _table(path: Path, data: dict, key: str) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise RuleError(f"{path}: [{key}] must be a table")
    return value


def _strings(path: Path, where: str, value, key: str, allowed: set[str]) -> dict:
    if not isinstance(value, dict):
        raise RuleError(f"{path}: {where} must be a table")
    for k, v in value.items():
        if k not in allowed:
            raise RuleError(f"{path}: {where}: unknown key `{k}` (known: {', '.join(sorted(allowed))})")
        if k == "arch":
            if not isinstance(v, bool):
                raise RuleError(f"{path}: {where}: `arch` must be true or false")
        elif not isinstance(v, str):
            raise RuleError(f"{path}: {where}: `{k}` must be a string")
    return value


def _flag(path: Path, n: int, entry) -> FlagRule:
    if not isinstance(entry, dict):
        raise RuleError(f"{path}: [[flag]] number {n} must be a table")
    where = f"[[flag]] {entry.get('id', f'number {n}')}"
    for k in entry:
        if k not in _FLAG_KEYS:
            raise RuleError(f"{path}: {where}: unknown key `{k}` (known: {', '.join(sorted(_FLAG_KEYS))})")
    if not isinstance(entry.get("id"), str) or not entry["id"]:
        raise RuleError(f"{path}: {where}: `id` must be a non-empty string")
    cuda = entry.get("cuda")
    if not isinstance(cuda, list) or not cuda or not all(isinstance(c, str) and c.startswith("-") for c in cuda):
        raise RuleError(f"{path}: {where}: `cuda` must be a list of flags starting with `-`")
    value, kind = entry.get("value", "none"), entry.get("kind", "replace")
    if value not in VALUE_KINDS:
        raise RuleError(f"{path}: {where}: `value` must be one of {', '.join(VALUE_KINDS)}")
    if kind not in FLAG_KINDS:
        raise RuleError(f"{path}: {where}: `kind` must be one of {', '.join(FLAG_KINDS)}")
    values = entry.get("values", {})
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise RuleError(f"{path}: {where}: `values` must be a table of strings")
    hip = entry.get("hip")
    if hip is not None and not isinstance(hip, str):
        raise RuleError(f"{path}: {where}: `hip` must be a string")
    if kind == "replace" and hip is None and not values:
        raise RuleError(f"{path}: {where}: a replaced flag needs `hip` or `values`")
    if kind in ("unwrap", "arch") and value != "required":
        raise RuleError(f"{path}: {where}: `{kind}` needs value = \"required\"")
    for k in ("note",):
        if not isinstance(entry.get(k, ""), str):
            raise RuleError(f"{path}: {where}: `{k}` must be a string")
    for k in ("nvcc_only", "keep_others"):
        if not isinstance(entry.get(k, False), bool):
            raise RuleError(f"{path}: {where}: `{k}` must be true or false")
    return FlagRule(entry["id"], tuple(cuda), value, kind, hip, dict(values), entry.get("keep_others", False),
                    entry.get("nvcc_only", False), entry.get("note", ""))


def parse_make_rules(path: Path, data: dict) -> MakeRules:
    compilers = {}
    for name, entry in _table(path, data, "compilers").items():
        _strings(path, f"[compilers] {name}", entry, "", {"hip"})
        if "hip" not in entry:
            raise RuleError(f"{path}: [compilers] {name}: `hip` is missing")
        compilers[name] = entry["hip"]
    raw = data.get("flag", [])
    if not isinstance(raw, list):
        raise RuleError(f"{path}: `flag` must be an array of tables ([[flag]])")
    flags = tuple(_flag(path, n, e) for n, e in enumerate(raw, 1))
    by_spelling: dict[str, FlagRule] = {}
    ids = set()
    for f in flags:
        if f.id in ids:
            raise RuleError(f"{path}: [[flag]] {f.id}: the id is used twice")
        ids.add(f.id)
        for s in f.cuda:
            if s in by_spelling:
                raise RuleError(f"{path}: [[flag]] {f.id}: `{s}` is also a spelling of {by_spelling[s].id}")
            by_spelling[s] = f
    libraries = {}
    for name, entry in _table(path, data, "libraries").items():
        _strings(path, f"[libraries] {name}", entry, "", {"hip", "roc", "note"})
        if "hip" not in entry and "note" not in entry:
            raise RuleError(f"{path}: [libraries] {name}: an entry without `hip` needs a `note`")
        libraries[name] = LibraryRule(name, entry.get("hip"), entry.get("roc"), entry.get("note", ""))
    paths = _table(path, data, "paths")
    for key in ("variables", "prefixes"):
        if not isinstance(paths.get(key), list) or not all(isinstance(v, str) for v in paths[key]):
            raise RuleError(f"{path}: [paths] `{key}` must be a list of strings")
    for key in ("hip_variable", "hip_prefix"):
        if not isinstance(paths.get(key), str):
            raise RuleError(f"{path}: [paths] `{key}` must be a string")
    subdirs = paths.get("subdirs", {})
    if not isinstance(subdirs, dict) or not all(isinstance(v, str) for v in subdirs.values()):
        raise RuleError(f"{path}: [paths] `subdirs` must be a table of strings")
    arch = _table(path, data, "targets")
    unknown = set(arch) - {"variable"}
    if unknown:
        raise RuleError(f"{path}: [targets]: unknown key `{sorted(unknown)[0]}` (known: variable)")
    variable = arch.get("variable", "")
    if not isinstance(variable, str) or (variable and not variable.replace("_", "a").isalnum()):
        raise RuleError(f"{path}: [targets] `variable` must be a Make variable name")
    return MakeRules(path, compilers, flags, by_spelling, libraries, tuple(paths["variables"]),
                     tuple(paths["prefixes"]), paths["hip_variable"], paths["hip_prefix"], dict(subdirs), variable)


_CMAKE_TABLES = {
    "languages": {"hip"},
    "variables": {"hip", "arch", "note"},
    "properties": {"hip", "arch", "note"},
    "packages": {"hip"},
    "targets": {"hip", "package", "roc", "roc_package", "note"},
    "commands": {"hip"},
    "findcuda": {"hip", "target", "note"},
}


def parse_cmake_rules(path: Path, data: dict) -> CMakeRules:
    tables = {}
    for key, allowed in _CMAKE_TABLES.items():
        table = _table(path, data, key)
        for name, entry in table.items():
            _strings(path, f"[{key}] {name}", entry, "", allowed)
            if not ({"hip", "note", "target", "roc"} & set(entry)):
                raise RuleError(f"{path}: [{key}] {name}: needs `hip` (or `note` to report it)")
        tables[key] = dict(table)
    for name, entry in tables["findcuda"].items():
        if "target" in entry and entry["target"] not in tables["targets"]:
            raise RuleError(f"{path}: [findcuda] {name}: target `{entry['target']}` is not in [targets]")
    drop = _table(path, data, "drop_properties")
    if not all(isinstance(v, str) for v in drop.values()):
        raise RuleError(f"{path}: [drop_properties] values must be strings (the note)")
    separable = _table(path, data, "separable")
    for key in ("property", "variable", "compile", "link", "note"):
        if not isinstance(separable.get(key), str):
            raise RuleError(f"{path}: [separable] `{key}` must be a string")
    return CMakeRules(path, tables["languages"], tables["variables"], tables["properties"], dict(drop),
                      dict(separable), tables["packages"], tables["targets"], tables["commands"], tables["findcuda"])


@lru_cache(maxsize=4)
def load_build_rules(directory: Path | None = None) -> tuple[MakeRules, CMakeRules]:
    """The Makefile and CMake rule tables (``directory``: default the bundled `rules/build/`)."""
    base = directory or build_rules_dir()
    make_path, cmake_path = base / "make.toml", base / "cmake.toml"
    return parse_make_rules(make_path, _load(make_path)), parse_cmake_rules(cmake_path, _load(cmake_path))
