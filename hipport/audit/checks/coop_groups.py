"""Check 8: cooperative-group tiles larger than a target's wavefront, or of 32 on wave64 targets."""

from __future__ import annotations

from hipport.audit.checks.context import IDENT, LITERAL, Context, int_value
from hipport.audit.hazards import wave_size

RULE = "cg-tile-size"
_TILES = {b"tiled_partition", b"thread_block_tile"}


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or not (ctx.words & _TILES):
        return
    archs = tuple(ctx.options.offload_arch)
    smallest = min((wave_size(a) for a in archs), default=64)
    for i in range(ctx.n - 3):
        if ctx.kinds[i] != IDENT or ctx.text[i] not in _TILES or ctx.t(ctx.next_code(i)) != b"<":
            continue
        k = ctx.next_code(ctx.next_code(i))
        if ctx.kinds[k] != LITERAL or ctx.t(ctx.next_code(k)) != b">":
            continue
        n = int_value(ctx.text[k])
        if n is None:
            continue
        name = ctx.text[i].decode()
        too_small = [a for a in archs if wave_size(a) < n]
        if too_small:
            ctx.report(RULE, k, f"`{name}<{n}>` is larger than the {smallest}-lane wavefront of "
                       f"{', '.join(too_small)}: it does not compile there", severity="error", subject=f"{n}")
        elif n == 32 and any(wave_size(a) == 64 for a in archs):
            ctx.report(RULE, k, f"`{name}<32>` is half of a 64-lane wavefront on "
                       f"{', '.join(a for a in archs if wave_size(a) == 64)}; fine as a 32-thread group, "
                       f"wrong if it stands for the hardware warp", confidence="medium", subject="32")
