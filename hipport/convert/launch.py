"""`--launch-syntax hip`: `k<<<g, b, shm, s>>>(args)` becomes `hipLaunchKernelGGL(k, dim3(g), dim3(b), shm, s, args)`.

The rewrite is a handful of small edits around the launch's punctuation rather than one big replacement, so the
renames inside the configuration and the arguments (a `cudaStream_t`, say) still apply."""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from hipport.convert.calls import matching_close, next_code, prev_code, split_args
from hipport.convert.callsites import renamed_text
from hipport.scan import COMMENT, IDENT, PUNCT

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext


def _is(tokens, i: int, text: bytes) -> bool:
    return 0 <= i < len(tokens) and tokens.kinds[i] == PUNCT and tokens.text(i) == text


def _adjacent(tokens, i: int, a: bytes, b: bytes) -> bool:
    return _is(tokens, i, a) and _is(tokens, i + 1, b) and tokens.starts[i + 1] == tokens.ends[i]


def _kernel_start(tokens, lt: int) -> tuple[int, bool] | None:
    """Index of the first token of the kernel expression before `<<<`, and whether it names a template instance."""
    i = prev_code(tokens, lt - 1)
    templated = False
    if _is(tokens, i, b">") or _is(tokens, i, b">>"):
        depth = 0
        while i >= 0:
            t = tokens.text(i) if tokens.kinds[i] == PUNCT else b""
            if t in (b")", b"]") and depth > 0:  # `(3>>1)` inside the arguments: skip the group whole
                opener = b"(" if t == b")" else b"["
                nest = 0
                while i >= 0:
                    u = tokens.text(i) if tokens.kinds[i] == PUNCT else b""
                    nest += 1 if u == t else -1 if u == opener else 0
                    if nest == 0:
                        break
                    i -= 1
                i -= 1
                continue
            # `<<` inside template arguments is a shift (`t<1 << 2>`): C++ never lexes it as two openings.
            depth += {b">": 1, b">>": 2, b"<": -1}.get(t, 0)
            if depth <= 0:
                break
            i -= 1
        if i < 0:
            return None
        templated = True
        i = prev_code(tokens, i - 1)
    elif _is(tokens, i, b")"):
        depth = 0
        while i >= 0:
            t = tokens.text(i)
            depth += 1 if t == b")" else -1 if t == b"(" else 0
            if depth == 0:
                return i, False
            i -= 1
        return None
    if i < 0 or tokens.kinds[i] != IDENT:
        return None
    while True:
        p = prev_code(tokens, i - 1)
        if _is(tokens, p, b"::"):
            q = prev_code(tokens, p - 1)
            if q >= 0 and tokens.kinds[q] == IDENT:
                i = q
                continue
            i = p
        break
    return i, templated


_TEMPLATE_KERNEL = re.compile(
    rb"\btemplate\s*<[^;{}]*>\s*(?:(?:static|inline|__launch_bounds__\s*\([^)]*\))\s+)*__global__\s+"
    rb"(?:(?:static|inline|__launch_bounds__\s*\([^)]*\))\s+)*void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)")


# `#define K axpy<float>`: an object-like macro of the file naming a template instance, launched as `K<<<...>>>`.
_TEMPLATE_NAME_MACRO = re.compile(
    rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+(?:\w+[ \t]*::[ \t]*)*\w+[ \t]*<[^\n;<>]*>[ \t]*$", re.M)


def _template_kernels(conv: "ConversionContext") -> set:
    """Names of the `__global__` function templates this file defines or declares, and of its macros that name a
    template instance (hipify names a kernel given either way HIP_KERNEL_NAME(...))."""
    found = getattr(conv, "_template_kernels", None)
    if found is None:
        found = {m.group(1) for m in _TEMPLATE_KERNEL.finditer(conv.src)}
        if b"define" in conv.src:
            found |= {m.group(1) for m in _TEMPLATE_NAME_MACRO.finditer(conv.src)}
        conv._template_kernels = found
    return found


def _is_dim3(tokens, arg) -> bool:
    """`dim3(...)` already: no second wrapper."""
    if tokens.text(arg.first) != b"dim3" or arg.last - arg.first < 3:
        return False
    paren = next_code(tokens, arg.first + 1)
    return _is(tokens, paren, b"(") and matching_close(tokens, paren) == arg.last - 1


def rewrite_launches(conv: "ConversionContext") -> None:
    tokens = conv.tokens
    n = len(tokens)
    heads = _launch_head_macros(conv) if b"define" in conv.src else {}
    i = 0
    while i < n:
        if not _adjacent(tokens, i, b"<<", b"<"):
            i += 1
            continue
        found = _launch(conv, i)
        if not found and i in heads:
            name, head = heads[i]
            uses = _write_macro_uses(conv, name, head)
            conv.finding("launch-not-rewritten", "warning", tokens.starts[i],
                         f"`<<<...>>>` kept in `{name.decode('latin-1')}`, a launch without its arguments (HIP-Clang "
                         f"builds it); "
                         + (f"its uses in this file ({uses}) are written as `hipLaunchKernelGGL`, uses in other "
                            f"files keep `<<<...>>>`" if uses else
                            "write its uses as `hipLaunchKernelGGL(kernel, dim3(grid), dim3(block), shared, stream, "
                            "args...)` by hand"), "<<<>>>")
        elif not found:
            # A launch left in CUDA syntax is said, never left silently: it builds with hipcc, but not as asked.
            conv.finding("launch-not-rewritten", "warning", tokens.starts[i],
                         "`<<<...>>>` kept: hipport cannot tell this launch's kernel or configuration apart; write "
                         "it as `hipLaunchKernelGGL(kernel, dim3(grid), dim3(block), shared, stream, args...)` "
                         "by hand", "<<<>>>")
        i = found if found else i + 2


# `#define LAUNCH k<<<g, b>>>`, used as `LAUNCH(args)`: the macro's body is a launch without its arguments, which no
# body of `hipLaunchKernelGGL(...)` can hold, so each use in the file is written as the launch it expands to, as
# hipify-clang (which works on the expansion) writes it (HIPIFY's axpy.cu). The definition keeps `<<<...>>>`.
def _launch_head_macros(conv: "ConversionContext") -> dict:
    """`<<` index of each object-like macro body that is a whole launch head `kernel<<<config>>>` -> (macro name,
    the `hipLaunchKernelGGL(kernel, dim3(g), dim3(b), shm, stream` text its uses begin with)."""
    tokens, src = conv.tokens, conv.src
    found = {}
    for d in conv.structure.directives:
        if d.name != b"define" or d.first + 3 >= d.last or tokens.kinds[d.first + 2] != IDENT:
            continue
        body = d.first + 3
        if _is(tokens, body, b"(") and tokens.starts[body] == tokens.ends[d.first + 2]:
            continue  # function-like: its body is rewritten where its launch is whole
        last = d.last - 1
        while last > body and tokens.kinds[last] == COMMENT:
            last -= 1
        if not _adjacent(tokens, last - 1, b">>", b">"):
            continue
        lt = next((j for j in range(body, last) if _adjacent(tokens, j, b"<<", b"<")), None)
        if lt is None:
            continue
        kernel = _kernel_start(tokens, lt)
        config = split_args(tokens, lt + 1, last - 1)
        if kernel is None or kernel[0] != body or not 2 <= len(config) <= 4 or any(a.first == a.last for a in config):
            continue
        k0, templated = kernel
        if not templated and tokens.text(k0) in _template_kernels(conv):
            templated = True
        name = renamed_text(conv, k0, prev_code(tokens, lt - 1) + 1)
        parts = [renamed_text(conv, a.first, a.last).strip() for a in config]
        dims = [p if _is_dim3(tokens, a) else b"dim3(" + p + b")" for p, a in zip(parts[:2], config[:2])]
        rest = parts[2:] + [b"0"] * (4 - len(parts))
        head = b"hipLaunchKernelGGL(" + (b"HIP_KERNEL_NAME(" + name + b")" if templated else name) + b", " \
            + b", ".join(dims + rest)
        found[lt] = (tokens.text(d.first + 2), head)
    return found


def _write_macro_uses(conv: "ConversionContext", name: bytes, head: bytes) -> int:
    """Each use `NAME(args)` outside directives -> `head, args)`; the count written."""
    tokens = conv.tokens
    in_directive = conv.structure.in_directive
    count = 0
    for k in range(len(tokens)):
        if tokens.kinds[k] != IDENT or in_directive[k] or conv.skip[k] or tokens.text(k) != name:
            continue
        paren = next_code(tokens, k + 1)
        close = matching_close(tokens, paren) if _is(tokens, paren, b"(") else None
        if close is None:
            continue
        has_args = next_code(tokens, paren + 1) < close
        conv.convert(tokens.starts[k], tokens.ends[paren] if has_args else tokens.ends[close],
                     head + (b", " if has_args else b")"), "<<<>>>", "launch")
        count += 1
    return count


def _gap(conv: "ConversionContext", a: int, b: int, text: bytes) -> None:
    """Replace the punctuation between offsets ``a`` and ``b`` with ``text``, keeping any comment there byte for
    byte (and the line break a `//` comment needs): after the last `, ` of ``text``, so it stays beside the
    argument it was written for."""
    tokens = conv.tokens
    kept = []
    j = _first_token_at(tokens, a)
    while j < len(tokens) and tokens.starts[j] < b:
        if tokens.kinds[j] == COMMENT:
            nxt = tokens.starts[j + 1] if j + 1 < len(tokens) else len(conv.src)
            kept.append(conv.src[tokens.starts[j]:min(nxt, b)])
        j += 1
    if not kept:
        conv.edits_only(a, b, text)
        return
    cut = text.rfind(b", ")
    head, rest = (text[:cut + 2], text[cut + 2:]) if cut >= 0 else (text, b"")
    conv.edits_only(a, b, head + b"".join(kept) + rest)


def _first_token_at(tokens, offset: int) -> int:
    return bisect.bisect_left(tokens.starts, offset)


def _launch(conv: "ConversionContext", lt: int) -> int | None:
    tokens = conv.tokens
    n = len(tokens)
    # Find the `>>>` closing this configuration at bracket depth 0.
    depth = 0
    gt = None
    for j in range(lt + 2, n):
        t = tokens.text(j) if tokens.kinds[j] == PUNCT else b""
        if t in (b"(", b"[", b"{"):
            depth += 1
        elif t in (b")", b"]", b"}"):
            depth -= 1
            if depth < 0:
                return None
        elif t == b";" and depth == 0:
            return None
        elif depth == 0 and _adjacent(tokens, j, b">>", b">"):
            gt = j
            break
    if gt is None:
        return None
    paren = next_code(tokens, gt + 2)
    if not _is(tokens, paren, b"("):
        return None
    close = matching_close(tokens, paren)
    kernel = _kernel_start(tokens, lt)
    if close is None or kernel is None:
        return None
    k0, templated = kernel
    if not templated and k0 == prev_code(tokens, lt - 1) and tokens.text(k0) in _template_kernels(conv):
        templated = True  # a kernel template launched with deduced arguments: hipify names it HIP_KERNEL_NAME too
    # The configuration sits between `<` (lt + 1) and `>>` (gt): split it like call arguments.
    config = split_args(tokens, lt + 1, gt)
    if not 2 <= len(config) <= 4 or any(a.first == a.last for a in config):
        return None
    has_args = next_code(tokens, paren + 1) < close
    wrapped = [_is_dim3(tokens, a) for a in config[:2]]
    dim0 = b", " if wrapped[0] else b", dim3("
    mid = (b", " if wrapped[0] else b"), ") + (b"" if wrapped[1] else b"dim3(")
    close1 = b"" if wrapped[1] else b")"
    src_start = tokens.starts
    name = "<<<>>>"
    head = b"hipLaunchKernelGGL(" + (b"HIP_KERNEL_NAME(" if templated else b"")
    conv.convert(src_start[k0], src_start[k0], head, name, "launch")
    # From the kernel's last token: `k <<<...>>>` gives `hipLaunchKernelGGL(k, ...` as hipify-clang writes it, not
    # `(k , ...`; a comment in between is kept by `_gap`.
    _gap(conv, tokens.ends[prev_code(tokens, lt - 1)], config[0].start, (b")" if templated else b"") + dim0)
    _gap(conv, config[0].end, config[1].start, mid)
    tail_missing = {2: b", 0, 0", 3: b", 0", 4: b""}[len(config)]
    if len(config) >= 3:
        _gap(conv, config[1].end, config[2].start, close1 + b", ")
        if len(config) == 4:
            _gap(conv, config[2].end, config[3].start, b", ")
        last_close = b""
    else:
        last_close = close1
    end = tokens.starts[paren] + 1
    if not has_args and not conv.src[end:tokens.starts[close]].strip():
        end = tokens.starts[close]  # `k<<<g, b>>>( )`: no space left before the `)`, as hipify writes it
    _gap(conv, config[-1].end, end, last_close + tail_missing + (b", " if has_args else b""))
    return gt + 2
