"""The `-D` switches a PyTorch extension's Python build script passes (`setup.py`'s `CUDAExtension(...,
extra_compile_args={"nvcc": [..., "-DHIPBLAS_USE_HIP_HALF"]})`, a JIT loader's `cpp_extension.load(...,
extra_cuda_cflags=[...])`, `define_macros=[("USE_ROCM", None)]`), and which of them its AMD build gets.

Such a script chooses its AMD flags with Python, not with the build system: `if torch.version.hip:` (or an
`IS_ROCM`-style test, or `... if torch.version.hip else ...`) around the flag. The script is read with Python's own
tokenizer, never run. A switch counts for the AMD build when it sits in a branch taken only on ROCm, when it is
named for the AMD stack outside the NVIDIA build's branches (as build_switches counts a Makefile's), or when it sits
under no condition at all (both builds get it); a branch taken only on NVIDIA (`if torch.version.cuda:`, the
`else` of a ROCm test) or under some other condition (`if debug:`, an opt-in) gives it to the other build or to no
build by default. `torch.cuda.is_available()` is no platform test: ROCm's PyTorch answers it too."""

from __future__ import annotations

import io
import re
import tokenize

# A script that builds a GPU extension, or passes C macros to setuptools; other Python files are not build scripts.
_BUILDS = re.compile(rb"cpp_extension|CUDAExtension|extra_compile_args|extra_cuda_cflags|define_macros")
# PyTorch's HIP extension build passes `-DUSE_ROCM=1` to every source (torch/utils/cpp_extension.py,
# COMMON_HIP_FLAGS, from PyTorch 1.x to 2.x).
_PYTORCH_GPU = re.compile(rb"CUDAExtension|extra_cuda_cflags|cuda_sources")
_PYTORCH_HIP_FLAGS = ("USE_ROCM=1",)
_D_LITERAL = re.compile(r"""^[rRuU]?(["']{1,3})-D([A-Za-z_]\w*)(?:=(\w+))?\1$""")
_PLAIN_LITERAL = re.compile(r"""^[rRuU]?(["']{1,3})([A-Za-z_]\w*)\1$""")
_VALUE_LITERAL = re.compile(r"""^[rRuU]?(["']{1,3})(\w+)\1$""")
_AMD_TEST = re.compile(r"(?<![A-Za-z])(?:hip|rocm|amd)(?![a-z])", re.I)
_NVIDIA_TEST = re.compile(r"version\s*\.\s*cuda|(?<![A-Za-z])(?:nvidia|nvcc|IS_CUDA)(?![a-z])", re.I)
_NEGATED = re.compile(r"\bnot\b(?!\s+None)|\bis\s+None\b|==\s*(?:None|False)\b")
_AMD_NAME = re.compile(r"ROCM|HIP|AMD", re.I)
_NOT_AMD = re.compile(r"CUDA|NVIDIA|NVCC", re.I)
_HEADERS = {"if", "elif", "else", "while", "for", "with", "def", "class", "try", "except", "finally"}
_OPEN, _CLOSE = "([{", ")]}"
AMD, NVIDIA, OTHER = "amd", "nvidia", "other"


def python_switches(text: bytes) -> tuple[set[str], set[str]]:
    """(the switches the AMD build gets, `NAME` or `NAME=VALUE`; every name passed with `-D` or `define_macros`)."""
    if not _BUILDS.search(text):
        return set(), set()
    amd: set[str] = set(_PYTORCH_HIP_FLAGS) if _PYTORCH_GPU.search(text) else set()
    named: set[str] = {f.partition("=")[0] for f in amd}
    for line, kinds in _logical_lines(text):
        macros_line = any(t.type == tokenize.NAME and "macro" in t.string.lower() for t in line)
        for k, tok in enumerate(line):
            if tok.type != tokenize.STRING:
                continue
            switch = _switch(line, k, macros_line)
            if switch is None:
                continue
            name = switch.partition("=")[0]
            named.add(name)
            where = _combine(kinds + _inline_kinds(line, k))
            if name.startswith("__") or where == NVIDIA:
                continue
            if where == AMD or where is None and not _NOT_AMD.search(name) \
                    or _AMD_NAME.search(name) and not _NOT_AMD.search(name):
                amd.add(switch)
    return amd, named


def _switch(line: list, k: int, macros_line: bool) -> str | None:
    """`NAME[=VALUE]` of a `"-DNAME[=VALUE]"` literal, or of a `("NAME", None | "VALUE" | 1)` pair on a line naming
    macros (`define_macros=[...]`, `macros += [...]`)."""
    m = _D_LITERAL.match(line[k].string)
    if m:
        return m.group(2) + (f"={m.group(3)}" if m.group(3) else "")
    if not macros_line or k == 0 or line[k - 1].string != "(" or k + 3 >= len(line) \
            or line[k + 1].string != "," or line[k + 3].string not in (")", ","):
        return None
    m = _PLAIN_LITERAL.match(line[k].string)
    if not m:
        return None
    value = line[k + 2]
    if value.string == "None":
        return m.group(2)
    if value.type == tokenize.NUMBER:
        return f"{m.group(2)}={value.string}"
    v = _VALUE_LITERAL.match(value.string) if value.type == tokenize.STRING else None
    return f"{m.group(2)}={v.group(2)}" if v else None


def _kind(condition: str) -> str:
    amd, nvidia = _AMD_TEST.search(condition), _NVIDIA_TEST.search(condition)
    if bool(amd) == bool(nvidia):
        return OTHER
    negated = bool(_NEGATED.search(condition))
    return (AMD if amd else NVIDIA) if not negated else (NVIDIA if amd else AMD)


def _else_of(arms: list[str]) -> str:
    """The `else` of a chain: NVIDIA's where an arm was AMD's, AMD's where one was NVIDIA's (`if torch.version.cuda:
    ... else:`), some other case otherwise."""
    if AMD in arms:
        return NVIDIA
    if NVIDIA in arms:
        return AMD
    return OTHER


def _combine(kinds: list) -> str | None:
    """What a switch under these conditions is: the NVIDIA build's, an opt-in (some other condition, even within a
    ROCm branch), the AMD build's, or both builds' (None: no condition)."""
    for kind in (NVIDIA, OTHER, AMD):
        if kind in kinds:
            return kind
    return None


def _logical_lines(text: bytes):
    """Each logical line's tokens, with the kinds of the blocks around it (and of its own `if x:` head, for a body
    on the same line)."""
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(text).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):  # not Python 3 (or cut off): no switches read
        return
    stack: list = []          # the kind of each open block
    chains: dict = {}         # depth -> the arms of the last if/elif chain at that depth
    pending = None            # the kind of the header just read, for the INDENT that opens its block
    line: list = []
    for tok in tokens:
        if tok.type == tokenize.INDENT:
            stack.append(pending)
            pending = None
            continue
        if tok.type == tokenize.DEDENT:
            chains.pop(len(stack), None)
            if stack:
                stack.pop()
            continue
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING):
            continue
        if tok.type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
            line.append(tok)
            continue
        if not line:
            continue
        head = line[0].string
        depth = len(stack)
        own = None
        if line[0].type == tokenize.NAME and head in _HEADERS:
            colon = _header_colon(line)
            if head == "if" or head == "elif":
                own = _kind(" ".join(t.string for t in line[1:colon]))
                arms = [own] if head == "if" else chains.get(depth, []) + [own]
                chains[depth] = arms
                if head == "elif" and AMD in arms[:-1] and own == OTHER:
                    own = NVIDIA  # taken only where the ROCm test before it failed
            elif head == "else" and depth in chains:
                own = _else_of(chains.pop(depth))
            if head not in ("if", "elif", "else"):
                chains.pop(depth, None)
            body = line[colon + 1:] if colon is not None else []
            if body:  # `if torch.version.hip: flags += ["-DX"]`
                yield body, [k for k in stack if k] + ([own] if own else [])
            else:
                pending = own
        else:
            chains.pop(depth, None)
            yield line, [k for k in stack if k]
        line = []


def _header_colon(line: list) -> int | None:
    """The index of the `:` ending a block header (outside brackets and lambdas)."""
    depth = 0
    lambdas = 0
    for k, tok in enumerate(line):
        if tok.type == tokenize.OP:
            if tok.string in _OPEN:
                depth += 1
            elif tok.string in _CLOSE:
                depth -= 1
            elif tok.string == ":" and depth == 0:
                if lambdas:
                    lambdas -= 1
                else:
                    return k
        elif tok.type == tokenize.NAME and tok.string == "lambda" and depth == 0:
            lambdas += 1
    return None


def _inline_kinds(line: list, k: int) -> list[str]:
    """The kinds of the conditional expressions (`A if torch.version.hip else B`) token ``k`` is an arm of."""
    groups = _groups(line)
    out = []
    for p, tok in enumerate(line):
        if tok.type != tokenize.NAME or tok.string != "if" or p == 0:
            continue
        g = groups[p][-1]
        if g not in groups[k]:
            continue
        start = p - 1  # the left arm: back to a `,`, `=`, `:` or the opening bracket of the `if`'s group
        while start >= 0 and not (groups[start][-1] == g and line[start].string in (",", "=", "+=", ":", "return")
                                  or groups[start][-1] != g and len(groups[start]) < len(groups[p])):
            start -= 1
        end_else = next((q for q in range(p + 1, len(line)) if groups[q][-1] == g and line[q].string == "else"),
                        None)
        if end_else is None:
            continue  # a comprehension's filter, not a choice between two values
        stop = next((q for q in range(end_else + 1, len(line))
                     if groups[q][-1] == g and line[q].string in (",", "if") or len(groups[q]) < len(groups[p])),
                    len(line))
        kind = _kind(" ".join(t.string for t in line[p + 1:end_else]))
        if start < k < p:
            out.append(kind)
        elif end_else < k < stop:
            out.append(_else_of([kind]))
    return out


def _groups(line: list) -> list[tuple]:
    """For each token, the ids of the brackets around it, outermost first (0: none)."""
    stack = [0]
    out = []
    n = 0
    for tok in line:
        if tok.type == tokenize.OP and tok.string in _CLOSE and len(stack) > 1:
            stack.pop()
        out.append(tuple(stack))
        if tok.type == tokenize.OP and tok.string in _OPEN:
            n += 1
            stack.append(n)
    return out
