"""`hipport compat`: a compatibility header, forwarding headers and build glue for a CUDA tree that keeps CUDA as its
source and builds for AMD too; the hazards no header can fix, with patches as `#if` branches of the AMD build."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from hipport.cli.options import (
    RELEASES_HELP,
    TARGETS_HELP,
    config_option,
    fail,
    jobs_option,
    project_rule_dirs,
    user_release,
    user_targets,
)

EXIT_OK, EXIT_CHANGES, EXIT_USAGE, EXIT_FILES_FAILED = 0, 1, 2, 3
HEADER_NAME = "hipport_compat.h"
PATCHES_NAME = "hipport_hazards.diff"
DEFAULT_DIR = "hipport-compat"
# Audit findings the header answers: the 32-bit masks of the warp built-ins it maps (widened or dropped).
_MASK_RULES = frozenset({"warp-mask-32bit", "warp-builtin-unavailable"})


@click.command("compat")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("-o", "--output-dir", type=click.Path(path_type=Path, file_okay=False),
              help=f"Where the header, the forwarding headers and the build glue go (default: `{DEFAULT_DIR}` in the "
                   "first PATH that is a folder, else beside the first file). Never read as part of the tree.")
@click.option("--rocm-version", metavar="X.Y",
              help=f"ROCm release the header maps for ({RELEASES_HELP}): only names that release has are mapped. "
                   "Default: the project's `rocm-version` setting, else the installed HIP, else 7.2.")
@click.option("--roc", is_flag=True, help="Map onto rocBLAS/rocRAND/rocSPARSE/rocSOLVER/MIOpen where one exists.")
@click.option("--build", "build", type=click.Choice(["all", "cmake", "make", "none"]), default="all",
              show_default=True,
              help=f"Build glue to write: `cmake` ({'hipport_compat.cmake'}: `enable_language(HIP)`, the units as "
                   "`LANGUAGE HIP`, CMAKE_HIP_ARCHITECTURES, a function giving a target the include folder, the "
                   "forced include and the HIP libraries), `make` (hipport_compat.mk: `hipport-amd-objects` and "
                   "`hipport-amd` with hipcc and `-include`), both, or none.")
@click.option("--offload-arch", "offload_arch", metavar="GFX[,GFX...]",
              help=f"GPU targets of the build glue ({TARGETS_HELP}). Default: the settings' `offload-arch`, else "
                   "gfx90a,gfx942,gfx1100.")
@click.option("-D", "--define", "defines", multiple=True, metavar="NAME[=VALUE]",
              help="A switch of the project's AMD build, for the audit's view of the tree (repeatable; after the "
                   "settings' `defines`).")
@click.option("--no-audit", is_flag=True, help="Write the header and glue only; do not look for hazards.")
@click.option("--suggestion-level", type=click.Choice(["high", "medium", "low"]), default="high", show_default=True,
              help=f"The least confidence of an audit patch written to {PATCHES_NAME}.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 when any output would change (the header is out of date with the tree).")
@config_option
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip files and folders matching GLOB (repeatable).")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              metavar="DIR", help="Extra rule directory whose entries win over the built-in ones (repeatable).")
@jobs_option
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@click.option("-v", "--verbose", is_flag=True,
              help="List every name left unmapped, every source change and every hazard with its place.")
def compat(paths, output_dir, rocm_version, roc, build, offload_arch, defines, no_audit, suggestion_level, check,
           config_path, exclude, rule_dirs, jobs, quiet, verbose):
    """Write one compatibility header for the CUDA names a tree uses, so that the CUDA sources build for AMD
    unchanged (the single-source alternative to forking the tree with `hipport convert`).

    PATHS are files or folders, selected as `hipport convert` selects them (build files are not read). Each file
    is converted in memory for the ROCm release named, and what the conversion did becomes the header: a
    `#define` per CUDA name HIP has in that release, a forwarding header per CUDA header the tree includes (found
    through `-I`; it includes the compatibility header, which includes the HIP one), function-like macros for
    calls whose arguments change (`HIP_SYMBOL`, kernel casts, the function chosen by argument count, defaults
    HIP lacks), the release's form of the warp built-ins (64-bit masks from ROCm 7.0, mask-free forms before),
    `__CUDA_ARCH__` and CUDA header guards where the tree tests them, stand-ins for names the release lacks. The
    header is `<cuda_runtime.h>` and nothing else when nvcc includes it. Names with no HIP counterpart in that
    release are listed in it and reported; so is each change only the source can take (a definition clashing
    with HIP's, `register`, a call rewrite no macro can write).

    Written again, the header is the same bytes for the same tree, and keeps what is between its
    `hipport: user section` markers; forwarding headers no longer needed are removed. A header of that name
    that hipport did not write is never overwritten.

    The build glue compiles the tree's units as HIP with `-include hipport_compat.h` and the forwarding folder
    on the include path (CMake 3.21+ `include()` file, a Makefile fragment). Then each file with CUDA is
    audited as the AMD build sees it (`hipport audit`), without the findings the header answers (32-bit masks of
    the warp built-ins it maps); each patch is written as a branch, `#if defined(__HIP_PLATFORM_AMD__)` fixed
    `#else` as it was `#endif`, into hipport_hazards.diff, for `git apply` or `patch -p1` from the tree's folder.

    \b
    Exit status:
      0  written, or nothing to change
      1  --check: some output would change
      2  usage error, settings or rule-file error, or a header of that name hipport did not write
      3  some files could not be read (each is named; the header covers the others)
    """
    from hipport.config import ConfigError, find_config_for, load_config
    from hipport.files import InputError, collect_sources, show
    from hipport.rocm import DEFAULT_ARCHS, VersionError, default_target_and_why, rocm_release
    from hipport.rules import RuleError, load_rules

    try:
        config = load_config(config_path if config_path is not None else find_config_for(list(paths)))
        if rocm_version is not None:
            target, why = user_release(rocm_version), "--rocm-version"
        elif config.get("rocm-version"):
            target, why = rocm_release(config.get("rocm-version")), f"the `rocm-version` setting of {show(config.path)}"
        else:
            target, why = default_target_and_why()
        rules = load_rules(project_rule_dirs(config, None, True, rule_dirs))
        root = next((p for p in paths if p.is_dir()), paths[0].parent)
        out_dir = output_dir if output_dir is not None else root / DEFAULT_DIR
        held = next((p for p in paths if _inside(p, out_dir)), None)
        if held is not None:  # the output folder is never read: it must not hold the tree
            fail(f"--output-dir `{show(out_dir)}` holds the input `{show(held)}`; choose a folder of its own")
        sources = [s for s in collect_sources(list(paths), exclude, report_skipped=True,
                                              project_exclude=tuple(config.get("exclude", [])),
                                              project_dir=config.base)
                   if not _inside(s.path, out_dir)]
    except (RuleError, InputError, ConfigError, VersionError) as exc:
        fail(str(exc))
    if offload_arch is not None:
        archs = user_targets(offload_arch)
    elif config.get("offload-arch"):
        value = config.get("offload-arch")
        archs = tuple(t.strip() for t in (value.split(",") if isinstance(value, str) else value) if t.strip())
    else:
        archs = DEFAULT_ARCHS
    roc = roc or config.get("roc", False)
    command = _command(paths, out_dir, target, roc, build, archs, root)
    plan, problems, texts = _plan(sources, rules, target, roc, jobs, root)
    outputs, stale = _outputs(plan, out_dir, command, build, archs, root, show)
    hazards = []
    if not no_audit:
        hazards, diff = _hazards(sources, texts, plan, target, archs, [*(config.get("defines") or ()), *defines],
                                 [str(p) for p in config.paths("include-dirs")], suggestion_level, root)
        patches = out_dir / PATCHES_NAME
        if diff:
            outputs[patches] = diff
        elif patches.exists():
            stale.append(patches)
    changed = [p for p, data in outputs.items() if not _same(p, data)] + [p for p in stale if p.exists()]
    if check:
        if not quiet:
            for p in changed:
                click.echo(f"would change: {show(p)}", err=True)
        _summary(plan, hazards, problems, target, why, out_dir, written=False, quiet=quiet, verbose=verbose)
        sys.exit(EXIT_CHANGES if changed else (EXIT_FILES_FAILED if problems else EXIT_OK))
    from hipport.files import write_atomic

    try:
        for p, data in outputs.items():
            if p in changed:
                write_atomic(p, data)
        for p in stale:
            if p.exists():
                p.unlink()
    except (OSError, InputError) as exc:
        fail(f"{show(out_dir)}: cannot write ({getattr(exc, 'strerror', None) or exc})", EXIT_FILES_FAILED)
    _summary(plan, hazards, problems, target, why, out_dir, written=True, quiet=quiet, verbose=verbose,
             changed=len(changed))
    sys.exit(EXIT_FILES_FAILED if problems else EXIT_OK)


def _inside(path: Path, folder: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(folder))
        return True
    except ValueError:
        return False


def _same(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except OSError:
        return False


def _rel(path, root: Path) -> str:
    """``path`` relative to the tree's folder, as the header records it (the same whatever the current folder)."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).as_posix()


def _command(paths, out_dir, target, roc, build, archs, root: Path) -> str:
    """How to write the outputs again, from the tree's folder."""
    parts = ["hipport compat", *(_rel(p, root) for p in paths), "-o", _rel(out_dir, root),
             f"--rocm-version {target[0]}.{target[1]}"]
    if roc:
        parts.append("--roc")
    if build != "all":
        parts.append(f"--build {build}")
    return " ".join(parts) + f" --offload-arch {','.join(archs)}"


def _plan(sources, rules, target, roc, jobs, root: Path):
    """Convert each source in memory; the plan, the files that could not be read, and each file's bytes."""
    from hipport.convert import ConvertOptions
    from hipport.convert.compat.plan import build_plan
    from hipport.convert.runner import convert_tree
    from hipport.files import show
    from hipport.semantic import load_semantic
    from hipport.wavefront import load_wave_rules
    from hipport.workers import default_jobs

    readable = [s for s in sources if s.skip is None]
    problems = [s.skip for s in sources if s.skip is not None]
    results = convert_tree(readable, rules, ConvertOptions(roc=roc, rocm_version=target), write="none",
                           jobs=jobs or default_jobs())
    items, texts = [], {}
    for source, result in zip(readable, results):
        if result is None or result.error is not None:
            problems.append(result.error if result is not None else f"{show(source.path)}: not read")
            continue
        texts[str(source.path)] = result.before
        items.append((_rel(source.path, root), str(source.path), result.before, result))
    return build_plan(items, rules, load_semantic(), load_wave_rules(), target, roc), problems, texts


def _outputs(plan, out_dir: Path, command: str, build: str, archs, root: Path, show):
    """Every file to write (path -> bytes) and the forwarding headers of an earlier run no longer needed."""
    from hipport.convert.compat import glue, header

    head = out_dir / HEADER_NAME
    old = None
    if head.exists():
        try:
            old = head.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            fail(f"{show(head)}: cannot read ({exc.strerror})")
        if not old.startswith(header.FIRST_LINE):
            fail(f"{show(head)}: not written by `hipport compat`; move it away or choose another folder (-o)")
    outputs = {head: header.render(plan, HEADER_NAME, command, header.user_section(old)).encode()}
    for cuda, hip in plan.forwarding.items():
        if ".." in Path(cuda).parts or Path(cuda).is_absolute():
            continue  # a header named by a path outside the folder: nothing to stand in for
        outputs[out_dir / cuda] = header.forwarding_header(cuda, hip, HEADER_NAME,
                                                           plan.include_stand_ins.get(cuda)).encode()
    stale = [out_dir / name for name in header.forwarding_of(old) if name not in plan.forwarding]
    stale = [p for p in stale if _ours(p, header.FORWARD_FIRST)]
    if build in ("all", "cmake"):
        outputs[out_dir / glue.CMAKE_NAME] = glue.cmake_text(plan, out_dir, HEADER_NAME, archs, command,
                                                             plan.roc).encode()
    if build in ("all", "make"):
        program = Path(os.path.abspath(root)).name or "program"
        outputs[out_dir / glue.MAKE_NAME] = glue.make_text(plan, out_dir, HEADER_NAME, archs, command, program,
                                                           plan.roc).encode()
    return outputs, stale


def _ours(path: Path, marker: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return marker in fh.readline()
    except OSError:
        return False


def _hazards(sources, texts, plan, target, archs, defines, include_dirs, level, root: Path):
    """The audit's findings on the files with CUDA (without those the header answers), and the unified diff of
    their patches written as AMD branches."""
    from hipport.amd_branches import as_amd_branches
    from hipport.audit import AuditOptions, audit_source
    from hipport.diffs import unified_diff
    from hipport.model import CONFIDENCE_LEVELS, FileResult, apply_edits
    from hipport.scan import LexError

    options = AuditOptions(offload_arch=tuple(archs), rocm_version=tuple(target), defines=tuple(defines),
                           include_dirs=tuple(include_dirs))
    allowed = CONFIDENCE_LEVELS[:CONFIDENCE_LEVELS.index(level) + 1]
    answered = set(plan.warp) | set(plan.stand_ins)
    gpu = set(plan.gpu_paths)
    found, diff = [], []
    for source in sources:
        path = str(source.path)
        if path not in gpu or path not in texts:
            continue
        src = texts[path]
        try:
            findings = audit_source(src, path, options)
        except LexError:
            continue
        kept = [f for f in findings if not (f.rule_id in _MASK_RULES and f.subject in answered)]
        kept = [f for f in kept if f.severity in ("warning", "error") or f.edits]
        found += [(path, f) for f in kept]
        edits = [e for f in kept if f.confidence in allowed for e in f.edits]
        branches, _skipped = as_amd_branches(src, edits)
        if branches:
            after = apply_edits(src, branches)
            diff.append(unified_diff(FileResult(path, src, after), _rel(path, root)))
    return found, b"".join(diff)


def _summary(plan, hazards, problems, target, why, out_dir, *, written, quiet, verbose, changed=0) -> None:
    from hipport.files import show, one_line

    for p in problems:
        click.echo(one_line(f"error: {p}"), err=True)
    if quiet:
        return
    def echo(text: str) -> None:
        click.echo(one_line(text), err=True)

    v = f"{target[0]}.{target[1]}"
    echo(f"hipport compat: {plan.files} files read, {plan.gpu_files} with CUDA; for ROCm {v} ({why})")
    echo(f"{show(out_dir / HEADER_NAME)}: {plan.mapped} names mapped, {len(plan.calls)} calls by macro, "
         f"{len(plan.warp)} warp built-ins, {len(plan.forwarding)} CUDA headers forwarded, "
         f"{len(plan.stand_ins) + len(plan.include_stand_ins)} stand-ins"
         + (f"; {changed} files written" if written else ""))
    if plan.unmapped:
        names = sorted(plan.unmapped)
        echo(f"not mapped for ROCm {v} ({len(names)}; the AMD build fails where they are used): "
             + ", ".join(f"`{n}`" for n in names[:8]) + (" ..." if len(names) > 8 else ""))
        if verbose:
            for name, (rule, place, message) in sorted(plan.unmapped.items()):
                echo(f"  {place.path}:{place.line}: {rule}: {message}")
    if plan.source_changes:
        echo(f"rewrites no header can make (the header maps the names only; the source may need a change): "
             f"{len(plan.source_changes)}" + ("" if verbose else " (-v lists them; `hipport convert --diff FILE` "
                                                                   "shows each)"))
        if verbose:
            for c in plan.source_changes:
                echo(f"  {c.path}:{c.line}: `{c.cuda}` -> `{c.hip[:60]}` ({c.category})")
    if plan.findings and verbose:
        for path, f in plan.findings:
            echo(f"  {path}:{f.line}: {f.severity} {f.rule_id}: {f.message}")
    if plan.c_units:
        echo(f"C files with CUDA, not built as HIP by the glue: {', '.join(show(p) for p in plan.c_units[:5])}")
    if hazards:
        by_rule: dict[str, int] = {}
        for _, f in hazards:
            by_rule[f.rule_id] = by_rule.get(f.rule_id, 0) + 1
        echo(f"hazards no header can fix: {len(hazards)} ("
             + ", ".join(f"{r} {n}" for r, n in sorted(by_rule.items())) + f"); patches as `#if` branches: "
             f"{show(out_dir / PATCHES_NAME)}")
        if verbose:
            for path, f in hazards:
                echo(f"  {show(path)}:{f.line}: {f.severity} {f.rule_id}: {f.message}")
