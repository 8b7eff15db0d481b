"""Which platform each `#if` branch of a file is for, in projects that keep CUDA as their main source and build for AMD
from the same files (rules/platforms.toml says which macros select which build).

`classify` takes a file's directive lines and gives the byte ranges of the branches the AMD build never compiles
(the other platform's code: the `#else` of `#ifdef USE_HIP`), of those only the AMD build compiles, and of every
branch of a chain that tests a platform or GPU-compiler macro (a "corner": what a plain C header keeps for GPU
compilers). `header_facts` reads the headers a file includes with quotes (recursively, text only: no libclang) for
what they define on the AMD path: a compatibility header's `#define cudaMalloc hipMalloc`, `#define __CUDA_ARCH__`,
its own `__vsub4`. `other_platform_files` reads a whole tree for the headers that only the other platform's branches
include (ggml's `vendors/cuda.h`).

A condition is judged in two worlds, the AMD build and the NVIDIA build: the AMD switches are defined in the first
and not in the second, the NVIDIA ones the other way round, and in a chain that offers both `X_HIP` and `X_CUDA`
the CUDA one is the NVIDIA build's. Anything else stays unknown, so a condition that does not settle leaves its
branches live in both.
"""

from __future__ import annotations

import bisect
import fnmatch
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hipport.pytorch_tree import extension_files, is_extension_header
from hipport.rules import RuleError, _read_toml, builtin_rules_dir

_CONDITIONS = {"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif"}


@dataclass(frozen=True, slots=True)
class PlatformData:
    amd: frozenset
    amd_patterns: tuple
    not_names: frozenset
    nvidia: frozenset
    compilers: frozenset
    shared_categories: frozenset
    cuda_only: frozenset = frozenset()
    cuda_only_patterns: tuple = ()

    def side(self, name: str) -> str | None:
        """"amd" for a name that selects the AMD build, "nvidia" for the NVIDIA build's, else None."""
        if name in self.amd:
            return "amd"
        if name in self.nvidia:
            return "nvidia"
        if name not in self.not_names and any(fnmatch.fnmatchcase(name, p) for p in self.amd_patterns):
            return "amd"
        return None


@lru_cache(maxsize=1)
def platform_data() -> PlatformData:
    path = builtin_rules_dir() / "platforms.toml"
    data = _read_toml(path)

    def names(section: str, key: str = "names") -> frozenset:
        value = data.get(section, {}).get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RuleError(f"{path}: `[{section}] {key}` must be a list of strings")
        return frozenset(value)

    return PlatformData(names("amd"), tuple(sorted(names("amd", "patterns"))), names("amd", "not_names"),
                        names("nvidia"), names("compilers"), names("shared_code", "categories"),
                        names("cuda_only"), tuple(sorted(names("cuda_only", "patterns"))))


# -- directive lines ------------------------------------------------------------------------------------------

@dataclass(slots=True)
class Line:
    """One directive: its name (`if`, `else`, `define`, `include`...), the text after the name (comments out), and
    the byte offsets of its line's start and of the end of its last line (after the newline)."""
    kind: str
    text: str
    start: int
    end: int


# A directive from its `#` to the end of its line and its continuations (`\` before the newline). The pattern starts
# with the literal, so the search runs at memchr speed; whether the `#` starts its line is checked after.
_DIRECTIVE = re.compile(rb"#[ \t]*([A-Za-z_]\w*)?((?:[^\n]*?\\\r?\n)*[^\n]*)(?:\n|\Z)")
_BLOCK_COMMENT = re.compile(rb"/\*.*?\*/", re.S)
_CONTINUATION = re.compile(rb"\\\r?\n")
_COMMENTS = re.compile(r"/\*.*?\*/|//.*$|/\*.*$", re.S)


def lines_of(src: bytes) -> list[Line]:
    """The directives of ``src``, read as text (continuations joined, comments out). A `#` line inside a block
    comment is none; one after a string that spans lines would be misread, which is good enough for headers."""
    hidden: list[tuple[int, int]] = []
    if b"/*" in src:
        hidden = [m.span() for m in _BLOCK_COMMENT.finditer(src) if b"#" in m.group() and b"\n" in m.group()]
    out: list[Line] = []
    k = 0
    for m in _DIRECTIVE.finditer(src):
        hash_at = m.start()
        start = src.rfind(b"\n", 0, hash_at) + 1
        if start != hash_at and src[start:hash_at].strip(b" \t"):
            continue  # not first on its line: an ordinary `#` (the rest of that line is no directive either)
        while k < len(hidden) and hidden[k][1] <= start:
            k += 1
        if k < len(hidden) and hidden[k][0] < start:
            continue  # inside a block comment
        out.append(Line((m.group(1) or b"").decode("latin-1"), directive_text(m.group(2)), start, m.end()))
    return out


def directive_text(rest: bytes) -> str:
    """What follows a directive's name, as one line without comments."""
    return _COMMENTS.sub(" ", _CONTINUATION.sub(b" ", rest).decode("latin-1")).strip()


# -- conditions -----------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(defined|[A-Za-z_]\w*|0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|&&|\|\||==|!=|<=|>=|<<|>>|"
                    r"[()!<>+\-*/%~?:,])")
_IDENT = re.compile(r"[A-Za-z_]\w*")


class _Unknown(Exception):
    pass


def condition_names(text: str) -> set[str]:
    return set(_IDENT.findall(text)) - {"defined"}


def evaluate(kind: str, text: str, defined: dict[str, int]) -> int | None:
    """The value of an `#if`-family condition (1 or 0), or None where it cannot be known. ``defined``: a name's
    value where it is known to be defined (1 for a switch), 0 where it is known to be undefined; names not in it are
    unknown."""
    if kind in ("ifdef", "elifdef", "ifndef", "elifndef"):
        value = defined.get(text.split()[0] if text.split() else "")
        if value is None:
            return None
        is_defined = value != 0
        return int(is_defined if kind in ("ifdef", "elifdef") else not is_defined)
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip():
                return None
            break
        tokens.append(m.group(1))
        pos = m.end()
    parser = _Parser(tokens, defined)
    try:
        value = parser.expression()
    except (_Unknown, IndexError, ZeroDivisionError, ValueError):
        return None
    if parser.pos != len(tokens) or value is None:
        return None
    return int(bool(value))


class _Parser:
    """Precedence climbing over C's preprocessor operators (no `?:`). An operand that cannot be known is None; `&&`
    and `||` settle with one known side where C would, anything else with an unknown operand is unknown."""

    _LEVELS = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

    def __init__(self, tokens: list[str], defined: dict[str, int]) -> None:
        self.t, self.pos, self.defined = tokens, 0, defined

    def expression(self):
        return self._level(0)

    def _level(self, k: int):
        if k == len(self._LEVELS):
            return self._unary()
        left = self._level(k + 1)
        while self.pos < len(self.t) and self.t[self.pos] in self._LEVELS[k]:
            op = self.t[self.pos]
            self.pos += 1
            left = _apply(op, left, self._level(k + 1))
        return left

    def _unary(self):
        tok = self.t[self.pos]
        self.pos += 1
        if tok in ("!", "-", "~", "+"):
            v = self._unary()
            return None if v is None else {"!": lambda x: int(not x), "-": lambda x: -x, "~": lambda x: ~x,
                                           "+": lambda x: x}[tok](v)
        if tok == "(":
            v = self._level(0)
            if self.t[self.pos] != ")":
                raise _Unknown
            self.pos += 1
            return v
        if tok == "defined":
            paren = self.t[self.pos] == "("
            self.pos += paren
            name = self.t[self.pos]
            self.pos += 1
            if paren:
                if self.t[self.pos] != ")":
                    raise _Unknown
                self.pos += 1
            v = self.defined.get(name)
            return None if v is None else int(v != 0)
        if tok[0].isdigit():
            digits = tok.rstrip("uUlL")
            return int(digits, 8) if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit() else int(digits, 0)
        if _IDENT.fullmatch(tok):
            if self.pos < len(self.t) and self.t[self.pos] == "(":
                raise _Unknown  # a function-like macro (`__has_include(...)`): not judged
            return self.defined.get(tok)
        raise _Unknown


def _apply(op: str, a, b):
    if op == "||":
        if a or b:
            return 1
        return None if a is None or b is None else 0
    if op == "&&":
        if a == 0 or b == 0:
            return 0
        return None if a is None or b is None else 1
    if a is None or b is None:
        return None
    if op in ("==", "!=", "<", ">", "<=", ">="):
        return int({"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op])
    return {"<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
            "*": lambda: a * b, "/": lambda: int(a / b), "%": lambda: a % b}[op]()


# -- branches -------------------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Branch:
    kind: str          # if, ifdef, ifndef, elif, elifdef, elifndef, else
    text: str
    line: Line
    body_start: int
    body_end: int = -1
    chains: list = field(default_factory=list)  # the chains nested in this branch


@dataclass(slots=True)
class _Chain:
    branches: list


@dataclass(slots=True)
class Branches:
    """Byte ranges [start, end] of branch bodies (from the end of the branch's directive line to the start of the
    next one of its chain; an insertion at either end lands inside the branch)."""
    other: list = field(default_factory=list)    # never compiled for AMD: the other platform's code
    amd: list = field(default_factory=list)      # compiled only for AMD
    corners: list = field(default_factory=list)  # every branch of a chain testing a platform or compiler macro
    tests: list = field(default_factory=list)    # (offset, `#ifdef USE_HIP` as written) of each platform test
    # Offsets of the directives whose outcome the AMD build knows without CUDA's macros (`#elif defined(USE_ROCM) ||
    # __CUDA_ARCH__ >= 800` under USE_ROCM): a CUDA macro in them decides nothing there.
    settled_amd: set = field(default_factory=set)
    _other_starts: list = field(default_factory=list)
    _amd_starts: list = field(default_factory=list)
    _corner_starts: list = field(default_factory=list)

    def finish(self) -> Branches:
        for name in ("other", "amd", "corners"):
            setattr(self, name, _merge(getattr(self, name)))
        self._other_starts = [r[0] for r in self.other]
        self._amd_starts = [r[0] for r in self.amd]
        self._corner_starts = [r[0] for r in self.corners]
        return self

    def in_other(self, start: int, end: int | None = None) -> bool:
        """Whether bytes [start, end) (an insertion at ``start`` when ``end`` is None or equal) lie in a branch the
        AMD build never compiles."""
        return _inside(self.other, self._other_starts, start, start if end is None else end)

    def in_amd(self, start: int, end: int | None = None) -> bool:
        return _inside(self.amd, self._amd_starts, start, start if end is None else end)

    def in_corner(self, start: int) -> bool:
        return _inside(self.corners, self._corner_starts, start, start)


def _merge(ranges: list) -> list:
    out: list = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _inside(ranges: list, starts: list, start: int, end: int) -> bool:
    k = bisect.bisect_right(starts, start) - 1
    return k >= 0 and ranges[k][0] <= start and end <= ranges[k][1] and (start < ranges[k][1] or start == end)


def _parse(lines: list[Line]) -> list[_Chain]:
    """The conditional chains, nested as written (an unbalanced `#endif` or `#else` is ignored; a chain left open
    at the end closes there)."""
    top: list[_Chain] = []
    stack: list[tuple[_Chain, list[_Chain]]] = []  # (open chain, the list it belongs to)
    for ln in lines:
        kind = ln.kind
        if kind not in _CONDITIONS:
            continue
        if kind in ("if", "ifdef", "ifndef"):
            owner = stack[-1][0].branches[-1].chains if stack else top
            chain = _Chain([_Branch(kind, ln.text, ln, ln.end)])
            owner.append(chain)
            stack.append((chain, owner))
        elif not stack:
            continue
        elif kind == "endif":
            chain = stack.pop()[0]
            chain.branches[-1].body_end = ln.start
        else:
            chain = stack[-1][0]
            chain.branches[-1].body_end = ln.start
            chain.branches.append(_Branch(kind, ln.text, ln, ln.end))
    end = lines[-1].end if lines else 0
    for chain, _ in stack:
        if chain.branches[-1].body_end < 0:
            chain.branches[-1].body_end = max(end, chain.branches[-1].body_start)
    return top


_SWAP = re.compile(r"(?<![A-Za-z0-9])(HIP|ROCM|HIPBLAS)(?![A-Za-z0-9])")


def classify(lines: list[Line], data: PlatformData | None = None, model: AmdBuildModel | None = None) -> Branches:
    """The platform ranges of a file whose directives are ``lines`` (in order). ``model``: more names whose value
    is known (`AmdBuildModel`: for a file that builds for AMD already, how its AMD build sees CUDA's own macros and
    the project's)."""
    data = data or platform_data()
    out = Branches()
    for chain in _parse(lines):
        _walk(chain, data, model or _NoModel(), out, False, False)
    return out.finish()


def _walk(chain: _Chain, data: PlatformData, model, out: Branches, dead_amd: bool, dead_nv: bool) -> None:
    names = [condition_names(b.text) for b in chain.branches]
    sides = {n: data.side(n) for ns in names for n in ns}
    switches = {n for n, side in sides.items() if side}
    # `X_CUDA` offered beside `X_HIP` in one chain: the NVIDIA build's alternative.
    for n in [n for n in switches if sides[n] == "amd"]:
        counterpart = _SWAP.sub("CUDA", n)
        if counterpart != n and any(counterpart in ns for ns in names):
            sides[counterpart] = "nvidia"
            switches.add(counterpart)
    values = {n: v for ns in names for n in ns if n not in switches and (v := model.get(n)) is not None}
    known = switches | set(values)
    compilers = {n for ns in names for n in ns if n in data.compilers}
    corner = bool(switches or compilers)
    amd_world = {n: (1 if sides[n] == "amd" else 0) for n in switches}
    nv_world = {n: (0 if sides[n] == "amd" else 1) for n in switches}
    for n, (amd, nv) in values.items():
        if amd is not None:
            amd_world[n] = amd
        if nv is not None:
            nv_world[n] = nv
    settled_amd = settled_nv = False  # an earlier branch is certainly taken
    for b, ns in zip(chain.branches, names):
        if known & ns or b.kind == "else":
            v_amd = 1 if b.kind == "else" else evaluate(b.kind, b.text, amd_world)
            v_nv = 1 if b.kind == "else" else evaluate(b.kind, b.text, nv_world)
        else:
            v_amd = v_nv = None
        if switches & ns:
            out.tests.append((b.line.start, f"#{b.kind} {b.text}".strip()))
        b_dead_amd = dead_amd or settled_amd or v_amd == 0
        if b.kind != "else" and (v_amd is not None or dead_amd or settled_amd):
            out.settled_amd.add(b.line.start)
        b_dead_nv = dead_nv or settled_nv or v_nv == 0
        if not known:  # a chain that tests nothing known is judged by what encloses it only
            b_dead_amd, b_dead_nv = dead_amd, dead_nv
        span = (b.body_start, b.body_end)
        if b_dead_amd:
            out.other.append(span)
        elif b_dead_nv:
            out.amd.append(span)
        if corner:
            out.corners.append(span)
        settled_amd = settled_amd or (v_amd == 1 and bool(known))
        settled_nv = settled_nv or (v_nv == 1 and bool(known))
        for inner in b.chains:
            _walk(inner, data, model, out, b_dead_amd, b_dead_nv)


class AmdBuildModel:
    """How the AMD build of a file that already has a HIP path sees names beyond the platform switches: CUDA's
    own macros (`CUDART_VERSION`, `__CUDACC__`, `__CUDA_ARCH__`: rules/platforms.toml `[cuda_only]`) and the
    project's macros defined only on the other platform's branches are undefined there (the NVIDIA build's value
    unknown); those defined only on AMD branches are undefined for NVIDIA. A name the project defines on the AMD
    path (``live``) is not judged."""

    def __init__(self, data: PlatformData, live: frozenset = frozenset(), other_only: frozenset = frozenset(),
                 amd_only: frozenset = frozenset()) -> None:
        self.data, self.live, self.other_only, self.amd_only = data, live, other_only, amd_only

    def get(self, name: str) -> tuple | None:
        if name in self.live:
            return None
        if name in self.data.cuda_only or name in self.other_only or \
                any(fnmatch.fnmatchcase(name, p) for p in self.data.cuda_only_patterns):
            return (0, None)
        if name in self.amd_only:
            return (None, 0)
        return None


class _NoModel:
    def get(self, name: str) -> None:
        return None


# -- what a file and its own headers define ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OwnFacts:
    """One file's text, outside the other platform's branches."""
    macros: frozenset = frozenset()      # macros it defines there (the AMD path)
    other_only: frozenset = frozenset()  # macros it defines only on the other platform's branches
    amd_only: frozenset = frozenset()    # macros it defines only on branches the NVIDIA build never compiles
    functions: frozenset = frozenset()   # functions it defines or declares (`__vsub4`), types it names (`typedef`)
    maps: bool = False                   # it maps CUDA names onto HIP ones (`#define cudaMalloc hipMalloc`)
    runtime: bool = False                # it includes <hip/hip_runtime.h>


@dataclass(frozen=True, slots=True)
class HeaderFacts:
    """What the headers a file includes with quotes (and theirs) give the AMD build."""
    macros: frozenset = frozenset()
    other_only: frozenset = frozenset()
    amd_only: frozenset = frozenset()
    functions: frozenset = frozenset()
    platform: str = ""                   # the first header that maps CUDA names onto HIP ones ("hip.h"), or ""
    includes_hip_runtime: bool = False   # one of them includes <hip/hip_runtime.h> on the AMD path

    def __or__(self, other: HeaderFacts) -> HeaderFacts:
        return HeaderFacts(self.macros | other.macros, self.other_only | other.other_only,
                           self.amd_only | other.amd_only, self.functions | other.functions,
                           self.platform or other.platform, self.includes_hip_runtime or other.includes_hip_runtime)


_DEFINE = re.compile(r"^([A-Za-z_]\w*)")
_QUOTED = re.compile(r'^"([^"]+)"')
_ANGLED = re.compile(r"^<([^>]+)>")
# A function a header defines or declares: a type word (or `*`/`&`) before the name, `(` after it.
_FUNCTION = re.compile(rb"(?:\b([A-Za-z_]\w*)\s+|[*&]\s*)([A-Za-z_]\w*)\s*\(")
_CALL_WORDS = {b"return", b"else", b"case", b"do", b"throw", b"sizeof", b"new", b"delete", b"co_return",
               b"co_yield", b"co_await", b"defined", b"typeid", b"decltype", b"alignof", b"goto", b"if", b"elif",
               b"while", b"for", b"switch"}
_TYPE_NAME = re.compile(rb"\btypedef\b[^;{}()]*?\b([A-Za-z_]\w*)\s*;|\busing\s+([A-Za-z_]\w*)\s*=")
_TEXT_NOISE = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
_MAX_DEPTH = 12
_MAX_BYTES = 4_000_000
# `#define cudaMalloc hipMalloc`, `#define __shfl_xor_sync(m, v, l) __shfl_xor(v, l)`: a CUDA name mapped for AMD.
# A mapping's body is the HIP name (`#define cudaMalloc hipMalloc`, `#define cudaFree(p) hipFree(p)`): a CUDA-named
# macro whose body merely uses HIP names (`#define CUDA_CHECK_LAST_ERROR() { if (hipSuccess != ...) }`, what a
# converted error-checking header holds) is the project's own code, not a compatibility layer.
HIP_PATH_MAP = re.compile(r"^[ \t]*(?:cuda|cu[A-Z]|CU|CUDA|cublas|curand|cufft|cusparse|cusolver|__shfl|__ballot)\w*"
                          r"(?:\([^)]*\))?\s+[(\s]*(?:::)?(?:hip|HIP|roc)\w*")


_UP = 4  # folders above the including file's that stand in for the project's -I folders


def resolve_quoted(name: str, includer: str) -> str | None:
    """Where `#include "name"` in ``includer`` leads: beside the including file, as a compiler looks first, else
    (the project's -I folders being unknown) in a folder above it or its `include/` (`"ggml-cuda/common.cuh"` from
    `src/ggml-cuda/ggml-cuda.cu` is `src/ggml-cuda/common.cuh`)."""
    if os.path.isabs(name):
        return name if os.path.isfile(name) else None
    folder = os.path.dirname(os.path.abspath(includer))
    for _ in range(_UP + 1):
        for base in (folder, os.path.join(folder, "include")):
            candidate = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(candidate):
                return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


def live_includes(lines: list[Line], branches: Branches, path: str) -> list[str]:
    """The files ``path`` includes with quotes outside the other platform's branches, as found beside it."""
    out = []
    for ln in lines:
        if ln.kind != "include" or branches.in_other(ln.start):
            continue
        m = _QUOTED.match(ln.text)
        header = resolve_quoted(m.group(1), path) if m else None
        if header is not None:
            out.append(header)
    return out


def file_facts(path: str, lines: list[Line], branches: Branches) -> HeaderFacts:
    """What the headers ``path`` includes with quotes outside the other platform's branches give it (the file
    itself not counted), through their own quoted includes."""
    if not path or path.startswith("<"):
        return HeaderFacts()
    facts = HeaderFacts()
    me = os.path.normpath(os.path.abspath(path))
    for header in live_includes(lines, branches, path):
        if header != me:
            facts = facts | header_facts(header)
    return facts


_header_memo: dict[tuple, HeaderFacts] = {}
_in_progress: set[str] = set()


def header_facts(path: str, depth: int = 1) -> HeaderFacts:
    """What one header gives the file including it, with what its own quoted includes give it; remembered per
    version of the file (an include cycle sees the part of itself already read)."""
    try:
        st = os.stat(path)
    except OSError:
        return HeaderFacts()
    key = (path, st.st_mtime_ns, st.st_size)
    found = _header_memo.get(key)
    if found is not None:
        return found
    if path in _in_progress or depth > _MAX_DEPTH:
        return HeaderFacts()
    try:
        with open(path, "rb") as fh:
            src = fh.read(_MAX_BYTES)
    except OSError:
        return HeaderFacts()
    _in_progress.add(path)
    try:
        lines = lines_of(src)
        branches, own, _ = classify_file(src, lines)
        platform = os.path.basename(path) if own.maps else ""
        facts = HeaderFacts(own.macros, own.other_only, own.amd_only, own.functions, platform, own.runtime)
        for header in live_includes(lines, branches, path):
            if header != path:
                facts = facts | header_facts(header, depth + 1)
    finally:
        _in_progress.discard(path)
    if len(_header_memo) > 4096:
        _header_memo.clear()
    _header_memo[key] = facts
    return facts


def classify_file(src: bytes, lines: list[Line], known: HeaderFacts | None = None,
                  single_source: bool | None = None,
                  functions: bool = True) -> tuple[Branches, OwnFacts, AmdBuildModel | None]:
    """A file's branches and facts (its functions only with ``functions``). One that builds for AMD through a
    compatibility layer (it maps CUDA names onto HIP ones, or ``single_source``) is judged again as its AMD build sees
    CUDA's and the project's macros (`AmdBuildModel`), with what ``known`` (its headers) defines."""
    data = platform_data()
    branches = classify(lines, data)
    own = own_facts(src, lines, branches, functions=False)
    if single_source is None:
        single_source = own.maps
    model = None
    if single_source:
        known = known or HeaderFacts()
        live = (own.macros - own.amd_only) | (known.macros - known.amd_only)
        model = AmdBuildModel(data, live, (own.other_only | known.other_only) - live,
                              (own.amd_only | known.amd_only) - live)
        branches = classify(lines, data, model)
    if single_source or functions:
        own = own_facts(src, lines, branches, functions)
    return branches, own, model


def own_facts(src: bytes, lines: list[Line], branches: Branches, functions: bool = True) -> OwnFacts:
    """What one file's text defines and includes, outside the other platform's branches (and on them only); the
    functions it declares only with ``functions`` (a regex over the whole text)."""
    macros, dead, amd, compat, runtime = set(), set(), set(), False, False
    for ln in lines:
        other = branches.in_other(ln.start)
        if ln.kind == "define":
            m = _DEFINE.match(ln.text)
            if m is None:
                continue
            if other:
                dead.add(m.group(1))
                continue
            if branches.in_amd(ln.start):
                amd.add(m.group(1))
            macros.add(m.group(1))
            compat = compat or HIP_PATH_MAP.match(ln.text) is not None
        elif ln.kind == "include" and not other:
            m = _ANGLED.match(ln.text) or _QUOTED.match(ln.text)
            runtime = runtime or (m is not None and m.group(1).strip() == "hip/hip_runtime.h")
    shared = {n for n in macros if n not in amd}
    if not functions:
        return OwnFacts(frozenset(macros), frozenset(dead - macros), frozenset(amd - shared), frozenset(), compat,
                        runtime)
    functions = set()
    starts = [r[0] for r in branches.other]
    # Comments, strings and directive lines blanked (same length, so offsets still match the branches): a macro body
    # that calls a function (`#define SUB __vsub4(x, y)`) declares none.
    code = bytearray(_TEXT_NOISE.sub(lambda m: b" " * (m.end() - m.start()), src))
    for ln in lines:
        code[ln.start:ln.end] = b" " * (min(ln.end, len(code)) - ln.start)
    code = bytes(code)
    for m in _FUNCTION.finditer(code):
        if m.group(1) in _CALL_WORDS or m.group(2) in _CALL_WORDS or (
                starts and _inside(branches.other, starts, m.start(2), m.end(2))):
            continue
        functions.add(m.group(2).decode("latin-1"))
    for m in _TYPE_NAME.finditer(code):  # `typedef __hip_bfloat162 nv_bfloat162;`, `using cudaStream_t = ...;`
        name = m.group(1) or m.group(2)
        if not (starts and _inside(branches.other, starts, m.start(), m.end())):
            functions.add(name.decode("latin-1"))
    return OwnFacts(frozenset(macros), frozenset(dead - macros), frozenset(amd - shared), frozenset(functions),
                    compat, runtime)


# -- a whole tree -----------------------------------------------------------------------------------------------

class TreeFacts:
    """What a whole run's tree says about each file's platform (`tree_facts`). Hashable, and shown by a digest of
    its content: it is part of the conversion options, which key the result cache."""

    __slots__ = ("other_platform", "inherited", "macros", "compat_macros", "compat_functions", "amd_only",
                 "hip_build", "context", "counterparts", "pytorch", "_digest")

    def __init__(self, other_platform: dict | None = None, inherited: dict | None = None,
                 macros: frozenset = frozenset(), compat_macros: frozenset = frozenset(),
                 compat_functions: frozenset = frozenset(), amd_only: dict | None = None,
                 hip_build: str = "", context: frozenset = frozenset(), counterparts: dict | None = None,
                 pytorch: dict | None = None) -> None:
        # file (absolute, normalised) -> why it is the other platform's: only the other platform's branches include it
        self.other_platform = dict(other_platform or {})
        # file -> why it builds for both platforms although it has no HIP path of its own: a file that has one
        # includes it (mmid.cuh, included by mmid.cu after common.cuh)
        self.inherited = dict(inherited or {})
        # GPU macros the tree defines on its AMD path (`#define __CUDA_ARCH__ 1300` in a compatibility header)
        self.macros = frozenset(macros)
        # what the files with a HIP path define: the project's compatibility layer, as a header that inherits the
        # layer sees it
        self.compat_macros = frozenset(compat_macros)
        self.compat_functions = frozenset(compat_functions)
        # file -> why only the AMD build compiles it: only AMD branches include it (ggml's `vendors/hip.h`)
        self.amd_only = dict(amd_only or {})
        # the tree's own AMD build, where it has one (`ggml-hip/CMakeLists.txt: `enable_language(HIP)``): its other
        # build files are the NVIDIA build's
        self.hip_build = hip_build
        # files of the part of the tree that builds for AMD already (`tree_facts`)
        self.context = frozenset(context)
        # a macro the tree defines only for NVIDIA -> the same macro's AMD spelling beside it (cm's utils.h:
        # `CUDA_CHECK_RETURN` under `#if defined(__CUDACC__)`, `HIP_CHECK_RETURN` under `#if defined(__HIPCC__)`)
        self.counterparts = dict(counterparts or {})
        # file -> why PyTorch's extension build compiles it, hipifying it first (`pytorch_tree.extension_files`)
        self.pytorch = dict(pytorch or {})
        import hashlib

        h = hashlib.sha256(repr((sorted(self.other_platform.items()), sorted(self.inherited.items()),
                                 sorted(self.macros), sorted(self.compat_macros),
                                 sorted(self.compat_functions), sorted(self.amd_only.items()),
                                 self.hip_build, sorted(self.context), sorted(self.counterparts.items()),
                                 sorted(self.pytorch.items()))).encode())
        self._digest = h.hexdigest()[:16]

    def __repr__(self) -> str:
        return f"TreeFacts({self._digest})"

    def __hash__(self) -> int:
        return hash(self._digest)

    def __eq__(self, other) -> bool:
        return isinstance(other, TreeFacts) and other._digest == self._digest

    def __reduce__(self):
        return (TreeFacts, (self.other_platform, self.inherited, self.macros, self.compat_macros,
                            self.compat_functions, self.amd_only, self.hip_build, self.context, self.counterparts,
                            self.pytorch))

    def in_context(self, path: str) -> bool:
        """``path`` is in the part of the tree that builds for AMD already."""
        return os.path.normpath(os.path.abspath(path)) in self.context

    def of(self, path: str) -> tuple[str, str, str]:
        """(why ``path`` is the other platform's, why it builds for both platforms as part of a file that has a HIP
        path, why only the AMD build compiles it), each "" where it is not."""
        key = os.path.normpath(os.path.abspath(path))
        return self.other_platform.get(key, ""), self.inherited.get(key, ""), self.amd_only.get(key, "")

    def pytorch_build(self, path: str) -> str:
        """Why PyTorch's extension build compiles ``path`` (and renames the CUDA names it maps), or ""."""
        return self.pytorch.get(os.path.normpath(os.path.abspath(path)), "")


@dataclass(slots=True)
class _TreeFile:
    live: list          # headers included outside the other platform's branches
    dead: list          # (header, why) included only on the other platform's branches
    own_path: bool      # maps CUDA names onto HIP ones (`#define cudaMalloc hipMalloc`): a compatibility layer
    macros: frozenset
    functions: frozenset
    amd: dict = field(default_factory=dict)  # header -> why: included on a branch only the AMD build compiles
    amd_region: bool = False                 # it has a branch only the AMD build compiles
    counterparts: dict = field(default_factory=dict)  # NVIDIA-only macro -> its AMD spelling (`_counterparts`)
    torch: str = ""     # a PyTorch extension header it includes outside the other platform's branches


def _read_tree_file(path: str, macros_of_interest: frozenset, defined: set) -> _TreeFile | None:
    try:
        with open(path, "rb") as fh:
            src = fh.read(_MAX_BYTES)
    except OSError:
        return None
    if b"#" not in src:
        return _TreeFile([], [], False, frozenset(), frozenset(), {})
    lines = lines_of(src)
    branches = classify(lines)
    live, dead, amd = [], [], {}
    torch = ""
    for ln in lines:
        if ln.kind == "define" and macros_of_interest and not branches.in_other(ln.start):
            m = _DEFINE.match(ln.text)
            if m and m.group(1) in macros_of_interest:
                defined.add(m.group(1))
        if ln.kind != "include":
            continue
        m = _QUOTED.match(ln.text) or _ANGLED.match(ln.text)
        if m and not torch and is_extension_header(m.group(1)) and not branches.in_other(ln.start):
            torch = m.group(1)
        header = resolve_quoted(m.group(1), path) if m and m.re is _QUOTED else None
        if header is None or header == path:
            continue
        test = _enclosing_test(branches, ln.start)
        if branches.in_other(ln.start):
            dead.append((header, f"{os.path.basename(path)} includes it under `{test}`" if test else
                         f"{os.path.basename(path)} includes it on the other platform's branch"))
        else:
            live.append(header)
            if branches.in_amd(ln.start):
                amd.setdefault(header, f"{os.path.basename(path)} includes it under `{test}`" if test else
                               f"{os.path.basename(path)} includes it on the AMD build's branch")
    own_path = any(ln.kind == "define" and HIP_PATH_MAP.match(ln.text) is not None and not branches.in_other(ln.start)
                   for ln in lines)
    macros = functions = frozenset()
    if own_path:  # the project's compatibility layer: what it defines
        own = own_facts(src, lines, branches)
        macros, functions = own.macros, own.functions
    return _TreeFile(live, dead, own_path, macros, functions, amd, bool(branches.amd),
                     _counterparts(lines, branches) if branches.amd else {}, torch)


_MACRO_HEAD = re.compile(r"^([A-Za-z_]\w*)(\([^)]*\))?")
_CUDA_WORD = re.compile(r"CUDA|Cuda|cuda")
_HIP_WORD = {"CUDA": "HIP", "Cuda": "Hip", "cuda": "hip"}


# `#if defined(__CUDACC__)`, `#ifdef __NVCC__`: a branch only nvcc compiles (hipcc defines neither).
_NVCC_ONLY = re.compile(r"^\s*(?:defined\s*\(?\s*)?(?:__CUDACC__|__NVCC__)\b\s*\)?\s*$")


def _counterparts(lines: list, branches) -> dict:
    """Macros this file defines only on the other platform's branches (or under a bare test of nvcc's own macro)
    whose HIP spelling (`CUDA` -> `HIP`) it defines on an AMD branch with the same parameters: the project's own
    pair, one per platform."""
    other, amd = {}, {}
    stack: list[str] = []  # the condition of each open block's current branch, as written ("" for an `#else`)
    for ln in lines:
        if ln.kind in ("if", "ifdef"):
            stack.append(ln.text)
        elif ln.kind == "ifndef":
            stack.append("")
        elif ln.kind in ("elif", "else") and stack:
            stack[-1] = ln.text if ln.kind == "elif" else ""
        elif ln.kind == "endif" and stack:
            stack.pop()
        if ln.kind != "define":
            continue
        m = _MACRO_HEAD.match(ln.text)
        if m is None:
            continue
        params = (m.group(2) or "").replace(" ", "")
        if branches.in_other(ln.start) or (stack and _NVCC_ONLY.match(stack[-1])):
            other.setdefault(m.group(1), params)
        elif branches.in_amd(ln.start):
            amd.setdefault(m.group(1), params)
    out = {}
    for name, params in other.items():
        hip = _CUDA_WORD.sub(lambda w: _HIP_WORD[w.group()], name)
        if hip != name and hip not in other and amd.get(hip) == params and name not in amd:
            out[name] = hip
    return out


def tree_facts(paths: list, macros_of_interest: frozenset = frozenset()) -> TreeFacts:
    """Read the files of one run (and the headers they include with quotes) as text: which files only the other
    platform's branches include (directly, or through files that are the other platform's themselves), which have
    no HIP path of their own but are included by files that have one, which of ``macros_of_interest`` the tree
    defines on the AMD path, and what its files with a HIP path define."""
    sources = [os.path.normpath(os.path.abspath(os.fspath(p))) for p in paths]
    files: dict[str, _TreeFile] = {}
    defined: set[str] = set()
    todo = list(sources)
    while todo:
        path = todo.pop()
        if path in files:
            continue
        f = _read_tree_file(path, macros_of_interest, defined)
        if f is None:
            continue
        files[path] = f
        todo.extend(h for h in f.live if h not in files)
        todo.extend(h for h, _ in f.dead if h not in files)
    live_by: dict[str, set[str]] = {}
    dead_by: dict[str, str] = {}
    for path, f in files.items():
        for h in f.live:
            live_by.setdefault(h, set()).add(path)
        for h, why in f.dead:
            dead_by.setdefault(h, why)
    # Grows only: a header whose every AMD-path includer is the other platform's becomes one too.
    other: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for header in set(dead_by) | set(live_by):
            if header in other:
                continue
            includers = live_by.get(header, set())
            if any(f not in other for f in includers):
                continue
            if header in dead_by:
                other[header] = dead_by[header]
            else:
                other[header] = (f"only {Path(sorted(includers)[0]).name} includes it, which is the other "
                                 "platform's")
            changed = True
    # A compatibility layer reaches up: a file sees what the headers it includes give it.
    up = _closure({p for p, f in files.items() if f.own_path and p not in other},
                  lambda p: (f for f in live_by.get(p, ()) if f not in other))
    # A header that only AMD branches include (or files only the AMD build compiles) is the AMD build's alone.
    amd_only: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for header, includers in live_by.items():
            if header in amd_only or header in other:
                continue
            whys = [files[f].amd.get(header) or amd_only.get(f) for f in includers if f not in other]
            if whys and all(whys):
                amd_only[header] = next(w for w in whys if w)
                changed = True
    # ... and down: a header a file with a HIP path includes on its shared code is compiled in that file's context.
    inherited: dict[str, str] = {}
    work = [p for p in files if p in up and p not in other and p not in amd_only]
    while work:
        path = work.pop()
        for h in files[path].live:
            if h in other or h in amd_only or h in up or h in inherited or h not in files:
                continue
            inherited[h] = f"included by `{Path(path).name}`, which builds for both platforms"
            work.append(h)
    # The part of the tree that builds for AMD already: files with a HIP path (a compatibility layer, a branch only
    # the AMD build compiles), what includes them and what they include. A plain header's `#ifdef __CUDACC__` there
    # is arranged for both builds; elsewhere it is CUDA's, to port.
    seeds = {p for p, f in files.items() if (f.own_path or f.amd_region) and p not in other}
    context = _closure(seeds, lambda p: (f for f in live_by.get(p, ()) if f not in other))
    context = _closure(context, lambda p: (h for h in files[p].live if h in files and h not in other) if p in files
                       else ())
    compat_macros, compat_functions = set(), set()
    counterparts: dict[str, str] = {}
    for f in files.values():
        for name, hip in f.counterparts.items():
            counterparts.setdefault(name, hip)
        if f.own_path:
            compat_macros |= f.macros
            compat_functions |= f.functions
    keep = set(sources)
    pytorch = extension_files({p: f.torch for p, f in files.items()}, live_by,
                              {p: f.live for p, f in files.items()}, set(other))
    return TreeFacts({p: w for p, w in other.items() if p in keep}, {p: w for p, w in inherited.items() if p in keep},
                     frozenset(defined), frozenset(compat_macros), frozenset(compat_functions),
                     {p: w for p, w in amd_only.items() if p in keep}, "", frozenset(context & keep), counterparts,
                     {p: w for p, w in pytorch.items() if p in keep})


def _closure(seeds: set, neighbours) -> set:
    """``seeds`` and everything reached from them through ``neighbours`` (a function of a node)."""
    reached = set(seeds)
    work = list(seeds)
    while work:
        for n in neighbours(work.pop()):
            if n not in reached:
                reached.add(n)
                work.append(n)
    return reached


def _enclosing_test(branches: Branches, offset: int) -> str:
    """The platform test nearest before ``offset`` (`#ifdef GGML_USE_HIP`), as written."""
    before = [t for t in branches.tests if t[0] <= offset]
    return before[-1][1] if before else ""
