"""The audit of one file: wave64, mask, warpSize and atomics hazards in CUDA or HIP sources, each finding with a
suggested fix where one can be given. Never writes sources; `apply_suggestions` returns new bytes."""

from __future__ import annotations

import os

from hipport.audit import amd_view, compat, helpers, suppressions, uninstantiated
from hipport.audit.checks import (
    atomics,
    ballot,
    builtins,
    coop_groups,
    cub_warp,
    hiprtc,
    inline_ptx,
    lane_math,
    last_error,
    launch_size,
    masks,
    names,
    warp_arrays,
    warp_loops,
    warpsize,
    wave64_math,
    wave_width,
)
from hipport.audit.checks.common import Spans, wave_conditional_lines
from hipport.audit.checks.reductions import value_is_32
from hipport.audit.checks.context import Context
from hipport.audit.hazards import load_all_rules, load_hazards
from hipport.audit.options import AuditOptions
from hipport.model import FileResult, Finding
from hipport.semantic import load_semantic


# Check functions in the order they run; each takes a Context and reports through it.
CHECKS = (
    masks.check, ballot.check, lane_math.check, warp_loops.check, cub_warp.check, wave64_math.check,
    warp_arrays.check, warpsize.check, wave_width.check,
    inline_ptx.check,
    builtins.check, coop_groups.check, names.check, atomics.check, launch_size.check, last_error.check, hiprtc.check,
)


# Rules a call through a project's mask-dropping compat macro cannot break: the mask never reaches HIP.
_MASK_RULES = frozenset({"warp-mask-32bit", "warp-builtin-unavailable", "warp-sync-mask"})

# Rules about counting 32 lanes: silent where the code itself tests the wavefront size.
_LANE_COUNT_RULES = frozenset({"warp-loop-32", "lane-math-32", "ballot-32bit", "launch-warps-32", "cub-warp-width",
                               "lane-math-64"})


def run_checks(src: bytes, path: str, options: AuditOptions, prepare=None) -> Context:
    """Every check over one file; the findings are left in ``ctx.findings``, unfiltered. ``prepare(ctx)`` runs
    before the checks (the engine hands them what the included headers define). The checks see the AMD build's
    view of the file (amd_view): branches hipcc never compiles for AMD are blank, offsets unchanged."""
    facts = amd_view.Facts()
    ctx = Context(amd_view.view(src, amd_view.defines_for(options), amd_view.undefined_for(options), path=path,
                                facts=facts), path, options, load_hazards())
    ctx.amd_facts = facts
    if prepare is not None:
        prepare(ctx)
    for check in CHECKS:
        check(ctx)
    _drop_tile32_ids(ctx)
    waves = Spans(wave_conditional_lines(ctx))
    if waves:  # the 32-lane branch of code that chooses per wavefront size is meant for 32 lanes
        ctx.findings = [f for f in ctx.findings if f.rule_id not in _LANE_COUNT_RULES or not waves.hold(f.line)]
    return ctx


def _drop_tile32_ids(ctx: Context) -> None:
    """Lane and warp ids counted in 32s inside a device function that partitions its block into explicit 32-thread
    tiles (`cg::tiled_partition<32>`, `thread_block_tile<32>`): there a "warp" of 32 is the tile it works on, which
    HIP provides on 64-lane wavefronts too, so the ids match it."""
    if b"tiled_partition" not in ctx.words and b"thread_block_tile" not in ctx.words:
        return
    spans = []
    for fn in ctx.functions:
        a, b = fn.body
        if any(ctx.text[k] in (b"tiled_partition", b"thread_block_tile") and ctx.t(k + 1) == b"<"
               and _tile_32(ctx, fn, ctx.t(k + 2)) and ctx.t(k + 3) == b">" for k in range(a, b)):
            spans.append((ctx.lines.line_col(ctx.starts[a])[0], ctx.lines.line_col(ctx.starts[b])[0]))
    if spans:
        tiles = Spans(spans)
        ctx.findings = [f for f in ctx.findings if f.rule_id != "lane-math-32" or not tiles.hold(f.line)]


def _tile_32(ctx: Context, fn, width: bytes) -> bool:
    """A tile width of 32: the literal, a constant of 32 (`thread_block_tile<WARP_SIZE>` with `#define WARP_SIZE
    32`), the function's template parameter (`thread_block_tile<tbSize>`), or a name from a header out of sight
    when the function calls the tile's shuffles or votes (`g.shfl_xor(v, i)`): CUDA gives a tile those methods
    only up to 32 threads, and HIP's take the tile's width and mask (amd_hip_cooperative_groups.h:
    `__shfl_xor(var, laneMask, numThreads)`, `build_mask()`), so the tile stays in its 32 lanes (DeepSpeed)."""
    if width == b"32" or value_is_32(ctx, width):
        return True
    if not width[:1].isalpha() and width[:1] != b"_" or width == b"warpSize":
        return False
    if width.decode("latin-1") in fn.template_params:
        return True
    if ctx.macro_value(width) is not None or ctx.declarations(width):
        return False  # defined here, and not as 32
    a, b = fn.body
    return any(ctx.text[k] in _TILE_METHODS and ctx.t(k - 1) in (b".", b"->") for k in range(a, b))


_TILE_METHODS = frozenset({b"shfl", b"shfl_up", b"shfl_down", b"shfl_xor", b"ballot", b"any", b"all", b"match_any",
                           b"match_all"})


def _drop_masks_compat_drops(ctx: Context, path: str, options: AuditOptions) -> None:
    """Mask findings at calls of a `*_sync` name the project's compat layer maps onto a mask-free HIP form."""
    if not any(f.rule_id in _MASK_RULES for f in ctx.findings):
        return
    names = compat.mask_dropping_in(ctx.src, helpers.included_headers(ctx, path, options.include_dirs), options,
                                    path)
    if not names:
        return
    spans = []  # (line, col) of each such call's name and of its closing parenthesis
    for i in range(ctx.n):
        if ctx.text[i] in names and not ctx.in_directive[i] and ctx.is_call(i):
            close = ctx.match(ctx.next_code(i))
            spans.append((ctx.lines.line_col(ctx.starts[i]), ctx.lines.line_col(ctx.starts[max(close, i)])))
    calls = Spans(spans)
    ctx.findings = [f for f in ctx.findings if f.rule_id not in _MASK_RULES or not calls.hold((f.line, f.col))]


def _drop_resolved_by_compat(ctx: Context, path: str, options: AuditOptions) -> None:
    """A name HIP lacks that the project's compatibility layer defines for AMD (a macro in the AMD view of the file,
    of its headers, or of the headers included before it where it is included: exllamav2's `#define __stwb(dst,
    src) *dst = src` under `USE_ROCM`) is the project's there, and an `atomicAdd` on a half type that one of its
    overloads takes (`atomicAdd(half2*, half2)`, a CAS loop) calls that overload."""
    wanted = [f for f in ctx.findings if (f.rule_id == "unsupported-api" and f.subject)
              or (f.rule_id == "atomic-half-type" and f.subject)]
    if not wanted:
        return
    defs = compat.definitions_in(ctx.src, helpers.included_headers(ctx, path, options.include_dirs), options, path)
    resolved = {id(f) for f in wanted if (f.rule_id == "unsupported-api" and f.subject.encode() in defs.macros)
                or (f.rule_id == "atomic-half-type" and defs.overloads_for(b"atomicAdd", f.subject))}
    if resolved:
        ctx.findings = [f for f in ctx.findings if id(f) not in resolved]


def audit_source(src: bytes, path: str = "<stdin>", options: AuditOptions = AuditOptions(),
                 converted: FileResult | None = None) -> list[Finding]:
    """Findings for one file's bytes, sorted by position. Raises scan.LexError when libclang cannot read it.
    ``converted``, the conversion of the same bytes (the command line runs it), makes one set of findings: its
    findings join the audit's, under the same suppressions and --select/--ignore, and an audit finding on bytes
    the conversion rewrote by itself (a rule with `fixed_by_convert`) is converted work, so it is left out."""
    headers = []

    def prepare(ctx: Context) -> None:
        headers.append(helpers.of_includes(ctx, path, options, run_checks))
        ctx.header_aliases = headers[0][2]
        ctx.header_constants = headers[0][3]

    ctx = run_checks(src, path, options, prepare)
    label = os.path.basename(path)
    own = helpers.summarise(ctx, list(ctx.findings), label)
    included, macros, _aliases, _constants = headers[0]
    helpers.report_calls(ctx, own, local=True, macros=macros)
    helpers.report_calls(ctx, included, local=False, macros=macros)
    helpers.report_header_masks(ctx, macros, {**included, **own})
    if converted is not None and converted.error is None:
        ctx.findings = _with_conversion(ctx, ctx.findings, converted)
    _drop_masks_compat_drops(ctx, path, options)  # the conversion's findings too (its `warp-sync-mask`)
    _drop_resolved_by_compat(ctx, path, options)
    uninstantiated.mark(ctx, src, path, options)  # the conversion's findings too (its `warp-sync-mask`)
    # Suppressions are judged on every finding, selected or not: `--select` must not make one look unused.
    kept, sups = suppressions.apply(ctx, ctx.findings)
    kept += suppressions.report_unused(ctx, sups)
    seen = set()
    out = []
    for f in sorted(kept, key=lambda f: (f.line, f.col, f.rule_id)):
        key = (f.rule_id, f.line, f.col)
        if key in seen or not options.wants(f.rule_id):
            continue
        seen.add(key)
        out.append(f)
    return out


def _with_conversion(ctx: Context, findings: list[Finding], converted: FileResult) -> list[Finding]:
    spans = {cat: Spans((ctx.lines.line_col(c.start), ctx.lines.line_col(max(c.end - 1, c.start)))
                        for c in converted.conversions if c.category == cat and c.start >= 0)
             for cat in ("warp", "wavefront")}
    shimmed = {c.cuda for c in converted.conversions if c.category == "shim"}
    guarded = {c.cuda for c in converted.conversions if c.category == "guard"}
    for shim in (load_semantic().shims or {}).values():
        if shim.include in shimmed:  # a header's stand-in answers the header and the API it names
            shimmed.update(shim.cuda)
    rules = load_all_rules()

    def rewritten(f: Finding) -> bool:
        rule = rules.get(f.rule_id)
        if rule is None:
            return False
        if "shim" in rule.fixed_by_convert and f.severity == "error" and f.subject in shimmed:
            return True
        if "guard" in rule.fixed_by_convert and f.subject in guarded:
            return True
        return any(cat in rule.fixed_by_convert and spans[cat].hold((f.line, f.col)) for cat in spans)

    return [f for f in findings if not rewritten(f)] + _compiled_for_amd(ctx, converted.findings)


def _compiled_for_amd(ctx: Context, findings: list[Finding]) -> list[Finding]:
    """The conversion's findings on code the AMD build compiles: the conversion reads the file as written, the
    audit as hipcc compiles it for AMD (amd_view), so a finding in a branch that build never compiles is dropped,
    and so is a `cuda-version-macro` on a condition whose value for AMD needs no CUDA version (`#if
    !defined(USE_ROCM) && CUDART_VERSION >= 11000`: the project already chose the AMD branch)."""
    facts = getattr(ctx, "amd_facts", None)
    if facts is None or not (facts.dead or facts.settled):
        return list(findings)
    line_of = ctx.lines.line_col
    dead = {line for a, b in facts.dead for line in range(line_of(a)[0], line_of(max(a, b - 1))[0] + 1)}
    settled = {line_of(a)[0] for a in facts.settled}
    return [f for f in findings if f.line not in dead
            and not (f.rule_id == "cuda-version-macro" and f.line in settled)]
