"""Hand-written rule data beyond plain renames: argument rewrites, macros and warp built-ins.

Loaded from small TOML files in ``rules/`` and validated with one-line errors, like the mapping tables."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from hipport.rules import RuleError, _read_toml, builtin_rules_dir

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


@dataclass(frozen=True, slots=True)
class Semantic:
    symbol_args: dict          # cuda name -> argument position
    kernel_args: dict          # cuda name -> (argument position, minimum argument count)
    by_arity: dict             # cuda name -> (argument count, hip name)
    guards: dict               # CUDA header macro -> HIP macro
    device_pass: dict          # macro tested for presence -> HIP macro
    version_macros: dict       # macro -> suggestion text
    warp_sync: dict            # *_sync name -> mask-free name
    sync_opt_in: tuple
    sync_enabled: tuple
    full32: frozenset
    full64: frozenset
    full64_spelling: str


def _table(path, data, key) -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise RuleError(f"{path}: `[{key}]` must be a table")
    for name in value:
        if not _IDENT.match(name):
            raise RuleError(f"{path}: entry `{name}` in `[{key}]` is not a C identifier")
    return value


def _int(path, key, name, entry, field, default=None) -> int:
    value = entry.get(field, default) if isinstance(entry, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise RuleError(f"{path}: entry `{name}` in `[{key}]` needs a non-negative integer `{field}`")
    return value


def _str(path, key, name, value) -> str:
    if not isinstance(value, str) or not value:
        raise RuleError(f"{path}: entry `{name}` in `[{key}]` must be a non-empty string")
    return value


def _version(path, key, value) -> tuple:
    if not isinstance(value, str) or not _VERSION.match(value):
        raise RuleError(f"{path}: `{key}` must be a version like \"6.2\"")
    return parse_version(value)


@lru_cache(maxsize=1)
def load_semantic() -> Semantic:
    base = builtin_rules_dir()
    calls_path, macros_path, warp_path = base / "calls.toml", base / "macros.toml", base / "warp.toml"
    calls, macros, warp = _read_toml(calls_path), _read_toml(macros_path), _read_toml(warp_path)
    symbol = {n: _int(calls_path, "symbol", n, e, "arg") for n, e in _table(calls_path, calls, "symbol").items()}
    kernel = {n: (_int(calls_path, "kernel_pointer", n, e, "arg"), _int(calls_path, "kernel_pointer", n, e, "min_args", 0))
              for n, e in _table(calls_path, calls, "kernel_pointer").items()}
    arity = {}
    for n, e in _table(calls_path, calls, "by_arity").items():
        arity[n] = (_int(calls_path, "by_arity", n, e, "args"), _str(calls_path, "by_arity", n, e.get("hip")))
    guards = {n: _str(macros_path, "guards", n, v) for n, v in _table(macros_path, macros, "guards").items()}
    device = {n: _str(macros_path, "device_pass", n, v) for n, v in _table(macros_path, macros, "device_pass").items()}
    versions = {n: _str(macros_path, "versions", n, v) for n, v in _table(macros_path, macros, "versions").items()}
    sync = {}
    for n, e in _table(warp_path, warp, "sync").items():
        sync[n] = _str(warp_path, "sync", n, e.get("mask_free") if isinstance(e, dict) else None)
    wv = warp.get("versions", {})
    masks = warp.get("masks", {})
    for key in ("full32", "full64"):
        if not isinstance(masks.get(key), list) or not all(isinstance(m, str) for m in masks[key]):
            raise RuleError(f"{warp_path}: `masks.{key}` must be a list of strings")
    return Semantic(
        symbol, kernel, arity, guards, device, versions, sync,
        _version(warp_path, "versions.sync_opt_in", wv.get("sync_opt_in")),
        _version(warp_path, "versions.sync_enabled", wv.get("sync_enabled")),
        frozenset(masks["full32"]), frozenset(masks["full64"]),
        _str(warp_path, "masks", "full64_spelling", masks.get("full64_spelling")),
    )
