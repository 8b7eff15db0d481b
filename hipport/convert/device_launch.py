"""Kernel launches from device code (CUDA dynamic parallelism), which HIP does not have.

A `k<<<...>>>` inside a `__global__` or `__device__` function compiles with nvcc -rdc and is rejected by HIP-Clang
("reference to __global__ function in __global__ function"). No renaming can fix it, so each one is named where it
is, with the usual ways out; the text is left as it is.

Braces are counted as one configuration compiles them: each branch of an `#if`/`#elif`/`#else` starts from the brace
depth before the `#if`, and the first branch's depth carries on after `#endif` (a kernel body that opens a loop in
each branch of an `#ifdef` would otherwise count two braces, close one, and take the host code after it for device
code). A launch on the host pass of a `__host__ __device__` function (under `#ifndef __CUDA_ARCH__`, or the `#else`
of `#ifdef __CUDA_ARCH__`) is a host launch.
"""

from __future__ import annotations

import re

from hipport.convert.context import ConversionContext, token_at
from hipport.scan import COMMENT

RULE = "device-launch"
_DEVICE = {b"__global__", b"__device__"}


_INTEREST = re.compile(rb"__global__|__device__|<<<|[{};]|^[ \t]*#", re.M)
_CONDITIONAL = {b"if", b"ifdef", b"ifndef", b"elif", b"else", b"endif"}
_PASS_MACRO = rb"(?:__CUDA_ARCH__|__HIP_DEVICE_COMPILE__)"  # the device pass: CUDA's name, and HIP's
_DEFINED = re.compile(rb"(!?)\s*(?:defined\s*\(?\s*)?" + _PASS_MACRO + rb"\s*\)?")


def report_device_launches(ctx: ConversionContext) -> None:
    if b"<<<" not in ctx.src or not (b"__global__" in ctx.src or b"__device__" in ctx.src):
        return
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    in_directive = ctx.structure.in_directive
    conditionals = {d.first: d for d in ctx.structure.directives if d.name in _CONDITIONAL}
    depth = 0
    pending = False        # a __global__/__device__ seen outside a function body, its body not yet open
    body_depth = None      # the brace depth of that function's body while inside it
    # Per open `#if`: the state before it, the state its first branch ended in (None while in it), which pass its
    # condition selects ("host", "device" or None) and whether the current branch is the host pass.
    frames: list[dict] = []
    # Only the tokens this walk cares about, found by a regex (a Python loop over every token costs too much).
    for m in _INTEREST.finditer(ctx.src):
        start = m.end() - 1 if m.group().endswith(b"#") else m.start()
        i = token_at(tokens, start)
        if i is not None and i in conditionals:
            d = conditionals[i]
            state = (depth, pending, body_depth)
            if d.name in (b"if", b"ifdef", b"ifndef"):
                selects = _pass_tested(tokens, d)
                frames.append({"before": state, "first": None, "selects": selects, "host": selects == "host"})
            elif frames and d.name == b"endif":
                frame = frames.pop()
                depth, pending, body_depth = frame["first"] or state
            elif frames:  # `#elif` / `#else`: back to where the `#if` began
                frame = frames[-1]
                if frame["first"] is None:
                    frame["first"] = state
                depth, pending, body_depth = frame["before"]
                frame["host"] = d.name == b"else" and frame["selects"] == "device"
            continue
        if m.group().endswith(b"#"):
            continue
        if i is None or kinds[i] == COMMENT or in_directive[i]:
            continue
        t = m.group()
        if t == b"<<<":
            if body_depth is not None and not any(f["host"] for f in frames):
                ctx.finding(RULE, "error", m.start(),
                            "a kernel launched from device code (dynamic parallelism): HIP has none; launch it from "
                            "the host after this kernel, or fold its work into this kernel (a loop, or a cooperative "
                            "grid)", subject="<<<")
            continue
        if tokens.text(i) != t:
            continue  # inside a string or a longer token
        if body_depth is None:
            if t in _DEVICE:
                pending = True
            elif t == b";":
                pending = False  # a declaration, or a __device__ variable
        if t == b"{":
            depth += 1
            if pending and body_depth is None:
                body_depth, pending = depth, False
        elif t == b"}":
            if body_depth is not None and depth == body_depth:
                body_depth = None
            depth = max(0, depth - 1)


def _pass_tested(tokens, d) -> str | None:
    """"host" for `#ifndef __CUDA_ARCH__` / `#if !defined(__CUDA_ARCH__)`, "device" for `#ifdef __CUDA_ARCH__` /
    `#if defined(__CUDA_ARCH__)` (or `__HIP_DEVICE_COMPILE__`), None for any other condition."""
    text = b" ".join(tokens.text(k) for k in range(d.first + 2, d.last) if tokens.kinds[k] != COMMENT)
    m = _DEFINED.fullmatch(text)
    if m is None:
        return None
    negated = bool(m.group(1)) or d.name == b"ifndef"
    if d.name == b"ifndef" and m.group(1):
        return None
    return "host" if negated else "device"
