"""Token-level helpers shared by the checks: operand spans, enclosing brackets, statements, name classes, and
whether a token sits in a context where C++ demands a constant expression."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate

from hipport.audit.checks.context import (
    COMMENT,
    IDENT,
    KEYWORD,
    LITERAL,
    PUNCT,
    Context,
    int_value,
)
from hipport.model import Edit

SYNC_BUILTINS = {
    b"__shfl_sync", b"__shfl_up_sync", b"__shfl_down_sync", b"__shfl_xor_sync", b"__ballot_sync", b"__any_sync",
    b"__all_sync", b"__uni_sync", b"__match_any_sync", b"__match_all_sync", b"__syncwarp",
    b"__reduce_add_sync", b"__reduce_min_sync", b"__reduce_max_sync", b"__reduce_and_sync", b"__reduce_or_sync",
    b"__reduce_xor_sync",
}
SHUFFLES = {b"__shfl_sync": 1, b"__shfl_up_sync": 1, b"__shfl_down_sync": 1, b"__shfl_xor_sync": 1,
            b"__shfl": 0, b"__shfl_up": 0, b"__shfl_down": 0, b"__shfl_xor": 0}  # name -> index of the value arg
WARP_OPS = set(SHUFFLES) | {b"__ballot_sync", b"__ballot", b"__any_sync", b"__all_sync", b"__any", b"__all",
                            b"__match_any_sync", b"__match_all_sync", b"__activemask", b"__reduce_add_sync"}
BALLOTS = {b"__ballot", b"__ballot_sync", b"__activemask", b"__match_any_sync", b"__match_all_sync",
           b"__match_any", b"__match_all", b"__lanemask_lt", b"__lanemask_gt", b"__lanemask_eq"}
LANE_NAME = re.compile(rb"(?i)^(?:my_?)?(?:lane|lane_?id|lane_?idx|lane_?index|laneid|ln|tid_?in_?warp|"
                       rb"thread_?in_?warp|warp_?lane|lane_?in_?warp|wlane)$")
THIRTY_TWO_BIT = {"unsigned int", "int", "const unsigned int", "const int", "short", "unsigned short",
                  "volatile unsigned int", "const volatile unsigned int", "char", "unsigned char"}
TYPE_QUALIFIERS = {b"const", b"volatile", b"static", b"__shared__", b"register", b"constexpr", b"extern",
                   b"__device__", b"__constant__", b"inline", b"__forceinline__", b"thread_local"}
_32_WORDS = {b"unsigned", b"int", b"uint32_t", b"int32_t", b"uint", b"u32", b"uint32", b"short", b"signed"}
_64_WORDS = {b"long", b"uint64_t", b"int64_t", b"size_t", b"auto", b"u64", b"uint64", b"lanemask_t",
             b"unsigned_long_long", b"ull", b"ptrdiff_t", b"intptr_t", b"uintptr_t"}
_ASSIGN = {b"=", b"+=", b"-=", b"*=", b"/=", b"%=", b"&=", b"|=", b"^=", b"<<=", b">>="}
_OPERAND_START = {b"=", b"(", b",", b"return", b"?", b":", b"[", b"{", b";", b"&&", b"||", b"}"} | _ASSIGN
_OPERAND_END = {b";", b")", b",", b"]", b"?", b":", b"}", b"&&", b"||"}


def is_full_mask32(ctx: Context, first: int, last: int) -> tuple[bool, int | None]:
    """Is tokens[first:last] a 32-bit integer literal mask (`0xffffffff`, `~0u`, `-1`, `0xffffu`)?
    Returns (is_32bit_literal, value)."""
    toks = [k for k in range(first, last) if ctx.kinds[k] != COMMENT]
    texts = [ctx.text[k] for k in toks]
    if len(texts) == 1 and ctx.kinds[toks[0]] == LITERAL:
        v = int_value(texts[0])
        if v is None or b"ll" in texts[0].lower():
            return False, None
        return v <= 0xFFFFFFFF, v
    if len(texts) == 2 and texts[0] in (b"~", b"-") and ctx.kinds[toks[1]] == LITERAL:
        v = int_value(texts[1])
        if v is None or b"ll" in texts[1].lower():
            return False, None
        if texts[0] == b"~" and v == 0 or texts[0] == b"-" and v == 1:
            return True, 0xFFFFFFFF
    return False, None


def is_32bit_type(ctx: Context, name_index: int) -> bool | None:
    """Is the variable declared at ``name_index`` a 32-bit (or narrower) integer? None when unknown.
    The libclang type decides (typedefs included); the declaration's words when there is no parse."""
    words = [w for w in ctx.decl_type_words(name_index) if w not in TYPE_QUALIFIERS]
    if b"auto" in words:
        return False
    canonical = ctx.decl_type(name_index)
    if canonical:
        c = canonical.replace("volatile ", "").replace("const ", "")
        if c in ("unsigned int", "int", "short", "unsigned short", "char", "unsigned char", "signed char"):
            return True
        if c in ("unsigned long long", "long long", "unsigned long", "long"):
            return False
    if not words:
        return None
    if any(w in _64_WORDS for w in words):
        return False
    if all(w in _32_WORDS for w in words):
        return True
    return None


def type_span(ctx: Context, name_index: int) -> tuple[int, int] | None:
    """Token indices (first, last inclusive) of the type words before a declared name, qualifiers excluded."""
    k = ctx.prev_code(name_index)
    last = None
    first = None
    while k >= 0 and ctx.kinds[k] in (IDENT, KEYWORD):
        w = ctx.text[k]
        if w in TYPE_QUALIFIERS:
            if last is not None:
                break
        else:
            if last is None:
                last = k
            first = k
        k = ctx.prev_code(k)
    if last is None:
        return None
    return first, last


def operand_before(ctx: Context, op: int) -> int:
    """First token of the postfix expression that ends just before ``op`` (`a.b[c]`, `f(x)`, `(a + b)`)."""
    k = ctx.prev_code(op)
    while k >= 0:
        t = ctx.text[k]
        if t in (b")", b"]") and ctx.match(k) >= 0:
            k = ctx.match(k)
            p = ctx.prev_code(k)
            if ctx.t(p) in (b"]", b")") or ctx.kinds[p] == IDENT and ctx.t(k) in (b"(", b"["):
                k = p
                continue
            return k
        if ctx.kinds[k] in (IDENT, LITERAL) or t in (b"this",):
            p = ctx.prev_code(k)
            if ctx.t(p) in (b".", b"->", b"::"):
                k = ctx.prev_code(p)
                continue
            return k
        return k + 1
    return 0


def enclosing_open(ctx: Context, i: int, opener: bytes = b"(") -> int:
    """Index of the nearest unmatched ``opener`` before ``i`` (or -1), crossing only balanced brackets."""
    k = ctx.open_before(i)  # the open brackets around ``i``, innermost first
    while k >= 0:
        t = ctx.text[k]
        if t == opener:
            return k
        if t == b"{":
            return -1
        k = ctx.open_before(k)
    return -1


def enclosing_calls(ctx: Context, i: int) -> list[int]:
    """Name indices of the calls whose argument list holds token ``i``, innermost first."""
    out = []
    k = i
    while True:
        p = enclosing_open(ctx, k, b"(")
        if p < 0:
            return out
        q = ctx.prev_code(p)
        if q >= 0 and ctx.kinds[q] in (IDENT, KEYWORD):
            out.append(q)
        k = p


def statement_start(ctx: Context, i: int) -> int:
    """Index of the first token of the statement holding ``i``."""
    k = i - 1
    while k >= 0:
        t = ctx.text[k]
        if t in (b")", b"]") and ctx.match(k) >= 0 and ctx.match(k) < k:
            k = ctx.match(k) - 1
            continue
        if t in (b";", b"{", b"}") or ctx.in_directive[k] and not ctx.in_directive[i]:
            return k + 1
        if t == b"(" and ctx.t(ctx.prev_code(k)) in (b"for",):
            return k + 1
        k -= 1
    return 0


def statement_end(ctx: Context, i: int) -> int:
    """Index of the `;` (or closing bracket) ending the statement or expression holding ``i``."""
    k = i
    while k < ctx.n:
        t = ctx.text[k]
        if t in (b"(", b"[", b"{") and ctx.match(k) > k:
            k = ctx.match(k) + 1
            continue
        if t in (b";", b")", b"]", b"}"):
            return k
        k += 1
    return ctx.n


def const_context(ctx: Context, i: int) -> str | None:
    """If token ``i`` sits where a constant expression is required, say which kind of place; else None."""
    for call in enclosing_calls(ctx, i):
        name = ctx.text[call]
        if name in (b"static_assert", b"__launch_bounds__", b"alignas", b"_Static_assert"):
            return name.decode()
    # array bound in a declaration: `T name[ ... ]`
    b = enclosing_open(ctx, i, b"[")
    if b >= 0:
        p = ctx.prev_code(b)
        if ctx.kinds[p] == IDENT and ctx.prev_code(p) >= 0:
            pp = ctx.prev_code(p)
            if ctx.kinds[pp] in (IDENT, KEYWORD) and ctx.text[pp] not in (b"return", b"case", b"new", b"delete") \
                    or ctx.text[pp] in (b"*", b"&") and ctx.kinds[ctx.prev_code(pp)] in (IDENT, KEYWORD):
                if ctx.text[pp] in (b"*", b"&") or ctx.is_decl_name(p) or ctx.t(ctx.next_code(ctx.match(b))) in (
                        b";", b"=", b"[", b",", b")"):
                    return "array bound"
        elif ctx.text[p] == b"]":  # second dimension of a declaration
            first = ctx.match(p)
            if first >= 0 and const_context(ctx, first + 1) == "array bound":
                return "array bound"
    # template argument: `name< ... >`
    t_open = _template_open(ctx, i)
    if t_open is not None:
        return "template argument"
    s = statement_start(ctx, i)
    words = [ctx.text[k] for k in range(s, i) if ctx.kinds[k] in (IDENT, KEYWORD)]
    if b"constexpr" in words[:4] and b"=" in [ctx.text[k] for k in range(s, i)]:
        return "constexpr initialiser"
    if words[:1] == [b"case"]:
        return "case label"
    if b"enum" in words:
        return "enumerator"
    return None


def _template_open(ctx: Context, i: int) -> int | None:
    k = i - 1
    depth = 0
    resume = i + 1  # where the search for the closing `>` starts: after a parenthesised argument holding ``i``
    while k >= 0:
        t = ctx.text[k]
        if t in (b")", b"]") and ctx.match(k) >= 0:
            k = ctx.match(k) - 1
            continue
        if t == b"(" and ctx.t(ctx.prev_code(k)) in (b"<", b",") and ctx.match(k) > k:
            resume = ctx.match(k) + 1  # `enable_if<(N == warpSize)>`: a parenthesised template argument
            k = ctx.prev_code(k)
            continue
        if t in (b";", b"{", b"}", b"(", b"[", b"&&", b"||", b"=", b"?", b"return"):
            return None
        if t == b">":
            depth += 1
        elif t == b"<":
            if depth == 0:
                break
            depth -= 1
        k -= 1
    if k < 0:
        return None
    p = ctx.prev_code(k)
    if ctx.kinds[p] != IDENT:
        return None
    # find the closing `>` and see that a template-id follows
    j = resume
    depth = 0
    while j < ctx.n:
        t = ctx.text[j]
        if t in (b"(", b"[") and ctx.match(j) > j:
            j = ctx.match(j) + 1
            continue
        if t in (b";", b"{", b"}", b")", b"]", b"&&", b"||", b"?", b"="):
            return None
        if t == b"<":
            depth += 1
        elif t in (b">", b">>"):
            if depth == 0:
                nxt = ctx.t(ctx.next_code(j))
                if nxt in (b"(", b"::", b">", b";", b"{", b",", b")") or ctx.kinds[ctx.next_code(j)] == IDENT:
                    return k
                return None
            depth -= 1
        j += 1
    return None


def split_template_args(ctx: Context, open_: int) -> tuple[list[tuple[int, int]], int] | None:
    """`<a, b<c>, d>` from the `<` at ``open_``: each argument's token range (first, last exclusive) and the index of
    the closing `>`; None when the statement ends first. Brackets are skipped whole, so `f<(a < b)>` and
    `g<sizeof(x)>` split right, and `>>` closes two levels (`f<a<b>>`)."""
    depth, k, start, out = 0, open_, open_ + 1, []
    while k < ctx.n:
        t = ctx.text[k]
        if t in (b";", b"{", b"}"):
            return None
        if t in (b"(", b"[") and ctx.match(k) > k:
            k = ctx.match(k) + 1
            continue
        if t == b"<":
            depth += 1
        elif t in (b">", b">>"):
            depth -= len(t)
            if depth <= 0:
                out.append((start, k))
                return (out, k) if depth == 0 else None
        elif t == b"," and depth == 1:
            out.append((start, k))
            start = k + 1
        k += 1
    return None


def operand_mentions(ctx: Context, first: int, last: int, names: set[bytes]) -> bool:
    return any(ctx.text[k] in names for k in range(first, last))


def thread_derived(ctx: Context, fn) -> set[bytes]:
    """Variables of ``fn`` whose value is computed from the thread index (`tid = threadIdx.x`,
    `i = blockIdx.x * blockDim.x + threadIdx.x`, `lane = tid & 31`), not loaded from memory. Worked out once a
    function (several checks ask): the set returned is shared, not to be changed."""
    known = ctx.__dict__.setdefault("_thread_derived", {})
    if fn.body not in known:
        known[fn.body] = _thread_derived(ctx, fn)
    return known[fn.body]


def _thread_derived(ctx: Context, fn) -> set[bytes]:
    from hipport.audit.checks.context import LANE_FUNCS, THREAD_INDEX

    seeds = THREAD_INDEX | LANE_FUNCS
    derived: set[bytes] = set()
    assigns = []
    lo, hi = fn.body
    text = ctx.text
    for k in range(lo, hi):
        if text[k] in (b"=", b"+=", b"-=") and ctx.kinds[k - 1] == IDENT:
            end = k + 1
            while end < hi and text[end] not in (b";", b",") and not (text[end] == b")" and ctx.match(end) < k):
                if text[end] in (b"(", b"[") and ctx.match(end) > end:
                    end = ctx.match(end)
                end += 1
            assigns.append((text[k - 1], k + 1, end))
        elif text[k] in (b"(", b"{") and ctx.kinds[k - 1] == IDENT and ctx.match(k) > k \
                and ctx.kinds[k - 2] in (IDENT, KEYWORD) \
                and text[k - 2] not in (b"return", b"else", b"case", b"new", b"delete", b"throw", b"sizeof", b"do"):
            assigns.append((text[k - 1], k + 1, ctx.match(k)))  # `unsigned tid(threadIdx.x);`: direct init
    for _ in range(3):
        grew = False
        for name, a, b in assigns:
            if name in derived:
                continue
            rhs = [text[m] for m in range(a, b)]
            if b"[" in rhs:  # loaded from memory: data, not an index
                continue
            if any(w in seeds or w in derived for w in rhs):
                derived.add(name)
                grew = True
        if not grew:
            break
    return derived


def is_lane_like(ctx: Context, first: int, last: int, derived_lanes: set[bytes] = frozenset()) -> bool:
    """Does the expression name a lane index (`lane`, `laneId`, `__lane_id()`, a variable set from one)?"""
    for k in range(first, last):
        if ctx.kinds[k] == IDENT and (LANE_NAME.match(ctx.text[k]) or ctx.text[k] == b"__lane_id"
                                      or ctx.text[k] in derived_lanes):
            return True
    return False


def outer_decl(ctx: Context, name: bytes, before: int) -> int | None:
    """The declaration of ``name`` outside every function body before ``before``: a class member or a global."""
    known = ctx.__dict__.setdefault("_outer_decls", {})  # once a name: it is looked up from every function
    if name not in known:
        known[name] = [k for k in ctx.declarations(name)
                       if ctx.function_at(k) is None and ctx.function_of_params(k) is None]
    found = known[name]
    k = bisect_left(found, before) - 1
    return found[k] if k >= 0 else None


_WAVE_TEST = re.compile(rb"WAVE(?:FRONT)?_?(?:SIZE|32|64)|__GFX(?:8|9|1[0-2])__|\bWARP_?SIZE\s*[=!<>]=|"
                        rb"\bwarpSize\s*[=!<>]=|\bWarpSize\s*[=!<>]=")


def wave_conditional_lines(ctx: Context) -> list[tuple[int, int]]:
    """Line ranges of `#if` groups whose conditions test the wavefront size (`#ifdef WAVE64`, `#if
    defined(__GFX9__)`, `#if WARP_SIZE == 64`): code that already chooses per wavefront size, in every branch."""
    out, stack = [], []
    dirs_ = ctx.structure.directives
    for n, d in enumerate(dirs_):
        cond = ctx.src[d.start:d.end]
        if d.name in (b"if", b"ifdef", b"ifndef"):
            guard = ctx.structure.guard is not None and n + 1 < len(dirs_) and dirs_[n + 1] is ctx.structure.guard
            stack.append([d.start, not guard and bool(_WAVE_TEST.search(cond))])
        elif d.name == b"elif" and stack:
            stack[-1][1] = stack[-1][1] or bool(_WAVE_TEST.search(cond))
        elif d.name == b"endif" and stack:
            start, wave = stack.pop()
            if wave:
                out.append((ctx.lines.line_col(start)[0], ctx.lines.line_col(max(d.end - 1, start))[0]))
    return out


_SPECIFIERS = (b"constexpr", b"const", b"static", b"inline")


def constexpr_as_const(ctx: Context, name: int) -> list | None:
    """Edits that make the function-local `constexpr` declaration of token ``name`` a run-time `const` one
    (`warpSize` is not a constant from ROCm 7.0). The whole specifier run is rewritten, so `constexpr const`,
    `const constexpr` and `static constexpr` become one `const`, never `const const`; a `static` goes too, since a
    function-local static may not be initialised at run time in device code. [] when there is no `constexpr`;
    None outside a function body, where a run-time value cannot stand in (namespace or class scope)."""
    fn = ctx.function_at(name)
    if fn is None or not fn.body[0] < name < fn.body[1]:
        return None
    brace = enclosing_open(ctx, name, b"{")
    if brace > fn.body[0] and ctx.t(ctx.prev_code(brace)) not in (b")", b"{", b";", b"}", b"else", b"do"):
        return None  # a class defined inside the function
    first = statement_start(ctx, name)
    words = [k for k in range(first, name) if ctx.text[k] in _SPECIFIERS]
    if not any(ctx.text[k] == b"constexpr" for k in words):
        return []
    keep = words[0]
    edits = [ctx.edit(keep, "const")]
    for k in words[1:]:
        # the token and the blank after it, so `static constexpr int` reads `const int`
        end = ctx.starts[k + 1] if k + 1 < ctx.n else ctx.ends[k]
        edits.append(Edit(ctx.starts[k], end, b""))
    return edits


class Spans:
    """Closed ranges (first, last), of token indices, lines or (line, column) pairs, asked whether any holds a
    value: of the ranges that start at or before it, the furthest end must reach it. One sort, then a binary
    search a question, where a scan of every range for every finding grows with the square of the file."""

    def __init__(self, spans) -> None:
        spans = sorted(spans)
        self.firsts = [a for a, _ in spans]
        self.reach = list(accumulate((b for _, b in spans), max))

    def __bool__(self) -> bool:
        return bool(self.firsts)

    def hold(self, value) -> bool:
        k = bisect_right(self.firsts, value) - 1
        return k >= 0 and self.reach[k] >= value


def user_defined(ctx: Context, name: bytes) -> bool:
    """The file defines ``name`` itself (a function or a macro), so its calls are not HIP's built-in."""
    return name in ctx.macros or name in ctx.function_names()


__all__ = [n for n in dir() if not n.startswith("_")] + ["PUNCT", "IDENT", "KEYWORD", "LITERAL", "COMMENT"]


def defined_by_project(ctx: Context, name: str) -> bool:
    """A `#define NAME` the AMD build compiles in this file or in the headers it includes with quotes (and theirs,
    each read as that build sees it): bm3d's `#define warpSize 32` in indices.hpp, reached through bm3d.hpp."""
    from hipport.audit import amd_view
    from hipport.audit.options import quoted_includes

    known, undefined = amd_view.defines_for(ctx.options), amd_view.undefined_for(ctx.options)
    pattern = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(name.encode()) + rb"\b", re.M)
    todo, seen = [(ctx.src, ctx.path, 0)], set()
    while todo:
        src, path, depth = todo.pop()
        if pattern.search(src):
            return True
        if not path or path.startswith("<") or depth >= 8:
            continue
        for header, _st in quoted_includes(src, path, ctx.options.include_dirs):
            if header in seen:
                continue
            seen.add(header)
            try:
                with open(header, "rb") as fh:
                    text = fh.read(2_000_000)
            except OSError:
                continue
            todo.append((amd_view.view(text, known, undefined, header), header, depth + 1))
    return False
