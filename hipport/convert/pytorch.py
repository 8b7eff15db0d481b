"""PyTorch extensions: the c10/ATen names of PyTorch's own GPU API, and a `setup.py` that builds with
`CUDAExtension` (`rules/pytorch.toml`, docs/convert.md "PyTorch extensions").

On ROCm, PyTorch's extension build hipifies the sources itself and rewrites these names for the PyTorch it builds
against: hipify v1 (PyTorch 2.10 and older) to its `...MasqueradingAsCUDA` wrappers and `c10::hip`, hipify v2
(2.11 on) not at all, the headers to either release's own. A spelling chosen here would be one release's and could
break the other's build, while the CUDA spelling builds with both; so the names stay as written and each kind is
reported once per file (`pytorch-name`, info) with what either release writes. What ROCm PyTorch keeps in every
release (`x.is_cuda()`, `torch::kCUDA`) is left and not reported. A name is PyTorch's when written behind its
namespace (`at::cuda::`, `c10::cuda::`) or after a `using namespace` of it; a user's own `getCurrentCUDAStream` in
another namespace, a member of that name or a macro the file defines is not."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hipport import directives as dirs
from hipport.convert.context import token_at
from hipport.model import FileResult, Finding
from hipport.pytorch_data import TorchData, TorchName, load_pytorch, setup_builds_extension
from hipport.scan import COMMENT, IDENT, KEYWORD

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext

NAME_FINDING = "pytorch-name"
ROC_FINDING = "pytorch-roc-handle"
SETUP_FINDING = "pytorch-extension"
_V1 = "hipify v1, PyTorch 2.10 and older"
_V2 = "v2, from 2.11"
_USING = re.compile(rb"\busing\s+namespace\s+((?:::\s*)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*;")
_words: dict[int, re.Pattern] = {}
# What every file the pass can report on holds (a PyTorch header, `at::cuda::`, `c10::cuda::`, a c10 check macro):
# tested first, at memchr speed, as most CUDA files hold none of them.
_MARKS = (b"at::cuda", b"c10::cuda", b"c10/", b"ATen/", b"torch/", b"C10_CUDA_")


def _word_pattern(data: TorchData) -> re.Pattern:
    """The words the pass looks at, as one regex (searched at C speed; most GPU files hold none of them)."""
    made = _words.get(id(data))
    if made is None:
        words = {*data.names, *data.macros, *(k.name for k in data.kept.values() if k.roc and not k.pattern),
                 *(ns.rsplit("::", 1)[-1] for ns in data.namespaces)}
        made = _words[id(data)] = re.compile(rb"\b(?:" + b"|".join(
            re.escape(w.encode()) for w in sorted(words, key=len, reverse=True)) + rb")\b")
    return made


def report_pytorch_names(ctx: "ConversionContext") -> None:
    """Report the c10/ATen names and headers the file uses that ROCm PyTorch's extension build rewrites itself (see
    the module's text); nothing is edited."""
    if not any(mark in ctx.src for mark in _MARKS):
        return
    data = load_pytorch()
    seen: set[str] = set()
    extension = _report_headers(ctx, data, seen)
    pattern = _word_pattern(data)
    if pattern.search(ctx.src) is None:
        return
    # (where, namespace) of each `using namespace`: an unqualified name after one of PyTorch's is PyTorch's
    usings = [(m.start(), re.sub(rb"\s+", b"", m.group(1)).lstrip(b":").decode("latin-1"))
              for m in _USING.finditer(ctx.src)]
    tokens = ctx.tokens
    for m in pattern.finditer(ctx.src):
        i = token_at(tokens, m.start())
        if i is None or tokens.kinds[i] != IDENT or tokens.ends[i] != m.end() or ctx.skip[i] or _member(ctx, i):
            continue
        word = m.group().decode("latin-1")
        chain, first = _qualifiers(ctx, i)
        where = tokens.starts[first]  # a finding points at the name as written, qualifiers and all
        in_use = [ns for at, ns in usings if at < m.start()] if not chain else []
        entry = data.names.get(word)
        if entry is not None and _is_pytorchs(chain, entry.qualifiers, in_use) and (chain or not _declared(ctx, i)):
            written = "::".join((*chain, word))
            _report(ctx, seen, written, where, _name_message(written, chain, entry))
            continue
        macro = data.macros.get(word)
        if macro is not None and not chain and word not in ctx.defines and (extension or not macro.extension_only):
            _report(ctx, seen, word, m.start(), _macro_message(macro))
            continue
        namespace = "::".join((*chain, word))
        if namespace in data.namespaces:
            _report_namespace(ctx, data, seen, i, where, namespace, data.namespaces[namespace][0])
            continue
        kept = data.kept.get(word)
        if kept is not None and kept.roc and ctx.options.roc and _is_pytorchs(chain, ("at::cuda",), in_use) \
                and (chain or extension):
            written = "::".join((*chain, word))
            if written not in seen:
                seen.add(written)
                ctx.finding(ROC_FINDING, "warning", where, f"`{written}`: {kept.roc}", subject=word)


def _report(ctx, seen: set[str], subject: str, offset: int, message: str) -> None:
    if subject not in seen:
        seen.add(subject)
        ctx.finding(NAME_FINDING, "info", offset, message, subject=subject)


def _report_headers(ctx, data: TorchData, seen: set[str]) -> bool:
    """Report each c10/ATen CUDA header the file includes; whether it includes a header of a PyTorch extension."""
    extension = False
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if target is None:
            continue
        header = target[2].decode("latin-1").strip()
        extension = extension or data.is_extension_header(header)
        entry = data.header(header)
        if entry is None or header in seen:
            continue
        if not entry.v1:
            message = (f"`{header}` left for PyTorch: hipport knows no ROCm counterpart of it; check that ROCm "
                       "PyTorch's extension build has one")
        elif entry.v1 == entry.v2:
            message = f"`{header}` left for PyTorch: on ROCm its extension build includes `{entry.v1}` for it"
        else:
            message = (f"`{header}` left for PyTorch: on ROCm its extension build includes `{entry.v1}` for it "
                       f"({_V1}) or `{entry.v2}` ({_V2})")
        _report(ctx, seen, header, target[0], message)
    return extension


def _report_namespace(ctx, data: TorchData, seen: set[str], i: int, where: int, namespace: str, v1: str) -> None:
    """`c10::cuda::X` (hipify v1 writes `c10::hip::X`), or the namespace alone (`using namespace c10::cuda;`); a
    name of `[names]` behind it is reported as that name."""
    after = _next_code(ctx, i)
    member = _next_code(ctx, after) if after is not None and ctx.tokens.text(after) == b"::" else None
    if member is not None and ctx.tokens.kinds[member] == IDENT:
        name = ctx.tokens.text(member).decode("latin-1")
        entry = data.names.get(name)
        if entry is not None and namespace in entry.qualifiers:
            return
        written, hip = f"{namespace}::{name}", f"{v1}::{name}"
    else:
        written, hip = namespace, v1
    _report(ctx, seen, written, where,
            f"`{written}` left for PyTorch: on ROCm its extension build rewrites it ({_V1}: `{hip}`; {_V2}: kept "
            "as it is)")


def _name_message(written: str, chain: tuple, entry: TorchName) -> str:
    hip = "::".join((*("hip" if q == "cuda" else q for q in chain), entry.v1))
    note = f"; {entry.v1_note}" if entry.v1_note else ""
    return (f"`{written}` left for PyTorch: on ROCm its extension build rewrites it ({_V1}: `{hip}`{note}; "
            f"{_V2}: kept as it is)")


def _macro_message(entry: TorchName) -> str:
    if entry.v1 == entry.v2:
        return f"`{entry.name}` left for PyTorch: on ROCm its extension build rewrites it to `{entry.v1}` ({entry.why})"
    return (f"`{entry.name}` left for PyTorch: on ROCm its extension build rewrites it ({_V1}: `{entry.v1}`; {_V2}: "
            "kept as it is)")


def _is_pytorchs(chain: tuple, qualifiers: tuple, usings: list[str]) -> bool:
    """Written behind one of PyTorch's namespaces, or without a qualifier after a `using namespace` of one."""
    if chain:
        return "::".join(chain) in qualifiers
    return any(q in usings for q in qualifiers)


def _qualifiers(ctx, i: int) -> tuple[tuple, int]:
    """The namespaces written before token ``i`` (`at::cuda::getCurrentCUDAStream` -> ("at", "cuda"); a leading
    `::` is dropped), and the index of the first of them (``i`` without any)."""
    chain = []
    tokens = ctx.tokens
    first = i
    j = _prev_code(ctx, i)
    while j is not None and tokens.text(j) == b"::":
        k = _prev_code(ctx, j)
        if k is None or tokens.kinds[k] != IDENT:
            break
        chain.append(tokens.text(k).decode("latin-1"))
        first = k
        j = _prev_code(ctx, k)
    return tuple(reversed(chain)), first


# Before a name followed by `(`, these make it a call, not a declaration (`return getCurrentCUDAStream();`).
_CALL_WORDS = {b"return", b"else", b"do", b"case", b"throw", b"co_return", b"co_yield", b"sizeof", b"decltype",
               b"new", b"delete", b"typeid", b"alignof", b"goto", b"const", b"auto"}


def _declared(ctx, i: int) -> bool:
    """Token ``i`` is the name of a declaration (`inline int getCurrentCUDAStream()`, `CUDAStream s;` is a use):
    a type or specifier word right before it, and a `(` after it."""
    j = _prev_code(ctx, i)
    k = _next_code(ctx, i)
    if j is None or k is None or ctx.tokens.text(k) != b"(":
        return False
    return ctx.tokens.kinds[j] in (IDENT, KEYWORD) and ctx.tokens.text(j) not in _CALL_WORDS


def _member(ctx, i: int) -> bool:
    j = _prev_code(ctx, i)
    return j is not None and ctx.tokens.text(j) in (b".", b"->")


def _prev_code(ctx, i: int) -> int | None:
    j = i - 1
    while j >= 0 and ctx.tokens.kinds[j] == COMMENT:
        j -= 1
    return j if j >= 0 else None


def _next_code(ctx, i: int) -> int | None:
    j = i + 1
    n = len(ctx.tokens)
    while j < n and ctx.tokens.kinds[j] == COMMENT:
        j += 1
    return j if j < n else None


# -- setup.py -------------------------------------------------------------------------------------------------------

def setup_result(src: bytes, path: str) -> FileResult:
    """A `setup.py`, left as it is; one finding (`pytorch-extension`, info) when it builds a PyTorch extension with
    `CUDAExtension`/`BuildExtension`: PyTorch builds such an extension for ROCm itself."""
    result = FileResult(path, src, src)
    found = setup_builds_extension(src)
    if found is None:
        return result
    offset, word = found
    line = src.count(b"\n", 0, offset) + 1
    col = offset - (src.rfind(b"\n", 0, offset) + 1) + 1
    result.findings.append(Finding(
        SETUP_FINDING, "info", line, col,
        f"`{word}` builds a PyTorch extension: on ROCm PyTorch hipifies its sources itself when it builds them, so "
        "installing it against a ROCm PyTorch builds it for AMD; the c10/ATen names are left for that build",
        subject="setup.py"))
    return result
