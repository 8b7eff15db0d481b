"""`hipport doctor`: what this machine gives a port: the ROCm release, hipcc and the platform it compiles for, AMD
GPUs and their wavefront size, device access, and what hipport will target. Detection is
`hipport.environment`'s; this module adds the project's target, prints, and sets the exit code."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

from hipport.cli.options import config_option, fail
from hipport.config import ConfigError, find_config, load_config
from hipport.environment import Environment, Problem, detect
from hipport.rocm import DEFAULT_ARCHS, NEWEST_ROCM, parse_rocm_version, VersionError, wave_size

EXIT_OK, EXIT_REQUIREMENT, EXIT_USAGE = 0, 1, 2
SCHEMA = "hipport-doctor/1"
_ARCH = re.compile(r"^gfx[0-9a-f]{3,4}")


def _target(env: Environment, config) -> dict:
    """The ROCm release and GPUs `convert` and `audit` will target here, and why."""
    configured = config.get("rocm-version")
    if configured:
        rocm, why = str(configured), f"the `rocm-version` setting ({config.path})"
    elif env.rocm_installed:
        rocm, why = env.rocm_installed, "the installed HIP"
    else:
        rocm, why = ".".join(map(str, NEWEST_ROCM)), "the newest release hipport knows (no HIP installed)"
    archs = config.get("offload-arch") or ()
    if isinstance(archs, str):
        archs = [archs]
    archs = [a.strip() for value in archs for a in str(value).split(",") if a.strip()]
    arch_why = f"the `offload-arch` setting ({config.path})" if archs else "hipport's defaults"
    return {"rocm": rocm, "rocm_from": why, "offload_arch": list(archs or DEFAULT_ARCHS), "offload_arch_from": arch_why,
            "settings": str(config.path) if config.path else None}


def _target_notes(env: Environment, target: dict) -> list[Problem]:
    notes = []
    try:
        wanted = parse_rocm_version(target["rocm"])
    except VersionError:
        wanted = None
    if wanted and env.rocm_installed and wanted > parse_rocm_version(env.rocm_installed):
        notes.append(Problem("target", f"hipport targets ROCm {target['rocm']} ({target['rocm_from']}) but HIP "
                                       f"{env.rocm_installed} is installed: hipcc here rejects the newer forms",
                             f"compile with ROCm {target['rocm']}, or set rocm-version = \"{env.rocm_installed}\" in "
                             f".hipport.toml", "compile"))
    if wanted and env.hipcc_rocm and env.hipcc_rocm != env.rocm_installed and \
            wanted != parse_rocm_version(env.hipcc_rocm):
        notes.append(Problem("target", f"hipport targets ROCm {target['rocm']} ({target['rocm_from']}) but "
                                       f"{env.hipcc} compiles with ROCm {env.hipcc_rocm}: code converted for one "
                                       f"release may not build with the other",
                             f"convert and audit with --rocm-version {env.hipcc_rocm} for this hipcc, or set "
                             f"rocm-version = \"{env.hipcc_rocm}\" in .hipport.toml", "compile"))
    missing = sorted({g.name for g in env.gpus} - {a.split(":")[0] for a in target["offload_arch"]})
    if missing:
        notes.append(Problem("target", f"this machine's GPU {', '.join(missing)} is not among the targets "
                                       f"({', '.join(target['offload_arch'])}, {target['offload_arch_from']})",
                             "add it to offload-arch in .hipport.toml (`hipport init` fills it from this machine)",
                             "audit"))
    return notes


def _gpu_text(env: Environment) -> str:
    if not env.gpus:
        why = f"rocminfo: {env.rocminfo_error}" if env.rocminfo_error else \
            ("no /dev/kfd" if env.kfd is None or not env.kfd.present else "none in the KFD topology")
        return f"none ({why})"
    parts = []
    for g in env.gpus:
        text = f"{g.name} (wave{g.wave_size})"
        extra = [x for x in (g.marketing, f"node {g.node}" if g.node is not None else "",
                             f"renderD{g.render_minor}" if g.render_minor is not None else "") if x]
        parts.append(text + (f" {', '.join(extra)}" if extra else ""))
    return "; ".join(parts) + f" [from {env.gpu_source}]"


def _node_text(node) -> str:
    if not node.present:
        return "missing"
    return f"{node.mode} group {node.group or '?'}: " + ("you can open it" if node.accessible else "NOT accessible")


def _rows(env: Environment, target: dict, hazards: int) -> list[tuple[str, str]]:
    r = env.rules
    rules = f"rules: HIPIFY tables {r.get('snapshot') or '?'} (up to HIP {r.get('tables_hip') or '?'}), " \
            f"{hazards} audit rules, data {r.get('digest') or '?'}"
    rows = [("hipport", f"{env.hipport_version}; {rules}"),
            ("ROCm / HIP", f"{env.rocm_installed} ({env.rocm_source})" if env.rocm_installed else "not installed"),
            ("targets", f"ROCm {target['rocm']} ({target['rocm_from']}); "
                        f"{', '.join(f'{a} (wave{wave_size(a)})' for a in target['offload_arch'])} "
                        f"({target['offload_arch_from']})")]
    if env.hipcc:
        compiler = env.compiler or "?"
        if env.amd_clang:
            compiler += f"; with HIP_PLATFORM=amd: {env.amd_clang}"
        rows += [("hipcc", env.hipcc), ("platform", f"{env.platform} ({env.platform_why})"), ("compiler", compiler)]
        if env.hipcc_rocm:
            rows += [("hipcc's ROCm", f"{env.hipcc_rocm} (from {env.hipcc_rocm_source})"),
                     ("warp *_sync", _warp_sync_text(env))]
    else:
        rows.append(("hipcc", "not found"))
    rows.append(("GPUs", _gpu_text(env)))
    if env.kfd is not None:
        rows.append(("/dev/kfd", _node_text(env.kfd)))
    if env.render:
        rows += [(n.path, _node_text(n)) for n in env.render]
    elif env.kfd is not None and env.kfd.present:
        rows.append(("/dev/dri/render*", "missing"))
    rows.append(("user", f"{env.user} (groups: {', '.join(env.groups) or 'none'})"))
    if env.container:
        rows.append(("container", env.container))
    rows.append(("system", f"Linux {env.kernel or '?'}" + (f", {env.os_name}" if env.os_name else "")))
    if env.hipify_perl:
        text = env.hipify_perl + (f" (HIP {env.hipify_perl_version})" if env.hipify_perl_version else "")
        if env.hipify_perl_newer:
            text += f"; its tables are newer than hipport's (HIP {r.get('tables_hip')})"
        text += "; hipport loads its renames" if env.hipify_perl_used else "; not used (HIPPORT_HIPIFY_PERL=off)"
        rows.append(("hipify-perl", text))
    else:
        rows.append(("hipify-perl", "not installed (hipport's own tables are used)"))
    return rows


_SYNC_TEXT = {
    "absent": "none in ROCm {rocm} (they arrived in 6.2): hipport writes the mask-free forms for it",
    "opt-in": "opt-in in ROCm {rocm}: declared only with -D{macro}",
    "default": "on by default in ROCm {rocm} (-D{macro} turns them off)",
}


def _warp_sync_text(env: Environment) -> str:
    """Whether `__shfl_down_sync` and the other `*_sync` warp built-ins are there with the hipcc found."""
    return _SYNC_TEXT[env.warp_sync].format(rocm=env.hipcc_rocm, macro=env.warp_sync_macro)


def _verify_use(env: Environment, config, given: str | None = None) -> str:
    """What `convert --verify` / `audit --verify` would compile with, from the settings or PATH (nothing is run);
    ``given``: the hipcc `doctor --hipcc` looked at."""
    import os
    import shutil

    from hipport.cli.options import toolchain_choice
    from hipport.convert.verify import CLANG_NAMES, tree_version

    choice = toolchain_choice(config, None, None, None)
    if choice["hip_include"]:
        tree = Path(choice["hip_include"])
        if not (tree / "hip" / "hip_runtime.h").is_file():
            return f"{tree} (the `verify-hip-include` setting), which has no hip/hip_runtime.h: fix the setting"
        version = tree_version(tree)
        names = (choice["clang"],) if choice["clang"] else CLANG_NAMES
        clang = next((f for n in names if (f := shutil.which(n) if os.sep not in n else
                                           (n if os.access(n, os.X_OK) else None))), None)
        shown = ".".join(map(str, version)) if version else "version unknown"
        return (f"{clang or 'no clang++ found (set verify-clang)'} over the headers of {tree} (HIP {shown}; "
                "the `verify-hip-include` setting; syntax only)")
    if choice["hipcc"]:
        return f"{choice['hipcc']} (the `verify-hipcc` setting)"
    if given:
        shown = f"; ROCm {env.hipcc_rocm}" if env.hipcc_rocm else ""
        return f"{env.hipcc} when given as `--verify --hipcc {given}`{shown} (else the hipcc on PATH)"
    if env.hipcc:
        return f"{env.hipcc} on PATH" + (f" (HIP {env.rocm_installed})" if env.rocm_installed else "")
    return ("nothing: no hipcc on PATH; without ROCm give `--verify --hip-include ROCM/include --clang clang++` "
            "(settings `verify-hip-include`, `verify-clang`)")


def _nothing_amd(env: Environment) -> bool:
    return not env.rocm_installed and not env.hipcc and not env.gpus and (env.kfd is None or not env.kfd.present)


def _print(env: Environment, target: dict, hazards: int, problems: list[Problem], verbose: bool,
           verify: str = "") -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    if _nothing_amd(env) and not verbose:
        # A laptop or CI runner with no ROCm: say so in a few lines. Porting needs none of it.
        console.print(f"hipport {escape(env.hipport_version)}: no ROCm on this machine (no HIP, no hipcc, "
                      f"no AMD GPU).", soft_wrap=True)
        console.print(f"Porting works without them: `hipport convert` and `hipport audit` target ROCm "
                      f"{escape(target['rocm'])} for {escape(', '.join(target['offload_arch']))} "
                      f"({escape(target['offload_arch_from'])}).", soft_wrap=True)
        for p in problems:
            label = "to compile" if p.blocks == "compile" else ("to run on a GPU" if p.blocks == "run" else p.check)
            console.print(f"{label}: {escape(p.fix)}", soft_wrap=True)
        console.print(f"--verify would use: {escape(verify)}", soft_wrap=True)
        console.print("[dim]hipport doctor -v shows every check.[/dim]")
        return
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in [*_rows(env, target, hazards), ("--verify", verify)]:
        table.add_row(escape(key), escape(value))
    console.print(table)
    if problems:
        console.print()
        for p in problems:  # one line each, never wrapped: a fix is copied from here
            head = "[red]problem:[/red]" if p.blocks in ("compile", "run") else "[yellow]note:[/yellow]"
            console.print(f"{head} {escape(p.message)}", soft_wrap=True)
            console.print(f"  fix: {escape(p.fix)}", soft_wrap=True)
    console.print()
    compile_ok = env.can_compile and not any(p.blocks == "compile" for p in problems if p.check != "target")
    console.print("porting (convert, audit): yes, needs no GPU or ROCm")
    console.print(f"compiling for AMD with hipcc: {'yes' if compile_ok else 'no'}")
    console.print(f"running on an AMD GPU: {'yes' if env.usable_gpu else 'no'}")


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True,
              help=f"Print the findings as JSON (schema \"{SCHEMA}\") instead of a table.")
@click.option("--require-gpu", is_flag=True,
              help="Exit 1 unless an AMD GPU is usable here: found (rocminfo or the KFD topology), with /dev/kfd and "
                   "a /dev/dri/renderD* node this user can open.")
@click.option("--require-hipcc", is_flag=True,
              help="Exit 1 unless hipcc is found and compiles for AMD with this environment (HIP_PLATFORM).")
@click.option("--root", "root", type=click.Path(path_type=Path, file_okay=False, exists=True), metavar="DIR",
              default="/", show_default=True,
              help="Read /sys, /dev, /proc, /etc, /opt/rocm and /usr/include under DIR instead of / (a mounted "
                   "system image; the tests' fake machines). Commands still come from PATH.")
@click.option("--hipcc", "hipcc", metavar="PATH",
              help="Look at this hipcc instead of the one on PATH (a ROCm install's bin/hipcc, or a wrapper such as "
                   "rocm7-hipcc): its ROCm release and whether the *_sync warp built-ins are on there.")
@config_option
@click.option("-v", "--verbose", is_flag=True, help="Every check, also on a machine with no ROCm at all.")
def doctor(as_json, require_gpu, require_hipcc, root, hipcc, config_path, verbose):
    """Report what this machine offers for porting, compiling and running HIP code.

    \b
    Checks, each problem with its fix in one line:
      hipport       version and rule data (HIPIFY tables, audit rules)
      ROCm / HIP    the installed release (hip/hip_version.h, hipconfig) and what hipport targets
      hipcc         found on PATH (or --hipcc), the platform it compiles for (amd/nvidia) and why: with
                    nvcc installed, hipcc compiles for NVIDIA unless HIP_PLATFORM=amd; the ROCm release it
                    compiles with, and whether the *_sync warp built-ins are there (none before 6.2,
                    opt-in with HIP_ENABLE_WARP_SYNC_BUILTINS up to 6.4, on from 7.0)
      GPUs          from rocminfo or /sys/class/kfd, with their wavefront size (gfx9: 64, gfx10+: 32)
      devices       /dev/kfd and /dev/dri/renderD*, whether this user may open them, its groups,
                    and the flags a container needs
      hipify-perl   an installed one, and whether its tables are newer than hipport's
    Porting (convert, audit) needs none of these; compiling needs hipcc; running needs a GPU.
    \b
    Exit status:
      0  hipport can work here (and what --require-* asks for is there)
      1  --require-gpu or --require-hipcc asked for something this machine cannot do
      2  usage error (bad option, unreadable settings)
    """
    from hipport.audit.hazards import HazardError, load_hazards

    try:
        config = load_config(config_path if config_path is not None else find_config())
    except ConfigError as exc:
        fail(str(exc))
    try:
        hazards = len(load_hazards())
    except HazardError as exc:
        fail(str(exc))
    given = None
    if hipcc is not None:
        import os
        import shutil

        given = shutil.which(hipcc) if os.sep not in hipcc else (hipcc if os.access(hipcc, os.X_OK) else None)
        if given is None or not os.path.isfile(given):
            fail(f"--hipcc: {hipcc} is not an executable file; name ROCm's bin/hipcc (or a wrapper of it)")
    env = detect(root, hipcc=given)
    target = _target(env, config)
    problems = env.problems + _target_notes(env, target)
    verify = _verify_use(env, config, hipcc if given else None)
    unmet = []
    if require_gpu and not env.usable_gpu:
        unmet.append("--require-gpu: no usable AMD GPU")
    if require_hipcc and not env.can_compile:
        unmet.append("--require-hipcc: " + ("hipcc not found" if not env.hipcc else
                                            f"hipcc compiles for {env.platform}"))
    code = EXIT_REQUIREMENT if unmet else EXIT_OK
    if as_json:
        data = {"schema": SCHEMA, **env.to_json(), "problems": [vars(p) for p in problems], "target": target,
                "audit_rules": hazards, "can_port": True, "unmet": unmet, "exit": code, "verify": verify}
        click.echo(json.dumps(data, indent=1))
    else:
        _print(env, target, hazards, problems, verbose, verify)
        for line in unmet:
            click.echo(f"hipport: {line}", err=True)
    sys.exit(code)
