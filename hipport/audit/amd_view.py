"""A file as hipcc compiles it for an AMD target: the `#if` branches that configuration never compiles are blanked.

Single-source projects keep the CUDA spelling beside the HIP one (`#ifdef USE_ROCM ... #else ... #endif`). The
checks must judge the branch the AMD build compiles, not the one for NVIDIA, so before they run every line of a
branch that is certainly not compiled for AMD becomes spaces. Offsets and line numbers stay as they were, so
findings and patches computed on the view apply to the file's own bytes.

A condition is judged only when it can be: names hipcc defines for AMD are true, names of the NVIDIA platform are
false, the project's own switches (settings' `defines`, `-D` flags of its build files) are true, and so are the
names rules/platforms.toml gives the AMD build (`USE_ROCM`, `*_HIP`), which a project's HIP build passes
(HeCBench attention-paged-hip's `-DUSE_ROCM`) and whose other branches `convert` leaves as the NVIDIA build's; anything
else (`__CUDA_ARCH__`, `CUDA_VERSION`, a name the file does not settle) leaves every branch of that `#if` in view.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from hipport.platforms import platform_data

# What hipcc (HIP-Clang) defines when it compiles for an AMD GPU, on the host and on the device pass alike.
AMD_DEFINES = {"__HIP_PLATFORM_AMD__": 1, "__HIP_PLATFORM_HCC__": 1, "__HIPCC__": 1, "__HIP__": 1}
# Never defined for AMD. `__CUDA_ARCH__` and `__CUDACC__` are not here: a CUDA source is audited before convert
# renames them to their HIP twins, so their branches are the device pass / the HIP build.
# `__PTX__` (flashinfer's `#if defined(__PTX__)` around its asm): neither rocm7-hipcc (7.2.4) nor rocm64-hipcc (6.4.3)
# defines it, host or device pass (`-dM -E -x hip`, checked).
AMD_UNDEFINED = frozenset({"__HIP_PLATFORM_NVIDIA__", "__HIP_PLATFORM_NVCC__", "__NVCC__", "__PTX__"})
# The CUDA toolkit's version macros: CUDA's headers and nvcc define them, and neither hipcc nor any header of ROCm
# 6.2.2, 6.4.3 or 7.2.4 does (their include trees and clang's, and `hipcc -dM -E`, checked), and convert leaves them
# as written (`cuda-version-macro`). So `#if CUDART_VERSION >= 11000` is false in the AMD build unless the project
# defines the macro itself: in its settings' `defines` (`CUDART_VERSION=12000`) or in a header the view reads.
TOOLKIT_VERSIONS = frozenset({
    "CUDART_VERSION", "CUDA_VERSION", "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__", "__CUDACC_VER_BUILD__",
    "__CUDA_API_VERSION", "CUBLAS_VERSION", "CUBLAS_VER_MAJOR", "CUBLAS_VER_MINOR", "CUBLAS_VER_PATCH",
    "CUSPARSE_VERSION", "CUSPARSE_VER_MAJOR", "CUSPARSE_VER_MINOR", "CUFFT_VERSION", "CUFFT_VER_MAJOR",
    "CUSOLVER_VERSION", "CURAND_VERSION", "CUDNN_VERSION", "CUDNN_MAJOR", "CUDNN_MINOR", "CUB_VERSION",
    "NVRTC_VERSION", "CUTLASS_VERSION",
})

_COND = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|elifdef|elifndef|define|undef|include)\b(.*)$")
_QUOTED = re.compile(rb'^[ \t]*"([^"]+)"')
_TOKEN = re.compile(r"\s*(defined|[A-Za-z_]\w*|0[xX][0-9a-fA-F]+[uUlL]*|\d+[uUlL]*|&&|\|\||==|!=|<=|>=|<<|>>|"
                    r"[()!<>+\-*/%])")
_DEFINE = re.compile(rb"^[ \t]*([A-Za-z_]\w*)(?:[ \t]+(\d+))?[ \t]*$")


@lru_cache(maxsize=4096)
def amd_switch(name: str) -> bool:
    """A name rules/platforms.toml gives the AMD build's switch (`USE_ROCM`, `GGML_USE_HIP`): defined there, as its
    HIP build passes it, unless the file, its headers or the settings (`!USE_ROCM`) say otherwise."""
    return platform_data().side(name) == "amd"


def defines_for(options) -> dict[str, int]:
    """Known macro values for the AMD build: hipcc's, then the project's switches (`NAME` or `NAME=VALUE`)."""
    known = dict(AMD_DEFINES)
    for item in getattr(options, "defines", ()) or ():
        if item.startswith("!"):
            continue
        name, _, value = item.partition("=")
        known[name.strip()] = int(value) if value.strip().lstrip("-").isdigit() else 1
    return known


def undefined_for(options) -> frozenset[str]:
    """Names the AMD build never defines: the NVIDIA platform's, and the project's `!NAME` entries (`!CUDA_VERSION`
    for a project whose ROCm build includes no CUDA header, so `#if CUDA_VERSION >= 9000` is false there)."""
    items = getattr(options, "defines", ()) or ()
    extra = {item[1:].strip() for item in items if item.startswith("!")}
    # A project that sets a toolkit version for its AMD build (`CUDART_VERSION=12000`) has it defined.
    toolkit = TOOLKIT_VERSIONS - {item.partition("=")[0].strip() for item in items if not item.startswith("!")}
    return _Undefined(AMD_UNDEFINED | toolkit | extra, frozenset(extra))


class _Undefined(frozenset):
    """The names undefined for AMD, remembering those the project stated (`!CUDA_VERSION`): a toolkit version it
    states undefined settles a condition for AMD (`Facts.stated`), one hipport merely assumes undefined does not."""

    def __new__(cls, names, stated=frozenset()):
        self = super().__new__(cls, names)
        self.stated = stated
        return self

    def __reduce__(self):
        return (_Undefined, (frozenset(self), self.stated))


# ---------------------------------------------------------------------------------------------------------------
# Three-valued evaluation of an `#if` condition: an int, or None where the value cannot be known.

class _Unknown(Exception):
    pass


def _evaluate(expr: str, known: dict[str, int], undefined: set[str]) -> int | None:
    expr = re.sub(r"/\*.*?\*/|//.*$", " ", expr)
    tokens, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            if expr[pos:].strip():
                return None
            break
        tokens.append(m.group(1))
        pos = m.end()
    parser = _Parser(tokens, known, undefined)
    try:
        value = parser.top()
    except (_Unknown, IndexError, ZeroDivisionError):
        return None
    return value if parser.pos == len(tokens) else None


class _Parser:
    """Precedence climbing over `|| && == != < > <= >= + - * / % !` and `defined`. An operand that cannot be
    known raises, except where `||` / `&&` settle the answer without it."""

    _LEVELS = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

    def __init__(self, tokens, known, undefined):
        self.t, self.pos, self.known, self.undefined = tokens, 0, known, undefined

    def top(self):
        return self._level(0)

    def _level(self, k):
        if k == len(self._LEVELS):
            return self._unary()
        left = self._operand(k)
        while self.pos < len(self.t) and self.t[self.pos] in self._LEVELS[k]:
            op = self.t[self.pos]
            self.pos += 1
            left = _apply(op, left, self._operand(k))
        if left is None and k > 1:
            raise _Unknown
        return left

    def _operand(self, k):
        """An operand of `||`/`&&` may be unknown (None) and the other may still settle the answer."""
        if k > 1:
            return self._level(k + 1)
        at = self.pos
        try:
            return self._level(k + 1)
        except _Unknown:
            self.pos = at
            self._skip_operand(k)
            return None

    def _skip_operand(self, k):
        depth = 0
        while self.pos < len(self.t):
            tok = self.t[self.pos]
            if tok == "(":
                depth += 1
            elif tok == ")":
                if depth == 0:
                    return
                depth -= 1
            elif depth == 0 and tok in ("||",) + (("&&",) if k == 1 else ()):
                return
            self.pos += 1

    def _unary(self):
        tok = self.t[self.pos]
        self.pos += 1
        if tok == "!":
            return int(not self._unary())
        if tok == "-":
            return -self._unary()
        if tok == "(":
            value = self._level(0)
            if value is None or self.t[self.pos] != ")":
                raise _Unknown
            self.pos += 1
            return value
        if tok == "defined":
            paren = self.t[self.pos] == "("
            if paren:
                self.pos += 1
            name = self.t[self.pos]
            self.pos += 1 + paren
            if name in self.known:
                return 1
            if name in self.undefined:
                return 0
            if amd_switch(name):
                return 1
            raise _Unknown
        if tok[0].isdigit():
            return int(tok.rstrip("uUlL"), 0) if not (len(tok) > 1 and tok[0] == "0" and tok[1].isdigit()) \
                else int(tok.rstrip("uUlL"), 8)
        if tok in self.known:
            return self.known[tok]
        if tok in self.undefined:
            return 0  # an undefined name in `#if` is 0
        if amd_switch(tok):
            return 1
        raise _Unknown


def _apply(op, a, b):
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
    return int({"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]) \
        if op in ("==", "!=", "<", ">", "<=", ">=") else \
        {"<<": a << b, ">>": a >> b, "+": a + b, "-": a - b, "*": a * b, "/": a // b, "%": a % b}[op]


# ---------------------------------------------------------------------------------------------------------------

def _logical_lines(src: bytes):
    """(start, end, text) of each logical line, backslash continuations joined."""
    pos, n = 0, len(src)
    while pos < n:
        start = pos
        parts = []
        while True:
            nl = src.find(b"\n", pos)
            end = n if nl == -1 else nl
            line = src[pos:end].rstrip(b"\r")
            pos = n if nl == -1 else nl + 1
            if line.endswith(b"\\") and pos < n:
                parts.append(line[:-1])
                continue
            parts.append(line)
            break
        yield start, pos, b" ".join(parts)


_QUICK = re.compile(rb"^[ \t]*#[ \t]*(?:if|elif)", re.M)
_CONDITION_LINE = re.compile(rb"^[ \t]*#[ \t]*(?:if|elif)\w*([^\n]*)", re.M)


def _tests_a_switch(src: bytes) -> bool:
    """A condition of ``src`` names one of the AMD build's switches (`#ifdef USE_ROCM`)."""
    return any(amd_switch(w.decode("latin-1")) for m in _CONDITION_LINE.finditer(src)
               for w in re.findall(rb"[A-Za-z_]\w*", m.group(1)))


class Facts:
    """What a view found besides its text, for the findings of the conversion (which reads the file as written):
    ``dead``, the (start, end) byte offsets of each logical line the AMD build never compiles, the `#if`/`#else`/
    `#endif` lines nested in such a branch included; ``settled``, the start offsets of the `#if`/`#elif` lines whose
    value for the AMD build needs no CUDA toolkit version (`#if !defined(USE_ROCM) && CUDART_VERSION >= 11000`)."""

    __slots__ = ("dead", "settled", "stated")

    def __init__(self) -> None:
        self.dead: list[tuple[int, int]] = []
        self.settled: set[int] = set()
        self.stated: frozenset = frozenset()  # toolkit versions the project states undefined (`!CUDA_VERSION`)


def view(src: bytes, known: dict[str, int], undefined=AMD_UNDEFINED, path: str = "",
         facts: Facts | None = None) -> bytes:
    """``src`` with every line of a branch the AMD build certainly does not compile blanked (newlines kept).
    With ``path``, the headers it includes with quotes (beside it) add what they certainly define, and mark as
    undefined what they define only on branches the AMD build never compiles (`#define PTX_AVAILABLE` under
    `#ifndef __HIP_PLATFORM_AMD__`). ``facts``, when given, is filled in (see `Facts`)."""
    if not _QUICK.search(src):
        return src
    if not (path and b'include' in src) and not any(w.encode() in src for w in (*known, *undefined)) \
            and not _tests_a_switch(src):
        return src
    if facts is not None:
        facts.stated = getattr(undefined, "stated", frozenset())
    return _walk(src, dict(known), set(undefined), path, 0, facts)[0]


# Possessive: a lazy comment body inside a repetition can span several comments, which backtracks
# exponentially on a licence box of block comments that no guard follows.
_GUARD = re.compile(rb"\A(?:\s|//[^\n]*\n|/\*.*?\*/)*+#[ \t]*(?:ifndef[ \t]+(\w+)|if[ \t]+!\s*defined\s*\(?\s*(\w+)\s*\)?)"
                    rb"[ \t]*\r?\n[ \t]*#[ \t]*define[ \t]+(\w+)", re.S)


def _with_dead(undefined, dead_defines: set, live_defines: set, known: dict):
    """What is undefined at this point of the file: also a macro this file has defined so far only on branches the
    AMD build never compiles (flashinfer's `#define FLASHINFER_CP_ASYNC_ENABLED` under `#if __CUDACC_VER_MAJOR__ >=
    11`), unless the build defines it (``known``: the settings, `-D`)."""
    extra = {x for x in dead_defines if x not in live_defines and x not in known}
    if not extra:
        return undefined
    merged = _Undefined(set(undefined) | extra, getattr(undefined, "stated", frozenset())) \
        if isinstance(undefined, _Undefined) else set(undefined) | extra
    return merged


def _walk(src: bytes, known: dict[str, int], undefined: set[str], path: str, depth: int, facts: Facts | None = None):
    """(view, known after it, undefined after it); ``facts`` is filled in when given."""
    guard = _GUARD.match(src)
    if guard and (guard.group(1) or guard.group(2)) == guard.group(3):
        undefined = undefined | {guard.group(3).decode()}  # an include guard is open on the first inclusion
    dead_defines: set[str] = set()
    live_defines: set[str] = set()
    out = bytearray(src)
    # frames: [dead_before, settled, certain, any_unknown] per open `#if`
    #   dead: this branch is not compiled; settled: an earlier branch was certainly taken;
    #   certain: this branch is certainly compiled (so its `#define`s are facts)
    stack: list[list] = []
    dead = False
    certain = True
    changed = False
    for start, end, line in _logical_lines(src):
        m = _COND.match(line)
        kind = m.group(1).decode() if m else ""
        if facts is not None and kind and kind not in ("define", "undef", "include"):
            opens = kind in ("if", "ifdef", "ifndef")
            if (dead if opens else bool(stack) and stack[-1]["outer_dead"]):
                facts.dead.append((start, end))  # a conditional inside a branch never compiled
            elif kind in ("if", "elif") and _settled_without_toolkit(m.group(2), known, undefined, facts.stated):
                facts.settled.add(start)
        if kind in ("if", "ifdef", "ifndef"):
            value = _condition(kind, m.group(2), known, _with_dead(undefined, dead_defines, live_defines, known))
            stack.append({"outer_dead": dead, "outer_certain": certain, "settled": value == 1, "unknown": value is None})
            dead = dead or value == 0
            certain = certain and not dead and value == 1
            continue
        if kind in ("elif", "elifdef", "elifndef", "else") and stack:
            f = stack[-1]
            value = 1 if kind == "else" else _condition(kind[2:] if kind != "elif" else "if", m.group(2), known,
                                                       _with_dead(undefined, dead_defines, live_defines, known))
            if f["settled"]:
                value = 0
            dead = f["outer_dead"] or value == 0
            certain = f["outer_certain"] and not dead and value == 1 and not f["unknown"]
            f["settled"] = f["settled"] or value == 1
            f["unknown"] = f["unknown"] or value is None
            continue
        if kind == "endif" and stack:
            f = stack.pop()
            dead, certain = f["outer_dead"], f["outer_certain"]
            continue
        if dead:
            d = _DEFINE.match(m.group(2)) if kind == "define" else None
            if d:
                dead_defines.add(d.group(1).decode())
            for k in range(start, end):
                if out[k] not in (0x0A, 0x0D):
                    out[k] = 0x20
            changed = True
            if facts is not None:
                facts.dead.append((start, end))
            continue
        if kind == "include" and certain and path and depth < _MAX_DEPTH:
            q = _QUOTED.match(m.group(2))
            if q:
                header = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)),
                                                       q.group(1).decode("utf-8", "replace")))
                got = _exports(header, depth + 1, tuple(sorted(known.items())), frozenset(undefined))
                if got is not None:
                    known.update(got[0])
                    undefined |= got[1] - set(known)
            continue
        if kind == "define":
            d = _DEFINE.match(m.group(2))
            if d:
                live_defines.add(d.group(1).decode())
            if d and certain:
                known[d.group(1).decode()] = int(d.group(2)) if d.group(2) else 1
                undefined.discard(d.group(1).decode())
            elif d:  # defined on some paths only: no longer known either way
                known.pop(d.group(1).decode(), None)
                undefined.discard(d.group(1).decode())
        elif kind == "undef":
            name = m.group(2).strip().decode("latin-1")
            known.pop(name, None)
            if certain:
                undefined.add(name)
            else:
                undefined.discard(name)
    # Defined only where the AMD build never goes: undefined for it, unless a live line defines it too.
    undefined |= {name for name in dead_defines if name not in known and name not in live_defines}
    return (bytes(out) if changed else src), known, undefined


_MAX_DEPTH = 8
_export_cache: dict = {}


def _exports(header: str, depth: int, known: tuple, undefined: frozenset):
    """What an included header leaves defined and undefined for the AMD build (None if it cannot be read)."""
    try:
        st = os.stat(header)
    except OSError:
        return None
    key = (header, st.st_mtime_ns, st.st_size, known, undefined)
    if key in _export_cache:
        return _export_cache[key]
    if len(_export_cache) > 4096:
        _export_cache.clear()
    _export_cache[key] = None  # an include cycle sees nothing of itself
    try:
        with open(header, "rb") as fh:
            src = fh.read(2_000_000)
    except OSError:
        return None
    _, k, u = _walk(src, dict(known), set(undefined), header, depth)
    result = ({n: v for n, v in k.items() if (n, v) not in known}, frozenset(u - set(undefined)))
    _export_cache[key] = result
    return result


def _settled_without_toolkit(rest: bytes, known, undefined, stated=frozenset()) -> bool:
    """Whether an `#if` condition that names a CUDA toolkit version has a value for AMD without it."""
    if not any(name.encode() in rest for name in TOOLKIT_VERSIONS):
        return False
    assumed = TOOLKIT_VERSIONS - stated
    return _condition("if", rest, {k: v for k, v in known.items() if k not in assumed},
                      undefined - assumed) is not None


def _condition(kind: str, rest: bytes, known, undefined) -> int | None:
    text = rest.decode("latin-1")
    if kind in ("ifdef", "ifndef"):
        name = re.sub(r"/\*.*?\*/|//.*$", " ", text).strip()
        if name in known:
            value = 1
        elif name in undefined:
            value = 0
        elif amd_switch(name):
            value = 1
        else:
            return None
        return value if kind == "ifdef" else 1 - value
    value = _evaluate(text, known, undefined)
    return None if value is None else int(bool(value))
