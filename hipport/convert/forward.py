"""HIP written for an older ROCm, brought to the targeted release (rules/forward.toml): hipBLAS 2's `_v2`
functions, `hipblasDatatype_t`, its complex types and compute types become hipBLAS 3's for a 7.0+ target; what a
rename cannot settle is reported (`rocm-forward`). CUDA input gets the same names from the rename pass
(`Forward.current`); this pass reads only the HIP text already in the file."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hipport.convert.calls import call_args, next_code, prev_code
from hipport.convert.context import token_at
from hipport.scan import IDENT

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext

_MEMBER = {b".", b"->"}
# Words before a name that the name is then declared by: a class key or a built-in type (a name of a type is an
# identifier, which counts as well).
_DECLARING = {b"struct", b"class", b"union", b"enum", b"int", b"unsigned", b"signed", b"long", b"short", b"char",
              b"float", b"double", b"bool", b"void", b"auto"}


def bring_forward(ctx: "ConversionContext") -> None:
    fwd = ctx.semantic.forward
    target = ctx.options.rocm_version
    if tuple(target[:2]) < fwd.first:
        return
    found = _names_at(ctx, fwd.triggers().finditer(ctx.src))
    if not found:
        return  # nothing of an older hipBLAS here: hipBLAS 3's own calls are left as they are
    _arguments(ctx, target)
    renames, notes = fwd.renamed(target)
    makers = {t: f for since, calls in fwd.constructors if tuple(target[:2]) >= since for t, f in calls.items()}
    tokens = ctx.tokens
    for i in found:
        if i in ctx.claimed:
            continue
        name = tokens.text(i).decode("latin-1")
        new = fwd.current(name, target)
        if name in makers and _two_argument_call(ctx, i):
            new = makers[name]
        elif name in renames:
            new = renames[name]
        if new == name:
            continue
        ctx.claimed.add(i)
        ctx.convert(tokens.starts[i], tokens.ends[i], new.encode(), name, "forward")
        if name in notes and f"forward:{notes[name]}" not in ctx.once:
            ctx.once.add(f"forward:{notes[name]}")
            ctx.finding("rocm-forward", "warning", tokens.starts[i], f"`{name}` -> `{renames[name]}`: {notes[name]}",
                        subject=name)


def _names_at(ctx: "ConversionContext", matches) -> list[int]:
    """The tokens of the trigger words ``matches`` found that are HIP's names: not inside a comment or string, not a
    member (`z.hipblasComplex`), not behind a scope of the user's (`mylib::hipblasComplex`), not the name a
    `#define` defines, and not a name the file declares itself anywhere (a type, a variable, a function: a
    stand-in for an old hipBLAS, or the user's own name)."""
    tokens = ctx.tokens
    found, own = [], set()
    for m in matches:
        i = token_at(tokens, m.start())
        if i is None or tokens.kinds[i] != IDENT or tokens.ends[i] != m.end() or ctx.skip[i] or i in ctx.claimed:
            continue
        p = prev_code(tokens, i - 1)
        prev = tokens.text(p) if p >= 0 else b""
        if prev in _MEMBER or prev == b"define":
            continue
        if prev == b"::" and p > 0 and tokens.kinds[prev_code(tokens, p - 1)] == IDENT:
            continue
        word = tokens.text(i)
        if prev in _DECLARING or p >= 0 and tokens.kinds[p] == IDENT or re.search(
                rb"\btypedef\b[^;{}]*\b" + re.escape(word) + rb"\s*;", ctx.src):
            own.add(word)  # `struct hipblasComplex {`, `int hipblasCscal_v2;`, `Handles hipblasComplex`
            continue
        found.append(i)
    return [i for i in found if tokens.text(i) not in own]


def _two_argument_call(ctx: "ConversionContext", i: int) -> bool:
    found = call_args(ctx.tokens, i)
    return found is not None and len(found[2]) == 2


def _arguments(ctx: "ConversionContext", target: tuple) -> None:
    """`[[argument]]`: an argument whose type changed, in a call of any spelling of the function (`_v2` too):
    written anew where `values` names it, kept where it starts with `keep`, reported otherwise."""
    fwd = ctx.semantic.forward
    tokens, src = ctx.tokens, ctx.src
    wanted = {}
    for a in fwd.arguments:
        if tuple(target[:2]) >= a.since:
            wanted.update({call: (pos, a) for call, pos in a.calls.items()})
    if not wanted:
        return
    prefixes = tuple({call[:6].encode() for call in wanted})
    for i in range(len(tokens)):
        if tokens.kinds[i] != IDENT or ctx.skip[i] or not src.startswith(prefixes, tokens.starts[i]):
            continue
        name = tokens.text(i).decode("latin-1")
        call = fwd.current(name, target)
        if call not in wanted or _is_member(ctx, i):
            continue
        found = call_args(tokens, i)
        pos, rule = wanted[call]
        if found is None or pos >= len(found[2]):
            continue
        arg = found[2][pos]
        text = src[arg.start:arg.end].decode("latin-1")
        if text in rule.values:
            ctx.claimed.update(range(arg.first, arg.last))
            ctx.convert(arg.start, arg.end, rule.values[text].encode(), text, "forward")
        elif not text.startswith(rule.keep) and not _assigned_by_release(ctx, text, arg.start, rule):
            ctx.finding("rocm-forward", "warning", arg.start, f"`{call}` {rule.note} (`{text}`)", subject=call)


def _is_member(ctx: "ConversionContext", i: int) -> bool:
    p = prev_code(ctx.tokens, i - 1)
    return p >= 0 and ctx.tokens.text(p) in _MEMBER


_VERSION_TEST = re.compile(rb"hipblasVersion|HIPBLAS_V2|HIP_VERSION|ROCM_VERSION|TORCH_HIP_VERSION")


def _assigned_by_release(ctx: "ConversionContext", name: str, before: int, rule) -> bool:
    """A variable (`computeType`) set to the new spelling (`HIPBLAS_COMPUTE_32F`) and to an old one only on branches
    that test hipBLAS's or HIP's version: the project chose by release itself (faiss's `#if hipblasVersionMajor >=
    3`), so the call gets the right type on each."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return False
    tokens, src = ctx.tokens, ctx.src
    found_new = False
    for k in range(len(tokens)):
        if tokens.starts[k] >= before:
            break
        if tokens.kinds[k] != IDENT or tokens.text(k) != name.encode():
            continue
        eq = next_code(tokens, k + 1)
        if eq >= len(tokens) or tokens.text(eq) != b"=":
            continue
        v = next_code(tokens, eq + 1)
        value = tokens.text(v).decode("latin-1") if v < len(tokens) else ""
        if value.startswith(rule.keep):
            found_new = True
        elif not _under_version_test(ctx, tokens.starts[k]):
            return False
    return found_new


def _under_version_test(ctx: "ConversionContext", offset: int) -> bool:
    """The innermost conditional block around ``offset`` tests a hipBLAS or HIP version (its `#if`, for an
    `#else`)."""
    stack: list[bytes] = []
    for d in ctx.structure.directives:
        if d.start >= offset:
            break
        text = ctx.src[d.start:d.end]
        if d.name in (b"if", b"ifdef", b"ifndef"):
            stack.append(text)
        elif d.name == b"elif" and stack:
            stack[-1] = stack[-1] + text
        elif d.name == b"endif" and stack:
            stack.pop()
    return bool(stack) and _VERSION_TEST.search(stack[-1]) is not None

