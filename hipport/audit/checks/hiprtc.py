"""`std::` in a kernel source handed to hipRTC (`hiprtcCreateProgram`, `nvrtcCreateProgram`): from ROCm 7.0
hipRTC's built-in header declares nothing in `std`, and its type traits are `__hip_internal::` (`hiprtc-std-names`).
The source is the call's second argument: string literals written there, or reached through a variable's
initialiser, a `std::string`'s `.c_str()` or an object-like macro."""

from __future__ import annotations

import re

from hipport.audit.checks import host_flow
from hipport.audit.checks.context import COMMENT, IDENT, LITERAL, Context
from hipport.model import Edit

RULE = "hiprtc-std-names"
_CREATE = frozenset({b"hiprtcCreateProgram", b"nvrtcCreateProgram"})
_HOPS = 3
# What `namespace __hip_internal` holds in ROCm 7.2.4's hip/amd_detail/host_defines.h, which hipRTC's built-in
# header carries too (checked: a hipRTC source using these compiles with ROCm 7.2.4, and with `std::` only with
# 6.4.3, whose `__hip_internal` has the integers and the older traits only). The fixed-width integers there are the
# types hipRTC 6.x gave `std::` (`uint64_t` is `unsigned long long` in both).
HIP_INTERNAL = frozenset({
    "integral_constant", "true_type", "false_type", "bool_constant", "enable_if", "is_integral", "is_arithmetic",
    "is_floating_point", "is_same", "is_signed", "add_lvalue_reference", "add_rvalue_reference", "declval",
    "remove_cv", "is_void", "is_convertible", "is_standard_layout", "is_trivial", "conditional", "alignment_of",
    "integer_sequence", "index_sequence", "make_index_sequence", "type_identity",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
})
# Declared at global scope by hipRTC's built-in header (6.4.3 and 7.2.4 alike).
GLOBAL = frozenset({"size_t"})
_CALL = re.compile(rb"\b(?:hiprtc|nvrtc)CreateProgram\b")
_STD = re.compile(rb"\bstd\s*::\s*([A-Za-z_]\w*)")
_OWN_STD = re.compile(rb"\bnamespace\s+std\b")
_STRING = re.compile(rb'^(?:u8|u|U|L)?(R?)"')


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or ctx.rocm < (7, 0) or not ctx.words & _CREATE:
        return
    for found in _CALL.finditer(ctx.src):
        i = host_flow.token_at(ctx, found.start())
        if i is None or ctx.text[i] not in _CREATE or ctx.in_directive[i] or not ctx.is_call(i):
            continue
        args = ctx.call_args(i)
        if not args or len(args) < 2:
            continue
        headers = len(args) > 3 and ctx.span_text(*args[3]).strip() not in (b"0", b"")
        api = ctx.text[i].decode("latin-1")
        line = ctx.lines.line_col(ctx.starts[i])[0]
        for source in _sources(ctx, [k for k in range(*args[1]) if ctx.kinds[k] != COMMENT], i, _HOPS):
            _report(ctx, [(k, *_content(ctx, k)) for k in source], api, line, headers)


def _report(ctx: Context, contents: list[tuple[int, int, int]], api: str, line: int, headers: bool) -> None:
    """Each `std::NAME` of one kernel source (its literal tokens, with the offsets of what they hold)."""
    if any(_OWN_STD.search(ctx.src, a, b) for _k, a, b in contents if a >= 0):
        return  # the source declares its own `std`
    for k, a, b in contents:
        if a < 0:
            continue
        for m in _STD.finditer(ctx.src, a, b):
            if _commented(ctx.src, a, m.start()):
                continue
            name = m.group(1).decode("latin-1")
            where = f"`std::{name}` in the hipRTC source that `{api}` compiles (line {line})"
            if name in HIP_INTERNAL or name in GLOBAL:
                spelling = "" if name in GLOBAL else "__hip_internal::"
                edit = Edit(m.start(), m.start(1), spelling.encode())
                ctx.report(RULE, k, f"{where}: hipRTC of ROCm 7.0+ has it only as `{spelling}{name}`",
                           confidence="medium", edits=[edit], subject=name, offset=m.start())
            else:
                ctx.report(RULE, k, f"{where}: hipRTC of ROCm 7.0+ declares nothing in `std::`, and `{name}` "
                           f"not at all (define what the kernel needs in the source, or pass it as a header)",
                           confidence="medium" if headers else "high", subject=name, offset=m.start())


def _sources(ctx: Context, code: list[int], at: int, hops: int) -> list[list[int]]:
    """The sources an expression can be: each the string literal tokens it is, or is initialised from."""
    while code and ctx.text[code[0]] == b"(" and ctx.match(code[0]) == code[-1]:
        code = code[1:-1]
    if code and all(ctx.kinds[k] == LITERAL and _STRING.match(ctx.text[k]) for k in code):
        return [code]
    if hops <= 0 or not code or ctx.kinds[code[0]] != IDENT:
        return []
    name = code[0]
    if len(code) == 5 and ctx.text[code[1]] == b"." and ctx.text[code[2]] in (b"c_str", b"data") and \
            ctx.text[code[3]] == b"(":
        code = code[:1]  # `src.c_str()`
    if len(code) != 1:
        return []
    body = ctx.macro_value(ctx.text[name])
    if body:
        return _sources(ctx, body, at, hops - 1)
    decl = host_flow.decl_before(ctx, ctx.text[name], name)
    if decl is None:
        return []
    passed = _parameter(ctx, decl, at)
    if passed is not None:  # a parameter of the function around the call: what its callers in this file pass
        function, position = passed
        out = []
        for m in re.finditer(rb"\b" + re.escape(function) + rb"\b", ctx.src):
            k = host_flow.token_at(ctx, m.start())
            if k is None or not ctx.is_call(k) or ctx.in_directive[k]:
                continue
            args = ctx.call_args(k)
            if args and position < len(args) and not (args[position][0] <= decl < args[position][1]):
                out += _sources(ctx, [j for j in range(*args[position]) if ctx.kinds[j] != COMMENT], k, hops - 1)
        return out
    return _sources(ctx, _initialiser(ctx, decl), at, hops - 1)


def _parameter(ctx: Context, decl: int, at: int) -> tuple[bytes, int] | None:
    """(function name, position) when ``decl`` names a parameter of the function whose body holds ``at``."""
    body = host_flow.function_body(ctx, at)
    if body is None:
        return None
    close = ctx.prev_code(body[0])
    while ctx.t(close) in (b"const", b"noexcept", b"override"):
        close = ctx.prev_code(close)
    open_ = ctx.match(close) if ctx.t(close) == b")" else -1
    if not open_ < decl < close:
        return None
    position = sum(1 for k in range(open_ + 1, decl) if ctx.text[k] == b"," and
                   all(not (a < k < ctx.match(a)) for a in range(open_ + 1, k) if ctx.text[a] in (b"(", b"<")))
    name = ctx.prev_code(open_)
    return (ctx.text[name], position) if ctx.kinds[name] == IDENT else None


def _initialiser(ctx: Context, decl: int) -> list[int]:
    """`T x = e;`, `T x[] = e;`, `std::string x(e);`, `std::string x{e};` -> the tokens of e."""
    k = ctx.next_code(decl)
    while ctx.t(k) == b"[" and ctx.match(k) > k:
        k = ctx.next_code(ctx.match(k))
    if ctx.t(k) in (b"(", b"{") and ctx.match(k) > k:
        return [j for j in range(k + 1, ctx.match(k)) if ctx.kinds[j] != COMMENT]
    if ctx.t(k) != b"=":
        return []
    out, j = [], ctx.next_code(k)
    while j < ctx.n and ctx.text[j] not in (b";", b","):
        if ctx.text[j] in (b"(", b"[", b"{") and ctx.match(j) > j:
            out.extend(x for x in range(j, ctx.match(j) + 1) if ctx.kinds[x] != COMMENT)
            j = ctx.match(j) + 1
            continue
        if ctx.kinds[j] != COMMENT:
            out.append(j)
        j += 1
    return out


def _content(ctx: Context, k: int) -> tuple[int, int]:
    """Byte offsets of what a string literal token holds (without its quotes and raw delimiters); (-1, -1) for a
    shape this does not read."""
    text = ctx.text[k]
    m = _STRING.match(text)
    if m is None:
        return -1, -1
    start = ctx.starts[k] + m.end()
    if m.group(1):  # R"delim( ... )delim"
        open_ = text.find(b"(", m.end())
        if open_ < 0:
            return -1, -1
        delim = text[m.end():open_]
        end = len(text) - len(delim) - 2
        return ctx.starts[k] + open_ + 1, ctx.starts[k] + end
    return start, ctx.ends[k] - 1


def _commented(src: bytes, first: int, at: int) -> bool:
    """A `//` comment of the kernel source runs over ``at``: one after the last line break (a real one, or a `\\n`
    escape) between ``first`` and ``at``."""
    line = max(src.rfind(b"\n", first, at), src.rfind(b"\\n", first, at))
    return src.find(b"//", max(line, first), at) >= 0
