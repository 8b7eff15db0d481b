"""Hazards inside templates nothing in the project instantiates. C++ compiles a function template, or a member
function of a class template, only where something names it (a call, `&f`, an explicit instantiation); a hazard
whose rule exists only in compiled code (`instantiated_only` in its rule file) inside a template no source of the
project names is never built for AMD, so it becomes an info saying so. A non-template function is compiled
whether called or not, and a template in a header no translation unit of the project includes is a library's
(its users instantiate it): both stay as they are."""

from __future__ import annotations

import dataclasses
import os
from bisect import bisect_right

from hipport import project_sources
from hipport.audit.checks.common import COMMENT, IDENT
from hipport.audit.checks.context import Context, Function
from hipport.audit.hazards import load_all_rules

_CLASS_KEYS = frozenset({b"struct", b"class", b"union"})
_SCOPES = frozenset({b"namespace", b"extern"})


def mark(ctx: Context, src: bytes, path: str, options) -> None:
    """Turn into infos the findings of ``ctx`` that sit in a template nothing in ``path``'s project names."""
    rules = {r for r, h in load_all_rules().items() if h.instantiated_only}
    holders = {}
    for k, f in enumerate(ctx.findings):
        if f.rule_id in rules and f.severity != "info":
            fn = _template_holding(ctx, f.line, f.col)
            if fn is not None:
                holders[k] = fn
    if not holders or path.startswith("<") or not os.path.isfile(path):
        return
    # One read of the project, and only for a file with such a finding in a template.
    index = project_sources.index_for(path, getattr(options, "project_dir", ""), options.include_dirs)
    if index is None or not index.compiles(path) or not _as_on_disk(path, src):
        return
    unused: dict[int, bool] = {}
    shown = os.path.basename(index.root) + "/"
    for k, fn in holders.items():
        if fn.name_index not in unused:
            name = ctx.text[fn.name_index]
            accounted = _mentions_in_definitions(ctx, name) + index.definitions_elsewhere(name, path)
            unused[fn.name_index] = index.mentions(name) <= accounted and not _class_instantiated(ctx, fn, index)
        if unused[fn.name_index]:
            f = ctx.findings[k]
            ctx.findings[k] = dataclasses.replace(
                f, severity="info",
                message=f"{f.message} (in `{fn.name}`, a template nothing under `{shown}` uses: never compiled)")


def _template_holding(ctx: Context, line: int, col: int) -> Function | None:
    """The outermost device function holding the finding, when it is a template or a member of one and not a
    virtual function (a class template's instantiation compiles its virtual members)."""
    offset = ctx.lines.starts[line - 1] + col - 1
    i = bisect_right(ctx.starts, offset) - 1
    if i < 0:
        return None
    holding = ctx.functions_holding(i)
    if not holding:
        return None
    fn = holding[0]
    if ctx.kinds[fn.name_index] != IDENT or _virtual(ctx, fn):
        return None
    classes = _enclosing_heads(ctx, fn)
    if classes is None:
        return None
    if fn.template_params or any(_is_template_head(ctx, head) for head in classes):
        return fn
    return None


def _virtual(ctx: Context, fn: Function) -> bool:
    k = fn.name_index - 1
    while k >= 0 and ctx.text[k] not in (b";", b"{", b"}", b":"):
        if ctx.text[k] == b"virtual":
            return True
        k -= 1
    return any(ctx.text[j] in (b"override", b"final") for j in range(fn.params[1] + 1, fn.body[0]))


def _enclosing_heads(ctx: Context, fn: Function) -> list[tuple[int, int]] | None:
    """(first, last) tokens of the head of each class around ``fn``, innermost first; namespaces and `extern`
    blocks are stepped through. None when a bracket around it is anything else (a function body, an
    initializer): then it is not judged."""
    heads = []
    k = ctx.open_before(fn.name_index)
    while k >= 0:
        if ctx.text[k] != b"{":
            return None
        first = _head_start(ctx, k)
        words = {ctx.text[j] for j in range(first, k) if ctx.kinds[j] != COMMENT and not ctx.in_directive[j]}
        if words & _CLASS_KEYS:
            heads.append((first, k))
        elif not words & _SCOPES:
            return None
        k = ctx.open_before(k)
    return heads


def _head_start(ctx: Context, brace: int) -> int:
    """The first token after the `;`, `{` or `}` that ends what comes before the head that ``brace`` opens."""
    j = brace - 1
    while j >= 0 and not (ctx.text[j] in (b";", b"{", b"}") and not ctx.in_directive[j]
                          and ctx.kinds[j] != COMMENT):
        j -= 1
    return j + 1


def _is_template_head(ctx: Context, head: tuple[int, int]) -> bool:
    """`template <typename T> struct X {`; not `template <> struct X<int> {`, whose members are plain functions."""
    code = [j for j in range(*head) if ctx.kinds[j] != COMMENT and not ctx.in_directive[j]]
    return any(ctx.text[j] == b"template" and ctx.t(ctx.next_code(j)) == b"<"
               and ctx.t(ctx.next_code(ctx.next_code(j))) != b">" for j in code)


def _class_instantiated(ctx: Context, fn: Function, index) -> bool:
    """A class around ``fn`` (or the one a definition outside it names, `Box<T>::m`) that a `template class
    X<...>;` instantiates whole: any name in its head counts."""
    names = set()
    for first, last in _enclosing_heads(ctx, fn) or ():
        names.update(ctx.text[j] for j in range(first, last) if ctx.kinds[j] == IDENT)
    if ctx.t(fn.name_index - 1) == b"::":
        k = fn.name_index - 1
        while k >= max(0, fn.name_index - 40) and (ctx.kinds[k] == IDENT or ctx.text[k] in (b"::", b"<", b">", b",")):
            if ctx.kinds[k] == IDENT:
                names.add(ctx.text[k])
            k -= 1
    return bool(names & index.class_instances)


def _mentions_in_definitions(ctx: Context, name: bytes) -> int:
    """Tokens spelled ``name`` that this file's definitions of device functions of that name account for: in a
    template's, from the name to the closing brace (recursion, overloads calling each other, all uninstantiated
    alike); in a plain function's, its name only, as its body is compiled and what it calls is used."""
    spans, heads = [], set()
    for fn in ctx.functions:
        if ctx.text[fn.name_index] == name:
            heads.add(fn.name_index)
            classes = _enclosing_heads(ctx, fn)
            if fn.template_params or (classes and any(_is_template_head(ctx, h) for h in classes)):
                spans.append((fn.name_index, fn.body[1]))
    return sum(1 for k in ctx.positions(name) if k in heads or any(a <= k <= b for a, b in spans))


def _as_on_disk(path: str, src: bytes) -> bool:
    """The project's index read the file from disk: its counts hold for these bytes only if they are the same."""
    try:
        with open(path, "rb") as fh:
            return fh.read() == src
    except OSError:
        return False
