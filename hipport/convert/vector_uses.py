"""Whether a project applies an operator to two values of one HIP vector type (`a / b` with both `float2`).

A CUDA header that defines its own `float2 operator/(float2, float2)` (a complex division) loses it on AMD, where
HIP_vector_type's component-wise operator is the one compiled: that changes results only where some expression
divides a `float2` by a `float2`. This module answers that question for the sources of a project, from the declared
types of the operands, and answers "maybe" wherever it cannot prove an operand is not of the vector type: a
`true` only ever keeps a warning.

An operand is proven not to be the vector when it is a literal, a cast to a scalar type, `sizeof`, a component
(`.x`) of a declared vector, a call of a function every declaration of which returns another type (or a C math
function the project does not declare), or a name every declaration of which in the project has another type (a
scalar, a pointer to one, another vector type). Anything else (a template parameter, `auto`, a struct member, a
macro's parameter, a name declared nowhere) may be the vector.
"""

from __future__ import annotations

import bisect
import os
import re
from collections import defaultdict

from hipport import project_sources
from hipport.convert.calls import matching_close
from hipport.scan import COMMENT, IDENT, KEYWORD, LITERAL, PUNCT, Tokens, lex

# HIP's vector types (HIP_vector_type<T, n>): a free `operator+=(float4&, float4)` of the user's is as good a match
# as HIP_vector_type's own non-template member, so `a += b` is ambiguous.
VECTOR_TYPES = frozenset(f"{t}{n}" for t in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
                                             "longlong", "ulonglong", "float", "double") for n in (1, 2, 3, 4))
# Types that are never a HIP vector type, whatever the project's typedefs (those names are the standard's or HIP's).
SCALAR_TYPES = frozenset({
    b"bool", b"char", b"short", b"int", b"long", b"float", b"double", b"unsigned", b"signed", b"void",
    b"size_t", b"ssize_t", b"ptrdiff_t", b"intptr_t", b"uintptr_t", b"int8_t", b"uint8_t", b"int16_t", b"uint16_t",
    b"int32_t", b"uint32_t", b"int64_t", b"uint64_t", b"uint", b"ushort", b"uchar", b"ulong", b"half", b"__half",
    b"dim3", b"wchar_t", b"char16_t", b"char32_t"})
# C math functions of one scalar result; a project's own declaration of the name (helper_math.h's
# `float2 fminf(float2, float2)`) overrides this.
_SCALAR_CALLS = frozenset({
    b"sqrtf", b"sqrt", b"rsqrtf", b"rsqrt", b"cbrtf", b"expf", b"exp", b"exp2f", b"exp10f", b"expm1f", b"logf",
    b"log", b"log2f", b"log10f", b"log10", b"log1pf", b"powf", b"pow", b"fabsf", b"fabs", b"sinf", b"sin", b"cosf",
    b"cos", b"tanf", b"tan", b"asinf", b"acosf", b"atanf", b"atan2f", b"atan2", b"sinhf", b"coshf", b"tanhf",
    b"tanh", b"hypotf", b"hypot", b"floorf", b"floor", b"ceilf", b"ceil", b"roundf", b"round", b"truncf",
    b"fmodf", b"fmod", b"erff", b"erfcf", b"lgammaf", b"tgammaf", b"__expf", b"__logf", b"__powf", b"__sinf",
    b"__cosf", b"__fdividef", b"__frcp_rn", b"__fsqrt_rn", b"__int2float_rn", b"__float2int_rn", b"__popc",
    b"__popcll", b"__clz", b"__ffs", b"abs", b"labs", b"llabs", b"rand", b"strlen", b"atoi", b"atof"})
_CAST_KEYWORDS = frozenset({b"static_cast", b"reinterpret_cast", b"const_cast"})
_COMPONENTS = frozenset({b"x", b"y", b"z", b"w"})
_INDEX_BUILTINS = frozenset({b"threadIdx", b"blockIdx", b"blockDim", b"gridDim"})  # `.x` of each is unsigned
_SKIPPED_QUALIFIERS = frozenset({b"const", b"volatile", b"__restrict__", b"__restrict", b"restrict", b"*", b"&",
                                 b"&&"})
_STATEMENT_QUALIFIERS = frozenset({b"const", b"static", b"extern", b"volatile", b"register", b"inline",
                                   b"__shared__", b"__device__", b"__host__", b"__constant__", b"__managed__",
                                   b"__forceinline__", b"constexpr", b"thread_local", b"mutable"})
_NOT_TYPES = frozenset({b"return", b"else", b"case", b"goto", b"new", b"delete", b"throw", b"sizeof", b"typename",
                        b"co_return", b"co_yield", b"using", b"namespace", b"struct", b"class", b"enum", b"union",
                        b"operator", b"template", b"public", b"private", b"protected", b"do", b"typedef"})
_DECLARATOR_END = frozenset({b"=", b";", b",", b")", b"[", b"(", b"{", b":"})
# `struct S`, `class C`, `using T =`, `typedef ... T;`: the names a `T *p` declaration may start with.
_TYPE_NAME = re.compile(rb"\b(?:struct|class|union|enum)\s+([A-Za-z_]\w*)|\busing\s+([A-Za-z_]\w*)\s*="
                        rb"|\btypedef\b[^;{]*?\b([A-Za-z_]\w*)\s*;")
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(\w*)(?:[^\n]*\\\r?\n)*[^\n]*", re.M)
# Before a left operand, these leave its extent or type unsure: a product, a cast, a template's `>`.
_LEFT_BOUNDARY_UNSURE = frozenset({b"*", b"/", b"%", b")", b">", b".*", b"->*"})
_UNARY_BEFORE = frozenset({b"(", b"[", b",", b"=", b"return", b"{", b";", b"?", b":", b"!", b"~", b"<<", b">>",
                           b"+", b"-", b"*", b"/", b"%", b"&&", b"||", b"<", b">", b"<=", b">=", b"==", b"!="})


class Sources:
    """The lexed sources of a project with what they declare: name -> the base types it is declared with."""

    def __init__(self, texts: list[bytes]) -> None:
        self.files: list[tuple[Tokens, list[tuple[int, int]]]] = []
        self.declared: dict[bytes, set[bytes]] = defaultdict(set)
        self.type_names: set[bytes] = set()
        for src in texts:
            tokens = lex(src)
            skipped = [(m.start(), m.end()) for m in _DIRECTIVE.finditer(src) if m.group(1) != b"define"]
            self.files.append((tokens, skipped))
            self.type_names.update(m.group(m.lastindex) for m in _TYPE_NAME.finditer(src))
        for tokens, _ in self.files:
            self._declarations(tokens)

    def _declarations(self, tokens: Tokens) -> None:
        n = len(tokens)
        kinds = tokens.kinds
        for j in range(n):
            if kinds[j] != IDENT:
                continue
            after = _next(tokens, j + 1)
            if after >= n or tokens.text(after) not in _DECLARATOR_END:
                continue
            t = _type_before(tokens, j, self.type_names)
            if t is not None:
                self.declared[tokens.text(j)].add(t)

    def may_apply(self, op: bytes, vector: bytes) -> bool:
        """Whether some expression may apply ``op`` (`/`, `*=`) to two values of type ``vector``: the operators of
        HIP_vector_type that a header may redefine, compound assignments and the multiplicative `*` and `/`."""
        first = re.compile(re.escape(op[:1]))
        for tokens, skipped in self.files:
            for m in first.finditer(tokens.first_bytes()):  # a token's index is its first byte's position there
                k = m.start()
                if tokens.kinds[k] != PUNCT or tokens.text(k) != op or _inside(skipped, tokens.starts[k]):
                    continue
                before = _prev(tokens, k - 1)
                if before >= 0 and tokens.text(before) == b"operator":
                    continue  # the operator's own declaration
                if op.endswith(b"="):
                    # `a *= b`: the left is one unary expression, the right everything up to the statement's end.
                    left = self._left(tokens, before, vector)
                    right = self._group(tokens, k + 1, _expression_end(tokens, k + 1), vector)
                else:
                    if before < 0 or tokens.text(before) in _UNARY_BEFORE and tokens.kinds[before] == PUNCT \
                            or tokens.text(before) in (b"return", b"case"):
                        continue  # `*p`: unary, no second operand
                    if self._is_type(tokens.text(before)):
                        continue  # `float2 *p`, `(float2 *)q`: a declarator or a cast
                    # `x / y`: the right operand is the next cast or postfix expression; the left one is a postfix
                    # expression only when no `*`, `/` or cast comes before it (`a * b / c` divides `a * b`).
                    right = self._right(tokens, k + 1, vector)
                    pre = _prev(tokens, _postfix_start(tokens, before) - 1)
                    left = self._left(tokens, before, vector) \
                        if pre < 0 or tokens.text(pre) not in _LEFT_BOUNDARY_UNSURE else None
                if left == "other" or right == "other":
                    continue
                return True
        return False

    def _is_type(self, word: bytes) -> bool:
        return word in SCALAR_TYPES or word in self.type_names or _is_vector_type(word)

    # -- operand types: "other" (proven not ``vector``), "vector" or None (unknown) -----------------------------

    def _name(self, name: bytes, vector: bytes) -> str | None:
        types = self.declared.get(name)
        if not types:
            return None
        if vector in types:
            return "vector"
        return "other" if all(_other_type(t, vector) for t in types) else None

    def _call(self, name: bytes, vector: bytes) -> str | None:
        """The type a call of ``name`` returns (a constructor's or a cast's, for a type's name)."""
        if name in (vector, b"make_" + vector):
            return "vector"
        if name in SCALAR_TYPES:
            return "other"
        if name in self.declared:
            return self._name(name, vector)
        if name.startswith(b"make_") and _is_vector_type(name[5:]) or _is_vector_type(name):
            return "other"  # another vector type
        return "other" if name in _SCALAR_CALLS else None

    def _right(self, tokens: Tokens, k: int, vector: bytes) -> str | None:
        """The type of the operand starting at token ``k``: a unary operator, then a primary and its postfixes."""
        k = _next(tokens, k)
        n = len(tokens)
        while k < n and tokens.text(k) in (b"-", b"+", b"++", b"--"):
            k = _next(tokens, k + 1)
        if k >= n:
            return None
        kind, text = tokens.kinds[k], tokens.text(k)
        if kind == LITERAL or text in (b"!", b"sizeof", b"true", b"false", b"nullptr"):
            return "other"
        if text == b"(":
            close = _close(tokens, k)
            inner = [tokens.text(i) for i in range(k + 1, close) if tokens.kinds[i] != COMMENT]
            if inner and all(w in SCALAR_TYPES or w in (b"*", b"const") for w in inner):
                return "other"  # a cast to a scalar (or a pointer)
            return self._group(tokens, k + 1, close, vector)
        if text in _CAST_KEYWORDS:
            lt = _next(tokens, k + 1)
            gt = _next(tokens, lt + 1)
            return "other" if gt < n and tokens.text(gt) in SCALAR_TYPES else None
        if kind == KEYWORD and text in SCALAR_TYPES:
            return "other"  # `float(x)`
        if kind != IDENT:
            return None
        while True:  # `ns::name`: the last part names it
            colons = _next(tokens, k + 1)
            if colons < n and tokens.text(colons) == b"::":
                k = _next(tokens, colons + 1)
            else:
                break
        name = tokens.text(k)
        after = _next(tokens, k + 1)
        if after < n and tokens.text(after) == b"(":
            base = self._call(name, vector)
            after = _next(tokens, _close(tokens, after) + 1)
        else:
            base = self._name(name, vector)
        while after < n and tokens.text(after) == b"[":
            after = _next(tokens, _close(tokens, after) + 1)
        if after < n and tokens.text(after) in (b".", b"->"):
            member = _next(tokens, after + 1)
            component = member < n and tokens.text(member) in _COMPONENTS
            return "other" if component and (base == "vector" or name in _INDEX_BUILTINS) else None
        return base

    def _group(self, tokens: Tokens, first: int, last: int, vector: bytes) -> str | None:
        """A parenthesised expression: not the vector when every operand in it is proven not to be."""
        k = first
        while k < last:
            k = _next(tokens, k)
            if k >= last:
                break
            kind, text = tokens.kinds[k], tokens.text(k)
            if kind == PUNCT and text not in (b"(",):
                k += 1
                continue
            if self._right(tokens, k, vector) != "other":
                return None
            k = _operand_end(tokens, k, last)
        return "other"

    def _left(self, tokens: Tokens, k: int, vector: bytes) -> str | None:
        """The type of the postfix expression ending at token ``k``."""
        if k < 0:
            return None
        kind, text = tokens.kinds[k], tokens.text(k)
        if kind == LITERAL:
            return "other"
        if kind == KEYWORD and text in SCALAR_TYPES:
            return "other"  # `float *p`: a declarator, not a product
        while text == b"]":
            k = _prev(tokens, _open(tokens, k) - 1)
            if k < 0:
                return None
            kind, text = tokens.kinds[k], tokens.text(k)
        if text == b")":
            start = _open(tokens, k)
            callee = _prev(tokens, start - 1)
            if callee >= 0 and tokens.kinds[callee] == IDENT:
                return self._call(tokens.text(callee), vector)
            if callee >= 0 and tokens.text(callee) == b">":
                return None  # `static_cast<float2>(x)`
            return self._group(tokens, start + 1, k, vector)
        if kind != IDENT:
            return None
        dot = _prev(tokens, k - 1)
        if dot >= 0 and tokens.text(dot) in (b".", b"->"):
            base = _prev(tokens, dot - 1)
            if text in _COMPONENTS and base >= 0 and tokens.kinds[base] == IDENT \
                    and (tokens.text(base) in _INDEX_BUILTINS or self._name(tokens.text(base), vector) == "vector"):
                return "other"
            return None
        return self._name(text, vector)


def _other_type(t: bytes, vector: bytes) -> bool:
    return t in SCALAR_TYPES or t != vector and _is_vector_type(t)


def _is_vector_type(t: bytes) -> bool:
    return t.decode("latin-1") in VECTOR_TYPES


def _type_before(tokens: Tokens, j: int, type_names: set) -> bytes | None:
    """The base type a declaration of token ``j`` gives it (`const float *__restrict__ p` -> `float`), or None
    when ``j`` is not declared there. A later declarator (`float a, b`) takes the statement's first type. Past a
    `*` or `&` the word before must be a known type (`a * s` is a product)."""
    k = _prev(tokens, j - 1)
    declarator = False
    while k >= 0 and tokens.text(k) in _SKIPPED_QUALIFIERS:
        declarator |= tokens.kinds[k] == PUNCT
        k = _prev(tokens, k - 1)
    if k < 0:
        return None
    kind, text = tokens.kinds[k], tokens.text(k)
    if kind in (IDENT, KEYWORD) and text not in _NOT_TYPES and text not in _STATEMENT_QUALIFIERS:
        if declarator and not (text in SCALAR_TYPES or _is_vector_type(text) or text in type_names):
            return None
        return text if _starts_type(tokens, k) else None
    if text != b",":
        return None
    depth = 0  # back to the statement's start, over brackets
    while k > 0:
        k -= 1
        t = tokens.text(k)
        if tokens.kinds[k] != PUNCT:
            continue
        if t == b"}" and depth == 0:
            opening = _open(tokens, k)
            if tokens.text(_prev(tokens, opening - 1)) not in (b"=", b",", b"(", b"{", b"]"):
                break  # the end of the block before: the statement starts after it
            k = opening  # an initializer `= {1, 2}`: step over it
        elif t in (b")", b"]", b"}"):
            depth += 1
        elif t in (b"(", b"["):
            if depth == 0:
                return None  # an argument list, a parameter list: each declares its own
            depth -= 1
        elif t == b"{":
            if depth == 0:
                break  # a block's first statement
            depth -= 1
        elif depth == 0 and t == b";":
            break
    first = _next(tokens, k + 1)
    while first < j and tokens.text(first) in _STATEMENT_QUALIFIERS:
        first = _next(tokens, first + 1)
    if first >= j or tokens.kinds[first] not in (IDENT, KEYWORD) or tokens.text(first) in _NOT_TYPES:
        return None
    second = _next(tokens, first + 1)
    while second < j and tokens.text(second) in _SKIPPED_QUALIFIERS:
        second = _next(tokens, second + 1)
    return tokens.text(first) if second < j and tokens.kinds[second] == IDENT else None


def _starts_type(tokens: Tokens, k: int) -> bool:
    """Whether a type may start at (or continue through) word ``k``: what comes before it begins a declaration
    (a statement or parameter boundary, or another word: a qualifier, `unsigned`), not an expression (`= a * s`,
    `p.x * s`, `return a * s`)."""
    before = _prev(tokens, k - 1)
    if before < 0:
        return True
    text = tokens.text(before)
    if tokens.kinds[before] == PUNCT:
        return text in (b";", b"{", b"}", b"(", b",", b":", b"<")
    return tokens.kinds[before] in (IDENT, KEYWORD) and text not in _NOT_TYPES or text == b"typename"


def _postfix_start(tokens: Tokens, k: int) -> int:
    """The first token of the postfix expression ending at ``k`` (`a.b[i]`, `f(x)`, `ns::v`)."""
    while k >= 0:
        text = tokens.text(k)
        if text in (b"]", b")") and tokens.kinds[k] == PUNCT:
            start = _open(tokens, k)
            callee = _prev(tokens, start - 1)
            if text == b")" and (callee < 0 or tokens.kinds[callee] != IDENT):
                return start  # a parenthesised group
            k = callee
            continue
        if tokens.kinds[k] in (IDENT, LITERAL) or tokens.kinds[k] == KEYWORD and text in (b"this", b"true", b"false"):
            link = _prev(tokens, k - 1)
            if link >= 0 and tokens.text(link) in (b".", b"->", b"::"):
                k = _prev(tokens, link - 1)
                continue
            return k
        return k
    return 0


def _expression_end(tokens: Tokens, k: int) -> int:
    """The token ending the expression starting at ``k``: `;`, or a `,`, `)`, `]` or `}` outside its brackets."""
    n = len(tokens)
    while k < n:
        text = tokens.text(k)
        if tokens.kinds[k] == PUNCT:
            if text in (b"(", b"[", b"{"):
                k = _close(tokens, k) + 1
                continue
            if text in (b";", b",", b")", b"]", b"}"):
                return k
        k += 1
    return n


def _operand_end(tokens: Tokens, k: int, last: int) -> int:
    """The token after the primary and postfixes starting at ``k`` (used to step over operands in a group)."""
    n = min(len(tokens), last)
    if tokens.text(k) == b"(":
        return _close(tokens, k) + 1
    k += 1
    while k < n:
        t = tokens.text(k)
        if t in (b"(", b"["):
            k = _close(tokens, k) + 1
        elif t in (b".", b"->", b"::"):
            k += 2
        else:
            break
    return k


def _inside(spans: list[tuple[int, int]], offset: int) -> bool:
    at = bisect.bisect_right(spans, (offset, 1 << 62)) - 1
    return at >= 0 and spans[at][0] <= offset < spans[at][1]


def _next(tokens: Tokens, k: int) -> int:
    n = len(tokens)
    while k < n and tokens.kinds[k] == COMMENT:
        k += 1
    return k


def _prev(tokens: Tokens, k: int) -> int:
    while k >= 0 and tokens.kinds[k] == COMMENT:
        k -= 1
    return k


def _close(tokens: Tokens, k: int) -> int:
    close = matching_close(tokens, k)
    return close if close is not None else len(tokens) - 1


def _open(tokens: Tokens, k: int) -> int:
    """The opening bracket of the closing one at ``k``."""
    pairs = {b")": b"(", b"]": b"[", b"}": b"{"}
    want, mine = pairs[tokens.text(k)], tokens.text(k)
    depth = 0
    while k >= 0:
        t = tokens.text(k)
        if t == mine:
            depth += 1
        elif t == want:
            depth -= 1
            if depth == 0:
                return k
        k -= 1
    return 0


# -- the project around a header ------------------------------------------------------------------------------------

MAX_BYTES = 16_000_000  # the project's sources lexed to answer one operator's question: about 8 s of lexing

def project_may_apply(path: str, op: str, vector: str) -> tuple[bool, str]:
    """(whether some source of the project around header ``path`` may apply ``op`` to two ``vector`` values, the
    project's folder), over what `project_sources` reads of the project (its sources and those its build reaches
    through `-I`). True when the project cannot be read whole, or no unit of it compiles the header: its users are
    then out of sight."""
    index = project_sources.index_for(path)
    if index is None:
        return True, os.path.dirname(os.path.abspath(path))
    if not index.compiles(path):
        return True, index.root
    if sum(_size(p) for p in index.paths) > MAX_BYTES:
        return True, index.root  # more than is worth lexing for one finding: its users stay unread
    answers = index.memo.setdefault("vector_uses", {})  # (op, vector) -> answer, and the lexed "sources"
    question = (op, vector)
    if question not in answers:
        if "sources" not in answers:
            answers["sources"] = Sources([_read(p) for p in index.paths])
        answers[question] = answers["sources"].may_apply(op.encode(), vector.encode())
    return answers[question], index.root


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""
