"""The user's own names: which CUDA-looking identifiers belong to the program, not to CUDA.

One notion, used by the rename pass, the argument rewrites and the summary's list of unknown names, decided per
name across the file so that a declaration, its out-of-line definition and its calls agree. An occurrence is the
user's when

* it is reached as a member: `pool.cudaMalloc(...)`, `p->cudaFree(...)`;
* it is qualified by a scope that is not CUDA's: `Pool::cudaMalloc`, `mylib::cudaFree`, `::mylib::x`,
  `Foo<T>::x`. CUDA's scopes are its namespaces (`cub`, `thrust`, `cooperative_groups`, `nvcuda`, ... and an
  alias of one) and the types rules know (`cudaMemcpyKind::cudaMemcpyHostToDevice`); a bare `::cudaMalloc` is
  CUDA's global function;
* it is unqualified, and a declaration of the user's is visible there. The user declares a name
  - as a member, inside a struct/class/union body: visible in that body, in the bodies of its out-of-line
    members (`int Pool::reserve() { ... }`) and of classes derived from it;
  - in a namespace of its own (named, anonymous or inline, not a CUDA one): visible inside that namespace,
    in functions defined as its members (`int mylib::f() { ... }`), and after `using namespace mylib;`;
  - through a qualified name (`int Pool::cudaMalloc(...)`, `mylib::cudaFree(p)`, `using mylib::cudaFree;`),
    which tells that `Pool`/`mylib` has such a member even when its declaration is in another file;
  - as a variable of a built-in type (`int cudaMalloc = 0;`), visible in the block (or file) declaring it;
* or it names a type the file defines itself: `struct __nv_fp8_e4m3 {` (another backend's stand-in),
  `using cudaStream_t = hipStream_t;`, `typedef hipStream_t cudaStream_t;` (a compatibility header's alias);
* or it is a name without a CUDA prefix that a rule knows (`saturate`, `umax`) or a CUDA-looking name that no
  rule knows (`cudaCheck`), and the file declares it anywhere (`static float saturate(float)`).

Everything else is CUDA's, in particular a function at global scope declared with a CUDA name
(`extern "C" cudaError_t cudaFree(void*);` redeclares CUDA's), and a call: a function that merely calls
`cudaMalloc` declares nothing. Declarations are recognised from tokens (a name after a type or another name
and before `(`, `;`, `=`, `[`, `,`, `{`, `:` or `)`); scopes from braces, outside directives.

Macros: a macro's parameters are its own names (the parameter list and their uses in the body are never
renamed), and so is what a macro stringizes or pastes. An identifier after `#` in a `#define` body is
stringized, so it is text, not a reference: never renamed. Neither is an operand of `##`: the program refers
to the pasted identifier, which no rule sees, and renaming a piece changes that identifier (`wrap_##cudaMalloc`
would become `wrap_hipMalloc`, which the program never declares; `cudaMemcpy##Async` is left for the user to
check too, rather than betting that HIP keeps every suffix). Likewise an argument given to a parameter of a
macro defined in this file that only stringizes or pastes it (`#define STR(x) #x` ... `STR(cudaMalloc)`, also
through a helper `#define XSTR(x) STR(x)`) is left as written, so a printed string does not change; an
argument that is also used as code (`CHECK(cudaMalloc(&p, n))`) is renamed, string and all.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from hipport.scan import COMMENT, IDENT, KEYWORD, LITERAL, PUNCT, Tokens

if TYPE_CHECKING:
    from hipport.directives import Structure
    from hipport.rules import RuleSet


class FileView(Protocol):
    """What the decision needs of one file (a `ConversionContext` is one): said here so that this module does
    not import the context, which imports it."""
    tokens: Tokens
    src: bytes
    rules: RuleSet
    structure: Structure
    candidates: Iterable[int]

# CUDA's own namespaces besides those a rule renames (`cub`).
CUDA_NAMESPACES = frozenset({"cub", "thrust", "cuda", "nvcuda", "wmma", "cooperative_groups", "cudf", "cutlass",
                             "cute", "nvtx3", "cuda_std"})

# `cuda_column` is a user's snake_case name; CUDA's own API is camelCase (`cudaX`, `cuX`) or upper case.
CUDA_PREFIX = re.compile(r"^(?:cuda|cu[A-Z]|CU|cub|nv|NV|__|curand|cublas|cufft|cusparse|cusolver|cudnn|make_)")

_NOT_DECL_BEFORE = {b"return", b"case", b"else", b"throw", b"new", b"delete", b"sizeof", b"co_return",
                    b"co_yield", b"co_await", b"do", b"goto", b"typeid", b"decltype", b"alignof", b"noexcept",
                    b"typedef", b"operator", b"template", b"typename", b"using", b"static_assert", b"default",
                    b"public", b"private", b"protected", b"__attribute__", b"defined"}
_TYPE_KEYWORDS = {b"int", b"float", b"double", b"char", b"bool", b"auto", b"unsigned", b"signed", b"long",
                  b"short", b"void", b"size_t", b"int32_t", b"int64_t", b"uint32_t", b"uint64_t"}
_DECL_AFTER = {b"(", b";", b"=", b"[", b",", b"{", b":", b")"}
_VARIABLE_AFTER = {b";", b"=", b",", b"[", b"{", b":"}
_POINTER = {b"*", b"&", b"&&", b">"}
_MEMBER = {b".", b"->"}  # not `.*`/`->*`: their right side is an expression (a pointer to member), looked up as any name
_CLASS_KEYS = {b"struct", b"class", b"union"}
_CONTROL = {b"if", b"for", b"while", b"switch", b"catch", b"sizeof", b"decltype", b"alignof", b"return",
            b"__attribute__", b"alignas", b"noexcept", b"throw", b"static_assert", b"typeid", b"__declspec"}
_BRACE = re.compile(rb"[{}]")
_USING_NAMESPACE = re.compile(rb"\busing\s+namespace\b")
_ALIAS = re.compile(rb"\bnamespace\s+([A-Za-z_]\w*)\s*=\s*:?:?\s*([A-Za-z_]\w*)")
_USING, _ENUMERATOR = b"\0using", b"\0enumerator"  # markers for pending declarations
_HEAD_LIMIT = 256  # tokens looked back from a `{` for what opens it
_STATEMENT_ENDS = frozenset(b";{}")
_CLOSING = frozenset(b")]")
_OPENING = frozenset(b"([")


@dataclass(slots=True)
class Scope:
    kind: str                  # "file", "namespace", "class", "enum", "block" (function bodies included)
    parent: int
    open: int                  # token index of `{` (-1 for the file)
    close: int                 # token index of `}` (len(tokens) when never closed)
    users: bool                # declarations here are the user's whatever the name (class or own namespace)
    home: int                  # the scope a declaration made here is visible in (the parent for transparent ones)
    labels: frozenset          # the names this scope is (class / namespace name): declarations here belong to them
    sees: set = field(default_factory=set)        # names whose members are visible unqualified here
    usings: list = field(default_factory=list)    # (token index, namespace) of `using namespace` here


@dataclass(slots=True)
class _Decl:
    home: int | None           # scope the declaration is visible in (None: only through its labels)
    labels: frozenset          # class / namespace names it is a member of


class UserNames:
    """Built once per file (lazily, by `ConversionContext.user_names`); `is_users(i)` answers for a candidate."""

    def __init__(self, ctx: FileView) -> None:
        self.tokens = ctx.tokens
        self.src = ctx.src
        self.rules = ctx.rules
        self.structure = ctx.structure
        self.in_directive = ctx.structure.in_directive
        self.declared: set[str] = set()      # names the file declares itself (never "unknown" to the summary)
        self._anywhere: set[str] = set()     # names without a CUDA prefix the file declares: the user's everywhere
        self._decls: dict[str, list[_Decl]] = {}
        self._verdict: dict[int, bool] = {}  # per candidate decided without scopes
        self._aliases = self._cuda_aliases()
        self._scopes: list[Scope] | None = None
        self._opens: list[int] = []
        pending: list[tuple[int, str, bytes, bytes]] = []
        for i in ctx.candidates:
            self._classify(i, pending)
        if pending:  # declarations whose meaning depends on the scope they are in
            self._build_scopes()
            for i, name, prev, nxt in pending:
                self._scoped_declaration(i, name, prev, nxt)

    # -- per occurrence -------------------------------------------------------------------------------------

    def is_users(self, i: int) -> bool:
        verdict = self._verdict.get(i)
        if verdict is not None:
            return verdict
        name = self.tokens.text(i).decode("latin-1")
        if name in self._anywhere:
            return True
        decls = self._decls.get(name)
        if not decls or self.in_directive[i]:
            return False
        q = self._next(i + 1)
        if q < len(self.tokens) and self.tokens.text(q) == b"::":
            return False  # `cub::` names a scope; declarations of variables and members do not own that
        self._build_scopes()
        scopes = self._scopes
        s = self._scope_at(i)
        while True:
            scope = scopes[s]
            for d in decls:
                if d.home == s or d.labels & scope.sees:
                    return True
                if d.labels and any(u < i and ns in d.labels for u, ns in scope.usings):
                    return True
            if s == 0:
                return False
            s = scope.parent

    def _classify(self, i: int, pending: list) -> None:
        tokens = self.tokens
        code = not self.in_directive[i]  # in a directive, neighbours are looked for in the same directive only
        p = self._prev(i - 1, code)
        prev = tokens.text(p) if p >= 0 else b""
        if prev in _MEMBER:
            self._verdict[i] = True
            return
        name = tokens.text(i).decode("latin-1")
        if prev == b"::":
            scope = self._qualifier(p, code)
            if scope is not None and self._is_cuda_scope(scope) and self._users_outermost(p, code):
                scope = "::".join((self._users_outermost(p, code), scope))  # `ctranslate2::cuda::x`: the user's
            if scope is None or self._is_cuda_scope(scope):
                self._verdict[i] = False  # `::cudaMalloc`, `cub::X`, `cudaMemcpyKind::cudaMemcpyHostToDevice`
                return
            self._verdict[i] = True
            self._decls.setdefault(name, []).append(_Decl(None, frozenset({scope})))
            self.declared.add(name)
            if code and self._starts_using(p):
                pending.append((i, name, _USING, b""))
            return
        if not code:
            return
        q = self._next(i + 1)
        nxt = tokens.text(q) if q < len(tokens) else b""
        if (nxt == b"::" or prev == b"namespace") and self._is_cuda_scope(name):
            self._verdict[i] = False  # `cub::`, `using namespace cub;`, whatever the file calls `cub` otherwise
            return
        if prev in (b"typename", b"class") and nxt in (b">", b",", b"=", b">>") and self._in_template_head(p):
            # `template <typename curandState>` (CTranslate2): a parameter the template names as it likes, its
            # own in that template alone (cuRAND's type outside it stays CUDA's)
            self._verdict[i] = True
            for k in self._template_reach(i):
                if tokens.kinds[k] == IDENT and tokens.text(k) == tokens.text(i):
                    self._verdict[k] = True
        elif (prev in _CLASS_KEYS and nxt in (b"{", b":")) or (prev == b"using" and nxt == b"=") or (
                nxt == b";" and p >= 0 and tokens.kinds[p] in (IDENT, KEYWORD) and self._in_typedef(i)):
            # `struct __nv_fp8_e4m3 {`, `using cudaStream_t = hipStream_t;`, `typedef hipStream_t cudaStream_t;`:
            # a type the file defines itself (another backend's stand-in, a compatibility header's alias).
            self._anywhere.add(name)
            self._verdict[i] = True
            self.declared.add(name)
        elif prev in (b"{", b",") and nxt in (b",", b"=", b"}"):
            pending.append((i, name, _ENUMERATOR, nxt))  # an enumerator, if the braces are an enum's
        elif p >= 0 and nxt in _DECL_AFTER and (tokens.kinds[p] in (IDENT, KEYWORD) and prev not in _NOT_DECL_BEFORE
                                                or prev in _POINTER):
            pending.append((i, name, prev, nxt))

    def _scoped_declaration(self, i: int, name: str, prev: bytes, nxt: bytes) -> None:
        """A declaration-shaped occurrence: whose it is depends on the scope it is in."""
        scope = self._scopes[self._scope_at(i)]
        if prev == _USING:  # `using mylib::cudaFree;` brings the name into this scope
            self._decls[name].append(_Decl(scope.home, frozenset()))
            return
        if prev == _ENUMERATOR and scope.kind != "enum":
            return
        if prev == b"namespace" and self._is_cuda_scope(name):
            return  # reopening CUDA's namespace
        if scope.users and nxt != b")" and self._statement_level(i, scope):
            self._decls.setdefault(name, []).append(_Decl(scope.home, scope.labels))  # a member
        elif prev in _POINTER:
            return  # `a * cudaX(...)` outside a class or namespace body may well be an expression
        elif not CUDA_PREFIX.match(name) or name not in self.rules.names and name not in self.rules.namespaces:
            self._anywhere.add(name)  # `static float saturate(float)`, `static void cudaCheck(...)`
        elif prev in _TYPE_KEYWORDS and nxt in _VARIABLE_AFTER and self._statement_level(i, scope):
            self._decls.setdefault(name, []).append(_Decl(scope.home, frozenset()))  # `int cudaMalloc = 0;`
        else:
            return  # a CUDA function redeclared outside the user's scopes is CUDA's
        self._verdict[i] = True
        self.declared.add(name)

    def _statement_level(self, i: int, scope: Scope) -> bool:
        """Not inside parentheses or brackets (a parameter or an argument is no member of the class)."""
        tokens = self.tokens
        depth = 0
        j = self._prev(i - 1)
        for _ in range(_HEAD_LIMIT):
            if j <= scope.open:
                return True
            t = tokens.text(j)
            if t in (b";", b"{", b"}") and depth == 0:
                return True
            if t in (b")", b"]"):
                depth += 1
            elif t in (b"(", b"["):
                depth -= 1
                if depth < 0:
                    return False
            j = self._prev(j - 1)
        return False

    # -- tokens ---------------------------------------------------------------------------------------------

    def _prev(self, j: int, code: bool = True) -> int:
        """The previous token that is not a comment (nor, for ``code``, part of a directive)."""
        kinds, in_directive = self.tokens.kinds, self.in_directive
        while j >= 0 and (kinds[j] == COMMENT or code and in_directive[j]):
            j -= 1
        return j

    def _next(self, j: int) -> int:
        kinds, in_directive, n = self.tokens.kinds, self.in_directive, len(self.tokens)
        while j < n and (kinds[j] == COMMENT or in_directive[j]):
            j += 1
        return j

    def _qualifier(self, colons: int, code: bool = True) -> str | None:
        """The scope named before the `::` at ``colons`` (`Pool`, `Foo` of `Foo<T>`); None for a leading `::`."""
        tokens = self.tokens
        k = self._prev(colons - 1, code)
        if k < 0 or not code and k < self._define_body(colons):
            return None  # `::x`, also at the start of a macro body (`#define F ::cudaFree`)
        text = tokens.text(k)
        if text in (b">", b">>"):
            k = _open_angle(tokens, k)
            if k is None:
                return ""
            k = self._prev(k - 1, code)
            if k < 0 or tokens.kinds[k] != IDENT:
                return ""
            return tokens.text(k).decode("latin-1")
        if tokens.kinds[k] == IDENT:
            return text.decode("latin-1")
        return None

    def _template_reach(self, i: int) -> range:
        """The tokens after template parameter ``i`` up to the end of the declaration the template heads: its body's
        closing brace, or the `;` that ends it first."""
        tokens = self.tokens
        n = len(tokens)
        depth = 0
        k = i + 1
        while k < n:
            t = tokens.text(k)
            if t == b"{":
                depth += 1
            elif t == b"}":
                depth -= 1
                if depth <= 0:
                    return range(i + 1, k)
            elif t == b";" and depth == 0:
                return range(i + 1, k)
            k += 1
        return range(i + 1, n)

    def _in_template_head(self, k: int) -> bool:
        """Token ``k`` is inside `template < ... >`: the nearest unclosed `<` before it follows `template`."""
        tokens = self.tokens
        depth = 0
        j = self._prev(k - 1)
        for _ in range(_HEAD_LIMIT):
            if j < 0:
                return False
            t = tokens.text(j)
            if t in (b">", b">>"):
                depth += len(t)
            elif t == b"<":
                if depth == 0:
                    q = self._prev(j - 1)
                    return q >= 0 and tokens.text(q) == b"template"
                depth -= 1
            elif t in (b";", b"{", b"}"):
                return False
            j = self._prev(j - 1)
        return False

    def _users_outermost(self, colons: int, code: bool = True) -> str:
        """For `a::b::c::x`, with ``colons`` the `::` before `x`: `a`, when it is no CUDA scope (a project's
        `ctranslate2::cuda::` is not libcu++'s `cuda::`); "" otherwise (one qualifier, a leading `::`)."""
        tokens = self.tokens
        outer = ""
        k = colons
        for _ in range(8):
            q = self._prev(k - 1, code)
            if q < 0 or tokens.kinds[q] != IDENT:
                return ""
            before = self._prev(q - 1, code)
            if before < 0 or tokens.text(before) != b"::":
                break
            k = before
            outer_at = self._prev(k - 1, code)
            if outer_at < 0 or tokens.kinds[outer_at] != IDENT:
                return ""  # a leading `::`
            outer = tokens.text(outer_at).decode("latin-1")
        return outer if outer and not self._is_cuda_scope(outer) else ""

    def _define_body(self, k: int) -> int:
        """Index of the first body token of the `#define` holding token ``k`` (0 outside a `#define`)."""
        tokens = self.tokens
        for d in self.structure.directives:
            if d.first <= k < d.last:
                if d.name != b"define" or d.first + 2 >= d.last:
                    return d.first
                name_at = d.first + 2
                if name_at + 1 < d.last and tokens.text(name_at + 1) == b"(" and (
                        tokens.starts[name_at + 1] == tokens.ends[name_at]):
                    close = next((j for j in range(name_at + 2, d.last) if tokens.text(j) == b")"), d.last - 1)
                    return close + 1
                return name_at + 1
        return 0

    def _in_typedef(self, i: int) -> bool:
        """The statement holding token ``i`` starts with `typedef` (not one of a brace-enclosed body)."""
        tokens = self.tokens
        j = self._prev(i - 1)
        for _ in range(_HEAD_LIMIT):
            if j < 0:
                return False
            t = tokens.text(j)
            if t in (b";", b"{", b"}"):
                return False
            if t == b"typedef":
                return True
            j = self._prev(j - 1)
        return False

    def _starts_using(self, colons: int) -> bool:
        tokens = self.tokens
        k = colons
        while k >= 0 and tokens.text(k) == b"::":
            q = self._prev(k - 1)
            if q < 0 or tokens.kinds[q] != IDENT:
                k = q
                break
            k = self._prev(q - 1)
        return k >= 0 and tokens.text(k) == b"using"

    def _is_cuda_scope(self, scope: str) -> bool:
        return scope in CUDA_NAMESPACES or scope in self.rules.namespaces or scope in self._aliases or (
            scope in self.rules.names)

    def _cuda_aliases(self) -> set[str]:
        found = set()
        if b"namespace" not in self.src:  # a substring test is many times faster than the pattern's scan
            return found
        for m in _ALIAS.finditer(self.src):
            target = m.group(2).decode("latin-1")
            if target in CUDA_NAMESPACES or target in self.rules.namespaces:
                found.add(m.group(1).decode("latin-1"))
        return found

    # -- scopes ---------------------------------------------------------------------------------------------

    def _scope_at(self, i: int) -> int:
        s = bisect.bisect_left(self._opens, i) - 1  # the last scope opened before token i (0: the file)
        scopes = self._scopes
        while s > 0 and scopes[s].close < i:
            s = scopes[s].parent
        return max(s, 0)

    def _build_scopes(self) -> None:
        if self._scopes is not None:
            return
        tokens, src = self.tokens, self.src
        kinds, in_directive = tokens.kinds, self.in_directive
        n = len(tokens)
        scopes = [Scope("file", 0, -1, n, False, 0, frozenset())]
        opens = [-1]
        stack = [0]
        starts = tokens.starts
        firsts = tokens.first_bytes()
        for m in _BRACE.finditer(firsts):  # a token starting with a brace is that brace
            k = m.start()
            if in_directive[k]:
                continue
            if firsts[k] == 0x7B:  # {
                scope = self._open_scope(k, stack[-1], scopes)
                scopes.append(scope)
                opens.append(k)
                stack.append(len(scopes) - 1)
            elif len(stack) > 1:
                scopes[stack.pop()].close = k
        self._scopes, self._opens = scopes, opens
        for m in _USING_NAMESPACE.finditer(src):
            k = bisect.bisect_left(starts, m.start())
            if k >= n or starts[k] != m.start() or kinds[k] != KEYWORD or in_directive[k]:
                continue
            names = self._chain(self._next(k + 2))
            if names:
                scopes[self._scope_at(k)].usings.append((k, names[-1]))

    def _chain(self, k: int) -> list[str]:
        """`a::b::c` starting at token ``k``: its names."""
        tokens, n = self.tokens, len(self.tokens)
        names = []
        if k < n and tokens.text(k) == b"::":
            k = self._next(k + 1)
        while k < n and tokens.kinds[k] == IDENT:
            names.append(tokens.text(k).decode("latin-1"))
            k = self._next(k + 1)
            if k < n and tokens.text(k) == b"::":
                k = self._next(k + 1)
            else:
                break
        return names

    def _head(self, brace: int) -> list[int]:
        """Code tokens of the statement a `{` ends (back to the previous `;`, `{` or `}`), in order."""
        tokens = self.tokens
        kinds, in_directive, firsts = tokens.kinds, self.in_directive, tokens.first_bytes()
        head = []
        depth = 0
        j = brace - 1
        # Every token is looked at here, so the test is on its first byte: a punctuator starting with `;{}()[]` is
        # that one character.
        while j >= 0 and len(head) < _HEAD_LIMIT:
            kind = kinds[j]
            if kind == COMMENT or in_directive[j]:
                j -= 1
                continue
            if kind == PUNCT:
                c = firsts[j]
                if c in _STATEMENT_ENDS and depth == 0:
                    break
                if c in _CLOSING:
                    depth += 1
                elif c in _OPENING:
                    depth -= 1
                    if depth < 0:
                        return []  # a brace inside parentheses: a lambda or braced argument
            head.append(j)
            j -= 1
        head.reverse()
        return head

    def _open_scope(self, brace: int, parent: int, scopes: list[Scope]) -> Scope:
        tokens = self.tokens
        up = scopes[parent]
        head = self._head(brace)
        texts = [tokens.text(k) for k in head]

        def block(sees=()):
            return Scope("block", parent, brace, len(tokens), False, len(scopes), frozenset(), set(sees))

        if not head:
            return block()
        # Namespaces, `extern "C"`.
        first = 1 if texts[0] == b"inline" else 0
        if texts[first:first + 1] == [b"namespace"]:
            names = [t.decode("latin-1") for k, t in zip(head[first + 1:], texts[first + 1:])
                     if tokens.kinds[k] == IDENT]
            # a `namespace cuda` inside the project's own (CTranslate2's `ctranslate2::cuda`) is the project's
            users = (up.kind == "namespace" and up.users) or not any(self._is_cuda_scope(nm) for nm in names)
            transparent = first == 1 or not names
            home = up.home if transparent else len(scopes)
            return Scope("namespace", parent, brace, len(tokens), users, home, frozenset(names), set(names))
        if texts[0] == b"extern" and len(texts) == 2 and tokens.kinds[head[1]] == LITERAL:
            return Scope(up.kind, parent, brace, len(tokens), up.users, up.home, up.labels, set())
        # Enumerations: unscoped ones declare their enumerators in the enclosing scope.
        if b"enum" in texts[:2]:
            e = texts.index(b"enum")
            scoped = texts[e + 1:e + 2] in ([b"class"], [b"struct"])
            name = next((t.decode("latin-1") for k, t in zip(head[e + 1:], texts[e + 1:])
                         if tokens.kinds[k] == IDENT), "")
            if scoped:
                return Scope("enum", parent, brace, len(tokens), up.users, len(scopes), frozenset({name}), set())
            return Scope("enum", parent, brace, len(tokens), up.users, up.home, up.labels, set())
        # Classes.
        cls = self._class_head(head, texts)
        if cls is not None:
            name, bases = cls
            labels = frozenset({name} if name else ())
            return Scope("class", parent, brace, len(tokens), True, len(scopes), labels, {*labels, *bases})
        # Function bodies: an out-of-line member sees its class's (or namespace's) names.
        return block(self._function_qualifiers(head, texts))

    def _class_head(self, head: list[int], texts: list[bytes]) -> tuple[str, set] | None:
        """(name, base names) when ``head`` opens a struct/class/union body: `struct __align__(16) Foo`,
        `template <class T> class Foo final : public Base<T>`, `typedef struct`; not `struct S s = {` nor a
        function returning `struct S`."""
        tokens = self.tokens
        for c, t in enumerate(texts):
            if t not in _CLASS_KEYS:
                continue
            name = ""
            bases: set[str] = set()
            depth = 0
            ok = True
            for j in range(c + 1, len(head)):
                k, text = head[j], texts[j]
                kind = tokens.kinds[k]
                if kind == PUNCT:
                    if text in (b"(", b"[", b"<"):
                        depth += 1
                    elif text in (b")", b"]", b">", b">>"):
                        depth -= 2 if text == b">>" else 1
                        if depth < 0:
                            ok = False
                            break
                    elif text == b":" and depth == 0:
                        bases = {tokens.text(b).decode("latin-1") for b in head[j + 1:] if tokens.kinds[b] == IDENT}
                        break
                    elif text != b"::" and depth == 0:
                        ok = False
                        break
                elif depth == 0 and kind == IDENT and text != b"final":
                    if name and texts[j - 1] != b"::" and j + 1 < len(texts) and texts[j + 1] == b"(":
                        ok = False  # `struct S f(...)`
                        break
                    name = text.decode("latin-1")
                elif depth == 0 and kind not in (IDENT, KEYWORD):
                    ok = False
                    break
            if ok and depth == 0:
                return name, bases
        return None

    def _function_qualifiers(self, head: list[int], texts: list[bytes]) -> set[str]:
        """`Pool::reserve(...)` / `mylib::detail::f(...)` / `Pool::~Pool()`: the qualifying names."""
        tokens = self.tokens
        for pos, t in enumerate(texts):
            if t != b"(":
                continue
            if pos == 0 or texts[pos - 1] in _CONTROL or tokens.kinds[head[pos - 1]] != IDENT:
                return set()
            names = set()
            j = pos - 2
            if j >= 0 and texts[j] == b"~":
                j -= 1
            while j >= 1 and texts[j] == b"::":
                k = j - 1
                if texts[k] in (b">", b">>"):
                    depth = 0
                    while k >= 0:
                        if texts[k] in (b">", b">>"):
                            depth += len(texts[k])
                        elif texts[k] == b"<":
                            depth -= 1
                            if depth == 0:
                                break
                        k -= 1
                    k -= 1
                if k < 0 or tokens.kinds[head[k]] != IDENT:
                    break
                names.add(texts[k].decode("latin-1"))
                j = k - 1
            return names
        return set()


def _open_angle(tokens: Tokens, close: int) -> int | None:
    """The `<` matching the `>` at ``close``, looking back (None when unbalanced within a few tokens)."""
    depth = 0
    k = close
    limit = max(0, close - 64)
    while k >= limit:
        t = tokens.text(k)
        if t == b">":
            depth += 1
        elif t == b">>":
            depth += 2
        elif t == b"<":
            depth -= 1
            if depth == 0:
                return k
        elif t in (b";", b"{", b"}"):
            return None
        k -= 1
    return None


# -- macros ------------------------------------------------------------------------------------------------------


def macro_text_tokens(tokens: Tokens, structure: Structure) -> set[int]:
    """Token indices never renamed because of macros: every macro's parameters (in its parameter list and
    body), identifiers stringized (`#x`) or pasted (`a##b`) in a body, and the arguments a macro of this file
    only stringizes or pastes."""
    kinds = tokens.kinds
    keep: set[int] = set()
    macros: dict[bytes, tuple[list[bytes], list[int]]] = {}
    for d in structure.directives:
        if d.name != b"define" or d.first + 2 >= d.last:
            continue
        body = [k for k in range(d.first + 3, d.last) if kinds[k] != COMMENT]
        name_at = d.first + 2
        params: list[bytes] = []
        if body and tokens.text(body[0]) == b"(" and tokens.starts[body[0]] == tokens.ends[name_at]:
            close = next((j for j, k in enumerate(body) if tokens.text(k) == b")"), None)
            if close is None:
                continue
            for k in body[1:close]:
                if kinds[k] == IDENT:
                    params.append(tokens.text(k))
                    keep.add(k)
                elif tokens.text(k) == b"...":
                    params.append(b"__VA_ARGS__")
            body = body[close + 1:]
        texts = [tokens.text(k) for k in body]
        for j, k in enumerate(body):
            if kinds[k] not in (IDENT, KEYWORD):
                continue
            before = texts[j - 1] if j else b""
            after = texts[j + 1] if j + 1 < len(texts) else b""
            if before in (b"#", b"#@", b"##") or after == b"##" or texts[j] in params:
                keep.add(k)
        if params:
            macros[tokens.text(name_at)] = (params, body)
    quoted = _quoted_parameters(tokens, macros)
    if quoted:
        for name, positions in quoted.items():
            _keep_quoted_arguments(tokens, structure, name, positions, macros[name][0], keep)
    return keep


def _quoted_parameters(tokens: Tokens, macros: dict) -> dict[bytes, set[int]]:
    """Per macro, the positions of parameters used only stringized or pasted, directly or by passing them
    whole to such a parameter of another macro of the file (a least fixpoint, so recursion marks nothing)."""
    quoted: dict[bytes, set[int]] = {}
    changed = True
    while changed:
        changed = False
        for name, (params, body) in macros.items():
            texts = [tokens.text(k) for k in body]
            for pos, param in enumerate(params):
                if pos in quoted.get(name, ()):
                    continue
                if _only_quoted(param, texts, quoted, macros):
                    quoted.setdefault(name, set()).add(pos)
                    changed = True
    return quoted


def _only_quoted(param: bytes, texts: list[bytes], quoted: dict, macros: dict) -> bool:
    used = False
    for j, t in enumerate(texts):
        if t != param:
            continue
        used = True
        before = texts[j - 1] if j else b""
        after = texts[j + 1] if j + 1 < len(texts) else b""
        if before in (b"#", b"#@", b"##") or after == b"##":
            continue
        callee = _whole_argument_of(texts, j)
        if callee is None or callee[1] not in quoted.get(callee[0], ()) or callee[0] not in macros:
            return False
    return used


def _whole_argument_of(texts: list[bytes], j: int) -> tuple[bytes, int] | None:
    """(macro, argument position) when ``texts[j]`` alone is an argument of a call `M(..., x, ...)`."""
    if j == 0 or j + 1 >= len(texts) or texts[j - 1] not in (b"(", b",") or texts[j + 1] not in (b")", b","):
        return None
    depth = 0
    pos = 0
    k = j - 1
    while k >= 0:
        t = texts[k]
        if t == b")":
            depth += 1
        elif t == b"(":
            if depth == 0:
                return (texts[k - 1], pos) if k > 0 else None
            depth -= 1
        elif t == b"," and depth == 0:
            pos += 1
        k -= 1
    return None


def _keep_quoted_arguments(tokens: Tokens, structure: Structure, name: bytes, positions: set[int],
                           params: list[bytes], keep: set[int]) -> None:
    src, starts, kinds = tokens.src, tokens.starts, tokens.kinds
    n = len(tokens)
    variadic = params[-1] == b"__VA_ARGS__"
    for m in re.finditer(rb"\b" + re.escape(name) + rb"\s*\(", src):
        i = bisect.bisect_left(starts, m.start())
        if i >= n or starts[i] != m.start() or kinds[i] != IDENT:
            continue
        j = i + 1
        while j < n and kinds[j] == COMMENT:
            j += 1
        if j >= n or tokens.text(j) != b"(":
            continue
        if any(d.first + 2 == i and d.name == b"define" for d in _directives_at(structure, i)):
            continue  # the macro's own definition
        depth = 0
        pos = 0
        k = j + 1
        while k < n:
            t = tokens.text(k) if kinds[k] == PUNCT else b""
            if t == b"(":
                depth += 1
            elif t == b")":
                if depth == 0:
                    break
                depth -= 1
            elif t == b"," and depth == 0:
                pos += 1
                k += 1
                continue
            at = min(pos, len(params) - 1) if variadic else pos
            if at in positions:
                keep.add(k)
            k += 1


def _directives_at(structure: Structure, i: int):
    if not structure.in_directive[i]:
        return ()
    return [d for d in structure.directives if d.first <= i < d.last]
