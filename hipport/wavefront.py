"""ROCm 7's wavefront-width rules (rules/wavefront.toml): the compile-time width that stands in for `warpSize`, the
target-macro tests that stand in for `__AMDGCN_WAVEFRONT_SIZE`, and the warp built-ins a project's own definitions
clash with from 7.0. Read by the conversion (which rewrites) and the audit (which suggests), validated with
one-line errors like the other rule files."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hipport.rules import RuleError, _read_toml, builtin_rules_dir, load_cached

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION = re.compile(r"^\d+\.\d+$")
FILE = "wavefront.toml"


@dataclass(frozen=True, slots=True)
class WaveRules:
    width_from: tuple         # `warpSize` in a constant expression of device code is rewritten from this release
    width: str                # the wavefront width as a constant expression (device pass: the target's)
    width_include: str        # the header declaring `width`
    width_provided_by: tuple  # include prefixes whose headers declare it already
    width_spellings: dict     # include prefix -> the library's own name for it
    macro_from: tuple         # `__AMDGCN_WAVEFRONT_SIZE` is rewritten from this release
    macro_names: frozenset
    wave64: str               # true exactly where the macro was 64
    wave32: str               # true exactly where it was 32
    macro_defined: str        # true exactly where it was defined
    sync_from: tuple          # a project's own warp built-ins are guarded from this release
    sync_names: frozenset
    sync_guard: str           # true where HIP lacks them
    sync_include: str         # defines what `sync_guard` tests
    sync_includes: frozenset  # includes that define it already
    release_macros: tuple     # a condition naming one of these already chooses by release
    dropped_from: tuple       # a full mask given to `dropped_names` is dropped from this release
    dropped_names: frozenset
    active_lanes: str         # "every lane" for such a call that must keep an argument

    def macro_test(self, op: str, value: int) -> str:
        """The preprocessor test true exactly where `__AMDGCN_WAVEFRONT_SIZE <op> <value>` held with ROCm 6.4: the
        macro was 64 in the host pass and gfx8/gfx9 device passes, 32 in the other device passes, and undefined
        (0 in `#if`) outside HIP-Clang."""
        held = {w for w in (64, 32, 0) if COMPARISONS[op](w, value)}
        tests = {frozenset({64, 32, 0}): "1", frozenset({64, 32}): self.macro_defined,
                 frozenset({64, 0}): f"!({self.wave32})", frozenset({32, 0}): f"!({self.wave64})",
                 frozenset({64}): self.wave64, frozenset({32}): self.wave32,
                 frozenset({0}): f"!{self.macro_defined}", frozenset(): "0"}
        return tests[frozenset(held)]

    def width_define(self, head: str, newline: str) -> str:
        """`#define W __AMDGCN_WAVEFRONT_SIZE` (``head`` is `#define W`) as the values it had."""
        return f"#if {self.wave64}{newline}{head} 64{newline}#else{newline}{head} 32{newline}#endif"


COMPARISONS = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
               ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}
# `64 > M` is `M < 64`.
FLIPPED = {"==": "==", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}


@lru_cache(maxsize=1)
def load_wave_rules() -> WaveRules:
    path = builtin_rules_dir() / FILE
    return load_cached("wavefront", [Path(__file__), path], lambda: _parse(path))


def _parse(path: Path) -> WaveRules:
    data = _read_toml(path)
    width = _section(path, data, "width", {"rocm_from", "expression", "include", "provided_by", "spellings",
                                           "source"})
    macro = _section(path, data, "wavefront_macro", {"rocm_from", "names", "wave64", "wave32", "defined_as",
                                                     "source"})
    sync = _section(path, data, "sync_builtins", {"rocm_from", "names", "guard", "include", "includes_defining",
                                                  "release_macros", "source"})
    dropped = _section(path, data, "full_mask_dropped", {"rocm_from", "names", "active_lanes", "source"})
    spellings = width.get("spellings", {})
    if not isinstance(spellings, dict) or not all(isinstance(v, str) and v for v in spellings.values()):
        raise RuleError(f"{path}: `[width.spellings]` maps include prefixes to non-empty strings")
    return WaveRules(
        _version(path, "width", width), _text(path, "width", width, "expression"),
        _text(path, "width", width, "include"), tuple(_strings(path, "width", width, "provided_by")),
        dict(spellings),
        _version(path, "wavefront_macro", macro), frozenset(_names(path, "wavefront_macro", macro)),
        _text(path, "wavefront_macro", macro, "wave64"), _text(path, "wavefront_macro", macro, "wave32"),
        _text(path, "wavefront_macro", macro, "defined_as"),
        _version(path, "sync_builtins", sync), frozenset(_names(path, "sync_builtins", sync)),
        _text(path, "sync_builtins", sync, "guard"), _text(path, "sync_builtins", sync, "include"),
        frozenset(_strings(path, "sync_builtins", sync, "includes_defining")),
        tuple(_strings(path, "sync_builtins", sync, "release_macros")),
        _version(path, "full_mask_dropped", dropped), frozenset(_names(path, "full_mask_dropped", dropped)),
        _text(path, "full_mask_dropped", dropped, "active_lanes"))


def _section(path, data, key, allowed) -> dict:
    value = data.get(key)
    if not isinstance(value, dict):
        raise RuleError(f"{path}: `[{key}]` is missing")
    unknown = set(value) - allowed
    if unknown:
        raise RuleError(f"{path}: `[{key}]` has unknown key `{sorted(unknown)[0]}`")
    if not isinstance(value.get("source"), str) or not value["source"]:
        raise RuleError(f"{path}: `[{key}]` needs a `source`")
    return value


def _version(path, key, section) -> tuple:
    value = section.get("rocm_from")
    if not isinstance(value, str) or not _VERSION.match(value):
        raise RuleError(f"{path}: `[{key}]` needs `rocm_from`, a release like \"7.0\"")
    return tuple(int(p) for p in value.split("."))


def _text(path, key, section, field) -> str:
    value = section.get(field)
    if not isinstance(value, str) or not value.strip():
        raise RuleError(f"{path}: `[{key}]` needs `{field}`, a non-empty string")
    return value


def _strings(path, key, section, field) -> list:
    value = section.get(field)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise RuleError(f"{path}: `[{key}]` needs `{field}`, a list of non-empty strings")
    return value


def _names(path, key, section) -> list:
    names = _strings(path, key, section, "names")
    bad = next((n for n in names if not _IDENT.match(n)), None)
    if bad is not None:
        raise RuleError(f"{path}: `{bad}` in `[{key}]` `names` is not a C identifier")
    return names
