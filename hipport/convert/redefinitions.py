"""Definitions that compile with nvcc and clash after conversion, each kept for CUDA behind a guard HIP skips:

- the user's own device function that HIP already declares with the same parameters (a CUDA project's
  `__device__ float atomicMax(float*, float)`, which CUDA lacks and HIP has): "redefinition of 'atomicMax'". Found
  against the installed HIP headers (`rocm.hip_device_functions`); without them nothing is found. Operators on
  HIP's vector types (helper_math.h's `float2 operator/(float2, float2)`) come from the targeted release's data
  (`[vector_operators]` of rules/releases.toml), since which ones clash changed in 6.2.
- two overloads that become one function once renamed (`check(cudaError_t)` and `check(CUresult)`, both
  `check(hipError_t)`): the first stays, the others are guarded.

Each guarded definition is wrapped in `#if !defined(__HIP_PLATFORM_AMD__)` ... `#endif` (HIP's definition is then
the one used, or the first overload), counted under the category `guard` and reported (`redefines-hip`,
`overload-merged`), since HIP's version may differ from the user's in detail. A definition inside a conditional
that already names a HIP platform macro is the user's choice and is left alone, so a second run changes nothing.
"""

from __future__ import annotations

import bisect
import os
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from hipport import rocm
from hipport.convert.calls import call_args, matching_close, next_code, prev_code, split_args
from hipport.convert.context import ConversionContext
from hipport.convert.vector_uses import VECTOR_TYPES, project_may_apply
from hipport.scan import COMMENT, IDENT, KEYWORD, LITERAL, PUNCT, Tokens, lex

CATEGORY = "guard"
GUARD_AMD = b"#if !defined(__HIP_PLATFORM_AMD__)"  # HIP declares it on AMD; the user's stays for NVIDIA
GUARD_HIP = b"#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__)"  # one function on both
_HIP_MACROS = re.compile(rb"__HIP_PLATFORM_AMD__|__HIP_PLATFORM_HCC__|__HIPCC__|__HIP__|__HIP_DEVICE_COMPILE__")
_DEVICE = {b"__device__", b"__global__"}
_AFTER_PARAMS = {b"const", b"noexcept", b"override", b"final", b"volatile"}
_NOT_A_TYPE_END = {b"return", b"else", b"case", b"goto", b"new", b"delete", b"throw", b"sizeof", b"co_return"}
_DROPPED = {b"__restrict__", b"__restrict", b"restrict", b"register"}
_WORD = (IDENT, KEYWORD, LITERAL)
_OPENERS = {b"if", b"ifdef", b"ifndef"}
COMPOUND_OPERATORS = {b"+=", b"-=", b"*=", b"/="}
_BLANK = re.compile(rb"\s*")
_BRACE = re.compile(rb"[{}]")
_BRANCHES = {b"elif", b"else", b"elifdef", b"elifndef"}


@dataclass(slots=True)
class Definition:
    name: str
    index: int                # the name's token
    scope: tuple              # enclosing namespaces
    start: int                # offset of the line the declaration starts on
    end: int                  # offset of the line break after the body's `}`
    device: bool              # declared __device__ / __global__
    block: tuple              # the enclosing conditionals: (`#if` directive, branch directive) indices
    guardable: bool           # the declaration starts its line and the body ends its line
    tokens: Tokens
    args: list                # the parameters (calls.Arg)
    _params: tuple | None = None

    @property
    def params(self) -> tuple:
        """Each parameter's type as written (normalised), names and defaults dropped; made when first asked for,
        since most definitions of a file are neither HIP's names nor overloads."""
        if self._params is None:
            self._params = tuple(p for p in (_normalise(self.tokens, a.first, a.last) for a in self.args)
                                 if p and p != b"void")
        return self._params


def guard_redefinitions(ctx: ConversionContext) -> None:
    if b"(" not in ctx.src:
        return
    defs = definitions(ctx)
    if not defs:
        return
    guarded: set[int] = set()
    hip_names = rocm.installed_names()
    defs = [d for d in defs if d.index not in ctx.claimed]  # warp built-ins: sync_builtins guards them by release
    for d in defs:
        if d.device and not d.scope and (d.name in hip_names or d.name.startswith("operator")) \
                and not _hip_guarded(ctx, d):
            header = _declared_by_hip(ctx, d)
            if header is not None:
                same = _component_wise(ctx, d)
                unapplied = None if same else _unapplied(ctx, d)
                _guard(ctx, d, GUARD_AMD, "redefines-hip",
                       f"`{d.name}({', '.join(p.decode('latin-1') for p in d.params)})` is declared by HIP "
                       f"({header}): on AMD GPUs HIP's is used and this definition is left out, behind "
                       "`#if !defined(__HIP_PLATFORM_AMD__)` " + (
                           "(yours works component by component, as HIP's does)" if same else
                           f"(yours differs from HIP's, but no expression {unapplied}: check code added later)"
                           if unapplied else "(check that HIP's does what yours did)"),
                       severity="info" if same or unapplied else "warning")
                guarded.add(d.index)
    kept: dict[tuple, list[Definition]] = {}
    named = Counter((d.scope, d.name) for d in defs)
    for d in defs:
        if named[(d.scope, d.name)] < 2 or d.index in guarded or _hip_guarded(ctx, d):
            continue  # a name defined once merges with nothing
        same = kept.setdefault((d.scope, d.name, _renamed(ctx, d.params)), [])
        other = next((o for o in same if not _exclusive(o.block, d.block)), None)
        if other is None or other.params == d.params:  # the first, or a repeat the user compiles already
            same.append(d)
        else:
            line = ctx.lines.line_col(ctx.tokens.starts[other.index])[0]
            _guard(ctx, d, GUARD_HIP, "overload-merged",
                   f"`{d.name}({', '.join(p.decode('latin-1') for p in d.params)})` becomes the same function as "
                   f"the overload on line {line} once CUDA types are renamed; this one is left out of HIP builds, "
                   "behind `#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__)` (merge what "
                   "it does into the first by hand if they differ)")


def _guard(ctx: ConversionContext, d: Definition, guard: bytes, rule: str, message: str,
           severity: str = "warning") -> None:
    if not d.guardable:
        ctx.finding(rule, "warning", ctx.tokens.starts[d.index], message.split(";")[0] + "; guard it by hand",
                    subject=d.name)
        return
    nl = ctx.newline()
    ctx.convert(d.start, d.start, guard + nl, d.name, CATEGORY)
    ctx.edits_only(d.end, d.end, nl + b"#endif")  # before the body's line break: after it, the next guard opens
    ctx.finding(rule, severity, ctx.tokens.starts[d.index], message, subject=d.name)


# `a.x -= b.x`, `a.x - b.x`: one component of one operand with an operator and a component of the other.
_COMPONENT_OP = re.compile(rb"\.([xyzw])\s*([-+*/%&|^]|<<|>>)=?\s*\w+\s*\.\s*([xyzw])\b")


def _component_wise(ctx: ConversionContext, d: Definition) -> bool:
    """A vector operator whose body applies its own operator to each component with the same component of the other
    operand (helper_math.h's `a.x -= b.x; a.y -= b.y;`), which is what HIP_vector_type's operators do: guarding it
    changes nothing. Any other arithmetic (a complex product mixes `.x` with `.y`) leaves the warning."""
    if not d.name.startswith("operator") or len(d.params) != 2:
        return False
    op = d.name[len("operator"):].rstrip("=").encode()
    vector = d.params[1].decode("latin-1").replace("const", "").strip(" &")
    size = vector[-1:]
    if not size.isdigit():
        return False
    body = ctx.src[ctx.src.find(b"{", ctx.tokens.starts[d.index], d.end):d.end]
    pairs = _COMPONENT_OP.findall(body)
    return bool(pairs) and all(a == c and o == op for a, o, c in pairs) \
        and {a for a, _, _ in pairs} == {b"xyzw"[k:k + 1] for k in range(int(size))}


def _unapplied(ctx: ConversionContext, d: Definition) -> str | None:
    """For a vector operator that differs from HIP's, where no source of the header's project applies it to two
    vectors (tgvnn's complex `float2 / float2`, declared beside the ones it uses): the words saying so (`under
    `src` applies `float2 / float2``); None when some expression may, or the project is out of sight."""
    if not d.name.startswith("operator") or len(d.params) != 2 or ctx.path.startswith("<") \
            or not os.path.isfile(ctx.path):
        return None
    op = d.name[len("operator"):]
    vector = _value_type(d.params[1].decode("latin-1")).strip()
    applied, root = project_may_apply(ctx.path, op, vector)
    if applied:
        return None
    shown = os.path.relpath(root) if not os.path.relpath(root).startswith("..") else root
    return f"under `{shown}` applies `{vector} {op} {vector}`"


def _operators(ctx: ConversionContext) -> frozenset:
    return frozenset(op.encode() for op in ctx.rules.vector_operators_of(ctx.options.rocm_version)) \
        or COMPOUND_OPERATORS


def _declared_by_hip(ctx: ConversionContext, d: Definition) -> str | None:
    if d.name.startswith("operator"):
        return _vector_operator(ctx, d)
    for params, header in rocm.hip_device_functions(d.name):
        if _normalise_text(params) == d.params:
            return header.rsplit("/include/", 1)[-1]
    return None


def _vector_operator(ctx: ConversionContext, d: Definition) -> str | None:
    """`operator+=(float4&, float4)` (or `const float4&`), or `operator/(float2, float2)`, where the targeted
    release's HIP_vector_type has the same operator as a non-template member or friend."""
    op = d.name[len("operator"):]
    if len(d.params) != 2 or op not in ctx.rules.vector_operators_of(ctx.options.rocm_version):
        return None
    target, value = (p.decode("latin-1") for p in d.params)
    compound = op.endswith("=")
    vector = (target[:-1] if target.endswith("&") else "") if compound else _value_type(target)
    if vector not in VECTOR_TYPES or value not in (vector, f"const {vector}", f"const {vector}&") \
            or not compound and target not in (vector, f"const {vector}", f"const {vector}&"):
        return None
    return f"hip/amd_detail/amd_hip_vector_types.h of ROCm {'.'.join(map(str, ctx.options.rocm_version[:2]))}, " \
        "an operator of HIP_vector_type"


def _value_type(param: str) -> str:
    """`const float2&` -> `float2`."""
    return param.removeprefix("const ").removesuffix("&")


def _renamed(ctx: ConversionContext, params: tuple) -> tuple:
    """The parameter types as they read once every CUDA name in them is renamed."""
    names = ctx.rules.names
    roc = ctx.options.roc

    def one(word: str) -> str:
        rule = names.get(word)
        return (rule.target(roc) or word) if rule is not None else word

    return tuple(re.sub(r"[A-Za-z_]\w*", lambda m: one(m.group(0)), p.decode("latin-1")) for p in params)


def _hip_guarded(ctx: ConversionContext, d: Definition) -> bool:
    """Whether a conditional around the definition already names a HIP platform macro (in its `#if` or in the
    `#elif`/`#else` opening the branch the definition sits in)."""
    directives = ctx.structure.directives
    for opener, branch in d.block:
        for k in {opener, branch}:
            x = directives[k]
            if _HIP_MACROS.search(ctx.src[x.start:x.end]):
                return True
    return False


def definitions(ctx: ConversionContext) -> list[Definition]:
    """Function definitions at namespace scope (outside classes and bodies), in file order."""
    tokens = ctx.tokens
    kinds = tokens.kinds
    in_directive = ctx.structure.in_directive
    n = len(tokens)
    out: list[Definition] = []
    scope: list[bytes | None] = []   # per open brace: a namespace's name (b"" anonymous / extern "C"), None other
    inside = 0                       # how many of them are not namespaces: a body, a class, an initializer
    braces = _braces(tokens, in_directive)
    firsts = tokens.first_bytes()
    i = 0
    while i < n:
        if inside:
            # Within a body or a class nothing is at namespace scope: only its braces matter, go to the next.
            at = bisect.bisect_left(braces, i)
            if at == len(braces):
                break
            i = braces[at]
        elif in_directive[i] or kinds[i] == COMMENT:
            i += 1
            continue
        kind, text = kinds[i], tokens.text(i)
        if kind == PUNCT and text == b"{":
            s = _namespace_of(tokens, i, in_directive)
            scope.append(s)
            inside += s is None
        elif kind == PUNCT and text == b"}":
            if scope:
                inside -= scope.pop() is None
        elif kind == IDENT and _before_paren(firsts, kinds, i + 1, n) or kind == KEYWORD and text == b"operator":
            found = _definition(ctx, i, tuple(s for s in scope if s))
            if found is not None:
                d, body_close = found
                out.append(d)
                i = body_close + 1
                continue
        i += 1
    return out


def _before_paren(firsts: bytes, kinds, k: int, n: int) -> bool:
    """Whether the first token at or after ``k`` that is not a comment is `(` (a token whose first byte is `(` is
    that bracket): what a function's name is followed by, checked before anything dearer."""
    while k < n and kinds[k] == COMMENT:
        k += 1
    return k < n and firsts[k] == 0x28


def _braces(tokens: Tokens, in_directive) -> list[int]:
    """Indices of the `{` and `}` tokens outside directives."""
    return [m.start() for m in _BRACE.finditer(tokens.first_bytes()) if not in_directive[m.start()]]


def _namespace_of(tokens: Tokens, brace: int, in_directive) -> bytes | None:
    k = prev_code(tokens, brace - 1)
    if k >= 0 and not in_directive[k]:
        if tokens.kinds[k] == IDENT and k > 0:
            j = prev_code(tokens, k - 1)
            if j >= 0 and tokens.text(j) == b"namespace":
                return tokens.text(k)
        if tokens.text(k) == b"namespace":
            return b""
        if tokens.kinds[k] == LITERAL and tokens.text(k) in (b'"C"', b'"C++"'):
            return b""
    return None


def _definition(ctx: ConversionContext, i: int, scope: tuple) -> tuple[Definition, int] | None:
    tokens = ctx.tokens
    kinds = tokens.kinds
    in_directive = ctx.structure.in_directive
    before = prev_code(tokens, i - 1)
    if before < 0 or in_directive[before]:
        return None
    btext = tokens.text(before)
    if not (kinds[before] in (IDENT, KEYWORD) and btext not in _NOT_A_TYPE_END
            or kinds[before] == PUNCT and btext in (b"*", b"&", b"&&", b">")):
        return None
    name_end = i
    if kinds[i] == KEYWORD:  # `operator+=`: the operator's token names it
        name_end = next_code(tokens, i + 1)
        if name_end >= len(tokens) or tokens.text(name_end) not in _operators(ctx):
            return None
    # The parameters are split only for a definition: most names here are declarations, calls or variables.
    open_index = next_code(tokens, name_end + 1)
    if open_index >= len(tokens) or tokens.text(open_index) != b"(":
        return None
    close = matching_close(tokens, open_index)
    if close is None:
        return None
    k = next_code(tokens, close + 1)
    while k < len(tokens) and not in_directive[k] and tokens.text(k) in _AFTER_PARAMS:
        k = next_code(tokens, k + 1)
    if k >= len(tokens) or in_directive[k] or tokens.text(k) != b"{":
        return None
    body_close = matching_close(tokens, k)
    if body_close is None:
        return None
    args = split_args(tokens, open_index, close)
    first = before
    while True:
        j = prev_code(tokens, first - 1)
        if j < 0 or in_directive[j] or tokens.text(j) in (b";", b"{", b"}", b")", b"="):
            break
        first = j
    qualifiers = {tokens.text(q) for q in range(first, i) if kinds[q] == IDENT}
    start, starts_line = _line_start(ctx, tokens.starts[first])
    end, ends_line = _after_line(ctx, tokens.ends[body_close])
    block = _block_at(ctx, tokens.starts[first])
    name = b"".join(tokens.text(k) for k in range(i, name_end + 1) if kinds[k] != COMMENT)
    return Definition(name.decode("latin-1"), i, scope, start, end, bool(qualifiers & _DEVICE), block,
                      starts_line and ends_line, tokens, args), body_close


def _line_start(ctx: ConversionContext, offset: int) -> tuple[int, bool]:
    at = ctx.lines.line_start(offset)
    return at, _BLANK.fullmatch(ctx.src, at, offset) is not None  # no copy of a line that may be megabytes


def _after_line(ctx: ConversionContext, offset: int) -> tuple[int, bool]:
    """(the offset of the line break ending the line at or after ``offset`` (of its `\r` in CRLF), whether only
    blanks follow ``offset`` there)."""
    src = ctx.src
    nl = src.find(b"\n", offset)
    if nl == -1:
        return len(src), False  # no newline after the body: not guarded (the #endif would need one)
    if nl > offset and src[nl - 1] == 0x0D:
        nl -= 1
    return nl, _BLANK.fullmatch(src, offset, nl) is not None


def _block_at(ctx: ConversionContext, offset: int) -> tuple:
    """The conditional branches around ``offset``, outermost first: for each enclosing conditional, (the index of
    its `#if` directive, the index of the directive opening the branch holding ``offset``)."""
    known = getattr(ctx, "_redefinition_branches", None)
    if known is None:  # once a file, each directive's state: asked at every definition
        starts, states, stack = [], [], []
        for k, d in enumerate(ctx.structure.directives):
            if d.name in _OPENERS:
                stack.append((k, k))
            elif d.name in _BRANCHES and stack:
                stack[-1] = (stack[-1][0], k)
            elif d.name == b"endif" and stack:
                stack.pop()
            starts.append(d.start)
            states.append(tuple(stack))
        known = ctx._redefinition_branches = (starts, states)
    k = bisect.bisect_left(known[0], offset)  # the directives before ``offset``
    return known[1][k - 1] if k else ()


def _exclusive(a: tuple, b: tuple) -> bool:
    """Whether two places sit in different branches of one conditional (never compiled together)."""
    branches = dict(a)
    return any(cond in branches and branches[cond] != branch for cond, branch in b)


def _normalise(tokens: Tokens, first: int, last: int) -> bytes:
    """A parameter's type as text: comments, `__restrict__`, a default value and the parameter's name dropped, words
    separated by one space, punctuation joined (`const float *__restrict__ p = 0` -> `const float*`)."""
    kept = []
    for k in range(first, last):
        kind, text = tokens.kinds[k], tokens.text(k)
        if kind == COMMENT:
            continue
        if kind == PUNCT and text == b"=":
            break
        if text in _DROPPED:
            continue
        kept.append((kind, text))
    if len(kept) > 1 and kept[-1][0] == IDENT and kept[-2][1] != b"::":
        kept.pop()
    out = b""
    prev_word = False
    for kind, text in kept:
        word = kind in _WORD
        if word and prev_word:
            out += b" "
        out += text
        prev_word = word
    return out


@lru_cache(maxsize=1024)
def _normalise_text(params: bytes) -> tuple:
    """A parameter list's text (from a HIP header), normalised as `_normalise` does a definition's."""
    tokens = lex(b"f(" + params.replace(b"\n", b" ") + b")")
    found = call_args(tokens, 0)
    if found is None:
        return ()
    return tuple(p for p in (_normalise(tokens, a.first, a.last) for a in found[2]) if p and p != b"void")
