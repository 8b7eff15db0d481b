"""One file in, one FileResult out: the passes run in order over a shared `ConversionContext`.

The engine knows nothing about the command line or terminals; it works on bytes so that encodings it cannot
decode (Latin-1 comments are common in old CUDA code) pass through untouched.
"""

from __future__ import annotations

from hipport.convert.brace_assign import bf16_zero_braces, typed_empty_braces
from hipport.convert.callsites import rewrite_calls
from hipport.convert.counterparts import use_counterparts
from hipport.convert.cpp_compat import drop_register
from hipport.convert.device_launch import report_device_launches
from hipport.convert.dim3 import make_uint3_to_dim3
from hipport.convert.forward import bring_forward
from hipport.convert.context import ConversionContext, ConvertOptions
from hipport.convert.includes import insert_runtime_include, rewrite_includes
from hipport.convert.launch import rewrite_launches
from hipport.convert.legacy import keep_legacy_names
from hipport.convert.macros import rewrite_conditions
from hipport.convert.pytorch import report_pytorch_names
from hipport.convert.quick import may_need_work
from hipport.convert.redefinitions import guard_redefinitions
from hipport.convert.renames import rename_identifiers
from hipport.convert.texture_objects import report_texture_integers
from hipport.convert.shims import add_shims
from hipport.convert.single_source import CPLUSPLUS_SUFFIXES, is_gpu_source, keep_to_amd
from hipport.convert.sync_builtins import guard_sync_builtins
from hipport.convert.wave_width import rewrite_wave_width
from hipport.convert.wavefront_macro import rewrite_wavefront_macro
from hipport.model import FileResult, apply_edits
from hipport.rules import RuleSet


def run_passes(ctx: ConversionContext) -> FileResult:
    if not is_gpu_source(ctx):  # plain C/C++ with a corner for GPU compilers (a public header's `#ifdef __CUDACC__`)
        report_pytorch_names(ctx)  # an extension's binding file: PyTorch's names only, left for its build
        if ctx.path.lower().endswith(CPLUSPLUS_SUFFIXES):
            drop_register(ctx)  # C++17 rejects it whatever compiles the file (hipcc may); C allows it (and binds)
            keep_to_amd(ctx)
        ctx.result.after = apply_edits(ctx.src, ctx.edits)
        ctx.result.hip_path = ctx.platform.own_hip_path  # its own tests only: not a header a GPU file includes
        return ctx.result
    rewrite_conditions(ctx)
    rewrite_wave_width(ctx)
    rewrite_wavefront_macro(ctx)
    drop_register(ctx)
    guard_sync_builtins(ctx)  # before the other guards and the calls: the definitions and masks it claims are done
    guard_redefinitions(ctx)
    keep_legacy_names(ctx)
    rewrite_calls(ctx)
    bring_forward(ctx)
    report_device_launches(ctx)
    make_uint3_to_dim3(ctx)
    typed_empty_braces(ctx)
    bf16_zero_braces(ctx)
    report_texture_integers(ctx)
    if ctx.options.launch_syntax == "hip":
        rewrite_launches(ctx)
    add_shims(ctx)  # before the runtime include: an insertion made earlier lands later at the same offset
    use_counterparts(ctx)  # before the renames: the project's AMD spelling of its own macro, not a CUDA name
    rename_identifiers(ctx)
    rewrite_includes(ctx)
    insert_runtime_include(ctx)
    report_pytorch_names(ctx)  # edits nothing: c10/ATen names are left for PyTorch's own build
    keep_to_amd(ctx)  # last: nothing inside the other platform's branches, only what nvcc builds in shared code
    ctx.result.after = apply_edits(ctx.src, ctx.edits)
    ctx.result.hip_path = ctx.platform.hip_path
    ctx.result.defines = ctx.defines
    return ctx.result


def convert_source(src: bytes, rules: RuleSet, options: ConvertOptions = ConvertOptions(),
                   path: str = "<stdin>") -> FileResult:
    """Convert one file's bytes. Raises scan.LexError when libclang cannot read it."""
    if src.startswith(_BOM):
        # A UTF-8 byte-order mark is encoding, not text: the engine sees what follows it, the mark is put back
        # (else a directive on the first line would not be one, and an inserted include would precede the mark).
        result = convert_source(src[len(_BOM):], rules, options, path)
        result.before = src
        if result.after is not None:
            result.after = _BOM + result.after
        return result
    if options.tree is not None:
        other = options.tree.of(path)[0]
        if other:  # only the other platform's branches include it (`#else #include "vendors/cuda.h"`)
            return FileResult(path, src, src, other_platform=other)
    if not may_need_work(src, rules, path):
        return FileResult(path, src, src)
    return run_passes(ConversionContext(path, src, rules, options))


def lexed_input(src: bytes, rules: RuleSet, path: str = "") -> bytes | None:
    """The bytes `convert_source` will hand the lexer for ``src``, or None when it will not lex it: what a run lexes
    ahead, many files at a time (`scan.lexed_ahead`)."""
    if src.startswith(_BOM):
        src = src[len(_BOM):]
    return src if may_need_work(src, rules, path) else None


_BOM = b"\xef\xbb\xbf"
