"""`hipport audit`: the click command. Options, file selection, output, baselines and exit codes only; the
checks live in hipport.audit and hipport.audit.checks."""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import os
import posixpath
import re
import signal
import sys
from collections import Counter
from pathlib import Path

import click

# Only what every run needs is imported here: a pre-commit hook audits one file in a fresh process, and the
# checks, the conversion, rich, the worker pool, --verify and the reports are imported where they are used
# (a cached file needs none of them).
from hipport.audit.hazards import (
    SEVERITIES,
    SEVERITY_RANK,
    HazardError,
    load_all_rules,
    parse_version,
)
from hipport.audit.build_switches import build_defines, build_macros
from hipport.audit.options import AuditOptions, dependency_key, quoted_includes
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
from hipport.files import (
    InputError,
    Output,
    check_outputs,
    collect_sources,
    load_source,
    one_line,
    project_path,
    raise_if_interrupted,
    show,
    write_atomic,
)
from hipport.report import DEFAULT_NAMES, REPORT_FORMATS, render
from hipport.rocm import DEFAULT_ARCHS, NEWEST_ROCM, default_target
from hipport.rules import RuleError, load_rules_later
from hipport.rules import cache_dir as user_cache_dir
from hipport.workers import PARALLEL_MIN_FILES, default_jobs

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FILES_FAILED, EXIT_NOT_BUILDING = 0, 1, 2, 3, 4
BASELINE_VERSION = 1



def _split(values) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def normalise_line(text: bytes | str) -> str:
    """A source line as the baseline remembers it: whitespace collapsed, so re-indenting keeps a match."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return " ".join(text.split())


def baseline_key(path: str, rule_id: str, line_text: bytes | str) -> tuple[str, str, str]:
    """``path`` is project-relative (files.project_path), so a key does not depend on how hipport was called."""
    return (_posix(path), rule_id, normalise_line(line_text))


@functools.lru_cache(maxsize=64)  # a key is made for every finding, thousands in one generated file
def _posix(path: str) -> str:
    return Path(path).as_posix()


def _baseline_path(stored: str, base: Path) -> str:
    """A path read from a baseline, as project_path would give it (older baselines may hold `./x` or absolute
    paths)."""
    if posixpath.isabs(stored) or os.path.isabs(stored):
        return project_path(stored, base)
    return posixpath.normpath(stored)


def _load_baseline(path: Path, base: Path) -> Counter:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        fail(f"{path}: baseline file not found (create one with --write-baseline)")
    except (OSError, ValueError) as exc:
        fail(f"{path}: not a hipport baseline: {exc}")
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION or not isinstance(
            data.get("findings"), list):
        fail(f"{path}: not a hipport baseline (expected {{\"version\": {BASELINE_VERSION}, \"findings\": [...]}})")
    counts: Counter = Counter()
    for k, entry in enumerate(data["findings"]):
        try:
            counts[(_baseline_path(entry["path"], base), entry["rule"], normalise_line(entry["line"]))] += int(
                entry.get("count", 1))
        except (KeyError, TypeError, ValueError):
            fail(f"{path}: findings[{k}] needs `path`, `rule` and `line`")
    return counts


def _check_baseline_target(path: Path) -> None:
    parent = path.parent
    if not parent.is_dir():
        fail(f"{show(path)}: cannot write the baseline: {show(parent)} is not a directory")


def _write_baseline(path: Path, keys: Counter) -> None:
    import json

    entries = [{"path": p, "rule": r, "line": t, **({"count": c} if c > 1 else {})}
               for (p, r, t), c in sorted(keys.items())]
    data = (json.dumps({"version": BASELINE_VERSION, "findings": entries}, indent=1) + "\n").encode("utf-8")
    try:
        write_atomic(path, data)
    except (OSError, InputError) as exc:
        fail(f"{show(path)}: cannot write the baseline ({getattr(exc, 'strerror', None) or exc})")


def _load_one(source, options: AuditOptions, cache: ResultCache | None):
    """(bytes, cache key, cached findings or None, the headers it includes with quotes), or the one-line problem
    when the file cannot be used (read as `hipport convert` reads it, files.load_source)."""
    try:
        src, _ = load_source(source)
    except InputError as exc:
        return str(exc)
    includes = quoted_includes(src, str(source.path), options.include_dirs)
    key = os.fsencode(str(source.path)) + b"\0" + src + b"\0" + dependency_key(
        src, str(source.path), options.include_dirs, includes)
    return src, key, _still_current(cache.get(key), str(source.path), options) if cache is not None else None, \
        includes


def _still_current(cached, path: str, options: AuditOptions):
    """The findings of a cache entry, or None when they were found by asking about the whole project (stored as
    `("project", stamp, findings)`) and a source of the project changed since."""
    if isinstance(cached, tuple) and len(cached) == 3 and cached[0] == "project":
        from hipport.project_sources import stamp

        return cached[2] if cached[1] == stamp(path, options.project_dir, options.include_dirs) else None
    return cached


@contextlib.contextmanager
def _cycle_collector_paused():
    """Python's cycle collector paused while one file is converted and audited: the checks leave few cycles, and
    on a large file each full collection walks every object of its tokens and parse again (7.5% of the CPU time
    of a 27 MB file, 6% at 4 MB, for 5% more peak memory). Collection goes on as usual once the file is done."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _audit_one(source, options: AuditOptions, cache: ResultCache | None, converter, loaded=None):
    """(source, bytes, findings, problem, conversion): a file that cannot be used or lexed comes back with a
    problem, a one-line message naming it. The findings are the audit's and the conversion's (``converter``, in
    memory) as one set; ``conversion`` is None when the findings came from the cache. ``loaded``: what
    `_load_one` gave for it, when it was read already."""
    path = str(source.path)
    if loaded is None:
        loaded = _load_one(source, options, cache)
    if isinstance(loaded, str):
        return source, b"", [], loaded, None
    src, key, findings, _ = loaded
    conversion = None
    if findings is None:
        from hipport.audit import audit_source
        from hipport.scan import LexError

        with _cycle_collector_paused():
            conversion = converter(src, path)
            try:
                findings = audit_source(src, path, options, conversion)
            except LexError as exc:
                return source, src, [], f"{show(path)}: {exc}", None
        if cache is not None:
            from hipport import project_sources

            cache.put(key, ("project", project_sources.stamp(path, options.project_dir, options.include_dirs),
                            findings) if project_sources.asked(path) else findings)
    return source, src, findings, None, conversion


# Files audited a batch at a time: the batch's files not in the result cache, up to this many bytes, are lexed
# together (`scan.lexed_ahead`: libclang's set-up of a buffer costs more than lexing a typical file), and so are
# the headers they include with quotes, up to this size, that this process has not lexed for an earlier batch (the
# audit summarises a header once per process, `helpers.header_summary`).
BATCH_FILES = 32
READ_AHEAD_BYTES = 1 << 20
HEADER_AHEAD_BYTES = 1 << 18
_headers_ahead: set[tuple[str, int, int]] = set()


def _audit_batch(batch, options: AuditOptions, cache: ResultCache | None, converter) -> list:
    """`_audit_one` of each source of ``batch``, in order."""
    loaded: list = []
    ahead: list[bytes] = []
    size = 0
    for source in batch:
        if size >= READ_AHEAD_BYTES:
            loaded.append(None)  # read when its turn comes
            continue
        item = _load_one(source, options, cache)
        loaded.append(item)
        if isinstance(item, str) or item[2] is not None:
            continue
        from hipport.convert.engine import lexed_input  # here: a batch of cached files needs no conversion

        src = item[0]
        size += len(src)
        ahead.append(src)  # what the audit lexes where no `#if` branch is dead for AMD
        converted = lexed_input(src, converter.rules(), str(source.path))
        if converted is not None and converted is not src and converted != src:
            ahead.append(converted)  # what the conversion lexes (a byte-order mark dropped)
        for header, st in item[3]:
            seen = (header, st.st_mtime_ns, st.st_size)
            if seen in _headers_ahead or not 0 < st.st_size <= HEADER_AHEAD_BYTES:
                continue
            _headers_ahead.add(seen)
            try:
                with open(header, "rb") as fh:
                    ahead.append(fh.read(HEADER_AHEAD_BYTES + 1))
            except OSError:  # its summary says why, if it is asked for
                continue
    if not ahead:
        return [_audit_one(source, options, cache, converter, item) for source, item in zip(batch, loaded)]
    from hipport.scan import lexed_ahead

    results = []
    with lexed_ahead(ahead):
        for source, item in zip(batch, loaded):
            raise_if_interrupted()
            results.append(_audit_one(source, options, cache, converter, item))
    return results


_worker_args: tuple | None = None


def _init_worker(args: tuple) -> None:
    """Workers ignore SIGINT (even sent to the whole process group): the main process stops the pool."""
    global _worker_args
    _worker_args = args
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _audit_in_worker(batch):
    return _audit_batch(batch, *_worker_args)


def audit_files(sources, options: AuditOptions, jobs: int, cache: ResultCache | None, converter):
    """Audit every source, in input order whatever ``jobs`` is, so output is identical with one worker or many."""
    if jobs > 1 and len(sources) >= PARALLEL_MIN_FILES:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        converter.rules()  # read once here, not once in each worker
        context = multiprocessing.get_context("fork")
        size = max(1, min(BATCH_FILES, len(sources) // (jobs * 8)))
        batches = [sources[i:i + size] for i in range(0, len(sources), size)]
        pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_init_worker, initargs=((options, cache, converter),))
        # Workers start with SIGINT blocked until they ignore it: a Ctrl-C now reaches this process only.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            results = pool.map(_audit_in_worker, batches)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        try:
            for batch_results in results:
                yield from batch_results
        except BaseException:  # interrupted (or closed early): drop what has not started
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
        return
    for first in range(0, len(sources), BATCH_FILES):
        raise_if_interrupted()
        yield from _audit_batch(sources[first:first + BATCH_FILES], options, cache, converter)


@click.command("audit")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip files and directories whose relative path or name matches GLOB (repeatable): below an "
                   "input directory, or a named file as given. The settings' `exclude` patterns are relative to "
                   "the settings file's directory and apply however files are named.")
@click.option("--follow-symlinks", is_flag=True,
              help="Enter symlinked directories and read symlinked files whose target lies outside the input tree. "
                   "Default: not followed, each named (exit 3), as `hipport convert` does.")
@click.option("--offload-arch", "archs", multiple=True, metavar="ARCH[,ARCH...]",
              help=f"GPU targets to judge against (comma-separated or repeated), e.g. gfx90a,gfx1100: {TARGETS_HELP}. "
                   f"gfx6 to gfx9 run 64-lane wavefronts, gfx10+ 32. Default: the settings' `offload-arch`, else "
                   f"{','.join(DEFAULT_ARCHS)}.")
@click.option("--rocm-version", "rocm", metavar="X.Y",
              help=f"ROCm release to judge against ({RELEASES_HELP}); decides what fails to compile (e.g. *_sync "
                   f"before 6.2, non-constant warpSize from 7.0) and what the fixes say. Default, as for `convert`: "
                   f"the project "
                   f"setting, else the installed HIP (hip/hip_version.h, hipconfig), else "
                   f"{'.'.join(map(str, NEWEST_ROCM))}.")
@click.option("--select", "select", multiple=True, metavar="RULE[,RULE...]",
              help="Report only these rule ids (comma-separated or repeated).")
@click.option("--ignore", "ignore", multiple=True, metavar="RULE[,RULE...]",
              help="Never report these rule ids (comma-separated or repeated).")
@click.option("-I", "--include-dir", "include_dirs", multiple=True, type=click.Path(path_type=Path, file_okay=False),
              metavar="DIR", help="Also look for `#include \"...\"` headers here (repeatable; after the settings' "
                                  "`include-dirs`): a warp helper defined in such a header is reported where it is "
                                  "called. With --verify, hipcc searches them too.")
@click.option("--verify", is_flag=True,
              help="After the audit, convert the audited files into a temporary copy (your files are never "
                   "written) and compile each translation unit with the installed hipcc, as `hipport convert "
                   "--verify` does: syntax only, HIP_PLATFORM=amd, for the --offload-arch targets its clang knows. "
                   "The text report names each unit that does not compile with its first errors and, where known, "
                   "their cause and fix; the html, json and markdown reports include the results. Exit 4 when a "
                   "unit does not compile. Without hipcc: one line, exit 2, nothing audited.")
@click.option("--fail-on", type=click.Choice(SEVERITIES),
              help="Exit 1 when a finding of this severity or higher remains (after --baseline). Default: the "
                   "project's `fail-on` setting, else warning.")
@click.option("--baseline", "baseline", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
              help="JSON file of accepted findings: only findings not in it are reported. Findings match by path, "
                   "rule and the text of their source line, so edits elsewhere in the file keep the match. Paths "
                   "are relative to the project directory (the settings file's, else the repository root), "
                   "whatever the current directory. Default: the project's `baseline` setting.")
@click.option("--write-baseline", "write_baseline", type=click.Path(path_type=Path, dir_okay=False),
              metavar="FILE", help="Write every current finding to FILE (in an existing directory) as a baseline, "
                                   "then exit 0 (3 if some files could not be read).")
@click.option("--report", "reports", multiple=True, type=click.Choice(REPORT_FORMATS), metavar="FORMAT",
              help="Report format: text (default), html, json, sarif or markdown. Repeat for several at once.")
@click.option("-o", "--output", type=click.Path(), metavar="PATH",
              help="Where the reports go. `-`: stdout (one report). A path ending in / or an existing directory is "
                   "a directory, created if needed, that gets each report under its default name "
                   "(hipport-report.<ext>); so is any path when several --report are given. Otherwise the one "
                   "report is written to that file.")
@click.option("--output-dir", type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
              help="Write every report into DIR under its default name (hipport-report.txt, .html, .json, "
                   ".sarif, .md).")
@config_option
@toolchain_options
@jobs_option
@click.option("--no-cache", is_flag=True,
              help="Analyse every file and walk the project for its build files' `-D` switches again. By default "
                   "results are cached by file content (and hipport version, rules and options), so a full-tree run "
                   "only analyses what changed, and the walk is remembered until a folder or build file it saw "
                   "changes.")
@cache_dir_option
@click.option("-q", "--quiet", is_flag=True, help="One line per finding; no source lines, patches or summary.")
@click.option("-v", "--verbose", is_flag=True,
              help="Also print each finding's confidence and the rule's summary, and every file audited.")
def audit(paths, exclude, follow_symlinks, archs, rocm, select, ignore, include_dirs, verify, fail_on, baseline,
          write_baseline, reports, output, output_dir, config_path, verify_hipcc, verify_hip_include, verify_clang, jobs,
          no_cache, cache_dir, quiet, verbose):
    """Report wave64, lane-mask, warpSize and atomics hazards in CUDA or HIP sources under PATHS.

    PATHS are files or directories, selected as `hipport convert` selects them. Sources are never written.
    Each finding prints as `path:line:col: severity rule-id: message`, then the source line and, where one can
    be given, the suggested fix as a unified-diff hunk (`hipport convert --apply-suggestions --select RULE`
    applies them). `hipport rules show RULE-ID` explains a rule.

    A comment `// hipport: ignore` on the line of a finding or the line above silences every finding there;
    `// hipport: ignore[rule-id]` (or `ignore[a,b]`) only those rules. The info rule unused-suppression reports
    a comment that silences nothing or names an unknown rule, with a patch that removes it.

    \b
    Severities:
      error    will not compile for a targeted architecture or ROCm version
      warning  compiles, but can give wrong results on a target, or depends on the memory, or is slow
      info     a 32-lane assumption that is consistent as written but deserves a look
    \b
    Reports (--report, repeatable):
      text      the listing above (default)
      html      one self-contained page: summary, charts, a sortable and filterable file table, each file's
                conversion diff and each finding with its note and patch
      json      versioned data (schema "hipport-audit/1", see docs/report-schema.md)
      sarif     SARIF 2.1.0 for GitHub code scanning and other SARIF viewers
      markdown  a short summary for a pull-request comment
    Each file is also converted in memory (nothing is written): what the conversion leaves for a person
    (device-launch, unsupported-api, ...) is a finding in every output, exit status, baseline, --select and
    suppression; what it rewrites by itself is counted as converted, not as a finding.
    With --verify the text, html, json and markdown reports also say which converted translation units
    compile with hipcc (json: `verify` and each file's `compiles`).
    \b
    Where reports go:
      no -o/--output-dir  text, or a single json/sarif/markdown report, to stdout; html and the rest
                          to ./hipport-report.<ext>
      -o FILE             the single report to FILE (`-o -`: stdout)
      -o DIR/, --output-dir DIR
                          every report to DIR/hipport-report.<ext> (-o: a path ending in /, an
                          existing directory, or any path with several reports)
    Reports and baselines are never written over an input file (exit 2, nothing written).
    \b
    Exit status:
      0  no finding at or above --fail-on (or --write-baseline was given)
      1  findings at or above --fail-on
      2  usage error (bad option value, unknown rule id, unreadable baseline, malformed rule file, a
         report or baseline that would overwrite an input)
      3  some files could not be read or lexed: unreadable, binary, UTF-16, a FIFO, a broken symlink or
         one not followed... (each is named in one line, as `hipport convert` names them; the others
         were audited)
      4  --verify: a converted translation unit does not compile (each is named with its first errors);
         4 wins over 1, and 3 wins over 4, as for `hipport convert --verify`; without hipcc (or a target
         it knows), --verify is a usage error (2) and nothing is audited
      130  interrupted by SIGINT (Ctrl-C)
    """
    try:
        hazards = load_all_rules()  # the audit's hazards and the conversion's findings: one set of rule ids
        config = load_config(config_path if config_path is not None else find_config_for(list(paths)))
        # The conversion's rules, as `hipport convert` loads them: a missing folder or a malformed file stops the
        # run here; they are read when a file is converted (a cached file is not).
        rule_dirs = project_rule_dirs(config)
        rules = load_rules_later(rule_dirs)
    except (HazardError, ConfigError, RuleError) as exc:
        fail(str(exc))
    configured_archs = config.get("offload-arch", ())
    if isinstance(configured_archs, str):
        configured_archs = (configured_archs,)
    # The settings' values were checked by `load_config`; the options' are checked here.
    arch_list = (user_targets(archs) if archs else ()) or tuple(_split(configured_archs)) or DEFAULT_ARCHS
    if rocm is not None:
        user_release(rocm)
    rocm = rocm or config.get("rocm-version") or ".".join(map(str, default_target()))
    fail_on = fail_on or config.get("fail-on", "warning")
    if fail_on not in SEVERITIES:
        fail(f"{config.path}: `fail-on` must be one of {', '.join(SEVERITIES)}")
    if baseline is None and write_baseline is None and config.get("baseline"):
        baseline = config.paths("baseline")[0] if isinstance(config.get("baseline"), list) else \
            (config.path.parent / config.get("baseline"))
    try:
        rocm_version = parse_version(rocm)
    except ValueError as exc:
        fail(f"--rocm-version: {exc}")
    selected, ignored = frozenset(_split(select)), frozenset(_split(ignore))
    for option, ids in (("--select", selected), ("--ignore", ignored)):
        unknown = sorted(ids - set(hazards))
        if unknown:
            fail(f"{option}: unknown rule id `{unknown[0]}` (known: {', '.join(sorted(hazards))})")
    if baseline is not None and write_baseline is not None:
        fail("--baseline and --write-baseline cannot be combined")
    if verify and write_baseline is not None:
        fail("--verify and --write-baseline cannot be combined")
    toolchain_needs_verify(verify, verify_hipcc, verify_hip_include, verify_clang)
    toolchain = None
    if verify:  # before any file is read: no hipcc (or no target it knows) is a usage error
        from hipport.convert.verify import ToolchainError, find_toolchain, load_causes

        try:
            load_causes()
            toolchain = find_toolchain(arch_list, **toolchain_choice(config, verify_hipcc, verify_hip_include,
                                                               verify_clang))
        except (RuleError, ToolchainError) as exc:
            fail(str(exc))
    base = config.base
    accepted = _load_baseline(baseline, base) if baseline is not None else Counter()
    try:
        sources = collect_sources(list(paths), exclude, follow_symlinks=follow_symlinks, report_skipped=True,
                                  project_exclude=tuple(config.get("exclude", [])), project_dir=base)
    except InputError as exc:
        fail(str(exc))
    sources, tree = _without_other_platform(sources, quiet)
    bodies_out_of_build = None
    if exclude or config.get("exclude"):
        sources, bodies_out_of_build = _without_excluded_only(sources, list(paths), follow_symlinks, quiet)
    headers = tuple(str(Path(d).resolve()) for d in (*config.paths("include-dirs"), *include_dirs))
    # The project's AMD switches: as the settings name them, else as its build files pass them (`-DUSE_ROCM`).
    if config.get("defines") is not None:
        defines = tuple(config.get("defines"))
    else:
        defines = build_defines(str(base), cache_dir=None if no_cache else str(cache_dir or user_cache_dir()))
    walk_cache = None if no_cache else str(cache_dir or user_cache_dir())
    # The project's walk stops at 200 build files: each folder audited is walked too, so its own are never missed.
    from_build = {*build_macros(str(base), cache_dir=walk_cache),
                  *(n for d in sorted({str(q.resolve()) for q in paths if q.is_dir()} - {str(Path(base).resolve())})
                    for n in build_macros(d, cache_dir=walk_cache))}
    macros = _project_macros(sources, tuple(sorted(from_build)))
    options = AuditOptions(arch_list, rocm_version, selected, ignored, include_dirs=headers, defines=defines,
                           project_macros=macros, project_dir=str(base))
    # path -> lines of the macro bodies only excluded files expand: never compiled for AMD
    out_of_build = bodies_out_of_build(options) if bodies_out_of_build is not None else {}
    if write_baseline is not None:
        _check_baseline_target(write_baseline)
    plan, report_dir = ([], None) if write_baseline is not None else _plan_outputs(reports, output, output_dir)
    try:
        check_outputs([*(Output(dest, f"the {fmt} report") for fmt, dest in plan if dest is not None),
                       *([Output(write_baseline, "the baseline")] if write_baseline is not None else [])],
                      [*(s.path for s in sources), *(p for p in paths if not p.is_dir())])
    except InputError as exc:
        fail(str(exc))
    if report_dir is not None:
        _make_dir(report_dir, "--output-dir" if output_dir is not None else "-o")
    rich_reports = [fmt for fmt, _ in plan if fmt != "text"]
    text_dest = next((dest for fmt, dest in plan if fmt == "text"), "none")
    converter = _converter(rocm_version, config, rules, rule_dirs, tree, defines)
    converted = []  # (source, in-memory conversion) of each audited file, for --verify
    file_reports = []
    err = sys.stderr  # not click.get_text_stream: deprecated, and Click 9 removes it
    if text_dest is None:
        out = sys.stdout
    elif text_dest == "none":
        out = io.StringIO()
    else:
        out = _open_output(text_dest)
    convert_ids = frozenset(r for r, h in hazards.items() if h.family == "convert")
    counts: Counter = Counter()
    current: Counter = Counter()
    failed = 0
    hidden = 0
    threshold = SEVERITY_RANK[fail_on]
    failing = 0
    extra_rules = [p for d in converter.dirs for p in sorted(Path(d).rglob("*.toml"))]
    cache = None if no_cache else ResultCache(
        "audit", f"{rules_fingerprint(extra_rules)}\0{options!r}\0{converter.key}", cache_dir)
    if rich_reports:
        from hipport.report.model import failed_file, file_report
    # Closed however the loop ends: an interrupt stops the worker pool now, not when the traceback is dropped.
    with contextlib.closing(audit_files(sources, options, jobs or default_jobs(), cache, converter)) as audited:
        for source, src, findings, problem, conversion in audited:
            path = show(source.path)  # for messages: a name that is not UTF-8 as \xNN
            if verbose:
                err.write(f"auditing {path}\n")
            if problem is not None:
                err.write(f"hipport: error: {problem}\n")
                failed += 1
                if rich_reports:
                    file_reports.append(failed_file(source.path, problem))
                continue
            lines = src.split(b"\n")
            shown = []
            project_rel = project_path(source.path, base)
            dead = out_of_build.get(os.path.normpath(os.path.abspath(source.path)), ())
            for f in findings:
                if f.line in dead:
                    continue
                line_text = lines[f.line - 1] if f.line - 1 < len(lines) else b""
                key = baseline_key(project_rel, f.rule_id, line_text)
                current[key] += 1
                if accepted[key] > 0:
                    accepted[key] -= 1
                    hidden += 1
                    continue
                shown.append(f)
                counts[f.severity] += 1
                if SEVERITY_RANK[f.severity] >= threshold:
                    failing += 1
                if write_baseline is not None:
                    continue
                head = f"{path}:{f.line}:{f.col}: {f.severity} {f.rule_id}: {f.message}"
                if verbose:
                    head += f" [confidence: {f.confidence}]"
                out.write(head + "\n")
                if quiet:
                    continue
                if verbose:
                    out.write(f"    rule: {hazards[f.rule_id].summary}\n")
                out.write("    " + line_text.decode("utf-8", "replace").rstrip("\r").strip() + "\n")
                from hipport.report.model import suggestion_hunk  # here: a run that shows no finding needs none

                for hunk_line in suggestion_hunk(src, f):
                    out.write("    " + hunk_line + "\n")
            if rich_reports or verify:
                if conversion is None:  # the findings came from the cache
                    conversion = converter(src, str(source.path))
                if verify:
                    converted.append((source, conversion))
                if rich_reports:
                    file_reports.append(file_report(source.path, src, shown, conversion, convert_findings=False,
                                                    convert_ids=convert_ids))
    raise_if_interrupted()
    verified = None
    if toolchain is not None:
        from hipport.cli.convert import verify_converted

        verified = verify_converted(toolchain, [s for s, _ in converted], [r for _, r in converted], "none", None,
                                    [*config.paths("include-dirs"), *include_dirs], jobs or default_jobs(),
                                    (tuple(rocm_version) + (0, 0))[:2], defines=defines)
        _print_verify(verified, out if text_dest != "none" else err, quiet=quiet, verbose=verbose)
    out.flush()
    if write_baseline is not None:
        _write_baseline(write_baseline, current)
        if not quiet:
            total = sum(current.values())
            err.write(f"wrote {total} finding{'' if total == 1 else 's'} to {write_baseline}\n")
        sys.exit(EXIT_FILES_FAILED if failed else EXIT_OK)
    if text_dest not in (None, "none"):
        out.close()
    if rich_reports:
        from hipport.report.model import AuditReport, rule_table

        report = AuditReport(file_reports, rule_table(hazards), arch_list, ".".join(map(str, rocm_version)),
                             baseline_hidden=hidden, verify=verified)
        for fmt, dest in plan:
            if fmt == "text":
                continue
            data = render(fmt, report)
            if dest is None:
                sys.stdout.flush()
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
            else:
                _write_report(dest, data)
                if not quiet:
                    err.write(f"wrote {fmt} report to {dest}\n")
    if not quiet:
        total = sum(counts.values())
        parts = ", ".join(f"{counts[s]} {s}" for s in reversed(SEVERITIES) if counts[s])
        n = len(sources) - failed
        line = f"{total} finding{'s' if total != 1 else ''}" + (f" ({parts})" if parts else "") + \
            f" in {n} file{'s' if n != 1 else ''}"
        if hidden:
            line += f"; {hidden} in the baseline not shown"
        if failed:
            line += f"; {failed} file{'s' if failed != 1 else ''} not audited (named above)"
        err.write(line + "\n")
    if failed:
        sys.exit(EXIT_FILES_FAILED)
    if verified is not None and verified.failed:
        sys.exit(EXIT_NOT_BUILDING)
    sys.exit(EXIT_FINDINGS if failing else EXIT_OK)


def _print_verify(result, stream, *, quiet: bool, verbose: bool) -> None:
    """`--verify` in the text report (else on stderr, when no text report is asked for): as `convert --verify`
    prints it; -q: one line per unit that does not compile."""
    if quiet:
        for unit in result.failed:
            first = unit.errors[0] if unit.errors else None
            stream.write(one_line(f"does not compile: {unit.shown}"
                                  + (f": {first.location()}: {first.message}" if first else "")) + "\n")
        return
    from rich.console import Console

    from hipport.report.text import render_verify

    console = Console(file=stream, highlight=False, soft_wrap=True)
    render_verify(console, result, verbose=verbose, copy=True)


def _plan_outputs(reports: tuple[str, ...], output: str | None, output_dir: Path | None) -> tuple[list, Path | None]:
    """(format, destination) pairs, a destination of None meaning stdout (at most one report goes there), and the
    directory to create for them, if any. Nothing is created here: the plan is checked against the inputs first."""
    formats = list(dict.fromkeys(reports)) or ["text"]
    if output is not None and output_dir is not None:
        fail("-o/--output and --output-dir cannot be combined; with several reports -o takes a directory")
    if output_dir is not None:
        _check_dir(output_dir, "--output-dir", several=len(formats) > 1)
        return [(fmt, output_dir / DEFAULT_NAMES[fmt]) for fmt in formats], output_dir
    if output is not None:
        if output == "-":
            if len(formats) > 1:
                fail("-o - (stdout) takes one --report; give a directory for several")
            return [(formats[0], None)], None
        path = Path(output)
        if not (output.endswith(("/", os.sep)) or path.is_dir() or len(formats) > 1):
            return [(formats[0], path)], None
        _check_dir(path, "-o", several=len(formats) > 1)
        return [(fmt, path / DEFAULT_NAMES[fmt]) for fmt in formats], path
    stdout_fmt = "text" if "text" in formats else (formats[0] if len(formats) == 1 and formats[0] != "html" else None)
    return [(fmt, None if fmt == stdout_fmt else Path(DEFAULT_NAMES[fmt])) for fmt in formats], None


def _check_dir(path: Path, option: str, several: bool) -> None:
    if path.exists() and not path.is_dir():
        need = "several reports need a directory" if several else "a directory is asked for"
        fail(f"{option} {path}: {need}, and this is a file")


def _make_dir(path: Path, option: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"{option} {path}: cannot create the directory ({exc.strerror})")


def _open_output(dest: Path):
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        return dest.open("w", encoding="utf-8", newline="\n")
    except OSError as exc:
        fail(f"{dest}: cannot write the report ({exc.strerror})")


def _write_report(dest: Path, data: bytes) -> None:
    """Write through a temporary file renamed over ``dest``: a reader never sees half a report."""
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, dest)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        fail(f"{dest}: cannot write the report ({exc.strerror or exc})")


def _without_other_platform(sources, quiet: bool):
    """The sources less those only the other platform's branches include (ggml's `vendors/cuda.h`, reached only from
    the `#else` of `#ifdef GGML_USE_HIP`): the AMD build never compiles them, so they are not audited as its code,
    as `convert` leaves them alone (`platforms.tree_facts`, read over the whole run)."""
    from hipport.platforms import TreeFacts, tree_facts

    facts = tree_facts([s.path for s in sources if s.skip is None])
    # Of the tree's facts the audit's conversion takes only which files PyTorch's extension build hipifies: its
    # single-source findings leave the CUDA names that build renames (docs/audit.md).
    tree = TreeFacts(pytorch=facts.pytorch) if facts.pytorch else None
    if not facts.other_platform:
        return sources, tree
    kept = [s for s in sources if s.skip is not None or facts.of(str(s.path))[0] == ""]
    left = [s for s in sources if s not in kept]
    if left and not quiet:
        first = left[0]
        click.echo(one_line(f"left out: {len(left)} file{'s' if len(left) > 1 else ''} only the other platform's "
                            f"branches include, which the AMD build never compiles (first: {show(first.path)}: "
                            f"{facts.of(str(first.path))[0]})"), err=True)
    return kept, tree


def _without_excluded_only(sources, paths, follow_symlinks: bool, quiet: bool):
    """The sources less the headers only excluded files include, and the lines of macro bodies only excluded files
    expand, by path (`hipport/excluded_includes.py`)."""
    from hipport.excluded_includes import macro_bodies_only_excluded_expand, only_excluded_include

    everything = collect_sources(paths, (), follow_symlinks=follow_symlinks)
    kept_paths = {os.path.normpath(os.path.abspath(s.path)) for s in sources if s.skip is None}
    excluded = [p for p in (os.path.normpath(os.path.abspath(s.path)) for s in everything) if p not in kept_paths]
    why = only_excluded_include(sorted(kept_paths), excluded)
    kept = [s for s in sources if s.skip is not None or os.path.normpath(os.path.abspath(s.path)) not in why]
    left = [s for s in sources if s not in kept]
    if left and not quiet:
        first = left[0]
        click.echo(one_line(f"left out: {len(left)} header{'s' if len(left) > 1 else ''} only excluded files "
                            f"include (first: {show(first.path)}, included by "
                            f"{why[os.path.normpath(os.path.abspath(first.path))]})"), err=True)
    kept_paths = sorted(os.path.normpath(os.path.abspath(s.path)) for s in kept if s.skip is None)
    return kept, lambda options: macro_bodies_only_excluded_expand(kept_paths, excluded, _as_built(options))


_DEFINE_LINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)


def _project_macros(sources, from_build: tuple[str, ...]) -> tuple[str, ...]:
    """What some configuration of the project may define (`AuditOptions.project_macros`): the build files' `-D`
    names and every name the run's files `#define` (an includer's `#define PTX` before the header that tests it)."""
    names = set(from_build)
    for s in sources:
        if s.skip is not None:
            continue
        try:
            with open(s.path, "rb") as fh:
                src = fh.read(4_000_000)
        except OSError:
            continue
        if b"define" in src:
            names.update(m.group(1).decode("latin-1") for m in _DEFINE_LINE.finditer(src))
    return tuple(sorted(names))


def _as_built(options):
    """A source as the AMD build of ``options`` compiles it: the branches it never compiles blanked."""
    from hipport.audit.amd_view import defines_for, undefined_for, view

    known, undefined = defines_for(options), undefined_for(options)
    return lambda src, path: view(src, known, undefined, path)


def _converter(rocm_version: tuple[int, ...], config, rules, dirs: list[Path], tree=None, defines=()):
    """The convert engine as `hipport convert` would run it here (project config, hipify-perl, extra rules:
    ``rules()``, loaded from ``dirs``), returning an in-memory FileResult per file; nothing is written."""
    from hipport.convert.context import ConvertOptions

    target = (tuple(rocm_version) + (0, 0))[:2]
    convert_options = ConvertOptions(roc=config.get("roc", False), rocm_version=target,
                                     launch_syntax=config.get("launch-syntax", "cuda"), tree=tree,
                                     defines=tuple(defines))

    def run(src: bytes, path: str):
        from hipport.convert.engine import convert_source
        from hipport.model import FileResult
        from hipport.scan import LexError

        try:
            return convert_source(src, rules(), convert_options, path)
        except LexError as exc:
            return FileResult(path, src, None, error=f"{path}: {exc}")

    # Cached findings include the conversion's: they depend on its options and extra rules too.
    run.key = f"{convert_options!r}\0{[str(d) for d in dirs]!r}"
    run.dirs = dirs
    run.rules = rules
    return run
