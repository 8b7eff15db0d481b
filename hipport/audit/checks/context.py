"""What every check sees of one file: tokens with their texts, bracket matching, device-code regions,
object-like macros, kernel parameters and launches, allocations, and (on demand) a libclang parse."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import compress

from hipport import directives as dirs
from hipport.audit.checks import clangparse
from hipport.audit.hazards import SEVERITY_RANK, Hazard, wave_size
from hipport.files import interrupts_raised, reraise_if_interrupted_since
from hipport.model import Edit, Finding
from hipport.scan import COMMENT, IDENT, KEYWORD, LITERAL, PUNCT, Lines, lex

_OPEN = {b"(": b")", b"[": b"]", b"{": b"}"}
_CLOSE = {b")", b"]", b"}"}
_DEVICE_MARKS = {b"__global__", b"__device__"}
THREAD_INDEX = {b"threadIdx", b"hipThreadIdx_x", b"hipThreadIdx_y", b"hipThreadIdx_z"}
LANE_FUNCS = {b"__lane_id"}
_BRACKET_FIRST = re.compile(rb"[()\[\]{}]")  # a token's first byte (Tokens.first_bytes)
_INT_LITERAL = re.compile(rb"^(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)([uUlL]*)$")

ALLOC_KINDS = {
    b"cudaMalloc": "device", b"hipMalloc": "device", b"cudaMallocPitch": "device", b"hipMallocPitch": "device",
    b"cudaMallocAsync": "device", b"hipMallocAsync": "device",
    b"cudaMallocManaged": "managed", b"hipMallocManaged": "managed",
    b"cudaMallocHost": "host", b"hipHostMalloc": "host", b"cudaHostAlloc": "host", b"hipHostAlloc": "host",
    b"hipMallocHost": "host", b"hipExtMallocWithFlags": "device-flags",
}


@lru_cache(maxsize=4096)  # the checks ask it of every literal, and a file repeats a few literals many times
def int_value(text: bytes) -> int | None:
    m = _INT_LITERAL.match(text)
    if not m:
        return None
    digits = m.group(1)
    if digits[:2] in (b"0x", b"0X"):
        return int(digits, 16)
    if digits[:2] in (b"0b", b"0B"):
        return int(digits[2:], 2)
    if len(digits) > 1 and digits[0:1] == b"0":
        return int(digits, 8)
    return int(digits)


@dataclass(slots=True)
class Function:
    name: str
    name_index: int
    params: tuple[int, int]        # indices of `(` and `)`
    body: tuple[int, int]          # indices of `{` and `}`
    device: bool
    kernel: bool
    template_params: list[str] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Allocation:
    kind: str        # "device" | "managed" | "host" | "device-flags"
    api: str
    line: int


class Context:
    def __init__(self, src: bytes, path: str, options, hazards: dict[str, Hazard]) -> None:
        self.src = src
        self.path = path
        self.options = options
        self.hazards = hazards
        self.tokens = lex(src)
        self.lines = Lines(src)
        self.structure = dirs.analyse(self.tokens, self.lines)
        t = self.tokens
        self.kinds = t.kinds
        self.starts = t.starts
        self.ends = t.ends
        self.n = len(t)
        self.text = [src[s:e] for s, e in zip(t.starts, t.ends)]
        self.words = set(self.text)
        self.in_directive = self.structure.in_directive
        self.findings: list[Finding] = []
        self._match = [-1] * self.n
        self._match_brackets()
        self.macros: dict[bytes, dirs.Directive] = {}
        self._collect_macros()
        # Indexes built on first use, so that a question about one name or token costs no pass over the file.
        self._positions: dict[bytes, list[int]] | None = None
        self.device = bytearray(self.n)
        self.functions: list[Function] = []
        self._find_functions()
        self._parsed: clangparse.Parsed | None | bool = False
        self._allocs: dict[str, Allocation] | None = None
        self._launch_args: dict[str, dict[int, list[str]]] | None = None
        self._bodies: _Nest | None = None
        self._param_lists: _Nest | None = None
        self._function_names: frozenset[bytes] | None = None
        self._finding_lines: dict[str, list] = {}
        self._declarations: dict[bytes, list[int]] = {}
        self._where: dict[tuple, list[int]] = {}
        self._open_before: array | None = None
        # Type aliases (`typedef __half half_t;`) of the headers the file includes with quotes, set by the engine.
        self.header_aliases: dict[bytes, str] = {}
        # Warp-size constants of 32 (`#define WARP_SIZE 32`, `constexpr int kWarpSize = 32;`, an enumerator): this
        # file's, name -> line, found by lane_math; the included headers', name -> "header.h:line", set by the engine.
        self.warp_constants: dict[bytes, int] = {}
        self.header_constants: dict[bytes, str] = {}

    # -- structure ------------------------------------------------------------------------------
    def _match_brackets(self) -> None:
        text, in_dir, kinds = self.text, self.in_directive, self.kinds
        stack: list[int] = []
        for m in _BRACKET_FIRST.finditer(self.tokens.first_bytes()):  # the brackets only, not every token
            i = m.start()
            if kinds[i] != PUNCT or in_dir[i]:
                continue
            t = text[i]
            if t in _OPEN:
                stack.append(i)
            elif t in _CLOSE:
                while stack and _OPEN[text[stack[-1]]] != t:
                    stack.pop()
                if stack:
                    j = stack.pop()
                    self._match[i] = j
                    self._match[j] = i
        for d in self.structure.directives:
            stack = []
            for i in range(d.first, d.last):
                t = text[i]
                if kinds[i] != PUNCT:
                    continue
                if t in _OPEN:
                    stack.append(i)
                elif t in _CLOSE and stack and _OPEN[text[stack[-1]]] == t:
                    j = stack.pop()
                    self._match[i] = j
                    self._match[j] = i

    def match(self, i: int) -> int:
        return self._match[i]

    def _collect_macros(self) -> None:
        for d in self.structure.directives:
            if d.name == b"define" and d.first + 2 < d.last:
                self.macros[self.text[d.first + 2]] = d

    def macro_value(self, name: bytes) -> list[int] | None:
        """Token indices of an object-like macro's body (None for function-like or unknown macros)."""
        d = self.macros.get(name)
        if d is None:
            return None
        k = d.first + 2
        if k + 1 < d.last and self.text[k + 1] == b"(" and self.starts[k + 1] == self.ends[k]:
            return None
        return [j for j in range(k + 1, d.last) if self.kinds[j] != COMMENT]

    def _find_functions(self) -> None:
        text, kinds, in_dir, n = self.text, self.kinds, self.in_directive, self.n
        # From one `__global__`/`__device__` to the next, not through every token: the scan below resumes after
        # what it read, so a mark it stepped over is skipped.
        # A project's object-like macro for the marks (`#define DEVICE __forceinline__ __device__`, as the AMD
        # build defines it) marks a function as well: without it its body is host code to every check.
        kernels = {b"__global__"}
        words = set(_DEVICE_MARKS)
        for name in self.macros:
            if name in _DEVICE_MARKS:
                continue
            value = {text[k] for k in (self.macro_value(name) or ())}
            if value & _DEVICE_MARKS:
                words.add(name)
                if b"__global__" in value:
                    kernels.add(name)
        marks = sorted(k for word in words for k in self.positions(word))
        i = 0
        for mark in marks:
            if mark < i:
                continue
            i = mark
            if kinds[i] != IDENT or in_dir[i]:
                continue
            kernel = text[i] in kernels
            j = i + 1
            paren = None
            while j < n:
                t = text[j]
                if in_dir[j] or kinds[j] == COMMENT:
                    j += 1
                    continue
                if t == b"(" and self._match[j] > j:
                    if paren is None and j > 0 and kinds[j - 1] == IDENT and text[j - 1] != b"__launch_bounds__":
                        paren = j
                    j = self._match[j] + 1
                    continue
                if t in (b";", b"{", b"}", b"="):
                    break
                j += 1
            if j < n and text[j] == b"{" and paren is not None and self._match[j] > j:
                close = self._match[j]
                name_index = paren - 1
                fn = Function(text[name_index].decode("latin-1"), name_index, (paren, self._match[paren]),
                              (j, close), True, kernel)
                fn.param_names = self._param_names(paren, self._match[paren])
                fn.template_params = self._template_params(i)
                self.functions.append(fn)
                self.device[j:close + 1] = b"\x01" * (close + 1 - j)
                i = j + 1
                continue
            i = j + 1 if j > i else i + 1

    def _param_names(self, open_: int, close: int) -> list[str]:
        names = []
        depth = 0
        last_ident = None
        for k in range(open_ + 1, close + 1):
            t = self.text[k]
            if t in (b"(", b"[", b"<"):
                depth += 1
            elif t in (b")", b"]", b">") and k != close:
                depth -= 1
            if depth == 0 and (t == b"," or k == close):
                names.append(last_ident.decode("latin-1") if last_ident else "")
                last_ident = None
            elif depth == 0 and self.kinds[k] == IDENT and t not in (b"__restrict__", b"__restrict"):
                last_ident = t
            elif depth == 0 and t == b"=":
                depth = 100  # a default argument: skip to the comma
            if depth >= 100 and t == b"," and k != close:
                depth = 0
                names.append(last_ident.decode("latin-1") if last_ident else "")
                last_ident = None
        return names

    def _template_params(self, i: int) -> list[str]:
        """Names of `template <int BLOCK, typename T>` parameters just before token ``i``."""
        k = i - 1
        while k >= 0 and (self.kinds[k] in (IDENT, KEYWORD, COMMENT) and self.text[k] not in (b"template",)):
            k -= 1
        if k < 0 or self.text[k] != b">":
            return []
        depth = 0
        j = k
        while j >= 0:
            t = self.text[j]
            if t == b">":
                depth += 1
            elif t == b"<":
                depth -= 1
                if depth == 0:
                    break
            j -= 1
        if j <= 0 or self.text[j - 1] != b"template":
            return []
        names = []
        for m in range(j + 1, k):
            if self.kinds[m] == IDENT and self.text[m + 1] in (b",", b">", b"="):
                names.append(self.text[m].decode("latin-1"))
        return names

    def function_at(self, i: int) -> Function | None:
        """The first function (in file order) whose body, braces included, holds token ``i``."""
        if self._bodies is None:
            self._bodies = _Nest([(fn.body[0], fn.body[1], fn) for fn in self.functions])
        return self._bodies.first_holding(i, strict=False)

    def functions_holding(self, i: int) -> list[Function]:
        """Every function whose body holds token ``i`` (a lambda's body is inside its function's), in file order."""
        if self._bodies is None:
            self._bodies = _Nest([(fn.body[0], fn.body[1], fn) for fn in self.functions])
        return self._bodies.holding(i, strict=False)

    def function_of_params(self, i: int) -> Function | None:
        """The first function (in file order) whose parameter list holds token ``i`` strictly inside its
        parentheses."""
        if self._param_lists is None:
            self._param_lists = _Nest([(fn.params[0], fn.params[1], fn) for fn in self.functions])
        return self._param_lists.first_holding(i, strict=True)

    def function_names(self) -> frozenset[bytes]:
        """The names of the functions this file defines."""
        if self._function_names is None:
            self._function_names = frozenset(self.text[fn.name_index] for fn in self.functions)
        return self._function_names

    def positions(self, word: bytes) -> list[int]:
        """Indices of the tokens spelled ``word`` (in directives too), in file order, for an identifier or keyword
        (other tokens are not indexed)."""
        if self._positions is None:
            index: dict[bytes, list[int]] = defaultdict(list)
            text = self.text
            for i in compress(range(self.n), map(_WORD_KINDS.__contains__, self.kinds)):
                index[text[i]].append(i)
            self._positions = dict(index)
        return self._positions.get(word, _NONE)

    def positions_between(self, word: bytes, first: int, last: int) -> list[int]:
        """`positions(word)` in ``first`` <= index < ``last``."""
        found = self.positions(word)
        return found[bisect_left(found, first):bisect_left(found, last)]

    def positions_where(self, word: bytes, test) -> list[int]:
        """`positions(word)` that ``test(ctx, k)`` accepts, made once a word and test: ``test`` is a function of the
        tokens alone, defined once (a module's function, not a lambda made at each call)."""
        found = self._where.get((word, test))
        if found is None:
            found = self._where[(word, test)] = [k for k in self.positions(word) if test(self, k)]
        return found

    def where_between(self, word: bytes, test, first: int, last: int) -> list[int]:
        """`positions_where(word, test)` in ``first`` <= index < ``last``."""
        found = self.positions_where(word, test)
        return found[bisect_left(found, first):bisect_left(found, last)]

    def open_before(self, i: int) -> int:
        """Index of the nearest bracket before token ``i`` that is still open there (`(`, `[` or `{`, matched
        pairs stepped over), or -1: the first step of `common.enclosing_open`, made for every token in one pass,
        as a walk back to the `{` of a long host function would cost a pass per question."""
        if self._open_before is None:
            text, match = self.text, self._match
            before = array("l", bytes(8 * (self.n + 1)))
            before[0] = -1
            for k in range(self.n):  # before[k + 1] from token k
                t = text[k]
                if t in _OPEN:
                    before[k + 1] = k
                elif t in _CLOSE and match[k] >= 0:
                    before[k + 1] = before[match[k]]
                else:
                    before[k + 1] = before[k]
            self._open_before = before
        return self._open_before[i]

    # -- helpers for checks ---------------------------------------------------------------------
    def next_code(self, i: int) -> int:
        """Index of the next non-comment token after ``i`` (n when none)."""
        i += 1
        while i < self.n and self.kinds[i] == COMMENT:
            i += 1
        return i

    def prev_code(self, i: int) -> int:
        i -= 1
        while i >= 0 and self.kinds[i] == COMMENT:
            i -= 1
        return i

    def t(self, i: int) -> bytes:
        return self.text[i] if 0 <= i < self.n else b""

    def call_args(self, name_index: int) -> list[tuple[int, int]] | None:
        """For a call `name(...)`: [(first, last_exclusive)] token ranges of each argument, or None."""
        p = self.next_code(name_index)
        if self.t(p) != b"(" or self._match[p] < p:
            return None
        close = self._match[p]
        args = []
        start = p + 1
        k = start
        while k < close:
            t = self.text[k]
            if t in _OPEN and self._match[k] > k:
                k = self._match[k] + 1
                continue
            if t == b",":
                args.append((start, k))
                start = k + 1
            k += 1
        if start < close or args:
            args.append((start, close))
        return args

    def span_text(self, first: int, last: int) -> bytes:
        if first >= last:
            return b""
        return self.src[self.starts[first]:self.ends[last - 1]]

    def is_call(self, i: int) -> bool:
        # `next_code`, `prev_code` and `t` written out: the checks ask this of most names they meet.
        kinds, text, n = self.kinds, self.text, self.n
        if kinds[i] != IDENT:
            return False
        j = i + 1
        while j < n and kinds[j] == COMMENT:
            j += 1
        if j >= n or text[j] != b"(":
            return False
        j = i - 1
        while j >= 0 and kinds[j] == COMMENT:
            j -= 1
        return j < 0 or text[j] not in (b".", b"->", b"::")

    def line_text(self, line: int) -> bytes:
        starts = self.lines.starts
        s = starts[line - 1]
        e = starts[line] - 1 if line < len(starts) else len(self.src)
        return self.src[s:e].rstrip(b"\r")

    # -- targets --------------------------------------------------------------------------------
    @property
    def rocm(self) -> tuple[int, ...]:
        return self.options.rocm_version

    def wave_sizes(self) -> set[int]:
        return {wave_size(a) for a in self.options.offload_arch}

    def sync_state(self) -> str:
        """How the targeted release has the warp `*_sync` built-ins, read from its headers (rules/rocm/releases.toml):
        "absent", "opt-in" (6.2 to 6.4: only where the build defines HIP_ENABLE_WARP_SYNC_BUILTINS, which the
        project's defines or the file itself can do; then "on") or "on"."""
        from hipport.releases import release_data

        state, macro = release_data().sync_state(self.rocm)
        if state == "opt-in" and macro and (any(d.split("=", 1)[0] == macro for d in self.options.defines)
                                            or macro.encode() in self.src):
            return "on"
        return "on" if state == "default" else state

    # -- parse on demand ------------------------------------------------------------------------
    def parsed(self) -> clangparse.Parsed | None:
        if self._parsed is False:
            # Only functions that hold a call whose types matter are walked.
            hot = {fn.body[0] for name in _CALLS_OF_INTEREST_B for k in self.positions(name)
                   for fn in self.functions_holding(k) if fn.body[0] <= k < fn.body[1]}
            regions = sorted((self.starts[fn.name_index], self.ends[fn.body[1]]) for fn in self.functions
                             if fn.body[0] in hot)
            signals_before = interrupts_raised()
            try:
                self._parsed = clangparse.parse(self.src, regions, _CALLS_OF_INTEREST, self._parse_marks())
            except Exception:  # a libclang failure must not cost the token-level findings
                reraise_if_interrupted_since(signals_before)  # ctypes wraps a Ctrl-C in ArgumentError
                self._parsed = None
        return self._parsed  # type: ignore[return-value]

    def _parse_marks(self) -> list[int]:
        """Byte offsets of the tokens that can put a recorded cursor inside an expression (clangparse.parse): the
        calls of interest, the file's macros, `{`, and names spelled across a line continuation."""
        marks = [k for name in _CALLS_OF_INTEREST_B | set(self.macros) for k in self.positions(name)]
        marks += [m.start() for m in re.finditer(rb"\{", self.tokens.first_bytes())]
        if b"<%" in self.src:  # the digraph of `{`
            marks += [k for k in range(self.n) if self.text[k] == b"<%"]
        if b"\\" in self.src:  # the tokens holding a backslash, found from the backslashes (strings have many)
            starts, ends, kinds = self.starts, self.ends, self.kinds
            held = set()
            for m in re.finditer(rb"\\", self.src):
                k = bisect_right(starts, m.start()) - 1
                if k >= 0 and m.start() < ends[k] and kinds[k] == IDENT:
                    held.add(k)
            marks += held
        return sorted(self.starts[k] for k in marks)

    def decl_type(self, name_index: int) -> str | None:
        p = self.parsed()
        if p is None:
            return None
        return p.decl_types.get(self.starts[name_index])

    # -- data flow light --------------------------------------------------------------------------
    def find_decl(self, name: bytes, before: int, scope: tuple[int, int] | None) -> int | None:
        """Index of the token naming ``name`` where it is declared (`T name`, `T* name`), searching back from
        ``before`` to the start of ``scope`` (a function: its parameters are searched too)."""
        lo = scope[0] if scope else 0
        found = self.declarations(name)
        k = bisect_left(found, before) - 1
        return found[k] if k >= 0 and found[k] >= lo else None

    def declarations(self, name: bytes) -> list[int]:
        """Indices of the identifier tokens spelled ``name`` that `is_decl_name` takes, in file order (made once a
        name: a name used in every kernel is looked up from every kernel)."""
        found = self._declarations.get(name)
        if found is None:
            kinds = self.kinds
            found = self._declarations[name] = [k for k in self.positions(name)
                                                if kinds[k] == IDENT and self.is_decl_name(k)]
        return found

    def is_decl_name(self, k: int) -> bool:
        """`T name` / `T* name` / `T& name` followed by `=`, `;`, `,`, `)`, `[`, `{` or `:`."""
        if self.t(self.next_code(k)) not in (b"=", b";", b",", b")", b"[", b"{", b":"):
            return False
        p = self.prev_code(k)
        while self.t(p) in (b"*", b"&", b"const", b"__restrict__", b"__restrict", b"volatile"):
            p = self.prev_code(p)
        if p < 0 or self.kinds[p] not in (IDENT, KEYWORD) or self.text[p] in _NOT_TYPES:
            return False
        q = self.prev_code(p)
        while self.t(q) in (b"::", b"const", b"unsigned", b"signed", b"long", b"short", b"volatile",
                            b"static", b"__shared__", b"constexpr") or (self.kinds[q] == IDENT
                                                                       and self.t(q + 1) == b"::"):
            q = self.prev_code(q)
        return q < 0 or self.t(q) in (b"(", b",", b";", b"{", b"}", b")", b">", b":") or self.in_directive[q] \
            or self.kinds[q] == COMMENT

    def decl_type_words(self, name_index: int) -> list[bytes]:
        """Token texts of the declaration's type words before the name (`const unsigned int` ...)."""
        words = []
        k = self.prev_code(name_index)
        while k >= 0 and (self.kinds[k] in (IDENT, KEYWORD) or self.text[k] in (b"*", b"&", b"::")):
            if self.text[k] in (b"return", b"case"):
                break
            words.append(self.text[k])
            k = self.prev_code(k)
        words.reverse()
        return words

    def allocations(self) -> dict[str, Allocation]:
        """Pointer name -> how it was allocated, from `cudaMalloc(&p, ...)`-style calls in this file."""
        if self._allocs is None:
            allocs: dict[str, Allocation] = {}
            for i in range(self.n):
                kind = ALLOC_KINDS.get(self.text[i]) if self.kinds[i] == IDENT else None
                if kind is None:
                    continue
                args = self.call_args(i)
                if not args:
                    continue
                a0, a1 = args[0]
                toks = [self.text[k] for k in range(a0, a1) if self.kinds[k] != COMMENT]
                names = [x for x in toks if x not in (b"&", b"(", b")", b"void", b"*", b"**", b"reinterpret_cast",
                                                      b"static_cast", b"<", b">")]
                if not names:
                    continue
                name = names[-1].decode("latin-1")
                api = self.text[i].decode("latin-1")
                if api in ("cudaHostAlloc", "hipHostAlloc", "hipHostMalloc") and len(args) >= 3:
                    flags = self.span_text(*args[2])
                    if b"NonCoherent" in flags:
                        kind = "host-noncoherent"
                if api == "hipExtMallocWithFlags" and len(args) >= 3 and b"Finegrained" in self.span_text(*args[2]):
                    kind = "device-finegrained"
                allocs[name] = Allocation(kind, api, self.lines.line_col(self.starts[i])[0])
            self._allocs = allocs
        return self._allocs

    def launch_args(self) -> dict[str, dict[int, list[str]]]:
        """Kernel name -> parameter position -> the plain identifiers passed there at launches in this file."""
        if self._launch_args is None:
            out: dict[str, dict[int, list[str]]] = {}
            text, n = self.text, self.n
            for i in range(n - 2):
                # `name<<<...>>>(args)`: clang lexes `<<<` as `<<` `<`
                if text[i] == b"<<" and text[i + 1] == b"<" and self.ends[i] == self.starts[i + 1]:
                    k = self.prev_code(i)
                    if text[k] == b">":  # template arguments: step back over `<...>`
                        depth = 0
                        while k >= 0:
                            if text[k] == b">":
                                depth += 1
                            elif text[k] == b"<":
                                depth -= 1
                                if depth == 0:
                                    break
                            k -= 1
                        k = self.prev_code(k)
                    if k < 0 or self.kinds[k] != IDENT:
                        continue
                    name = text[k]
                    j = i + 2
                    while j < n and not (text[j] == b">>" and text[j + 1] == b">" if j + 1 < n else False):
                        j += 1
                    args = self.call_args(j + 1) if j < n else None
                    if args is None:
                        continue
                    self._record_launch(out, name, args)
                elif text[i] in (b"hipLaunchKernelGGL",) and self.is_call(i):
                    args = self.call_args(i)
                    if args and len(args) > 5:
                        a0 = [k for k in range(*args[0]) if self.kinds[k] == IDENT and text[k] != b"HIP_KERNEL_NAME"]
                        if a0:
                            self._record_launch(out, text[a0[0]], args[5:])
            self._launch_args = out
        return self._launch_args

    def _record_launch(self, out, name: bytes, args) -> None:
        slots = out.setdefault(name.decode("latin-1"), {})
        for pos, (a, b) in enumerate(args):
            idents = [self.text[k] for k in range(a, b) if self.kinds[k] == IDENT]
            if len(idents) == 1:
                slots.setdefault(pos, []).append(idents[0].decode("latin-1"))

    def allocation_of(self, pointer: str, fn: Function | None) -> tuple[Allocation | None, str]:
        """The allocation behind a pointer used in ``fn``: directly, or through a kernel parameter whose every
        launch in this file passes pointers allocated the same way. Returns (allocation, host-side name)."""
        allocs = self.allocations()
        if pointer in allocs:
            return allocs[pointer], pointer
        if fn is None or pointer not in fn.param_names:
            return None, ""
        pos = fn.param_names.index(pointer)
        passed = self.launch_args().get(fn.name, {}).get(pos, [])
        found = [(allocs.get(p), p) for p in passed]
        if found and all(a is not None for a, _ in found) and len({a.kind for a, _ in found}) == 1:
            return found[0]
        return None, ""

    # -- reporting ------------------------------------------------------------------------------
    def finding_lines(self, rule_id: str) -> set[int]:
        """The lines of ``rule_id``'s findings so far. Brought up to date from the findings added since the last
        question, as a check may ask once per kernel; the caller adds a line only where it reports one."""
        known = self._finding_lines.get(rule_id)
        if known is None or known[0] is not self.findings or known[1] > len(self.findings):
            known = self._finding_lines[rule_id] = [self.findings, 0, set()]
        findings, seen, lines = known
        lines.update(f.line for f in findings[seen:] if f.rule_id == rule_id)
        known[1] = len(findings)
        return lines

    def report(self, rule_id: str, at: int, message: str, *, confidence: str = "high", edits=(),
               subject: str = "", severity: str | None = None, offset: int | None = None) -> None:
        """``at`` is a token index (``offset`` overrides it with a byte offset)."""
        hazard = self.hazards[rule_id]
        sev = severity or hazard.severity_for(self.rocm, tuple(self.options.offload_arch))
        pos = offset if offset is not None else self.starts[at]
        line, col = self.lines.line_col(pos)
        self.findings.append(Finding(rule_id, sev, line, col, message, confidence, tuple(edits), subject))

    def edit(self, i: int, new: bytes | str, j: int | None = None) -> Edit:
        """Replace tokens ``i`` .. ``j`` (inclusive; default just ``i``)."""
        if isinstance(new, str):
            new = new.encode()
        return Edit(self.starts[i], self.ends[j if j is not None else i], new)


_NONE: list[int] = []
_WORD_KINDS = frozenset({IDENT, KEYWORD})


class _Nest:
    """Token ranges of matched brackets (each pair nested in another or apart), each with its item, answering
    "which ranges hold token i" by a binary search and a walk out through the enclosing ranges."""

    def __init__(self, ranges: list[tuple[int, int, object]]) -> None:
        order = sorted(range(len(ranges)), key=lambda k: (ranges[k][0], -ranges[k][1], k))
        self.firsts = [ranges[k][0] for k in order]
        self.lasts = [ranges[k][1] for k in order]
        self.items = [ranges[k][2] for k in order]
        self.rank = order  # position of each range in the list given, which decides "first"
        self.parent = [-1] * len(order)
        stack: list[int] = []
        for j in range(len(order)):
            while stack and self.lasts[stack[-1]] < self.firsts[j]:
                stack.pop()
            self.parent[j] = stack[-1] if stack else -1
            stack.append(j)

    def _holding(self, i: int, strict: bool) -> list[int]:
        j = (bisect_left(self.firsts, i) if strict else bisect_right(self.firsts, i)) - 1
        out = []
        while j >= 0:
            if self.lasts[j] > i or (not strict and self.lasts[j] == i):
                out.append(j)
            j = self.parent[j]
        return out

    def holding(self, i: int, *, strict: bool) -> list:
        """The items of the ranges holding ``i`` (``strict``: not at either bracket), in the order given."""
        return [self.items[j] for j in sorted(self._holding(i, strict), key=self.rank.__getitem__)]

    def first_holding(self, i: int, *, strict: bool):
        found = self._holding(i, strict)
        if not found:
            return None
        return self.items[min(found, key=self.rank.__getitem__)]


_NOT_TYPES = frozenset({b"return", b"case", b"else", b"goto", b"throw", b"new", b"delete", b"sizeof", b"do"})

_CALLS_OF_INTEREST = frozenset({
    "atomicAdd", "atomicAdd_system", "atomicSub", "atomicExch", "atomicMin", "atomicMax", "atomicAnd", "atomicOr",
    "atomicXor", "atomicInc", "atomicDec", "unsafeAtomicAdd",
    "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync",
    "__all_sync", "__match_any_sync", "__match_all_sync", "__syncwarp", "__popc", "__ffs", "__clz", "__brev",
})

__all__ = ["Context", "Function", "Allocation", "int_value", "THREAD_INDEX", "LANE_FUNCS",
           "COMMENT", "IDENT", "KEYWORD", "LITERAL", "PUNCT", "SEVERITY_RANK"]

_CALLS_OF_INTEREST_B = frozenset(n.encode() for n in _CALLS_OF_INTEREST) | {
    b"__ballot", b"__activemask", b"__match_any", b"__match_all", b"__lanemask_lt"}
