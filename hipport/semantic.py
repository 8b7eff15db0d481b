"""Hand-written rule data beyond plain renames: argument rewrites, macros and warp built-ins.

Loaded from small TOML files in ``rules/`` and validated with one-line errors, like the mapping tables."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hipport.releases import _parse as parse_release_data
from hipport.releases import sync_enabled_from
from hipport.forward import Forward, parse_forward
from hipport.rules import RuleError, _read_toml, builtin_rules_dir, load_cached

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


@dataclass(frozen=True, slots=True)
class ArgOp:
    """One change to a call's arguments; positions are those of the CUDA call (as written), from 0."""
    kind: str            # "insert", "replace", "remove", "move", "copy", "cast", "api_name"
    pos: int
    text: str = ""       # insert/replace: the text written (replace without it: kept); cast: the pointer type
    to: int = -1         # move/copy: the argument the text goes before (at or past the end: appended)
    count: int = 1       # move: how many arguments move together
    warn: str = ""       # remove: reported unless the removed argument is a null constant; replace: reported
                         # when the argument is none of `values`; api_name: reported when it is no string literal
    values: tuple = ()   # replace: (argument text, replacement) pairs tried before `text`
    cast_as: str = "reinterpret_cast"  # cast: the cast written (`as = "const_cast"` to drop a const the HIP type lacks)


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A call whose HIP or ROC form takes other arguments (`[[rewrite]]` in rules/calls.toml)."""
    names: tuple
    mode: str            # "hip" (without --roc), "roc" (with --roc) or "any"
    args: int | None     # the CUDA call's argument count this applies to (None: any)
    ops: tuple
    rocm_min: tuple | None = None     # only when targeting this ROCm release or newer
    rocm_before: tuple | None = None  # only when targeting an older release than this
    note: str = ""       # reported (call-rewrite-note) wherever the rewrite is made
    source: str = ""     # where the facts come from
    differs: str = ""    # where hipport writes something else than hipify-clang, and why
    incomplete: bool = False  # the rewritten call still lacks arguments: reported as call-not-rewritten
    # not made where the AMD build defines one of these (HIPBLAS_USE_HIP_HALF: the HIP types are CUDA's already)
    unless_defined: tuple = ()


@dataclass(frozen=True, slots=True)
class Shim:
    """A stand-in definition for a HIP name older releases lack (rules/shims.toml)."""
    name: str
    cuda: tuple          # CUDA names that become `name`
    hip_from: tuple      # the ROCm release whose headers declare it
    guard: str           # preprocessor condition true where it is missing
    code: str
    note: str
    source: str
    include: str = ""    # a CUDA header HIP lacks: its include is replaced by the definition, `cuda` naming its API
    hip_header: str = ""  # the header a later HIP declares it in: included where it exists, instead of the stand-in


@dataclass(frozen=True, slots=True)
class Semantic:
    symbol_args: dict          # cuda name -> argument position
    symbol_address: frozenset  # cuda names whose HIP form takes the symbol's address: `HIP_SYMBOL(&sym)`
    kernel_args: dict          # cuda name -> (argument position, minimum argument count)
    by_arity: dict             # cuda name -> (argument count, hip name)
    rewrites: dict             # cuda name -> tuple of Rewrite, in file order
    roc_libraries: dict        # CUDA header -> ROC library (rules/roc.toml), in file order
    roc_types: dict            # ROC library -> {cuda name: (roc name, host only)}
    guards: dict               # CUDA header macro -> HIP macro
    device_pass: dict          # macro tested for presence -> HIP macro
    version_macros: dict       # macro -> suggestion text
    warp_sync: dict            # *_sync name -> mask-free name
    sync_opt_in: tuple
    sync_enabled: tuple
    full32: frozenset
    full64: frozenset
    full64_spelling: str
    defaults: dict = None      # cuda name -> (parameter count, values of the last parameters): CUDA defaults HIP lacks
    shims: dict = None         # HIP name -> Shim
    before_sync: dict = None   # call without arguments -> the expression it is written as before the *_sync forms
    location: dict = None      # cuda name -> (argument count, location position, flags position or None, hip name,
                               # only a location seen as one): cudaMemLocation arguments HIP takes as device ordinals
    legacy: dict = None        # library -> Legacy: a legacy API whose names are kept when only its header is included
    roc_keep_hip: dict = None  # CUDA header -> (families whose HIP names stay under --roc, why): rules/roc.toml
    forward: Forward = Forward()  # HIP names a ROCm release removed or changed: rules/forward.toml
    mask_types: tuple = (frozenset(), frozenset(), frozenset())  # (wide, narrow, mask_calls) of rules/warp.toml


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


_OP_KINDS = {"insert": ("text",), "replace": ("text",), "remove": (), "move": ("to",), "copy": ("to",),
             "cast": ("text",), "api_name": ()}
_OP_KEYS = {"text", "to", "count", "warn", "values", "as"}
_CASTS = ("reinterpret_cast", "const_cast", "static_cast")
_MODES = ("hip", "roc", "any")


@dataclass(frozen=True, slots=True)
class Legacy:
    """A library's legacy API (rules/calls.toml `[legacy.LIB]`): in a file that includes `header` and none of
    `unless`, a name that also exists with `suffix` appended is the legacy function, kept and reported."""
    header: str
    converted: tuple     # the headers `header` becomes: a file converted before keeps the legacy names too
    unless: tuple
    suffix: str
    note: str
    source: str


def _legacy(path, data) -> dict:
    out = {}
    for lib, e in _table(path, data, "legacy").items():
        if not isinstance(e, dict) or set(e) - {"header", "converted", "unless", "suffix", "note", "source"}:
            raise RuleError(f"{path}: `[legacy.{lib}]` takes `header`, `converted`, `unless`, `suffix`, `note` and "
                            "`source`")
        lists = {k: e.get(k, []) for k in ("converted", "unless")}
        if not all(isinstance(v, list) and all(isinstance(h, str) and h for h in v) for v in lists.values()):
            raise RuleError(f"{path}: `[legacy.{lib}]` `converted` and `unless` must be lists of header names")
        s = {k: _str(path, f"legacy.{lib}", k, e.get(k)) for k in ("header", "suffix", "note", "source")}
        out[lib] = Legacy(s["header"], tuple(lists["converted"]), tuple(lists["unless"]), s["suffix"], s["note"],
                          s["source"])
    return out


def _rewrites(path, data) -> dict:
    entries = data.get("rewrite", [])
    if not isinstance(entries, list):
        raise RuleError(f"{path}: `[[rewrite]]` must be an array of tables")
    out: dict = {}
    for n, e in enumerate(entries, 1):
        where = f"{path}: `[[rewrite]]` #{n}"
        if not isinstance(e, dict):
            raise RuleError(f"{where} must be a table")
        unknown = set(e) - {"names", "mode", "args", "ops", "rocm_min", "rocm_before", "note", "source", "differs",
                            "incomplete", "unchanged", "unless_defined"}
        if unknown:
            raise RuleError(f"{where} has unknown key `{sorted(unknown)[0]}`")
        names = e.get("names")
        if not isinstance(names, list) or not names or not all(isinstance(x, str) and _IDENT.match(x) for x in names):
            raise RuleError(f"{where} needs `names`, a list of C identifiers")
        mode = e.get("mode", "any")
        if mode not in _MODES:
            raise RuleError(f"{where}: `mode` must be one of {', '.join(_MODES)}")
        args = e.get("args")
        if args is not None and (not isinstance(args, int) or isinstance(args, bool) or args < 0):
            raise RuleError(f"{where}: `args` must be a non-negative integer")
        ops = e.get("ops")
        # An empty list is a call hipport cannot rewrite: it must then say why, at each use (`note`).
        if not isinstance(e.get("incomplete", False), bool) or e.get("incomplete") and not e.get("note"):
            raise RuleError(f"{where}: `incomplete = true` needs a `note` saying what the call still lacks")
        # `unchanged = true`: this shape is already HIP's (known, so not `call-shape-unknown`); nothing to change.
        if not isinstance(e.get("unchanged", False), bool) or e.get("unchanged") and (ops or e.get("note")):
            raise RuleError(f"{where}: `unchanged = true` takes `ops = []` and no `note`")
        if not isinstance(ops, list) or not ops and not e.get("note") and not e.get("unchanged"):
            raise RuleError(f"{where} needs `ops`, a list of argument changes (empty only with a `note`, or "
                            "`unchanged = true`)")
        parsed = []
        for op in ops:
            kinds = [k for k in _OP_KINDS if isinstance(op, dict) and k in op]
            if len(kinds) != 1:
                raise RuleError(f"{where}: each op names one of {', '.join(_OP_KINDS)} with a position")
            kind = kinds[0]
            extra = set(op) - {kind} - _OP_KEYS
            missing = [k for k in _OP_KINDS[kind] if k not in op]
            if kind == "replace" and op.get("values"):
                missing = []  # values alone: an argument none of them names is kept as written
            if extra or missing:
                raise RuleError(f"{where}: op `{kind}` takes {', '.join(_OP_KINDS[kind]) or 'only a position'}"
                                f"{' (and count)' if kind == 'move' else ''}"
                                f"{' (and warn)' if kind in ('remove', 'api_name') else ''}{' (and values, warn)' if kind == 'replace' else ''}")
            ints = {k: op.get(k, d) for k, d in ((kind, 0), ("to", -1), ("count", 1))}
            if any(not isinstance(v, int) or isinstance(v, bool) or (v < 0 and k != "to") for k, v in ints.items()):
                raise RuleError(f"{where}: op `{kind}` positions must be non-negative integers")
            for k in ("text", "warn"):
                if k in op and (not isinstance(op[k], str) or not op[k]):
                    raise RuleError(f"{where}: op `{kind}` `{k}` must be a non-empty string")
            values = op.get("values", {})
            if not isinstance(values, dict) or not all(isinstance(v, str) and v for v in values.values()) \
                    or values and kind != "replace":
                raise RuleError(f"{where}: op `{kind}`: `values` (replace only) maps argument texts to strings")
            cast_as = op.get("as", "reinterpret_cast")
            if cast_as not in _CASTS or "as" in op and kind != "cast":
                raise RuleError(f"{where}: op `{kind}`: `as` (cast only) is one of {', '.join(_CASTS)}")
            parsed.append(ArgOp(kind, ints[kind], op.get("text", ""), ints["to"], ints["count"], op.get("warn", ""),
                                tuple(values.items()), cast_as))
        for k in ("note", "source", "differs"):
            if k in e and (not isinstance(e[k], str) or not e[k]):
                raise RuleError(f"{where}: `{k}` must be a non-empty string")
        unless = e.get("unless_defined", [])
        if not isinstance(unless, list) or not all(isinstance(x, str) and _IDENT.match(x) for x in unless):
            raise RuleError(f"{where}: `unless_defined` must be a list of macro names")
        rewrite = Rewrite(tuple(names), mode, args, tuple(parsed),
                          _version(path, "rocm_min", e["rocm_min"]) if "rocm_min" in e else None,
                          _version(path, "rocm_before", e["rocm_before"]) if "rocm_before" in e else None,
                          e.get("note", ""), e.get("source", ""), e.get("differs", ""), e.get("incomplete", False),
                          tuple(unless))
        for name in names:
            out.setdefault(name, []).append(rewrite)
    return {k: tuple(v) for k, v in out.items()}


def _roc(path, data) -> tuple[dict, dict]:
    libraries = data.get("libraries", {})
    if not isinstance(libraries, dict) or not all(isinstance(v, str) and v for v in libraries.values()):
        raise RuleError(f"{path}: `[libraries]` must map CUDA headers to library names")
    types = data.get("types", {})
    if not isinstance(types, dict):
        raise RuleError(f"{path}: `[types]` must be a table of `[types.LIBRARY]` tables")
    out = {}
    for lib, table in types.items():
        if lib not in libraries.values():
            raise RuleError(f"{path}: `[types.{lib}]` names a library no header in `[libraries]` maps to")
        names = {}
        for name, entry in _table(path, types, lib).items():
            if isinstance(entry, dict):
                if set(entry) - {"roc", "host_only"} or not isinstance(entry.get("host_only", False), bool):
                    raise RuleError(f"{path}: entry `{name}` in `[types.{lib}]` takes `roc` and `host_only`")
                names[name] = (_str(path, f"types.{lib}", name, entry.get("roc")), entry.get("host_only", False))
            else:
                names[name] = (_str(path, f"types.{lib}", name, entry), False)
        out[lib] = names
    return dict(libraries), out


def _roc_keep_hip(path, data) -> dict:
    """`[keep_hip]`: `"cublasLt.h" = { families = ["cublas"], why = "..." }`."""
    table = data.get("keep_hip", {})
    if not isinstance(table, dict):
        raise RuleError(f"{path}: `[keep_hip]` must be a table")
    out = {}
    for header, e in table.items():
        if not isinstance(e, dict) or set(e) != {"families", "why"} or not isinstance(e["why"], str) \
                or not isinstance(e["families"], list) or not all(isinstance(f, str) and f for f in e["families"]):
            raise RuleError(f"{path}: `[keep_hip]` entry `{header}` takes `families` (a list of family ids) and `why`")
        out[header] = (frozenset(e["families"]), e["why"])
    return out


def _location(path, data) -> dict:
    out = {}
    for n, e in _table(path, data, "location").items():
        if not isinstance(e, dict) or set(e) - {"args", "location", "flags", "hip", "declared"} \
                or not isinstance(e.get("declared", False), bool):
            raise RuleError(f"{path}: entry `{n}` in `[location]` takes `args`, `location`, `flags`, `hip`, `declared`")
        flags = _int(path, "location", n, e, "flags") if "flags" in e else None
        out[n] = (_int(path, "location", n, e, "args"), _int(path, "location", n, e, "location"), flags,
                  _str(path, "location", n, e.get("hip")), e.get("declared", False))
    return out


_SIMD_GUARD = "defined(__HIP_PLATFORM_AMD__)"
_SIMD_NOTE = ("HIP has no SIMD video intrinsics; this loops over the lanes, as CUDA documents it (check the hot "
              "loops that use it: a lane loop is slower than NVIDIA's single instruction)")
NEVER = (999, 0)  # `hip_from` of a name no HIP release has


def _simd_shims(path, table) -> dict:
    from hipport.simd import SimdSpec, simd_code

    if not isinstance(table, dict):
        raise RuleError(f"{path}: `[simd]` must be a table")
    out = {}
    for name, e in table.items():
        ok = isinstance(e, dict) and _IDENT.match(name) and e.get("bits") in (8, 16) and e.get("lanes") in ("s", "u") \
            and isinstance(e.get("expr"), str) and not set(e) - {"bits", "lanes", "expr", "saturate", "unary", "sum"} \
            and all(isinstance(e.get(k, False), bool) for k in ("saturate", "unary", "sum"))
        if not ok:
            raise RuleError(f"{path}: `{name}` in `[simd]` takes `bits` (8 or 16), `lanes` (\"s\" or \"u\"), "
                            "`expr` and true/false `saturate`, `unary`, `sum`")
        spec = SimdSpec(e["bits"], e["lanes"], e["expr"], e.get("saturate", False), e.get("unary", False),
                        e.get("sum", False))
        out[name] = Shim(name, (name,), NEVER, _SIMD_GUARD, simd_code(name, spec), _SIMD_NOTE,
                         "CUDA Math API, SIMD intrinsics; HIPIFY's CUDA_Device_API_supported_by_HIP table (no HIP name)")
    return out


def _shims(path, data) -> dict:
    out = _simd_shims(path, data.get("simd", {}))
    for name, e in data.items():
        if name == "simd":
            continue
        if not _IDENT.match(name) or not isinstance(e, dict):
            raise RuleError(f"{path}: `[{name}]` must be a table named by a C identifier")
        unknown = set(e) - {"cuda", "hip_from", "guard", "code", "note", "source", "include", "hip_header"}
        if unknown:
            raise RuleError(f"{path}: `[{name}]` has unknown key `{sorted(unknown)[0]}`")
        cuda = e.get("cuda")
        if not isinstance(cuda, list) or not cuda or not all(isinstance(c, str) and _IDENT.match(c) for c in cuda):
            raise RuleError(f"{path}: `[{name}]` needs `cuda`, a list of C identifiers")
        fields = {k: _str(path, name, k, e.get(k)) for k in ("guard", "code", "note", "source")}
        # "never": no HIP release declares the name (atomicInc_system: hip#2656 says none is planned)
        since = NEVER if e.get("hip_from") == "never" else _version(path, f"{name}.hip_from", e.get("hip_from"))
        headers = {k: e.get(k, "") for k in ("include", "hip_header")}
        if not all(isinstance(h, str) for h in headers.values()) or headers["hip_header"] and not headers["include"]:
            raise RuleError(f"{path}: `[{name}]` keys `include` and `hip_header` are header names (strings), "
                            f"`hip_header` only with `include`")
        out[name] = Shim(name, tuple(cuda), since, **fields, **headers)
    return out


_FILES = ("calls.toml", "macros.toml", "warp.toml", "roc.toml", "shims.toml", "rocm/releases.toml")


@lru_cache(maxsize=1)
def load_semantic() -> Semantic:
    """The tables of rules/*.toml, from the user cache while no file changed: parsing them cost the audit of one
    changed file (a pre-commit hook) a tenth of its time."""
    base = builtin_rules_dir()
    here = Path(__file__).parent  # this module and the SIMD code it writes: the cached objects are theirs
    return load_cached("semantic", [here / "semantic.py", here / "simd.py", here / "forward.py",
                                    *(base / n for n in _FILES)],
                       lambda: _parse(base))


def _parse(base: Path) -> Semantic:
    calls_path, macros_path, warp_path = base / "calls.toml", base / "macros.toml", base / "warp.toml"
    calls, macros, warp = _read_toml(calls_path), _read_toml(macros_path), _read_toml(warp_path)
    roc_path = base / "roc.toml"
    roc_libraries, roc_types = _roc(roc_path, _read_toml(roc_path))
    symbol = {n: _int(calls_path, "symbol", n, e, "arg") for n, e in _table(calls_path, calls, "symbol").items()}
    address = set()
    for n, e in _table(calls_path, calls, "symbol").items():
        if set(e) - {"arg", "address"} or not isinstance(e.get("address", False), bool):
            raise RuleError(f"{calls_path}: entry `{n}` in `[symbol]` takes `arg` and `address = true`")
        if e.get("address"):
            address.add(n)
    kernel = {n: (_int(calls_path, "kernel_pointer", n, e, "arg"), _int(calls_path, "kernel_pointer", n, e, "min_args", 0))
              for n, e in _table(calls_path, calls, "kernel_pointer").items()}
    arity = {}
    for n, e in _table(calls_path, calls, "by_arity").items():
        arity[n] = (_int(calls_path, "by_arity", n, e, "args"), _str(calls_path, "by_arity", n, e.get("hip")))
    defaults = {}
    for n, e in _table(calls_path, calls, "defaults").items():
        values = e.get("values") if isinstance(e, dict) else None
        params = _int(calls_path, "defaults", n, e, "params")
        if set(e) - {"params", "values", "source"} or not isinstance(values, list) or not values \
                or not all(isinstance(v, str) and v for v in values) or len(values) > params:
            raise RuleError(f"{calls_path}: entry `{n}` in `[defaults]` takes `params`, `values` (the last "
                            "parameters' values, non-empty strings) and `source`")
        defaults[n] = (params, tuple(values))
    guards = {n: _str(macros_path, "guards", n, v) for n, v in _table(macros_path, macros, "guards").items()}
    device = {n: _str(macros_path, "device_pass", n, v) for n, v in _table(macros_path, macros, "device_pass").items()}
    versions = {n: _str(macros_path, "versions", n, v) for n, v in _table(macros_path, macros, "versions").items()}
    sync = {}
    for n, e in _table(warp_path, warp, "sync").items():
        sync[n] = _str(warp_path, "sync", n, e.get("mask_free") if isinstance(e, dict) else None)
    wv = warp.get("versions", {})
    masks = warp.get("masks", {})
    for key in ("full32", "full64", "wide_types", "narrow_types", "mask_calls"):
        if not isinstance(masks.get(key), list) or not all(isinstance(m, str) for m in masks[key]):
            raise RuleError(f"{warp_path}: `masks.{key}` must be a list of strings")
    return Semantic(
        symbol, frozenset(address), kernel, arity, _rewrites(calls_path, calls), roc_libraries, roc_types, guards, device, versions, sync,
        _version(warp_path, "versions.sync_opt_in", wv.get("sync_opt_in")),
        # From the release data generated from the headers, not a number typed here: 6.4.3 still has them opt-in.
        sync_enabled_from(parse_release_data(base / "rocm" / "releases.toml")),
        frozenset(masks["full32"]), frozenset(masks["full64"]),
        _str(warp_path, "masks", "full64_spelling", masks.get("full64_spelling")),
        defaults,
        _shims(base / "shims.toml", _read_toml(base / "shims.toml")),
        {n: _str(warp_path, "before_sync", n, v) for n, v in _table(warp_path, warp, "before_sync").items()},
        legacy=_legacy(calls_path, calls),
        location=_location(calls_path, calls),
        roc_keep_hip=_roc_keep_hip(roc_path, _read_toml(roc_path)),
        mask_types=tuple(frozenset(m.encode() for m in masks[k]) for k in ("wide_types", "narrow_types", "mask_calls")),
        forward=parse_forward(base / "forward.toml", _read_toml(base / "forward.toml")),
    )
