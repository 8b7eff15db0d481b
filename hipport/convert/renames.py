"""The rename pass: every CUDA name a rule knows becomes its HIP name, unless the name is the user's own; names
HIP lacks are reported."""

from __future__ import annotations

import re

from hipport import rocm
from hipport.convert.context import ConversionContext
from hipport.model import Finding
from hipport.scan import IDENT, KEYWORD
from hipport.semantic import parse_version

# `cuda_column` is a user's snake_case name; CUDA's own API is camelCase (`cudaX`, `cuX`) or upper case.


_CUDA_LOOKING = re.compile(rb"^(?:cuda[A-Z0-9]|cu[A-Z]|CU_|CUDA_|__nv)")
# Names from the device tables that are ordinary words (`saturate`, `umax`): only a call to one that the
# file does not define is worth reporting as unsupported.


_CUDA_PREFIX = re.compile(r"^(?:cuda|cu[A-Z]|CU|cub|nv|NV|__|curand|cublas|cufft|cusparse|cusolver|cudnn|make_)")


_NOT_DECL_BEFORE = {b"return", b"case", b"else", b"throw", b"new", b"delete", b"sizeof", b"co_return",
                    b"co_yield", b"do", b"goto", b"typeid", b"decltype", b"alignof", b"noexcept"}


_TYPE_KEYWORDS = {b"int", b"float", b"double", b"char", b"bool", b"auto", b"unsigned", b"signed", b"long",
                  b"short", b"void", b"size_t", b"int32_t", b"int64_t", b"uint32_t", b"uint64_t"}


_DECLARATOR_END = {b";", b"=", b",", b"[", b"{", b":"}


def rename_identifiers(ctx: ConversionContext) -> None:
    tokens, rules, roc = ctx.tokens, ctx.rules, ctx.options.roc
    skip = ctx.skip
    starts, ends, src = tokens.starts, tokens.ends, ctx.src
    names, namespaces = rules.names, rules.namespaces
    n = len(tokens)
    claimed = ctx.claimed
    target_rocm = ctx.options.rocm_version
    # Generic names (`saturate`, `umax`) the file declares itself are the user's functions, wherever used.
    own = {src[starts[i]:ends[i]] for i in ctx.candidates if _is_declaration(ctx, i)}
    for i in ctx.candidates:
        if skip[i] or i in claimed:
            continue
        word = src[starts[i] : ends[i]]
        prev = tokens.text(i - 1) if i else b""
        if prev in (b".", b"->"):
            continue  # a member of some struct, not the CUDA entity of that name
        if prev in _TYPE_KEYWORDS and (tokens.text(i + 1) if i + 1 < n else b"") in _DECLARATOR_END:
            continue  # `int cudaMalloc;`: the user's variable or member of that name
        name = word.decode("latin-1")
        nxt = tokens.text(i + 1) if i + 1 < n else b""
        if name in namespaces and (nxt == b"::" or prev == b"namespace"):
            ctx.convert(starts[i], ends[i], namespaces[name].encode(), name, "namespace")
            continue
        rule = names.get(name)
        if rule is None:
            if _CUDA_LOOKING.match(word):
                if _is_declaration(ctx, i):
                    ctx.defines.add(name)
                else:
                    line, col = ctx.lines.line_col(starts[i])
                    ctx.result.unknown.append((name, line, col))
            continue
        target = rule.target(roc)
        if target is not None and not roc and rule.family in ctx.rules.family_notes:
            ctx.result.findings.append(_unsupported(ctx, rule, starts[i]))
            continue
        if target is None:
            if not _CUDA_PREFIX.match(name) and (nxt != b"(" or word in own):
                continue
            ctx.result.findings.append(_unsupported(ctx, rule, starts[i]))
        elif target != name:
            ctx.convert(starts[i], ends[i], target.encode(), name, rule.family)
            added = rule.versions.get("roc_added" if roc and rule.roc else "hip_added")
            if added and parse_version(added)[:2] > target_rocm and not _installed_has(target, target_rocm):
                ctx.finding("needs-newer-rocm", "warning", starts[i],
                             f"`{target}` needs ROCm {added} or newer (targeting "
                             f"{'.'.join(map(str, target_rocm))}); it is renamed anyway", subject=name)


def _is_declaration(ctx: ConversionContext, i: int) -> bool:
    """`T name(` or `struct name`: the user declares this name, so it is theirs, not CUDA's."""
    if i == 0:
        return False
    prev_kind = ctx.tokens.kinds[i - 1]
    prev = ctx.tokens.text(i - 1)
    if prev in (b"struct", b"class", b"enum", b"union", b"namespace", b"typedef"):
        return True
    nxt = ctx.tokens.text(i + 1) if i + 1 < len(ctx.tokens) else b""
    return nxt == b"(" and prev_kind in (IDENT, KEYWORD) and prev not in _NOT_DECL_BEFORE


def _unsupported(ctx: ConversionContext, rule, offset: int) -> Finding:
    line, col = ctx.lines.line_col(offset)
    what = "removed" if "cuda_removed" in rule.versions else "unsupported"
    message = f"`{rule.cuda}` has no HIP equivalent ({rule.family}); port it by hand"
    if rule.family in ctx.rules.family_notes:
        message = f"`{rule.cuda}`: {ctx.rules.family_notes[rule.family]}"
    if ctx.options.roc and rule.hip and not rule.roc:
        message = f"`{rule.cuda}` has no ROC equivalent; `{rule.hip}` is the HIP name"
    return Finding(f"{what}-api", "warning", line, col, message, subject=rule.cuda)


def _installed_has(name: str, target_rocm: tuple) -> bool:
    return rocm.detect_installed() == target_rocm[:2] and name in rocm.installed_names()
