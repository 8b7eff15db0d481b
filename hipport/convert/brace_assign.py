"""`x = {};` for a half-precision variable becomes `x = half2{};`; `{{0}}` for a bf16 that becomes `hip_bfloat16`
becomes `{}` (bf16_zero_braces).

HIP's `__half` and `__half2` have several assignment operators (from their raw forms, from float...), so an empty
braced list matches more than one and the assignment is ambiguous ("use of overloaded operator '=' is ambiguous");
nvcc's have one. Writing the type makes it the value-initialised object the braces meant. Initialisations
(`half2 x = {};`) compile as they are and are left alone.
"""

from __future__ import annotations

import re

from hipport.convert.context import ConversionContext, token_at

_TYPES = (b"half2", b"half", b"__half2", b"__half", b"__nv_bfloat16", b"__nv_bfloat162")
_DECLARED = re.compile(rb"\b(" + b"|".join(_TYPES) + rb")\s+((?:[A-Za-z_]\w*\s*(?:=\s*[^,;]*)?,\s*)*[A-Za-z_]\w*)")
_EMPTY_BRACES = re.compile(rb"\{\s*\}")  # a search, not a copy of the file without its spaces
_ASSIGN = re.compile(rb"\b([A-Za-z_]\w*)(\s*=\s*)\{\s*\}")


def typed_empty_braces(ctx: ConversionContext) -> None:
    if not _EMPTY_BRACES.search(ctx.src) or not any(t in ctx.src for t in _TYPES):
        return
    types: dict[bytes, bytes] = {}
    for m in _DECLARED.finditer(ctx.src):
        for part in m.group(2).split(b","):
            name = re.match(rb"\s*([A-Za-z_]\w*)", part)
            if name:
                types[name.group(1)] = m.group(1)
    for m in _ASSIGN.finditer(ctx.src):
        name = m.group(1)
        if name not in types or _is_declaration(ctx.src, m.start()):
            continue
        token = token_at(ctx.tokens, m.start(1))
        if token is None or ctx.skip[token]:
            continue
        at = m.end(2)
        rule = ctx.rules.names.get(types[name].decode())
        hip = rule.target(ctx.options.roc) if rule is not None else None
        ctx.convert(at, at, (hip or types[name].decode()).encode(), "= {}", "argument")


# `__nv_bfloat16 z = {{0}};` (and `z{{0}}`): CUDA's type takes its raw form `{0}` through a constructor.
_ZERO_BF16 = re.compile(rb"\b__nv_bfloat16(\s+[A-Za-z_]\w*\s*=?\s*)(\{\s*\{\s*0\s*\}\s*\})")


def bf16_zero_braces(ctx: ConversionContext) -> None:
    """`{{0}}` for a `__nv_bfloat16` that becomes HIP 5's `hip_bfloat16` (targets before 6.0): that class has only
    an explicit constructor from float, so the braces do not compile ("chosen constructor is explicit in
    copy-initialization", Debian's HIP 5.2); `{}` value-initialises it to the same zero bits."""
    if b"__nv_bfloat16" not in ctx.src or not _ZERO_BF16.search(ctx.src):
        return
    rule = ctx.rules.names.get("__nv_bfloat16")
    hip = ctx.rules.for_release("names", "__nv_bfloat16", ctx.options.rocm_version) or (
        rule.target(ctx.options.roc) if rule is not None else None)
    if hip != "hip_bfloat16":
        return  # `__hip_bfloat16` (6.0+) takes `{{0}}` as CUDA's does (ROCm 6.4.3 and 7.2.4)
    for m in _ZERO_BF16.finditer(ctx.src):
        token = token_at(ctx.tokens, m.start())
        if token is None or ctx.skip[token]:
            continue
        ctx.convert(m.start(2), m.end(2), b"{}", "{{0}}", "argument")


def _is_declaration(src: bytes, start: int) -> bool:
    """`half2 x = {}`: the word before the name is its type."""
    before = src[max(0, start - 40):start].rstrip()
    return any(before.endswith(t) for t in _TYPES) or before.endswith(b",")
