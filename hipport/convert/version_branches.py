"""Which branch the AMD build compiles at an `#if` on CUDA's version macros, and whether it can stand there.

hipcc defines none of CUDA's toolkit versions and no `__CUDA_ARCH__` value, so `#if CUDART_VERSION >= 9000` reads 0
on AMD, and where the rest of the chain's conditions are known the branch taken is known too (`cuda-version-macro`
reports the comparison either way). That branch is fine for AMD when the code around it loses nothing by the
branches it drops: what they declare at file scope, the taken branch declares too, or HIP has by that name (mpc's
`#define __shfl_up(v, d) __shfl_up_sync(0xffffffff, v, d)` leaves HIP's own `__shfl_up`); the macros they define
with no value are flags the `#if`s read (flashinfer's `FLASHINFER_CP_ASYNC_ENABLED`); what their `#include <thrust/
...>` brings is used only by code the AMD build drops as well; inside a function the taken branch is the alternative
of the dropped one (`__ballot(p)` for `__ballot_sync(mask, p)`, a plain load for `__nv_atomic_load_n`) and the
locals the code after it reads are declared there too. The taken branch must hold no `#error` and no CUDA name the
targeted ROCm lacks. Then `macros.py` reports an info, not a warning.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from typing import TYPE_CHECKING

from hipport.platforms import directive_text, evaluate, platform_data
from hipport.scan import COMMENT, IDENT, KEYWORD

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext

_OPENERS = {b"if", b"ifdef", b"ifndef"}
_BRANCHES = {b"elif", b"elifdef", b"elifndef", b"else"}
# Tokens that end a statement's head looking back from a `{`.
_HEAD_ENDS = {b";", b"{", b"}"}
_SCOPE_WORDS = {b"namespace", b"struct", b"class", b"union", b"enum", b"extern"}
# Words before a name that make it no declaration (`return f(x)`).
_NOT_DECL_BEFORE = {b"return", b"case", b"else", b"throw", b"new", b"delete", b"sizeof", b"co_return", b"co_yield",
                    b"co_await", b"do", b"goto", b"typeid", b"decltype", b"alignof", b"noexcept", b"operator",
                    b"template", b"typename", b"using", b"static_assert", b"default", b"defined", b"if", b"while",
                    b"for", b"switch", b"public", b"private", b"protected"}
_DECL_AFTER = {b"(", b";", b"=", b"[", b",", b"{"}
_MEMBER = {b".", b"->", b"::"}
# What an `#include <ns/...>` of CUDA's template libraries brings: names in that namespace.
_LIBRARY_NAMESPACES = {"thrust": b"thrust", "cub": b"cub", "cuda": b"cuda", "cooperative_groups": b"cooperative_groups",
                       "cutlass": b"cutlass", "cute": b"cute", "nvtx3": b"nvtx3"}
_CUDA_NAME = re.compile(r"^(?:cuda|cu[A-Z]|CU|cublas|cufft|cusparse|cusolver|curand|cudnn|nv|NV|__nv|make_)")
_DEFINED = re.compile(r"\bdefined\s*(?:\(\s*\w+\s*\)|\w+)")
_FLAG_BODY = re.compile(r"^\s*(?:\(?\s*\d+[uUlL]*\s*\)?)?\s*$")


def taken_branch_note(conv: "ConversionContext", d) -> str | None:
    """For the chain that directive ``d`` (an `#if`/`#elif` comparing a CUDA version macro) belongs to: a phrase
    saying which branch the AMD build compiles, where that branch can stand on AMD; None where it cannot be told or
    it cannot stand (then the comparison is worth a warning)."""
    cache = conv.__dict__.setdefault("_version_branches", {})
    if "file" not in cache:
        cache["file"] = _FileBranches(conv)
    return cache["file"].note(d)


class _FileBranches:
    def __init__(self, conv: "ConversionContext") -> None:
        self.conv = conv
        self.tokens = conv.tokens
        self.in_directive = conv.structure.in_directive
        self.directives = conv.structure.directives
        self._firsts = [x.first for x in self.directives]
        self.chains = _chains(self.directives)
        self.taken: dict[int, int | None] = {}   # chain opener index -> taken branch, or -1: none, None: unknown
        for opener, members in self.chains.items():
            self.taken[opener] = self._taken(members)
        # Token ranges (first, last) of the branches the AMD build certainly never compiles.
        dead = []
        for opener, members in self.chains.items():
            t = self.taken[opener]
            if t is None:
                continue
            for k in range(len(members) - 1):
                if k != t:
                    dead.append((self.directives[members[k]].last, self.directives[members[k + 1]].first))
        dead.sort()
        merged: list[list[int]] = []  # branches nest or are apart: their union, as ranges apart
        for a, b in dead:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.dead = merged
        self._dead_starts = [a for a, _ in merged]
        self._opener_of = {m: opener for opener, members in self.chains.items() for m in members}
        self._scopes = None

    # -- the chain's value on AMD ------------------------------------------------------------------------------

    def _taken(self, members: list[int]) -> int | None:
        """The index in ``members`` of the branch the AMD build compiles, -1 when none, None when unknown."""
        for k, m in enumerate(members[:-1]):
            d = self.directives[m]
            if d.name == b"else":
                return k
            v = self._value(d)
            if v is None:
                return None
            if v == 1:
                return k
        return -1

    def _value(self, d) -> int | None:
        conv = self.conv
        tokens = self.tokens
        if d.first + 2 >= d.last:
            return None
        text = directive_text(conv.src[tokens.starts[d.first + 2]:tokens.ends[d.last - 1]])
        kind = d.name.decode("latin-1")
        if kind == "elif":
            kind = "if"
        elif kind in ("elifdef", "elifndef"):
            kind = kind[2:]
        known: dict[str, int] = {}
        sem, data = conv.semantic, platform_data()
        presence = kind in ("ifdef", "ifndef")
        for name in set(re.findall(r"[A-Za-z_]\w*", text)) - {"defined"}:
            if conv.platform.keeps_condition(name):
                continue  # the project defines it for the AMD build
            if name in sem.device_pass:
                # compared, it stays as written and reads 0; tested for presence alone, convert makes it the device
                # pass's test, true on one pass only
                if not presence and re.search(rf"\b{re.escape(name)}\b", _DEFINED.sub(" ", text)):
                    known[name] = 0
                continue
            if name in sem.version_macros or self._cuda_only(name):
                known[name] = 0
                continue
            side = data.side(name)
            if side is not None:
                known[name] = 1 if side == "amd" else 0
        return evaluate(kind, text, known)

    def _cuda_only(self, name: str) -> bool:
        """A macro only CUDA's toolkit defines, which no rule renames (`__CUDACC_VER_MINOR__`, `CUB_VERSION`)."""
        data, conv = platform_data(), self.conv
        if name not in data.cuda_only and not any(fnmatch.fnmatchcase(name, p) for p in data.cuda_only_patterns):
            return False
        sem = conv.semantic
        return name not in conv.rules.names and name not in sem.guards and name not in sem.device_pass

    # -- whether the taken branch can stand ------------------------------------------------------------------

    def note(self, d) -> str | None:
        opener = self._opener_of.get(bisect.bisect_left(self._firsts, d.first))
        if opener is None:
            return None
        members = self.chains[opener]
        t = self.taken[opener]
        if t is None or self._inside_dead(self.directives[opener].first):
            return None
        bodies = [(self.directives[members[k]].last, self.directives[members[k + 1]].first)
                  for k in range(len(members) - 1)]
        kept = _Content(self, *bodies[t], names=True) if t >= 0 else _Content(self, 0, 0)
        if kept.error or kept.lacking:
            return None
        dropped = [_Content(self, *bodies[k]) for k in range(len(bodies)) if k != t]
        in_code = self._in_code(self.directives[opener].first)
        if not all(self._stands_without(c, kept, in_code) for c in dropped):
            return None
        if t < 0:
            return "none of its branches, which the code around them does not need"
        line = self.conv.lines.line_col(self.tokens.starts[self.directives[members[t]].first])[0]
        return (f"the `#{self.directives[members[t]].name.decode('latin-1')}` branch (line {line}), which gives the "
                f"code around it all the other branches would")

    def _stands_without(self, c: "_Content", kept: "_Content", in_code: bool) -> bool:
        """Whether the code around the chain loses nothing the AMD build needs when branch ``c`` is dropped."""
        for name, flag in c.macros.items():
            if name in kept.macros or self._hip_has(name):
                continue
            if flag and not self._used(name):
                continue  # a flag the `#if`s read: its absence picks their other branches
            return False
        for header in c.includes:
            ns = _LIBRARY_NAMESPACES.get(header.split("/", 1)[0])
            if ns is None or self._used(ns.decode(), before=b"::"):
                return False
        if c.code:
            if in_code:
                if not kept.code:
                    return False  # code nvcc runs that the AMD build skips, with nothing in its place
                return all(name in kept.declared or not self._used(name, outside=c)
                           for name in c.declared)
            if not c.declared:
                return False  # file-scope code that declares no name (a specialization): cannot tell
            return all(name in kept.declared or self._hip_has(name) for name in c.declared)
        return True

    def _hip_has(self, name: str) -> bool:
        """HIP provides ``name`` in the targeted release, by that name or the one convert writes for it."""
        from hipport.releases import release_data, same_names

        rocm = self.conv.options.rocm_version
        rules = self.conv.rules
        rule = rules.names.get(name)
        target = None
        if rule is not None:
            target = rules.for_release("names", name, rocm) or rule.target(False)
        if target is not None:
            return release_data().has_name(target, rocm) is not False
        return same_names().declares(name, rocm)

    def lacks(self, i: int) -> bool:
        """Token ``i`` names a CUDA entity HIP lacks in the targeted release (and the file does not declare)."""
        name = self.tokens.text(i).decode("latin-1")
        if not _CUDA_NAME.match(name) or name not in self.conv.rules.names:
            return False
        if self.conv.user_names.is_users(i) or self.conv.platform.defines(name):
            return False
        return not self._hip_has(name)

    # -- where names are used ----------------------------------------------------------------------------------

    def _used(self, name: str, before: bytes | None = None, outside=None) -> bool:
        """Whether ``name`` occurs in code the AMD build may compile (outside the dead branches and ``outside``'s
        range): as code, or also in `#define` bodies; never in conditions, never as a member (`.x`)."""
        tokens, src = self.tokens, self.conv.src
        pattern = re.compile(rb"(?<![\w])" + re.escape(name.encode()) + rb"(?![\w])")
        for m in pattern.finditer(src):
            i = bisect.bisect_left(tokens.starts, m.start())
            if i >= len(tokens) or tokens.starts[i] != m.start() or tokens.kinds[i] not in (IDENT, KEYWORD):
                continue
            if outside is not None and outside.first <= i < outside.last:
                continue
            if self._inside_dead(i):
                continue
            if self.in_directive[i] and self._in_condition(i):
                continue
            p = _prev_code(tokens, i - 1)
            if p >= 0 and tokens.text(p) in _MEMBER and before is None:
                continue
            if before is not None:
                q = i + 1
                while q < len(tokens) and tokens.kinds[q] == COMMENT:
                    q += 1
                if q >= len(tokens) or tokens.text(q) != before:
                    continue
            return True
        return False

    def _in_condition(self, i: int) -> bool:
        k = bisect.bisect_right(self._firsts, i) - 1
        return k >= 0 and self.directives[k].name not in (b"define",)

    def _inside_dead(self, i: int) -> bool:
        k = bisect.bisect_right(self._dead_starts, i) - 1
        return k >= 0 and i < self.dead[k][1]

    # -- scopes ----------------------------------------------------------------------------------------------

    def _in_code(self, i: int) -> bool:
        """Whether token ``i`` lies inside a function body."""
        if self._scopes is None:
            self._scopes = self._build_scopes()
        opens, closes, code = self._scopes
        k = bisect.bisect_left(opens, i) - 1
        while k >= 0:
            if closes[k] > i:
                return code[k]
            k -= 1
        return False

    def _build_scopes(self):
        tokens, in_directive = self.tokens, self.in_directive
        opens, closes, code, stack = [], [], [], []
        for i in range(len(tokens)):
            if in_directive[i] or tokens.kinds[i] == COMMENT:
                continue
            t = tokens.text(i)
            if t == b"{":
                outer = code[stack[-1]] if stack else False
                opens.append(i)
                closes.append(len(tokens))
                code.append(outer or self._function_head(i))
                stack.append(len(opens) - 1)
            elif t == b"}" and stack:
                closes[stack.pop()] = i
        return opens, closes, code

    def _function_head(self, brace: int) -> bool:
        """The statement a `{` ends is a function's head: a `)` in it, no namespace/class/enum word before it."""
        tokens = self.tokens
        j = _prev_code(tokens, brace - 1, self.in_directive)
        seen_paren = False
        steps = 0
        while j >= 0 and steps < 512:
            t = tokens.text(j)
            if t in _HEAD_ENDS:
                break
            if t in _SCOPE_WORDS:
                return False
            if t == b")":
                seen_paren = True
            if t == b"=" and not seen_paren:
                return False  # a braced initializer
            j = _prev_code(tokens, j - 1, self.in_directive)
            steps += 1
        return seen_paren


class _Content:
    """What the tokens ``first`` to ``last`` (one branch's body) hold; with ``names``, also whether they use a CUDA
    name the targeted ROCm lacks (``lacking``)."""

    def __init__(self, fb: _FileBranches, first: int, last: int, names: bool = False) -> None:
        self.first, self.last = first, last
        tokens, src = fb.tokens, fb.conv.src
        self.macros: dict[str, bool] = {}   # name -> defined with no value or a number (a flag)
        self.includes: list[str] = []
        self.error = False
        lo = bisect.bisect_left(fb._firsts, first)
        hi = bisect.bisect_left(fb._firsts, last)
        for d in fb.directives[lo:hi]:
            if d.name == b"error":
                self.error = True
            elif d.name == b"define" and d.first + 2 < d.last:
                name = tokens.text(d.first + 2).decode("latin-1")
                body = src[tokens.ends[d.first + 2]:tokens.ends[d.last - 1]] if d.first + 3 < d.last else b""
                function_like = d.first + 3 < d.last and tokens.text(d.first + 3) == b"(" and \
                    tokens.starts[d.first + 3] == tokens.ends[d.first + 2]
                self.macros[name] = not function_like and bool(_FLAG_BODY.match(directive_text(body)))
            elif d.name == b"include" and d.first + 2 < d.last:
                text = directive_text(src[tokens.starts[d.first + 2]:tokens.ends[d.last - 1]])
                self.includes.append(text.strip("<>\" "))
        self.code = False
        self.lacking = False
        self.declared: set[str] = set()
        depth = 0
        for i in range(first, last):
            if fb.in_directive[i] or tokens.kinds[i] == COMMENT:
                continue
            self.code = True
            t = tokens.text(i)
            if t in (b"(", b"[", b"{"):
                depth += 1
            elif t in (b")", b"]", b"}"):
                depth -= 1
            elif tokens.kinds[i] == IDENT:
                if depth == 0 and _declares(tokens, i, first, last, fb.in_directive):
                    self.declared.add(t.decode("latin-1"))
                if names and not self.lacking and fb.lacks(i):
                    self.lacking = True


def _declares(tokens, i: int, first: int, last: int, in_directive) -> bool:
    """A name after a type (or `*`/`&`/`>` after one) and before `(`, `;`, `=`, `[`, `,` or `{`."""
    p = _prev_code(tokens, i - 1, in_directive)
    q = _next_code(tokens, i + 1, in_directive)
    if p < first or q >= last or tokens.text(q) not in _DECL_AFTER:
        return False
    prev = tokens.text(p)
    if tokens.kinds[p] in (IDENT, KEYWORD):
        return prev not in _NOT_DECL_BEFORE
    if prev == b">":
        return True
    if prev in (b"*", b"&", b"&&"):
        pp = _prev_code(tokens, p - 1, in_directive)
        return pp >= first and (tokens.kinds[pp] in (IDENT, KEYWORD) and tokens.text(pp) not in _NOT_DECL_BEFORE
                                or tokens.text(pp) in (b">", b"*"))
    return False


def _prev_code(tokens, i: int, in_directive=None) -> int:
    while i >= 0 and (tokens.kinds[i] == COMMENT or (in_directive is not None and in_directive[i])):
        i -= 1
    return i


def _next_code(tokens, i: int, in_directive=None) -> int:
    n = len(tokens)
    while i < n and (tokens.kinds[i] == COMMENT or (in_directive is not None and in_directive[i])):
        i += 1
    return i


def _chains(directives) -> dict[int, list[int]]:
    """Directive index of each `#if`/`#ifdef`/`#ifndef` -> the indices of its chain: it, its `#elif`/`#else`s,
    its `#endif` (a chain left open has none and is left out)."""
    out: dict[int, list[int]] = {}
    stack: list[int] = []
    for k, d in enumerate(directives):
        if d.name in _OPENERS:
            out[k] = [k]
            stack.append(k)
        elif d.name in _BRANCHES and stack:
            out[stack[-1]].append(k)
        elif d.name == b"endif" and stack:
            out[stack.pop()].append(k)
    for k in stack:
        out.pop(k, None)
    return out
