"""A CUDA-only file of a tree whose headers define a macro twice, once per platform (`CUDA_CHECK_RETURN` under
`#if defined(__CUDACC__)`, `HIP_CHECK_RETURN` under `#if defined(__HIPCC__)`, HeCBench cm's utils.h): the header's
NVIDIA branch is the other platform's and stays as it is, so the ported file calls the project's own AMD spelling.
Without it the converted file names a macro the AMD build never defines."""

from __future__ import annotations

from hipport.convert.context import ConversionContext
from hipport.scan import IDENT


def use_counterparts(ctx: ConversionContext) -> None:
    tree = ctx.options.tree
    if tree is None or not tree.counterparts or ctx.platform.hip_path or ctx.platform.branches.other:
        return  # a file with a HIP path of its own keeps each platform's spelling where it is
    wanted = {name.encode(): hip for name, hip in tree.counterparts.items() if name.encode() in ctx.src}
    if not wanted:
        return
    tokens = ctx.tokens
    definitions = {d.first + 2 for d in ctx.structure.directives if d.name in (b"define", b"undef", b"ifdef",
                                                                                  b"ifndef")}
    for i in range(len(tokens)):
        if tokens.kinds[i] != IDENT or i in ctx.claimed or i in definitions:
            continue
        hip = wanted.get(tokens.text(i))
        if hip is not None:
            ctx.claimed.add(i)
            ctx.convert(tokens.starts[i], tokens.ends[i], hip.encode(), tokens.text(i).decode("latin-1"), "macro")
