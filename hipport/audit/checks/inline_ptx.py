"""Check 6: inline PTX `asm(...)`, with built-in replacements for the common one-instruction idioms.

PTX under an opt-in switch nothing defines (`#ifdef PTX ... #else portable ... #endif`, no `-DPTX` in any build file,
no `#define PTX` in the file, its quoted headers or the run's files) is not compiled by any build: the `#else` is.
"""

from __future__ import annotations

import bisect
import re

from hipport.audit.checks.common import defined_by_project
from hipport.audit.checks.context import COMMENT, IDENT, KEYWORD, LITERAL, Context

RULE = "inline-ptx"
_ASM = {b"asm", b"__asm__", b"__asm"}
_PTX_HINT = re.compile(rb"%%|\.(?:u32|s32|b32|u64|b64|f32|f64|reg|pred|global|shared|sync|nc)\b|\btrap\b|"
                       rb"\b(?:mov|shfl|vote|bfe|bfi|ld|st|prmt|brev|popc|clz|membar|red|atom)\.")
_AMD_GUARDS = (b"__HIP_PLATFORM_AMD__", b"__HIP_PLATFORM_HCC__", b"__AMDGCN__", b"__gfx", b"__HIP_DEVICE_COMPILE__")


def check(ctx: Context) -> None:
    if RULE not in ctx.hazards or not (ctx.words & _ASM):
        return
    amd_blocks = _amd_only_blocks(ctx)
    for i in range(ctx.n):
        if ctx.text[i] not in _ASM or ctx.kinds[i] not in (IDENT, KEYWORD):
            continue
        p = ctx.next_code(i)
        while ctx.t(p) in (b"volatile", b"__volatile__", b"goto", b"inline"):
            p = ctx.next_code(p)
        if ctx.t(p) != b"(" or ctx.match(p) < p:
            continue
        close = ctx.match(p)
        strings = [ctx.text[k] for k in range(p + 1, close) if ctx.kinds[k] == LITERAL and ctx.text[k][:1] == b'"']
        if not strings:
            continue
        template = b"".join(s[1:-1] for s in strings.copy()[:_first_colon(ctx, p, close, strings)])
        if not _PTX_HINT.search(template):
            continue  # AMD GCN assembly, or not assembly we recognise
        if _in_amd_block(ctx, i, amd_blocks):
            continue
        if _under_switch_nothing_defines(ctx, i):
            continue
        end = ctx.next_code(close)
        stmt_end = end if ctx.t(end) == b";" else None
        idiom, fix = _idiom(ctx, template, p, close)
        edits = [ctx.edit(i, fix, stmt_end)] if fix and stmt_end is not None else []
        ctx.report(RULE, i, f"inline PTX `{template.decode('latin-1').strip()[:60]}` cannot compile for AMD GPUs"
                   + (f"; use {idiom}" if idiom else "; replace it with HIP built-ins"),
                   edits=edits, subject=idiom or "asm")


def _first_colon(ctx: Context, p: int, close: int, strings) -> int:
    """How many leading string literals form the template (the rest are constraints after `:`)."""
    count = 0
    for k in range(p + 1, close):
        if ctx.text[k] == b":" or ctx.text[k] == b"::":
            break
        if ctx.kinds[k] == LITERAL and ctx.text[k][:1] == b'"':
            count += 1
    return count


def _operands(ctx: Context, p: int, close: int) -> list[bytes]:
    """Expressions inside `"=r"(x)`-style operand groups, in order."""
    out = []
    k = p + 1
    while k < close:
        if ctx.kinds[k] == LITERAL and ctx.text[k][:1] == b'"' and ctx.t(k + 1) == b"(" and ctx.match(k + 1) > k:
            out.append(ctx.span_text(k + 2, ctx.match(k + 1)))
            k = ctx.match(k + 1)
        k += 1
    return out


def _idiom(ctx: Context, template: bytes, p: int, close: int) -> tuple[str | None, str | None]:
    ops = _operands(ctx, p, close)
    t = template.replace(b"\\n", b" ").replace(b"\\t", b" ")
    if b"%laneid" in t and ops:
        return "`__lane_id()`", f"{ops[0].decode()} = __lane_id();"
    if b"%lanemask_lt" in t and ops:
        return "`(1ull << __lane_id()) - 1`", f"{ops[0].decode()} = (1ull << __lane_id()) - 1;"
    if b"%lanemask_le" in t and ops:
        return "`(2ull << __lane_id()) - 1`", f"{ops[0].decode()} = (2ull << __lane_id()) - 1;"
    if b"%warpid" in t:
        return "`threadIdx.x / warpSize`", None
    if re.search(rb"\btrap\b", t):
        return "`abort()` (it ends the whole application on AMD)", "abort();"
    if b"ld.global.nc" in t and len(ops) >= 2:
        return "`__ldg`", f"{ops[0].decode()} = __ldg({ops[1].decode()});"
    if b"vote" in t:
        return "`__ballot` / `__any` / `__all`", None
    if b"shfl" in t:
        return "the `__shfl*` built-ins", None
    if b"bfe" in t or b"bfi" in t:
        return "shifts and masks", None
    if b"membar" in t or b"fence" in t:
        return "`__threadfence()` / `__threadfence_block()`", None
    return None, None


def _amd_only_blocks(ctx: Context) -> set[int]:
    """Conditional blocks whose condition names an AMD platform macro (not negated)."""
    blocks = set()
    for d in ctx.structure.directives:
        if d.name in (b"if", b"ifdef", b"elif") and d.block:
            text = b" ".join(ctx.text[k] for k in range(d.first, d.last) if ctx.kinds[k] != COMMENT)
            if any(g in text for g in _AMD_GUARDS) and b"!" not in text and d.name != b"ifndef":
                blocks.add(d.block[-1])
    return blocks


def _in_amd_block(ctx: Context, i: int, amd_blocks: set[int]) -> bool:
    if not amd_blocks:
        return False
    current = ()
    for d in ctx.structure.directives:
        if d.first > i:
            break
        current = d.block if d.name != b"endif" else d.block[:-1]
        if d.name in (b"else", b"elif") and d.block and d.block[-1] in amd_blocks:
            current = ()  # the other branch
    return any(b in amd_blocks for b in current)


_SWITCH = re.compile(rb"^(?:ifdef\s+([A-Za-z_]\w*)|if\s+defined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*)))\s*$")
_CHAIN = (b"if", b"ifdef", b"ifndef", b"elif", b"elifdef", b"elifndef", b"else", b"endif")


def _under_switch_nothing_defines(ctx: Context, i: int) -> bool:
    """Token ``i`` lies in the first branch of `#ifdef X` / `#if defined(X)` whose other branch holds no asm, and X
    is a project name (no leading underscore) that no build file, no file of the run and none of this file's
    quoted headers defines: no configuration compiles that branch."""
    chains = ctx.__dict__.get("_ptx_chains")
    if chains is None:  # once a file: the conditional directives, and each block's chain
        directives = [d for d in ctx.structure.directives if d.name in _CHAIN]
        by_block: dict[tuple, list] = {}
        for d in directives:
            if d.block:
                by_block.setdefault(d.block, []).append(d)
        chains = ctx.__dict__["_ptx_chains"] = ([d.first for d in directives], directives, by_block)
    firsts, directives, by_block = chains
    k = bisect.bisect_left(firsts, i) - 1
    if k < 0:
        return False
    # the innermost conditional block around ``i``
    depth_block = directives[k].block if directives[k].name != b"endif" else directives[k].block[:-1]
    if not depth_block:
        return False
    members = by_block.get(depth_block, [])
    if len(members) < 3 or members[0].name not in (b"if", b"ifdef") or members[1].first < i:
        return False  # no other branch, or ``i`` is not in the first one
    text = b" ".join(ctx.text[k] for k in range(members[0].first + 1, members[0].last)
                     if ctx.kinds[k] != COMMENT)
    m = _SWITCH.match(text)
    if m is None:
        return False
    name = (m.group(1) or m.group(2) or m.group(3)).decode("latin-1")
    if name.startswith("_") or name in ctx.options.project_macros:
        return False  # a compiler's or the implementation's name, or one some configuration defines
    if any(ctx.text[k] in _ASM for k in range(members[1].first, members[-1].first) if ctx.kinds[k] in (IDENT, KEYWORD)):
        return False  # the other branch is no portable alternative
    return not defined_by_project(ctx, name)

