"""`hipport init`: adopt hipport on an existing tree in one command: settings, a pre-commit config, and a
baseline of today's audit findings so the hook only fails on new ones."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hipport.audit import DEFAULT_ARCHS
from hipport.rocm import detect_installed

SOURCE_PATTERN = r"\.(cu|cuh|cpp|cc|cxx|c|h|hpp|hh|inl)$"
BASELINE = ".hipport-baseline.json"


def settings_text(rocm: str, archs: tuple[str, ...]) -> str:
    arch_list = ", ".join(f'"{a}"' for a in archs)
    return f"""# hipport project settings; command-line flags override them.
rocm-version = "{rocm}"                # the ROCm release converted code must build with
offload-arch = [{arch_list}]   # GPUs to judge wave64 / wave32 hazards against
exclude = ["third_party", "build"]   # paths or globs never converted or audited
fail-on = "warning"                  # lowest audit severity that fails the hook
baseline = "{BASELINE}"   # accepted findings; only new ones fail
# launch-syntax = "cuda"             # or "hip" for hipLaunchKernelGGL
# roc = false                        # true: rocBLAS/rocRAND/... instead of hipBLAS/hipRAND/...
"""


def precommit_text(repo: str | None, rev: str | None) -> str:
    if repo:
        return f"""repos:
  - repo: {repo}
    rev: {rev or "main"}
    hooks:
      - id: hipport-audit
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
        files: {SOURCE_PATTERN}
"""


@click.command("init")
@click.argument("root", required=False, default=".", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--rocm-version", metavar="X.Y", help="ROCm release to target (default: the installed HIP, else 7.0).")
@click.option("--hook-repo", metavar="URL", help="Use the hooks from this hipport repository instead of the "
                                                  "installed hipport (`repo: local`).")
@click.option("--hook-rev", metavar="REV", help="Tag or commit of --hook-repo (default: main).")
@click.option("--force", is_flag=True, help="Overwrite an existing .hipport.toml and baseline.")
def init(root: Path, rocm_version, hook_repo, hook_rev, force):
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
    installed = detect_installed()
    rocm = rocm_version or (".".join(map(str, installed)) if installed else "7.0")
    settings.write_text(settings_text(rocm, DEFAULT_ARCHS), encoding="utf-8")
    click.echo(f"wrote {settings}")
    baseline = root / BASELINE
    try:
        audit.main([str(root), "--rocm-version", rocm, "--write-baseline", str(baseline), "-q",
                    "--exclude", "third_party", "--exclude", "build"], standalone_mode=False)
    except SystemExit as exc:
        if exc.code not in (0, None):
            sys.exit(exc.code)
    click.echo(f"wrote {baseline} (today's findings; fix them over time and re-run `hipport audit "
               f"--write-baseline {BASELINE}`)")
    config = root / ".pre-commit-config.yaml"
    snippet = precommit_text(hook_repo, hook_rev)
    if config.exists():
        click.echo(f"{config} exists; add this to it:\n\n{snippet}")
    else:
        config.write_text(snippet, encoding="utf-8")
        click.echo(f"wrote {config}; run `pre-commit install` to check every commit")
