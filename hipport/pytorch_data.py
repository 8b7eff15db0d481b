"""The PyTorch extension names of `rules/pytorch.toml`: which c10/ATen names and headers ROCm PyTorch's own build
rewrites (left for it, reported), which it keeps (left, not reported), and how a file or a `setup.py` is known to be
a PyTorch extension's. Validated with one-line errors, like the other rule files."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hipport.rules import RuleError, _read_toml, builtin_rules_dir

_IDENT = re.compile(r"^[A-Za-z_]\w*$")
_QUALIFIER = re.compile(r"^[A-Za-z_]\w*(::[A-Za-z_]\w*)*$")
_PATTERN = re.compile(r"^[A-Za-z_]\w*\*$")


@dataclass(frozen=True, slots=True)
class TorchName:
    """A c10/ATen name or header PyTorch's extension build rewrites (`[names]`, `[macros]`, `[headers]`)."""
    name: str
    kind: str                    # "name", "macro" or "header"
    v1: str                      # what hipify v1 (PyTorch 2.10 and older) writes
    v2: str                      # what hipify v2 (PyTorch 2.11 on) writes
    why: str
    qualifiers: tuple = ()       # names: the namespaces that make it PyTorch's
    v1_note: str = ""
    extension_only: bool = False  # macros: counted only in a file that is a PyTorch extension's


@dataclass(frozen=True, slots=True)
class Kept:
    """A name ROCm PyTorch keeps in every release (`[kept]`)."""
    name: str
    why: str
    roc: str = ""                # reported (a warning) under --roc
    pattern: bool = False


@dataclass(frozen=True, slots=True)
class TorchData:
    includes: tuple              # globs of the headers that make a file a PyTorch extension's
    setup_words: tuple
    setup_module: str
    names: dict                  # name -> TorchName (functions and types)
    namespaces: dict             # namespace -> (v1, why)
    macros: dict                 # name -> TorchName
    headers: dict                # path -> TorchName
    path_folders: tuple          # headers under these follow PyTorch's path rule in both releases
    path_why: str
    kept: dict                   # name -> Kept

    def is_extension_header(self, header: str) -> bool:
        return any(fnmatch.fnmatchcase(header, g) for g in self.includes)

    def header(self, header: str) -> TorchName | None:
        """What PyTorch's build includes for ``header``, or None for a header that is not c10's or ATen's CUDA
        one. A `c10/cuda/` header the table does not list comes back with empty `v1`/`v2` (no counterpart known)."""
        entry = self.headers.get(header)
        if entry is not None:
            return entry
        if header.startswith(self.path_folders):
            hip = hip_header_path(header)
            return TorchName(header, "header", hip, hip, self.path_why)
        if header.startswith("c10/cuda/"):
            return TorchName(header, "header", "", "", "")
        return None

    def kept_entry(self, name: str) -> Kept | None:
        entry = self.kept.get(name)
        if entry is not None:
            return entry
        return next((k for k in self.kept.values() if k.pattern and fnmatch.fnmatchcase(name, k.name)), None)


def hip_header_path(header: str) -> str:
    """PyTorch's path rule for an ATen CUDA header in an extension: the folder `cuda` becomes `hip`, and in the file's
    name `CUDA` becomes `HIP` and `cuda` `hip` (`ATen/cuda/CUDAContext.h` -> `ATen/hip/HIPContext.h`)."""
    folder, _, name = header.rpartition("/")
    stem, dot, ext = name.rpartition(".") if "." in name else (name, "", "")
    folder = folder.replace("cuda", "hip").replace("CUDA", "HIP")
    stem = stem.replace("cuda", "hip").replace("CUDA", "HIP")
    return f"{folder}/{stem}{dot}{ext}" if folder else f"{stem}{dot}{ext}"


def _text(path: Path, where: str, entry: dict, key: str, required: bool = True) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str) or (required and not value):
        raise RuleError(f"{path}: `{where}` needs `{key}`, a non-empty string")
    return value


def _check_keys(path: Path, where: str, entry: object, allowed: set) -> dict:
    if not isinstance(entry, dict):
        raise RuleError(f"{path}: `{where}` must be a table")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise RuleError(f"{path}: `{where}` has unknown key `{unknown[0]}` (allowed: {', '.join(sorted(allowed))})")
    return entry


def _strings(path: Path, where: str, value: object) -> tuple:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise RuleError(f"{path}: `{where}` must be a non-empty list of strings")
    return tuple(value)


def parse_pytorch(path: Path, data: dict) -> TorchData:
    _check_keys(path, "the file", data, {"detect", "names", "namespaces", "macros", "headers", "path_rule", "kept"})
    detect = _check_keys(path, "[detect]", data.get("detect", {}), {"includes", "setup_words", "setup_module"})
    names = {}
    for name, entry in data.get("names", {}).items():
        where = f"[names.{name}]"
        _check_keys(path, where, entry, {"qualifiers", "v1", "v1_note", "why"})
        if not _IDENT.match(name):
            raise RuleError(f"{path}: `{where}`: `{name}` is not an identifier")
        qualifiers = _strings(path, f"{where} qualifiers", entry.get("qualifiers"))
        bad = next((q for q in qualifiers if not _QUALIFIER.match(q)), None)
        if bad is not None:
            raise RuleError(f"{path}: `{where}`: qualifier `{bad}` is not a `::`-joined namespace")
        names[name] = TorchName(name, "name", _text(path, where, entry, "v1"), name, _text(path, where, entry, "why"),
                                qualifiers, _text(path, where, entry, "v1_note", required=False))
    namespaces = {}
    for ns, entry in data.get("namespaces", {}).items():
        where = f'[namespaces."{ns}"]'
        _check_keys(path, where, entry, {"v1", "why"})
        if not _QUALIFIER.match(ns) or "::" not in ns:
            raise RuleError(f"{path}: `{where}`: `{ns}` is not a `::`-joined namespace")
        namespaces[ns] = (_text(path, where, entry, "v1"), _text(path, where, entry, "why"))
    macros = {}
    for name, entry in data.get("macros", {}).items():
        where = f"[macros.{name}]"
        _check_keys(path, where, entry, {"v1", "v2", "extension_only", "why"})
        if not _IDENT.match(name):
            raise RuleError(f"{path}: `{where}`: `{name}` is not an identifier")
        only = entry.get("extension_only", False)
        if not isinstance(only, bool):
            raise RuleError(f"{path}: `{where} extension_only` must be true or false")
        v1 = _text(path, where, entry, "v1")
        macros[name] = TorchName(name, "macro", v1, _text(path, where, entry, "v2", required=False) or name,
                                 _text(path, where, entry, "why"), extension_only=only)
    headers = {}
    for header, entry in data.get("headers", {}).items():
        where = f'[headers."{header}"]'
        _check_keys(path, where, entry, {"v1", "v2", "why"})
        v1 = _text(path, where, entry, "v1")
        headers[header] = TorchName(header, "header", v1, _text(path, where, entry, "v2", required=False) or v1,
                                    _text(path, where, entry, "why"))
    rule = _check_keys(path, "[path_rule]", data.get("path_rule", {}), {"folders", "why"})
    folders = _strings(path, "[path_rule] folders", rule.get("folders"))
    if not all(f.endswith("/") for f in folders):
        raise RuleError(f"{path}: `[path_rule] folders` must each end with `/`")
    kept = {}
    for name, entry in data.get("kept", {}).items():
        where = f'[kept."{name}"]'
        _check_keys(path, where, entry, {"why", "roc", "pattern"})
        pattern = entry.get("pattern", False)
        if not isinstance(pattern, bool) or (pattern and not _PATTERN.match(name)):
            raise RuleError(f"{path}: `{where}`: `pattern = true` takes a name ending in `*` (`AT_DISPATCH_*`)")
        kept[name] = Kept(name, _text(path, where, entry, "why"), _text(path, where, entry, "roc", required=False),
                          pattern)
    clash = sorted((set(names) | set(macros) | set(headers)) & set(kept))
    if clash:
        raise RuleError(f"{path}: `{clash[0]}` is both rewritten by PyTorch's build and kept; say one")
    return TorchData(_strings(path, "[detect] includes", detect.get("includes")),
                     _strings(path, "[detect] setup_words", detect.get("setup_words")),
                     _text(path, "[detect]", detect, "setup_module"),
                     names, namespaces, macros, headers, folders, _text(path, "[path_rule]", rule, "why"), kept)


_PY_COMMENT = re.compile(rb"#[^\n]*")


def setup_builds_extension(src: bytes) -> tuple[int, str] | None:
    """(offset, word) of the first of `[detect] setup_words` a `setup.py` names (`CUDAExtension` before
    `BuildExtension`) when it imports them from `setup_module` (`torch.utils.cpp_extension`, or `from torch.utils
    import cpp_extension`), else None. Comments are blanked, offsets kept."""
    data = load_pytorch()
    code = _PY_COMMENT.sub(lambda m: b" " * len(m.group()), src)
    package, _, module = data.setup_module.rpartition(".")
    if data.setup_module.encode() not in code and (not package or re.search(
            rb"\bfrom\s+" + re.escape(package.encode()) + rb"\s+import\b[^\n]*\b" + re.escape(module.encode()) + rb"\b",
            code) is None):
        return None
    return next(((m.start(), w) for w in data.setup_words
                 for m in [re.search(rb"\b" + re.escape(w.encode()) + rb"\b", code)] if m is not None), None)


@lru_cache(maxsize=1)
def load_pytorch() -> TorchData:
    path = builtin_rules_dir() / "pytorch.toml"
    return parse_pytorch(path, _read_toml(path))
