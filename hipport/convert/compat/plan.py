"""What one compatibility header must give a CUDA tree so that it builds for AMD unchanged (`hipport compat`).

The tree is converted in memory by the engine, as `hipport convert` would for the release named; what the engine
did to each file says what the header needs, and what it could not do says what no header can:

* a rename (`cudaMalloc` -> `hipMalloc`, in any family) becomes `#define cudaMalloc hipMalloc`; names the engine
  leaves for the release (HIP lacks them, or this release does) are only listed and reported;
* a CUDA header becomes a forwarding header of that name (`cuda_runtime.h`), and its HIP counterpart is included
  by the compatibility header; one HIP lacks gets none and is reported;
* a call whose HIP form differs beyond the name becomes a function-like macro where the difference is one the
  preprocessor can make (`HIP_SYMBOL(sym)`, a kernel pointer cast, the function chosen by the argument count,
  trailing arguments CUDA defaults and HIP does not); the other call rewrites are source changes, reported;
* the warp built-ins the tree calls get the release's form: mask-free ones before the `*_sync` forms are on by
  default (ROCm 7.0), the mask handed on as 64 bits from then;
* tests of `__CUDA_ARCH__` and of CUDA's header guards get the macros they test; a stand-in the release lacks
  (`__syncwarp` before 7.0) goes into the header;
* everything else the engine changed (a clashing redefinition guarded, `register` dropped, `warpSize` as a
  compile-time width) changes the source: reported with where it is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

# The conversion's findings that leave a CUDA name or header without a HIP form for the release: listed in the
# header, reported.
UNMAPPED_RULES = frozenset({"unsupported-api", "needs-newer-rocm", "removed-api", "unsupported-header", "legacy-api"})
# Conversion findings the header answers itself (the mask forms of the warp built-ins, the stand-ins it holds).
ANSWERED_RULES = frozenset({"warp-sync-mask", "shim-added", "warp-sync-opt-in"})
# Summary categories of renames: the rename tables' families and the kinds of names hipport renames itself.
NOT_RENAMES = frozenset({"include", "shim", "warp", "macro", "argument", "guard", "c++17", "attribute", "launch",
                         "wavefront", "forward", "build", "single-source"})
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_THRUST_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*<(thrust/[^>\n]+)>', re.M)
_CODE_NOISE = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


@dataclass(slots=True)
class Place:
    path: str  # as the command line shows it
    line: int


@dataclass(slots=True)
class SourceChange:
    """A change the engine made that no header can make: the source must change for AMD."""
    path: str
    line: int
    cuda: str
    hip: str
    category: str


@dataclass(slots=True)
class CompatPlan:
    target: tuple
    roc: bool = False
    files: int = 0                                        # sources read
    gpu_files: int = 0                                    # of those, with CUDA in them
    renames: dict = field(default_factory=dict)           # cuda name -> HIP name
    namespaces: dict = field(default_factory=dict)        # cuda namespace -> HIP namespace
    forwarding: dict = field(default_factory=dict)        # CUDA header as included -> HIP header ("" : none needed)
    includes: list = field(default_factory=list)          # HIP headers the header includes, in order
    calls: dict = field(default_factory=dict)             # cuda name -> list of `#define` lines (a call's macro)
    warp: dict = field(default_factory=dict)              # warp built-in -> its `#define` line
    warp_enable: str = ""                                 # a macro the release needs before <hip/hip_runtime.h>
    device_pass: dict = field(default_factory=dict)       # macro tested for presence -> HIP's device-pass macro
    guards: dict = field(default_factory=dict)            # CUDA header guard -> HIP header guard
    stand_ins: dict = field(default_factory=dict)         # HIP name -> Shim (a definition the release lacks)
    include_stand_ins: dict = field(default_factory=dict)  # CUDA header -> Shim (written as its forwarding header)
    pre_includes: list = field(default_factory=list)      # the tree's own <thrust/...> headers, before the macros
    unmapped: dict = field(default_factory=dict)          # name or header -> (rule id, first Place, message)
    source_changes: list = field(default_factory=list)    # SourceChange, in file order
    findings: list = field(default_factory=list)          # (path, Finding) the conversion reports as it is
    units: list = field(default_factory=list)             # translation units with CUDA (paths, as read)
    gpu_paths: list = field(default_factory=list)         # every file with CUDA (paths, as read)
    libraries: list = field(default_factory=list)         # CUDA libraries the tree uses (`cublas`, `curand`)
    c_units: list = field(default_factory=list)           # C files with CUDA: not built as HIP by the glue

    @property
    def mapped(self) -> int:
        return len(self.renames) + len(self.namespaces)


# The CUDA library whose families a rename belongs to: the build glue links its HIP counterpart.
_FAMILY_LIBRARY = {"cublas": "cublas", "curand": "curand", "cufft": "cufft", "cusparse": "cusparse",
                   "cusolver": "cusolver"}
UNIT_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c++", ".hip")
C_SUFFIXES = (".c",)


def build_plan(items, rules, semantic, wave_rules, target: tuple, roc: bool = False) -> CompatPlan:
    """``items``: (path as shown, path on disk, source bytes, FileResult of the engine) per source, in order."""
    plan = CompatPlan(tuple(target[:2]), roc)
    seen_hip: dict[str, set] = {}
    first_place: dict[str, Place] = {}
    calls_used: set[str] = set()
    sync_used: set[str] = set()
    device_macros: set[str] = set()
    libraries: set[str] = set()
    thrust: list[str] = []
    sync_pattern = re.compile(rb"\b(" + b"|".join(sorted(n.encode() for n in
                                                         wave_rules.sync_names | set(semantic.warp_sync))) + rb")\s*\(")
    for shown, disk, src, result in items:
        plan.files += 1
        if result is None or result.error is not None:
            continue
        has_cuda = bool(result.conversions) or any(f.rule_id in UNMAPPED_RULES for f in result.findings)
        code = _CODE_NOISE.sub(b" ", src)
        used_sync = {m.group(1).decode() for m in sync_pattern.finditer(code)}
        has_cuda = has_cuda or bool(used_sync)
        if not has_cuda:
            continue
        plan.gpu_files += 1
        plan.gpu_paths.append(disk)
        sync_used |= used_sync
        suffix = os.path.splitext(disk)[1].lower()
        if suffix in UNIT_SUFFIXES:
            plan.units.append(disk)
        elif suffix in C_SUFFIXES:
            plan.c_units.append(disk)
        for m in _THRUST_INCLUDE.finditer(src):
            name = m.group(1).decode("latin-1")
            if name not in thrust:
                thrust.append(name)
        for conv in result.conversions:
            _take(plan, conv, shown, semantic, seen_hip, first_place, calls_used, device_macros, libraries)
        for f in result.findings:
            if f.rule_id in UNMAPPED_RULES:
                key = f.subject or f.message
                plan.unmapped.setdefault(key, (f.rule_id, Place(shown, f.line), f.message))
            elif f.rule_id not in ANSWERED_RULES:
                plan.findings.append((shown, f))
    # A name renamed two ways (by argument count) is a call macro, not a rename.
    for name, hips in seen_hip.items():
        if name in plan.calls or name in semantic.by_arity:
            continue
        if len(hips) == 1:
            plan.renames[name] = next(iter(hips))
        else:  # the engine chose by context; the header cannot: reported where it first happened
            place = first_place[name]
            plan.source_changes.append(SourceChange(place.path, place.line, name, " / ".join(sorted(hips)), "rename"))
    for name in sorted(calls_used & set(semantic.by_arity)):
        plan.calls[name] = _by_arity(name, semantic)
    for name, lines in list(plan.calls.items()):  # the plain HIP function: the rename tables' for the release
        hips = seen_hip.get(name, set())
        hip = _hip_name(name, rules, target, roc) or (next(iter(hips)) if len(hips) == 1 else None)
        if hip is None:
            del plan.calls[name]
            place = first_place.get(name)
            plan.source_changes.append(SourceChange(place.path if place else "", place.line if place else 0, name,
                                                    "", "argument"))
            continue
        plan.calls[name] = [line.replace("{HIP:" + name + "}", hip) for line in lines]
    _warp(plan, sync_used, semantic, wave_rules)
    if device_macros or plan.guards or any(n in plan.renames for n in ("__CUDACC__",)):
        plan.pre_includes = thrust
    plan.device_pass = {m: semantic.device_pass[m] for m in sorted(device_macros)}
    plan.libraries = sorted(libraries)
    # HIP headers: the runtime first (everything else builds on it), then those of the forwarded CUDA headers.
    hip_headers = sorted({h for h in plan.forwarding.values() if h} - {"hip/hip_runtime.h"})
    plan.includes = ["hip/hip_runtime.h", *hip_headers]
    plan.source_changes.sort(key=lambda c: (c.path, c.line))
    return plan


def _take(plan, conv, shown, semantic, seen_hip, first_place, calls_used, device_macros, libraries) -> None:
    cat, cuda, hip = conv.category, conv.cuda, conv.hip
    if cuda.startswith("("):  # an insertion (`<hip/hip_runtime.h>` for device code): the header includes it
        return
    if cat == "include":
        plan.forwarding.setdefault(cuda, hip)
        return
    if cat == "shim":
        shims = semantic.shims or {}
        if cuda in shims:
            plan.stand_ins.setdefault(cuda, shims[cuda])
        else:
            for shim in shims.values():
                if shim.include == cuda:
                    plan.include_stand_ins.setdefault(cuda, shim)
                    plan.forwarding.setdefault(cuda, "")
        return
    if cat == "warp":
        return  # by the names the tree calls (`_warp`)
    if cat == "macro":
        if cuda in semantic.guards:
            plan.guards.setdefault(cuda, semantic.guards[cuda])
        elif cuda in semantic.device_pass:
            device_macros.add(cuda)
        else:
            plan.source_changes.append(SourceChange(shown, conv.line, cuda, hip, cat))
        return
    if cat == "argument":
        line = _call_macro(cuda, semantic, plan.renames)
        if line is not None:
            calls_used.add(cuda)
            plan.calls.setdefault(cuda, line)
        else:
            plan.source_changes.append(SourceChange(shown, conv.line, cuda, hip, cat))
        return
    if cat == "namespace" and _IDENT.match(cuda) and _IDENT.match(hip):
        plan.namespaces.setdefault(cuda, hip)
        return
    if cat in NOT_RENAMES or not (_IDENT.match(cuda) and _IDENT.match(hip)):
        plan.source_changes.append(SourceChange(shown, conv.line, cuda, hip, cat))
        return
    if cuda == hip:
        return
    if cuda in semantic.by_arity:
        calls_used.add(cuda)
    seen_hip.setdefault(cuda, set()).add(hip)
    first_place.setdefault(cuda, Place(shown, conv.line))
    if cat in _FAMILY_LIBRARY:
        libraries.add(_FAMILY_LIBRARY[cat])


def _hip_name(name: str, rules, target: tuple, roc: bool) -> str | None:
    rule = rules.names.get(name)
    if rule is None:
        return None
    return rules.for_release("names", name, target) or rule.target(roc)


def _call_macro(name: str, semantic, renames) -> list | None:
    """The `#define` of a call whose arguments change in a way a macro can write, or None."""
    if name in semantic.symbol_args:
        pos = semantic.symbol_args[name]
        wrap = "HIP_SYMBOL(&{})" if name in semantic.symbol_address else "HIP_SYMBOL({})"
        return _positional(name, pos, "symbol", wrap)
    if name in semantic.kernel_args:
        pos, min_args = semantic.kernel_args[name]
        if min_args and min_args > pos + 1:
            return None  # the cast depends on how many arguments follow: not for one macro
        return _positional(name, pos, "kernel", "reinterpret_cast<const void*>({})")
    if semantic.defaults and name in semantic.defaults:
        return _defaults(name, *semantic.defaults[name])
    return None


def _hip_of(name: str) -> str:
    # The HIP function of these calls, the rename tables' for the release: filled in by `build_plan` at the end.
    return "{HIP:" + name + "}"


def _positional(name: str, pos: int, label: str, wrap: str) -> list:
    before = [f"a{k}" for k in range(pos)]
    params = ", ".join([*before, label, "..."])
    args = ", ".join([*before, wrap.format(label)])
    return [f"#define {name}({params}) {_hip_of(name)}({args} __VA_OPT__(,) __VA_ARGS__)"]


def _dispatch_head(name: str) -> str:
    return f"#define {name}(...) HIPPORT_CAT(HIPPORT_{name}_, HIPPORT_NARGS(__VA_ARGS__))(__VA_ARGS__)"


MAX_ARGS = 9


def _defaults(name: str, params: int, values: tuple) -> list:
    lines = [_dispatch_head(name)]
    first_default = params - len(values)
    for count in range(1, MAX_ARGS + 1):
        if first_default <= count < params:
            extra = ", ".join(values[count - first_default:])
            lines.append(f"#define HIPPORT_{name}_{count}(...) {_hip_of(name)}(__VA_ARGS__, {extra})")
        else:
            lines.append(f"#define HIPPORT_{name}_{count} {_hip_of(name)}")
    return lines


def _by_arity(name: str, semantic) -> list:
    count, special = semantic.by_arity[name]
    lines = [_dispatch_head(name)]
    for n in range(1, MAX_ARGS + 1):
        lines.append(f"#define HIPPORT_{name}_{n} {special if n == count else _hip_of(name)}")
    return lines


def _warp(plan: CompatPlan, used: set, semantic, wave_rules) -> None:
    """The warp built-ins the tree calls, in the form the release has (see the module's text)."""
    target = plan.target
    if target < tuple(semantic.sync_enabled[:2]):
        for name in sorted(used):
            if name in semantic.warp_sync:
                plan.warp[name] = f"#define {name}(mask, ...) {semantic.warp_sync[name]}(__VA_ARGS__)"
            elif semantic.before_sync and name in semantic.before_sync:
                plan.warp[name] = f"#define {name}() ({semantic.before_sync[name]})"
        return
    for name in sorted(used):
        if name in wave_rules.dropped_names:
            # HIP's masked form checks a 64-bit mask without adjusting it for wave32: a mask is dropped.
            plan.warp[name] = f"#define {name}(...) {name}()"
        elif name in semantic.warp_sync or (name.endswith("_sync") and name in wave_rules.sync_names):
            plan.warp[name] = f"#define {name}(mask, ...) {name}(hipport_mask64(mask), __VA_ARGS__)"
