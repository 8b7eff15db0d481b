"""What the `convert` and `audit` commands share on the command line: the one-line usage error, and options
that mean the same in both."""

from __future__ import annotations

import sys
from pathlib import Path

import click

EXIT_USAGE = 2


def fail(message: str, code: int = EXIT_USAGE) -> None:
    click.echo(f"hipport: error: {message}", err=True)
    sys.exit(code)


def user_release(text: str, option: str = "--rocm-version") -> tuple[int, int]:
    """The release an option names, which must be one hipport knows; else one line naming the known ones, exit 2."""
    from hipport.rocm import VersionError, rocm_release

    try:
        return rocm_release(text)
    except VersionError as exc:
        fail(f"{option}: {exc}")


def user_targets(values, option: str = "--offload-arch") -> tuple[str, ...]:
    """The GPU targets of an option given once or repeated, each comma-separated, duplicates dropped; a target
    hipport does not know is one line naming the known ones, exit 2."""
    from hipport.rocm import TargetError, check_target

    items = [t for v in ((values,) if isinstance(values, str) else values) for t in v.split(",") if t.strip()]
    if not items:
        fail(f"{option}: name at least one GPU target (gfx90a, gfx942, gfx1100...)")
    try:
        return tuple(dict.fromkeys(check_target(t) for t in items))
    except TargetError as exc:
        fail(f"{option}: {exc}")


# What the help of both commands says the two options take (tests/test_targets.py checks it against the data).
RELEASES_HELP = "a release hipport knows: 5.0-5.7, 6.0-6.4, 7.0-7.2, a patch level like 6.4.3 allowed"
TARGETS_HELP = ("AMD GPU processors as hipcc's --offload-arch= names them (gfx8/gfx9 incl. gfx90a, gfx942, gfx950; "
                "gfx10xx, gfx11xx, gfx12xx; gfx6/gfx7; the -generic ones; :xnack+/- and :sramecc+/- allowed); "
                "anything else is a usage error listing the known ones")


config_option = click.option(
    "--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
    help="Project settings file (default: the nearest .hipport.toml, or pyproject.toml with [tool.hipport], "
         "above the inputs (doctor: above the current directory), up to the repository root; .hipport.toml "
         "wins when a folder has both). Flags win over it.")
jobs_option = click.option(
    "-j", "--jobs", type=click.IntRange(min=1), metavar="N",
    help="Worker processes (default: the number of CPU cores; small runs use one).")
cache_dir_option = click.option(
    "--cache-dir", type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
    help="Where the result cache lives (default: $HIPPORT_CACHE_DIR, else ~/.cache/hipport).")


def toolchain_options(f):
    """`--hipcc`, `--hip-include`, `--clang`: what `--verify` compiles with (default: the hipcc on PATH)."""
    for option in reversed((
            click.option("--hipcc", "verify_hipcc", metavar="PATH",
                         help="With --verify: this hipcc instead of the one on PATH (setting `verify-hipcc`)."),
            click.option("--hip-include", "verify_hip_include", metavar="DIR",
                         type=click.Path(path_type=Path, file_okay=False),
                         help="With --verify, without ROCm installed: compile against this ROCm include tree "
                              "(ROCM/include) with a clang (--clang; default the clang++ on PATH), syntax only "
                              "(setting `verify-hip-include`)."),
            click.option("--clang", "verify_clang", metavar="PATH",
                         help="With --hip-include: the clang++ to run (setting `verify-clang`)."))):
        f = option(f)
    return f


def toolchain_needs_verify(verify: bool, hipcc, hip_include, clang) -> None:
    """The toolchain options only mean something with --verify, and name one compiler."""
    given = [n for n, v in (("--hipcc", hipcc), ("--hip-include", hip_include), ("--clang", clang)) if v is not None]
    if given and not verify:
        fail(f"{given[0]} only applies with --verify")
    if hipcc is not None and hip_include is not None:
        fail("--hipcc and --hip-include cannot be combined; choose one compiler")


def toolchain_choice(config, hipcc: str | None, hip_include: Path | None, clang: str | None) -> dict:
    """The keyword arguments of `find_toolchain`: the options, else the settings (paths relative to the settings
    file)."""
    base = config.path.parent if config.path else Path.cwd()

    def setting(key: str):
        value = config.get(key)
        return None if value is None else str(base / Path(value).expanduser()) if "/" in value else value

    include = hip_include if hip_include is not None else setting("verify-hip-include")
    return {"hipcc": hipcc if hipcc is not None else setting("verify-hipcc"),
            "hip_include": None if include is None else str(include),
            "clang": clang if clang is not None else setting("verify-clang")}


def project_rule_dirs(config, hipify_perl: Path | None = None, no_hipify_perl: bool = False,
                      rule_dirs=()) -> list[Path]:
    """The rule folders a run loads after the built-in ones, in order: hipify-perl's, the settings' `rules`,
    then `--rules`. `convert` and `audit` both ask here, so a folder that is missing stops both alike
    (`RuleError`, naming the folder and where it was named) before any file is read."""
    from hipport.hipify_perl import hipify_perl_dirs
    from hipport.rules import RuleError

    dirs = hipify_perl_dirs(hipify_perl, no_hipify_perl, config)
    for where, paths in ((f"the `rules` setting of {config.path}", config.paths("rules")),
                         ("--rules", [Path(d) for d in rule_dirs])):
        for d in paths:
            if not d.is_dir():
                raise RuleError(f"{d}: rule folder not found ({where})")
            dirs.append(d)
    return dirs
