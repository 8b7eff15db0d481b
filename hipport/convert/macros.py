"""Preprocessor conditions that test CUDA's own macros: header guards become HIP's, device-pass tests become
`__HIP_DEVICE_COMPILE__`, and numeric version or architecture comparisons are reported, never rewritten (an info where the branch the AMD build
then compiles stands there: `version_branches.py`). A macro
the project defines itself for the AMD build (a compatibility header's `#define __CUDA_ARCH__ 1300`, in this file,
the headers it includes with quotes, or elsewhere in the tree) is the project's: its tests stay as written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipport.convert.calls import next_code, prev_code
from hipport.convert.version_branches import taken_branch_note
from hipport.scan import IDENT

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext

_CONDITIONS = {b"if", b"elif", b"ifdef", b"ifndef", b"elifdef", b"elifndef"}
_PRESENCE_DIRECTIVES = {b"ifdef", b"ifndef", b"elifdef", b"elifndef"}


def rewrite_conditions(conv: "ConversionContext") -> None:
    sem = conv.semantic
    tokens = conv.tokens
    for d in conv.structure.directives:
        if d.name not in _CONDITIONS:
            continue
        compared = _compared(conv, d)
        for k in range(d.first + 2, d.last):
            if tokens.kinds[k] != IDENT:
                continue
            name = tokens.text(k).decode("latin-1")
            if name not in sem.guards and name not in sem.device_pass and name not in sem.version_macros:
                continue
            if conv.platform.keeps_condition(name):
                conv.claimed.add(k)
                continue  # the project defines it for the AMD build: `#ifdef __CUDA_ARCH__` holds on both passes
            if name in sem.guards:
                conv.claimed.add(k)
                conv.convert(tokens.starts[k], tokens.ends[k], sem.guards[name].encode(), name, "macro")
                continue
            presence = d.name in _PRESENCE_DIRECTIVES or _inside_defined(tokens, k, d.first + 2)
            if presence and name in sem.device_pass and name in compared:
                # `defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600`: one test of an NVIDIA architecture. Renaming
                # only the presence makes the AMD device pass compare 0 (`< 600` holds) and take the old-GPU
                # branch (a second `atomicAdd(double*)`, an `assert(false)`); as written it is false on AMD,
                # like the host pass, and the comparison is reported.
                conv.claimed.add(k)
            elif presence and name in sem.device_pass:
                conv.claimed.add(k)
                conv.convert(tokens.starts[k], tokens.ends[k], sem.device_pass[name].encode(), name, "macro")
            elif not presence and name in sem.version_macros:
                conv.claimed.add(k)
                if d.start in conv.platform.branches.settled_amd:
                    continue  # the project's switches decide this test for AMD whatever the macro's value
                if name in compared and name in _presence_tested(conv, d):
                    # `defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800`: the presence test decides it on AMD, as on
                    # NVIDIA's host pass; what is left to say is that the NVIDIA-only branch is not AMD's
                    conv.finding("cuda-version-macro", "info", tokens.starts[k],
                                 f"`{name}` compared beside `defined({name})`: on AMD the test is false as on the "
                                 f"host pass (left as written); an AMD fast path would test `__gfx90a__`-style "
                                 f"macros", subject=name)
                    continue
                taken = taken_branch_note(conv, d)
                if taken is not None:
                    # the branch the 0 picks stands on AMD (nothing the code after it needs is lost, no `#error`,
                    # no name the release lacks): worth knowing, not a warning
                    conv.finding("cuda-version-macro", "info", tokens.starts[k],
                                 f"`{name}` is undefined on AMD, so this comparison sees 0 and the AMD build compiles "
                                 f"{taken} (left as written)", subject=name)
                    continue
                conv.finding("cuda-version-macro", "warning", tokens.starts[k],
                             f"`{name}` in a condition: {sem.version_macros[name]}", subject=name)


def _compared(conv: "ConversionContext", d) -> set[str]:
    """The device-pass macros directive ``d`` also uses as a number (`__CUDA_ARCH__ < 600`)."""
    if d.name in _PRESENCE_DIRECTIVES:
        return set()
    tokens, sem = conv.tokens, conv.semantic
    out = set()
    for k in range(d.first + 2, d.last):
        if tokens.kinds[k] == IDENT:
            name = tokens.text(k).decode("latin-1")
            if name in sem.device_pass and not _inside_defined(tokens, k, d.first + 2):
                out.add(name)
    return out


def _presence_tested(conv: "ConversionContext", d) -> set[str]:
    """The macros directive ``d`` tests with `defined(...)`."""
    tokens = conv.tokens
    return {tokens.text(k).decode("latin-1") for k in range(d.first + 2, d.last)
            if tokens.kinds[k] == IDENT and _inside_defined(tokens, k, d.first + 2)}


def _inside_defined(tokens, k: int, first: int) -> bool:
    """`defined(X)` or `defined X`."""
    p = prev_code(tokens, k - 1)
    if p >= first and tokens.text(p) == b"defined":
        return True
    if p >= first and tokens.text(p) == b"(":
        q = prev_code(tokens, p - 1)
        n = next_code(tokens, k + 1)
        return q >= first and tokens.text(q) == b"defined" and n < len(tokens) and tokens.text(n) == b")"
    return False
