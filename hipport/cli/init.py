"""`hipport init`: adopt hipport on an existing tree in one command: settings, a pre-commit config, and a
baseline of today's audit findings so the hook only fails on new ones."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from hipport import environment
from hipport.cli.options import user_release, user_targets
from hipport.config import repository_root
from hipport.rocm import DEFAULT_ARCHS, NEWEST_ROCM

SOURCE_PATTERN = r"\.(cu|cuh|hip|cpp|cc|cxx|c|h|hpp|hh|inl|inc)$"  # files.SOURCE_SUFFIXES, as the published hooks
BASELINE = ".hipport-baseline.json"


def settings_text(rocm: str, archs: tuple[str, ...], rocm_from: str = "", archs_from: str = "") -> str:
    arch_list = ", ".join(f'"{a}"' for a in archs)
    rocm_note = f" ({rocm_from})" if rocm_from else ""
    arch_note = f" ({archs_from})" if archs_from else ""
    return f"""# hipport project settings; command-line flags override them.
rocm-version = "{rocm}"                # the ROCm release converted code must build with{rocm_note}
offload-arch = [{arch_list}]   # GPUs to judge wave64 / wave32 hazards against{arch_note}
exclude = ["third_party", "build"]   # paths or globs never converted or audited
fail-on = "warning"                  # lowest audit severity that fails the hook
baseline = "{BASELINE}"   # accepted findings; only new ones fail
# launch-syntax = "cuda"             # or "hip" for hipLaunchKernelGGL
# roc = false                        # true: rocBLAS/rocRAND/... instead of hipBLAS/hipRAND/...
"""


def precommit_text(repo: str | None, rev: str | None, sub: str = "") -> str:
    """The hook entry; ``sub`` is the project's folder inside the repository ("" at its root), which pre-commit
    passes file names from (it reads only the root's .pre-commit-config.yaml)."""
    if repo:
        scope = f"\n        files: ^{re.escape(sub)}/" if sub else ""
        return f"""repos:
  - repo: {repo}
    rev: {rev or "main"}
    hooks:
      - id: hipport-audit{scope}
      # - id: hipport-convert   # once the tree has moved to HIP and must stay there
"""
    # Without a repository address, use the hipport installed here: no download, same version as the baseline.
    return f"""repos:
  - repo: local
    hooks:
      - id: hipport-audit
        name: hipport audit (wave64, masks, atomics)
        entry: hipport audit
        language: system
        files: {"^" + re.escape(sub) + "/.*" if sub else ""}{SOURCE_PATTERN}
"""


@click.command("init")
@click.argument("root", required=False, default=".", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--rocm-version", metavar="X.Y", help="ROCm release to target (default: the installed HIP, found as "
                                                     "`hipport doctor` finds it, else 7.2).")
@click.option("--offload-arch", "archs", metavar="ARCH[,ARCH...]",
              help="GPU targets to write (default: this machine's AMD GPUs, found as `hipport doctor` finds them, "
                   f"else {','.join(DEFAULT_ARCHS)}).")
@click.option("--hook-repo", metavar="URL", help="Use the hooks from this hipport repository instead of the "
                                                  "installed hipport (`repo: local`).")
@click.option("--hook-rev", metavar="REV", help="Tag or commit of --hook-repo (default: main).")
@click.option("--force", is_flag=True, help="Overwrite an existing .hipport.toml and baseline.")
def init(root: Path, rocm_version, archs, hook_repo, hook_rev, force):
    """Set up hipport in the repository at ROOT (default: the current directory).

    \b
    Writes, without touching any source file:
      .hipport.toml            project settings (ROCm release, GPU targets, excludes, fail level, baseline)
      .hipport-baseline.json   today's audit findings, so the hook fails only on new ones
      .pre-commit-config.yaml  the hipport-audit hook (printed instead when the file already exists)
    """
    from hipport.cli.audit import audit  # the baseline is the audit's own format

    settings = root / ".hipport.toml"
    if settings.exists() and not force:
        click.echo(f"hipport: error: {settings} already exists; use --force to replace it", err=True)
        sys.exit(2)
    if rocm_version is not None:  # checked before anything is written: a typo must not leave a settings file
        user_release(rocm_version)
    targets = list(user_targets(archs)) if archs is not None else []
    machine = environment.detect(full=False)  # what `hipport doctor` reports, without the compiler probes
    if rocm_version:
        rocm, rocm_from = rocm_version, "--rocm-version"
    elif machine.rocm_installed:
        rocm, rocm_from = machine.rocm_installed, "the installed HIP"
    else:
        rocm, rocm_from = ".".join(map(str, NEWEST_ROCM)), "no HIP installed: the newest release hipport knows"
    if targets:
        archs_from = "--offload-arch"
    elif machine.gpus:
        targets, archs_from = sorted({g.name for g in machine.gpus}), "this machine's GPUs; add your users' ones"
    else:
        targets, archs_from = list(DEFAULT_ARCHS), "no GPU here: hipport's defaults, MI200, MI300 and RDNA3"
    settings.write_text(settings_text(rocm, tuple(targets), rocm_from, archs_from), encoding="utf-8")
    click.echo(f"wrote {settings} (ROCm {rocm} ({rocm_from}); offload-arch {', '.join(targets)} ({archs_from}))")
    baseline = root / BASELINE
    try:
        audit.main([str(root), "--rocm-version", rocm, "--write-baseline", str(baseline), "-q",
                    "--exclude", "third_party", "--exclude", "build"], standalone_mode=False)
    except SystemExit as exc:
        if exc.code not in (0, None):
            sys.exit(exc.code)
    click.echo(f"wrote {baseline} (today's findings; fix them over time and re-run `hipport audit "
               f"--write-baseline {BASELINE}`)")
    # pre-commit reads the repository root's file only; the hook's file names then find this folder's settings.
    top = repository_root(root.resolve()) or root.resolve()
    sub = root.resolve().relative_to(top).as_posix() if root.resolve() != top else ""
    config = (root if not sub else top) / ".pre-commit-config.yaml"
    snippet = precommit_text(hook_repo, hook_rev, sub)
    if config.exists():
        click.echo(f"{config} exists; add this to it:\n\n{snippet}")
    else:
        config.write_text(snippet, encoding="utf-8")
        click.echo(f"wrote {config}; run `pre-commit install` to check every commit")
