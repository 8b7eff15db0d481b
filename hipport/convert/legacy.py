"""Legacy library APIs whose functions share their names with the current ones (rules/calls.toml `[legacy]`).

In a file that includes the legacy header and not the current one, `cublasSscal` is cuBLAS's handle-less legacy
function, which hipBLAS and rocBLAS do not have: renamed, the call would not compile. Such a name is left as written
(as hipify-clang leaves it) and reported at each use. A name the file defines as a macro itself (a compat branch's
`#define cublasSgemm hipblasSgemm`) is the project's mapping onto HIP's handle API, not the legacy function."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hipport import directives as dirs

if TYPE_CHECKING:
    from hipport.convert.context import ConversionContext


def keep_legacy_names(ctx: "ConversionContext") -> None:
    legacy = ctx.semantic.legacy or {}
    if not legacy:
        return
    included = set()
    for d in ctx.structure.directives:
        target = dirs.include_target(ctx.tokens, d)
        if target is not None:
            included.add(target[2].decode("latin-1"))
    active = [lg for lg in legacy.values()
              if included.intersection((lg.header, *lg.converted)) and not included.intersection(lg.unless)]
    if not active:
        return
    names = ctx.rules.names
    starts, ends, src = ctx.tokens.starts, ctx.tokens.ends, ctx.src
    for i in ctx.candidates:
        if ctx.skip[i] or i in ctx.claimed or ctx.user_names.is_users(i):
            continue
        name = src[starts[i] : ends[i]].decode("latin-1")
        if name in ctx.defines:
            continue
        lg = next((lg for lg in active if name in names and name + lg.suffix in names), None)
        if lg is None:
            continue
        ctx.claimed.add(i)
        ctx.finding("legacy-api", "warning", starts[i],
                    f"`{name}` is the legacy API of `{lg.header}` (the file includes no `{lg.unless[0]}`), left as "
                    f"written: {lg.note}", subject=name)
