"""Kernel launches from device code (CUDA dynamic parallelism), which HIP does not have.

A `k<<<...>>>` inside a `__global__` or `__device__` function compiles with nvcc -rdc and is rejected by HIP-Clang
("reference to __global__ function in __global__ function"). No renaming can fix it, so each one is named where it
is, with the usual ways out; the text is left as it is.
"""

from __future__ import annotations

import re

from hipport.convert.context import ConversionContext, token_at
from hipport.scan import COMMENT

RULE = "device-launch"
_DEVICE = {b"__global__", b"__device__"}


_INTEREST = re.compile(rb"__global__|__device__|<<<|[{};]")


def report_device_launches(ctx: ConversionContext) -> None:
    if b"<<<" not in ctx.src or not (b"__global__" in ctx.src or b"__device__" in ctx.src):
        return
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    in_directive = ctx.structure.in_directive
    depth = 0
    pending = False        # a __global__/__device__ seen outside a function body, its body not yet open
    body_depth = None      # the brace depth of that function's body while inside it
    # Only the tokens this walk cares about, found by a regex (a Python loop over every token costs too much).
    for m in _INTEREST.finditer(ctx.src):
        i = token_at(tokens, m.start())
        if i is None or kinds[i] == COMMENT or in_directive[i] or tokens.starts[i] != m.start():
            continue
        t = m.group()
        if t == b"<<<":
            if body_depth is not None:
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
