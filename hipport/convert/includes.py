"""The include pass: CUDA headers become HIP ones (in the installed layout), repeats are dropped, and a file with
device code but no runtime header gets `<hip/hip_runtime.h>`."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

from hipport import directives as dirs
from hipport import rocm
from hipport.convert.context import ConversionContext, break_before, token_at, top_of_file
from hipport.convert.quick import CUDA_UNITS
from hipport.scan import COMMENT, IDENT, PUNCT

HIP_RUNTIME = b"hip/hip_runtime.h"
HIP_COOPERATIVE_GROUPS = b"hip/hip_cooperative_groups.h"


_DEVICE_CODE = re.compile(rb"\b__(?:global|device|shared)__\b|<<<")


def rewrite_includes(ctx: ConversionContext) -> None:
    """Map CUDA headers to HIP ones; drop an include that would repeat a HIP header already included."""
    tokens, roc = ctx.tokens, ctx.options.roc
    seen: dict[bytes, list[tuple]] = {}
    ctx.has_runtime = False
    for d in ctx.structure.directives:
        target = dirs.include_target(tokens, d)
        if target is None:
            continue
        start, end, header = target
        rule = ctx.rules.headers.get(header.decode("latin-1"))
        new_header = header
        if rule is None and ctx.src[start - 1:start] == b"<":
            note = unmapped_note(ctx.rules.unmapped_headers, header.decode("latin-1"))
            if note is not None and _projects_own(ctx.path, header.decode("utf-8", "replace")):
                note = None  # CTranslate2's `<cuda/mpi_stub.h>` is its `src/cuda/mpi_stub.h` (found with -I src)
            if note is not None:
                name = header.decode("latin-1")
                ctx.finding("unsupported-header", "warning", start, f"`{name}`: {note}", subject=name)
        if rule is not None:
            if rule.remove:
                _remove(ctx, d, rule.cuda)
                continue
            shim = header_shim(ctx, rule.cuda) if rule.unsupported else None
            if shim is not None:
                _stand_in(ctx, d, target, shim, seen)
                continue
            by_release = None if roc and rule.roc else \
                ctx.rules.for_release("headers", rule.cuda, ctx.options.rocm_version)
            if rule.unsupported and not (roc and rule.roc) and by_release is None:  # a release may add it
                ctx.finding("unsupported-header", "warning", start, f"`{rule.cuda}`: {rule.unsupported}",
                             subject=rule.cuda)
                continue
            new_header = rocm.installed_header_layout(by_release or rule.target(roc)).encode()
            if any(block == d.block for block in seen.get(new_header, ())):
                _remove(ctx, d, rule.cuda)
                continue
            ctx.convert(start, end, new_header, rule.cuda, "include")
        if new_header == HIP_COOPERATIVE_GROUPS and not _runtime_before(seen, d.block) and \
                not ctx.platform.includes_hip_runtime:  # a header the file includes with quotes has it
            # HIP 5.x's cooperative-groups header is not self-contained (it uses hipBlockDim_z & co. undeclared):
            # the runtime header goes first; a runtime include further down the same block then repeats it.
            ctx.convert(d.start, d.start, b"#include <hip/hip_runtime.h>" + ctx.newline(), "(cooperative groups)",
                        "include")
            seen.setdefault(HIP_RUNTIME, []).append(d.block)
            ctx.has_runtime = True
        seen.setdefault(new_header, []).append(d.block)
        if new_header == HIP_RUNTIME:
            ctx.has_runtime = True


def header_shim(ctx: ConversionContext, header: str):
    """The stand-in (rules/shims.toml) that replaces an include of ``header`` for the targeted release, or None."""
    return next((s for s in (ctx.semantic.shims or {}).values()
                 if s.include == header and ctx.options.rocm_version[:2] < s.hip_from[:2]), None)


def _stand_in(ctx: ConversionContext, d: dirs.Directive, target: tuple, shim, seen: dict) -> None:
    """The include of a header HIP lacks -> the definition rules/shims.toml has for it, after the HIP
    cooperative-groups header (and the runtime header before that, which HIP 5.x's needs) where the block has
    neither yet."""
    from hipport.convert.shims import include_shim  # here: shims imports this module

    start, end, _header = target
    nl = ctx.newline()
    groups = rocm.installed_header_layout(HIP_COOPERATIVE_GROUPS.decode()).encode()
    prefix = b""
    if not any(d.block[:len(b)] == b for b in seen.get(groups, ())):
        if not _runtime_before(seen, d.block):
            prefix += b"#include <" + HIP_RUNTIME + b">" + nl
            seen.setdefault(HIP_RUNTIME, []).append(d.block)
            ctx.has_runtime = True
        prefix += b"#include <" + groups + b">" + nl
        seen.setdefault(groups, []).append(d.block)
    include_shim(ctx, shim, d.start, end + 1, start, prefix)


def unmapped_note(patterns, header: str) -> str | None:
    """The note of the first `[[unmapped]]` glob ``header`` matches (a CUDA header no rule maps), else None."""
    return next((note for glob, note in patterns if fnmatchcase(header, glob)), None)


def _runtime_before(seen: dict, block: tuple) -> bool:
    """Whether `<hip/hip_runtime.h>` was included above, where it also holds for ``block`` (the same conditional
    block or one enclosing it)."""
    return any(block[:len(b)] == b for b in seen.get(HIP_RUNTIME, ()))


def _remove(ctx: ConversionContext, d: dirs.Directive, cuda: str) -> None:
    """Drop an include line; a comment on it stays, where the `#` was (`#include <cuda.h>  // why` -> `// why`)."""
    tokens = ctx.tokens
    comments = [k for k in range(d.first, d.last) if tokens.kinds[k] == COMMENT]
    if not comments:
        ctx.convert(d.start, d.end, b"", cuda, "include")
        return
    indent = ctx.src[d.start : tokens.starts[d.first]]
    first = comments[0]
    if all(tokens.kinds[k] == COMMENT for k in range(first, d.last)):
        ctx.convert(d.start, tokens.starts[first], indent, cuda, "include")  # the comment and the newline stay
        return
    kept = b" ".join(tokens.text(k) for k in comments)  # `# /* a */ include <cuda.h>`: only the comments
    end = tokens.ends[d.last - 1]
    ctx.convert(d.start, end, indent + kept, cuda, "include")


def has_device_code(ctx: ConversionContext) -> bool:
    """Whether the file has `__global__`/`__device__`/`__shared__` code or a launch (cached on the context)."""
    found = getattr(ctx, "_device_code", None)
    if found is not None:
        return found
    ctx._device_code = found = _scan_device_code(ctx)
    return found


def _scan_device_code(ctx: ConversionContext) -> bool:
    tokens = ctx.tokens
    for m in _DEVICE_CODE.finditer(ctx.src):
        i = token_at(tokens, m.start())
        if i is not None and tokens.kinds[i] in (IDENT, PUNCT):
            return True
    return False


# nvcc includes cuda_runtime.h in every .cu file it compiles, so the headers those files include may use the runtime
# without including it; hipcc includes no HIP runtime header (ROCm 7.2.4's hipcc: `float4`, `dim3` and `hipMalloc`
# are undeclared in a .hip file without it). Host sources (.cpp, .c), compiled by a host compiler, had to include it
# themselves.
_IMPLICIT_RUNTIME_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl", ".inc")
_RUNTIME_CATEGORIES = frozenset({"runtime", "driver"})


def insert_runtime_include(ctx: ConversionContext) -> None:
    """`#include <hip/hip_runtime.h>` in a .cu file (what nvcc gave it: CUDA's vector types and `dim3` need no
    name the rename tables know), in a file with device code, or in a header that uses the runtime or driver API
    without including it."""
    if ctx.has_runtime:
        return
    if not ctx.path.lower().endswith(CUDA_UNITS) and not has_device_code(ctx) and not (
            ctx.path.lower().endswith(_IMPLICIT_RUNTIME_SUFFIXES)
            and any(c.category in _RUNTIME_CATEGORIES for c in ctx.result.conversions)):
        return
    at = top_of_file(ctx)
    if at is None:
        return
    line = b"#include <hip/hip_runtime.h>" + ctx.newline()
    ctx.convert(at, at, break_before(ctx, at) + line, "(device code)", "include")


def _projects_own(path: str, header: str) -> bool:
    """``header`` (named in angle brackets by ``path``) is a file of the project: beside ``path`` or in a folder
    above it (where a `-I` would point), not CUDA's."""
    if path.startswith("<"):
        return False
    from hipport.platforms import resolve_quoted

    return resolve_quoted(header, path) is not None

