"""`hipport convert`: options, file selection, modes and exit codes around the convert runner."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
from pathlib import Path

import click
from rich.console import Console

from hipport.cache import ResultCache, rules_fingerprint
from hipport.cli.options import (
    RELEASES_HELP,
    TARGETS_HELP,
    cache_dir_option,
    config_option,
    fail,
    jobs_option,
    project_rule_dirs,
    toolchain_choice,
    toolchain_needs_verify,
    toolchain_options,
    user_release,
    user_targets,
)
from hipport.config import ConfigError, find_config_for, load_config
from hipport.convert import ConvertOptions
from hipport.convert.runner import (
    Interrupted,
    LaterTargets,
    convert_tree,
    signals_handled,
)
from hipport.convert.summary import summarize
from hipport.files import (
    TARGETED_BUILD_KINDS,
    InputError,
    collect_sources,
    copy_as_is,
    one_line,
    output_path,
    plan_output_dir,
    show,
    tree_rest,
)
from hipport.report.text import render_summary, render_verify
from hipport.rocm import DEFAULT_ARCHS, VersionError, default_target_and_why, rocm_release
from hipport.rules import RuleError, load_rules
from hipport.workers import default_jobs

EXIT_OK, EXIT_CHANGES, EXIT_USAGE, EXIT_FILES_FAILED, EXIT_NOT_BUILDING = 0, 1, 2, 3, 4
_PROGRESS_MIN_FILES = 5



def _interruptible(command):
    """SIGINT and SIGTERM during the command: one line and exit 130/143, no traceback (writes are never cut)."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            with signals_handled():
                return command(*args, **kwargs)
        except (Interrupted, KeyboardInterrupt) as exc:
            name, code = (exc.name, exc.exit_code) if isinstance(exc, Interrupted) else ("SIGINT", 130)
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            click.echo(f"hipport: interrupted by {name}; every file is wholly old or wholly new; run again to "
                       "finish", err=True)
            sys.exit(code)

    return run


@click.command("convert")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--output-dir", "-o", type=click.Path(path_type=Path, file_okay=False),
              help="Write converted files under DIR, mirroring the input tree; sources are not touched. "
                   "One input directory is mirrored as its contents; several inputs keep their own names. "
                   "Refused (exit 2, before anything is written) when an output would land on an input, inside "
                   "an input tree, or on another output; names differing only in letter case count as one.")
@click.option("--diff", "diff_mode", is_flag=True, help="Print a unified diff on stdout; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change (for CI).")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print the converted file on stdout (one file only).")
@click.option("--roc", is_flag=True,
              help="Prefer rocBLAS/rocRAND/rocSPARSE/rocSOLVER/MIOpen names over the hip* libraries where one exists.")
@click.option("--rocm-version", metavar="X.Y",
              help="ROCm release the output must build with (warp built-in forms, \"needs ROCm\" warnings): "
                   f"{RELEASES_HELP}. Default: the project's `rocm-version` setting, else the installed HIP "
                   "(hip/hip_version.h, hipconfig), else 7.2 (the newest hipport knows).")
@click.option("--launch-syntax", type=click.Choice(["cuda", "hip"]),
              help="`cuda` (default) keeps `k<<<g, b>>>(...)`, which HIP-Clang accepts; `hip` writes "
                   "`hipLaunchKernelGGL(k, dim3(g), dim3(b), shm, stream, ...)`.")
@config_option
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip files and directories whose relative path or name matches GLOB (repeatable): below an "
                   "input directory, or a named file as given. The settings' `exclude` patterns are relative to "
                   "the settings file's directory and apply however files are named.")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              metavar="DIR", help="Extra rule directory whose entries win over the built-in ones (repeatable).")
@click.option("--hipify-perl", "hipify_perl", type=click.Path(path_type=Path), metavar="PATH",
              help="hipify-perl script whose renames override the bundled ones (its families, versions and "
                   "header table stay hipport's; --rules still wins). Default: the project's `hipify-perl` "
                   "setting, $HIPPORT_HIPIFY_PERL, /opt/rocm/bin/hipify-perl, then hipify-perl on PATH; "
                   "HIPPORT_HIPIFY_PERL=off stops the search. Read once, cached by content hash.")
@click.option("--no-hipify-perl", is_flag=True, help="Do not look for or use an installed hipify-perl.")
@click.option("--no-build-files", is_flag=True,
              help="Leave build files alone. By default Makefiles (Makefile, makefile, GNUmakefile, *.mk) and CMake "
                   "files (CMakeLists.txt, *.cmake) in PATHS are converted too: nvcc and its flags to hipcc's, "
                   "CUDA libraries and paths to ROCm's, CMake's CUDA language to HIP (summary category `build`); a "
                   "setup.py is read (never changed) for PyTorch's CUDAExtension, which builds for ROCm itself.")
@click.option("--offload-arch", "offload_arch", metavar="GFX[,GFX...]",
              help="AMD GPU targets converted build files compile for (--offload-arch=, CMAKE_HIP_ARCHITECTURES): "
                   f"{TARGETS_HELP}. Default: the settings' `offload-arch`, else those of gfx90a,gfx942,gfx1100 the "
                   "installed hipcc can build for (asked once and cached), else all three.")
@click.option("--apply-suggestions", is_flag=True,
              help="Also apply the suggested patches of `hipport audit` (wave64, masks, atomics) to the converted "
                   "code: by default only those of confidence `high`, which are mechanical and proven by a reviewed "
                   "fixture (warp-level ones also run on 64 lanes); widen with --suggestion-level, limit with "
                   "--select.")
@click.option("--suggestion-level", type=click.Choice(["high", "medium", "low"]), default=None,
              help="With --apply-suggestions: the least confidence a patch needs (default `high`). `medium` and "
                   "`low` patches rest on a guess about the code (the finding says which); review their diff.")
@click.option("--select", "select", multiple=True, metavar="RULE[,RULE...]",
              help="With --apply-suggestions: only these audit rule ids (repeatable; default every rule with a fix).")
@click.option("--follow-symlinks", is_flag=True,
              help="Enter symlinked directories and convert symlinked files whose target lies outside the input "
                   "tree (in place: the target is rewritten, the link stays). Default: not followed, each named.")
@click.option("--skip-read-only", is_flag=True,
              help="Leave read-only files alone (each is named). Default: like `sed -i`, a read-only file in a "
                   "writable directory is replaced and stays read-only.")
@click.option("--force", is_flag=True, hidden=True)  # the default since 0.2; kept so old command lines still run
@click.option("--verify", is_flag=True,
              help="Then compile every converted translation unit (a .cu/.hip file, or a C++ file using HIP, that no "
                   "other file #includes) with the installed hipcc: syntax only, HIP_PLATFORM=amd, for the "
                   "--offload-arch targets its clang knows. Each unit that fails is named with its first errors and, "
                   "where known, their cause and fix (rules/verify.toml); exit 4. With --diff, --check or --stdout "
                   "a temporary copy of the converted text is compiled; with -o, the output tree.")
@click.option("-I", "--include-dir", "include_dirs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              metavar="DIR", help="With --verify: a folder hipcc searches for headers (repeatable; after the "
                                  "settings' `include-dirs`).")
@toolchain_options
@jobs_option
@click.option("--no-cache", is_flag=True,
              help="Look at every file. By default a file found to need no change is remembered by its content "
                   "(and hipport's version, rules and options), so a full-tree run skips it next time.")
@cache_dir_option
@click.option("-q", "--quiet", is_flag=True,
              help="Print nothing but errors; with --check, also each file that would change (its path, one a "
                   "line, on stdout).")
@click.option("-v", "--verbose", is_flag=True, help="List every changed file, every finding and every name.")
@_interruptible
def convert(paths, output_dir, diff_mode, check, to_stdout, roc, rocm_version, launch_syntax, config_path, exclude,
            rule_dirs, hipify_perl, no_hipify_perl, no_build_files, offload_arch, apply_suggestions,
            suggestion_level, select, follow_symlinks, skip_read_only, force, verify, include_dirs, verify_hipcc, verify_hip_include, verify_clang,
            jobs, no_cache, cache_dir, quiet, verbose):
    """Convert CUDA sources under PATHS to HIP, and bring HIP sources forward to the targeted ROCm.

    PATHS are files or directories; directories are searched for .cu .cuh .hip .cpp .cc .cxx .c .h .hpp .hh .inl
    .inc files and for build files (Makefile, *.mk, CMakeLists.txt, *.cmake, setup.py; --no-build-files skips them),
    skipping .git. HIP code (a .hip file, HIP in a C++ file) goes through the same passes: what an older ROCm
    wrote otherwise is rewritten for --rocm-version (hipBLAS 2 names for a 7.0+ target...), and the summary counts
    those files apart ("HIP input, brought forward"). By default files are rewritten in place, atomically: a crash or Ctrl-C leaves each file
    wholly old or wholly new. Converting converted code changes nothing.

    \b
    Exit status:
      0  nothing to change, or every change written
      1  --check found files that would change
      2  usage error, malformed rule file, or an --output-dir whose outputs would land on an input or on
         each other (nothing is written)
      3  some files were not converted: unreadable, binary ("looks binary; skipped"), read-only with
         --skip-read-only, symlinks not followed, changed on disk during the run... (each is named in one line;
         the others were processed)
      4  --verify: a converted translation unit does not compile (each is named with its first errors; 3
         wins when some files were not converted, 4 wins over --check's 1); without hipcc, --verify is a
         usage error (2) and nothing is converted
      130, 143  interrupted by SIGINT (Ctrl-C) or SIGTERM: a write under way was finished, every file is
         wholly old or wholly new; run again to finish
    """
    modes = [m for m, on in (("--output-dir", output_dir is not None), ("--diff", diff_mode),
                             ("--check", check), ("--stdout", to_stdout)) if on]
    if len(modes) > 1:
        fail(f"{' and '.join(modes)} cannot be combined; choose one mode")
    try:
        config = load_config(config_path if config_path is not None else find_config_for(list(paths)))
        rocm, rocm_why = _rocm_target(rocm_version, config)
        rules = load_rules(project_rule_dirs(config, hipify_perl, no_hipify_perl, rule_dirs))
        sources = collect_sources(list(paths), exclude, follow_symlinks=follow_symlinks, report_skipped=True,
                                  project_exclude=tuple(config.get("exclude", [])), project_dir=config.base,
                                  build_files=not no_build_files)
        targets = _offload_arch(offload_arch, config)
        probed = later = None
        if targets is None:  # ask the installed hipcc only when a build file will name the targets
            targets = DEFAULT_ARCHS
            if any(s.build in TARGETED_BUILD_KINDS for s in sources):
                def ask():
                    from hipport.convert.build.targets import default_targets

                    return default_targets(use_cache=not no_cache, cache=ResultCache("targets", "probe", cache_dir))

                if verify or apply_suggestions:  # both need the targets before the first file
                    probed = ask()
                    targets = probed.targets
                else:  # hipcc takes half a second to answer: the sources are converted meanwhile
                    later = LaterTargets(ask, DEFAULT_ARCHS)
        if any(s.build in TARGETED_BUILD_KINDS for s in sources):  # (and a run without them loads none of their code)
            from hipport.convert.build.rules import load_build_rules

            load_build_rules()  # a malformed build rule file stops the run before any file is touched
    except (RuleError, InputError, ConfigError, VersionError) as exc:
        fail(str(exc))
    if include_dirs and not verify:
        fail("-I/--include-dir only applies with --verify")
    toolchain_needs_verify(verify, verify_hipcc, verify_hip_include, verify_clang)
    toolchain = None
    if verify:  # before anything is written: no hipcc (or no target it knows) is a usage error
        from hipport.convert.verify import ToolchainError, find_toolchain, load_causes

        try:
            load_causes()
            toolchain = find_toolchain(targets, **toolchain_choice(config, verify_hipcc, verify_hip_include,
                                                               verify_clang))
        except (RuleError, ToolchainError) as exc:
            fail(str(exc))
    roc = roc or config.get("roc", False)
    launch_syntax = launch_syntax or config.get("launch-syntax", "cuda")
    if to_stdout and (len(sources) != 1 or not paths[0].is_file()):
        fail("--stdout takes exactly one source file")
    rest = []
    if output_dir is not None:
        # The rest of the tree goes to the output as it is (headers of other names, data, scripts): it must build.
        rest = tree_rest(list(paths), sources, follow_symlinks)
        try:
            plan_output_dir(output_dir, [*sources, *(r for r in rest if r.skip is None)], paths)
        except InputError as exc:
            fail(str(exc))
    write = "outdir" if output_dir is not None else ("none" if (diff_mode or check or to_stdout) else "inplace")
    err = Console(stderr=True, quiet=quiet, highlight=False)
    suggestions = _suggestion_ids(select) if apply_suggestions else None
    if select and not apply_suggestions:
        fail("--select only applies with --apply-suggestions")
    if suggestion_level and not apply_suggestions:
        fail("--suggestion-level only applies with --apply-suggestions")
    options = ConvertOptions(roc=roc, rocm_version=rocm, launch_syntax=launch_syntax, suggestions=suggestions,
                             offload_arch=targets, tree=_tree_facts(sources))
    post = None
    if suggestions is not None:
        from hipport.audit.suggest import (
            fixer,  # only when asked: the audit parses ASTs
        )

        post = fixer(rocm, suggestions, suggestion_level or "high")

    def emit(source, result):
        if diff_mode and result.error is None:
            from hipport.diffs import unified_diff

            sys.stdout.buffer.write(unified_diff(result, source.rel.as_posix() if output_dir else str(source.path)))
        elif to_stdout and result.error is None:
            sys.stdout.buffer.write(result.after)
        if verbose and result.error is None:
            for f in result.findings:
                err.print(f"{show(result.path)}:{f.line}:{f.col}: {f.severity} {f.rule_id}: {f.message}",
                          markup=False, soft_wrap=True)
            if result.changed:  # soft_wrap: one line per file however narrow the terminal, so grep finds it
                err.print(f"{'would change' if write == 'none' else 'converted'}: {show(result.path)}", markup=False,
                          soft_wrap=True)

    # Without the targets: they only matter to build files, whose entries name them (`runner._cache_key`).
    salt = dataclasses.replace(options, offload_arch=())
    cache = None if no_cache else ResultCache(
        "convert", f"{rules_fingerprint([p for p in rules.files])}\0{salt!r}\0{suggestion_level}", cache_dir)
    show_progress = err.is_terminal and not quiet and len(sources) > _PROGRESS_MIN_FILES and not (diff_mode or to_stdout)
    if show_progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("converting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err, transient=True) as progress:
            task = progress.add_task("convert", total=len(sources))

            def step(source, result):
                emit(source, result)
                progress.advance(task)

            results = convert_tree(sources, rules, options, write=write, output_dir=output_dir, on_result=step,
                                   jobs=jobs or default_jobs(), force=not skip_read_only, cache=cache, post=post,
                                   later_targets=later)
    else:
        results = convert_tree(sources, rules, options, write=write, output_dir=output_dir, on_result=emit,
                               jobs=jobs or default_jobs(), force=not skip_read_only, cache=cache, post=post,
                                   later_targets=later)
    sys.stdout.flush()
    if later is not None:
        probed = later.answer()
        targets = probed.targets
    summary = summarize(results)
    if output_dir is not None:
        _copy_rest(rest, sources, results, output_dir, summary)
    if toolchain is not None:
        summary.verify = verify_converted(toolchain, sources, results, write, output_dir,
                                 [*config.paths("include-dirs"), *include_dirs], jobs or default_jobs(), rocm,
                                 defines=config.get("defines") or ())
    if not to_stdout or verbose:
        action = "would change" if write == "none" else "changed"
        render_summary(err, summary, verbose=verbose, action=action, verify_copy=write == "none",
                       target=f"ROCm {rocm[0]}.{rocm[1]} ({rocm_why})")
        if probed is not None:  # the targets were not the user's: say where the build files' ones come from
            err.print(f"build files target {','.join(targets)}: {probed.why}; --offload-arch or the offload-arch "
                      "setting names others", markup=False, soft_wrap=True)
    elif summary.errors:
        for e in summary.errors:
            err.print(f"error: {e}", markup=False)
    if quiet:  # -q prints nothing but errors: each failed file, one line
        if check:  # and what --check is for: which files, one path a line on stdout, for a script to read
            for result in results:
                if result.error is None and result.changed:
                    click.echo(one_line(show(result.path)))
        for e in summary.errors:
            click.echo(f"error: {e}", err=True)
        for unit in summary.verify.failed if summary.verify else ():
            first = unit.errors[0] if unit.errors else None
            click.echo(one_line(f"does not compile: {unit.shown}" +
                                (f": {first.location()}: {first.message}" if first else "")), err=True)
    elif to_stdout and summary.verify is not None and not verbose:
        render_verify(err, summary.verify, verbose=False, copy=True)
    if summary.files_failed:
        sys.exit(EXIT_FILES_FAILED)
    if summary.verify is not None and summary.verify.failed:
        sys.exit(EXIT_NOT_BUILDING)
    if check and summary.files_changed:
        sys.exit(EXIT_CHANGES)
    sys.exit(EXIT_OK)




def _copy_rest(rest, sources, results, output_dir, summary) -> None:
    """-o: every file of the tree that was not converted goes to the output as it is (the rest of the tree, and
    sources that could not be converted); one that cannot be copied is an error of the run (exit 3)."""
    unconverted = [s for s, r in zip(sources, results) if r is not None and r.after is None and s.skip is None
                   and s.path.is_file()]
    for source in [*rest, *unconverted]:
        if source.skip is not None:
            continue
        target = output_path(output_dir, source)
        try:
            copy_as_is(source, target, output_dir)
        except InputError as exc:
            summary.errors.append(str(exc))
            summary.files_failed += 1
        except OSError as exc:
            summary.errors.append(f"{show(target)}: cannot copy ({exc.strerror}); not written")
            summary.files_failed += 1


def _tree_facts(sources):
    """What the run's tree says of each file's platform: headers only the NVIDIA branches include, headers compiled
    within a file that builds for AMD already, the GPU macros the tree defines itself (`platforms.tree_facts`)."""
    from hipport.platforms import TreeFacts, tree_facts
    from hipport.semantic import load_semantic

    from hipport.convert.single_source import hip_path_of_cmake

    sem = load_semantic()
    interesting = frozenset(sem.device_pass) | frozenset(sem.guards) | frozenset(sem.version_macros)
    facts = tree_facts([s.path for s in sources if s.skip is None and s.build is None], interesting)
    for s in sources:  # a CMake file that enables HIP: the tree's own AMD build
        if s.skip is None and s.build == "cmake":
            try:
                why = hip_path_of_cmake(s.path.read_bytes())
            except OSError:
                continue
            if why:
                return TreeFacts(facts.other_platform, facts.inherited, facts.macros, facts.compat_macros,
                                 facts.compat_functions, facts.amd_only, f"`{show(s.rel)}`: {why}", facts.context,
                                 facts.counterparts)
    return facts


def verify_converted(toolchain, sources, results, write, output_dir, include_dirs, jobs, rocm, defines=()):
    """`--verify` of `convert` and of `audit` (which passes write="none"). The converted tree as hipcc should see it: the files in place, the output tree, or (nothing written) a
    temporary copy of the converted texts (paths relative to it); then `verify_tree`. An include folder inside an
    input tree is searched in its converted copy first. ``defines``: the project's AMD switches, passed as -D."""
    from hipport.convert.verify import TreeFile, verify_tree

    files, mirrors = [], {}  # mirrors: input tree root -> where its converted copy is
    for source, result in zip(sources, results):
        if source.skip is not None or source.build is not None:
            continue
        depth = len(source.rel.parts)
        here = Path(os.path.abspath(source.path))
        tree = here.parents[depth - 1] if depth else here.parent
        if write == "inplace":
            files.append(TreeFile(here, str(source.path), changed=result.changed))
            mirrors[tree] = tree
        elif write == "outdir":
            mirrors[tree] = Path(os.path.abspath(output_dir))
            if result.error is not None:
                continue  # not written
            target = output_path(output_dir, source)
            files.append(TreeFile(Path(os.path.abspath(target)), str(target), changed=result.changed, origin=here))
        else:
            mirrors[tree] = Path(".")  # the temporary copy's root
            text = result.after if result.error is None else result.before
            if not text:
                continue
            files.append(TreeFile(source.rel, str(source.path), text=text, changed=result.changed, origin=here))
    dirs = []
    for d in include_dirs:
        d = Path(os.path.abspath(d))
        for tree, copy in mirrors.items():
            if copy != tree and (d == tree or tree in d.parents):
                dirs.append(copy / d.relative_to(tree))
        dirs.append(d)
    return verify_tree(files, toolchain, include_dirs=dirs, roots=list(dict.fromkeys(mirrors.values())), jobs=jobs,
                       target_release=rocm, defines=defines)


def _suggestion_ids(select: tuple[str, ...]) -> frozenset:
    from hipport.audit.hazards import load_hazards

    ids = frozenset(i.strip() for group in select for i in group.split(",") if i.strip())
    known = load_hazards()
    unknown = sorted(ids - set(known))
    if unknown:
        fail(f"--select: unknown audit rule id `{unknown[0]}` (see `hipport rules`)")
    return ids


def _offload_arch(given: str | None, config) -> tuple[str, ...] | None:
    """The AMD targets for build files: the option, else the settings' `offload-arch`, else None (the caller asks
    the installed hipcc)."""
    if given is not None:
        return user_targets(given)
    value = config.get("offload-arch")
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    targets = tuple(dict.fromkeys(t.strip() for t in items if t.strip()))  # each checked by `load_config`
    if not targets:
        raise ConfigError(f"{show(config.path)}: `offload-arch` names no GPU target (gfx90a, gfx942...)")
    return targets


def _rocm_target(option: str | None, config) -> tuple[tuple[int, int], str]:
    """The release to convert for, and where it came from (the summary says both)."""
    if option is not None:
        return user_release(option), "--rocm-version"
    if config.get("rocm-version"):  # a release `load_config` checked
        return rocm_release(config.get("rocm-version")), f"the `rocm-version` setting of {show(config.path)}"
    return default_target_and_why()
