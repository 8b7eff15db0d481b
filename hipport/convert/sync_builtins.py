"""The warp built-ins HIP declares from ROCm 7.0, for a target of 7.0 or later (rules/wavefront.toml).

- A project's own `__syncwarp`, `__activemask` or `*_sync` definition, written for a HIP that lacked them, clashes
  with HIP's from 7.0 ("static declaration of '__syncwarp' follows non-static declaration", "redefinition"), or
  takes the calls HIP's would. It is kept for the releases without the built-ins, behind the guard of the rules
  (`#if HIP_VERSION_MAJOR < 7 || defined(HIP_DISABLE_WARP_SYNC_BUILTINS)`), with `<hip/hip_version.h>` included
  where nothing before it defines `HIP_VERSION_MAJOR`; adjacent definitions share one guard. A definition under a
  condition that already tests the release is left alone, so a second run changes nothing.
- A call given a mask of every lane: `__syncwarp(0xffffffff)` becomes `__syncwarp()` (HIP's masked form only
  checks the mask, and wants 64 bits: on wave32 neither spelling of "all lanes" passes its check in a debug
  build), or, where the project's own definition for older releases takes an argument, `__syncwarp(__ballot(1))`
  (the active lanes, what the check compares with). A call of a `*_sync` name the project defined itself, now
  HIP's from 7.0, gets the 64-bit spelling of a 32-bit all-lanes mask (`rewrite_calls` leaves the project's own
  names alone); another mask is reported.
"""

from __future__ import annotations

import re

from hipport import directives as dirs
from hipport.convert.calls import call_args
from hipport.convert.callsites import _mask_kind
from hipport.convert.context import ConversionContext, token_at
from hipport.convert.redefinitions import Definition, definitions
from hipport.model import Conversion
from hipport.scan import IDENT
from hipport.wavefront import WaveRules, load_wave_rules

CATEGORY = "guard"
RULE = "sync-builtin-guarded"
_WORD_BEFORE = re.compile(rb"\w[\s*&]*\Z")  # what ends the text before a declared name: a word, `*`, `&`


def guard_sync_builtins(ctx: ConversionContext) -> None:
    rules = load_wave_rules()
    target = ctx.options.rocm_version[:2]
    src = ctx.src
    present = {n for n in rules.sync_names | rules.dropped_names if n.encode() in src}
    if not present:
        return
    # Most files only call them: the definitions are looked for where a word precedes a name (`void __syncwarp(`,
    # `return __any_sync(` too), the only shape a definition can take.
    names = re.compile(rb"\b(?:" + b"|".join(sorted(n.encode() for n in present)) + rb")\s*\(")
    shaped = any(_WORD_BEFORE.search(src, max(0, m.start() - 64), m.start()) for m in names.finditer(src))
    ours = [d for d in definitions(ctx) if d.name in present and not d.scope] if shaped else []
    # A definition's name is not a call: `rewrite_calls` must not write its parameters as a call's arguments
    # (`__shfl_down_sync(unsigned mask, float v, ...)` -> `__shfl_down(float v, ...)` for a 6.x target).
    ctx.claimed.update(d.index for d in ours)
    if target < rules.sync_from and target < rules.dropped_from:
        return
    # name -> the project's definitions kept for older releases only (guarded here, or already by the project)
    older: dict[str, list[Definition]] = {}
    if target >= rules.sync_from:
        older = _guard_definitions(ctx, rules, ours)
        ctx.older_only.update(older)
    _calls(ctx, rules, older, {d.name for d in ours} | {n for n in present if n in ctx.macro_values},
           target >= rules.dropped_from)


def _guard_definitions(ctx: ConversionContext, rules: WaveRules, ours: list) -> dict[str, list[Definition]]:
    older: dict[str, list[Definition]] = {}
    runs: list[list[Definition]] = []
    for d in ours:
        if _release_tested(ctx, rules, d):
            older.setdefault(d.name, []).append(d)
            continue
        if not d.guardable:
            ctx.finding(RULE, "warning", ctx.tokens.starts[d.index],
                        f"`{d.name}` is HIP's own from ROCm 7.0; this definition clashes with it there: put it behind "
                        f"`#if {rules.sync_guard}` by hand", subject=d.name)
            continue
        older.setdefault(d.name, []).append(d)
        if runs and not ctx.src[runs[-1][-1].end:d.start].strip():
            runs[-1].append(d)
        else:
            runs.append([d])
    nl = ctx.newline()
    need_include = bool(runs) and not _version_defined_before(ctx, rules, runs[0][0].start)
    for n, run in enumerate(runs):
        head = (f"#include <{rules.sync_include}>".encode() + nl) if need_include and n == 0 else b""
        ctx.convert(run[0].start, run[0].start, head + f"#if {rules.sync_guard}".encode() + nl, run[0].name,
                    CATEGORY)
        ctx.edits_only(run[-1].end, run[-1].end, nl + b"#endif")
        for d in run[1:]:  # each definition is one converted reference, under the guard of its run
            ctx.result.conversions.append(Conversion(d.name, "", CATEGORY, ctx.lines.line_col(d.start)[0], d.start,
                                                     d.start))
        for d in run:
            ctx.finding(RULE, "info", ctx.tokens.starts[d.index],
                        f"`{d.name}` is HIP's own from ROCm 7.0, where this definition clashes with it or takes its "
                        f"calls: it is kept for older releases behind `#if {rules.sync_guard}`", subject=d.name)
    return older


def _release_tested(ctx: ConversionContext, rules: WaveRules, d: Definition) -> bool:
    """A conditional around ``d`` (its `#if`, or the branch directive it sits under) names a release macro."""
    directives = ctx.structure.directives
    for opener, branch in d.block:
        for k in {opener, branch}:
            x = directives[k]
            text = ctx.src[x.start:x.end]
            if any(m.encode() in text for m in rules.release_macros):
                return True
    return False


def _version_defined_before(ctx: ConversionContext, rules: WaveRules, offset: int) -> bool:
    for d in ctx.structure.directives:
        if d.start >= offset:
            return False
        target = dirs.include_target(ctx.tokens, d)
        if target is not None and target[2].decode("latin-1") in rules.sync_includes:
            return True
    return False


def _calls(ctx: ConversionContext, rules: WaveRules, older: dict, defined: set, drop: bool) -> None:
    """Masks of the calls that are HIP's from 7.0: of the names the project defines for older releases only, and
    (``drop``) of `dropped_names` the project does not define at all."""
    tokens, kinds = ctx.tokens, ctx.tokens.kinds
    sem = ctx.semantic
    names = {n.encode() for n in older}
    if drop:
        names |= {n.encode() for n in rules.dropped_names if n not in defined or n in older}
    if not names:
        return
    pattern = re.compile(rb"\b(?:" + b"|".join(sorted(names)) + rb")\b")
    for m in pattern.finditer(ctx.src):
        i = token_at(tokens, m.start())
        if i is None or kinds[i] != IDENT or tokens.ends[i] != m.end() or ctx.structure.in_directive[i] \
                or ctx.skip[i] or i in ctx.claimed:
            continue
        found = call_args(tokens, i)
        if found is None or not found[2] or found[2][0].first == found[2][0].last:
            continue
        name = tokens.text(i).decode()
        mask = found[2][0]
        kind = _mask_kind(ctx, mask)
        if name in rules.dropped_names and len(found[2]) == 1:
            if kind in ("full32", "full64") and (name not in older or _takes_no_argument(older[name])):
                ctx.claimed.add(i)
                ctx.convert(mask.start, mask.end, b"", name, "warp")
            elif kind == "full32":
                # HIP's masked form does not trim the mask on wave32: the 64-bit literal fails its check there
                ctx.claimed.add(i)
                ctx.convert(mask.start, mask.end, rules.active_lanes.encode(), name, "warp")
            continue
        if name not in older or name not in sem.warp_sync:
            continue
        ctx.claimed.add(i)
        if kind == "full32":
            ctx.convert(mask.start, mask.end, sem.full64_spelling.encode(), name, "warp")
        elif kind == "other":
            ctx.finding("warp-sync-mask", "warning", mask.start,
                        f"`{name}` is HIP's own from ROCm 7.0, which takes a 64-bit mask: make sure "
                        f"`{ctx.src[mask.start:mask.end].decode('latin-1')}` is a 64-bit `unsigned long long`",
                        subject=name)


def _takes_no_argument(defs: list[Definition]) -> bool:
    """Some definition of the project's can be called without arguments (no parameters, or all defaulted)."""
    for d in defs:
        params = [a for a in d.args if a.first < a.last and d.tokens.text(a.first) != b"void"]
        if all(any(d.tokens.text(k) == b"=" for k in range(a.first, a.last)) for a in params):
            return True
    return False
