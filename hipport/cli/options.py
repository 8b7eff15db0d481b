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


config_option = click.option(
    "--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
    help="Project settings file (default: the nearest .hipport.toml, or pyproject.toml with [tool.hipport], "
         "from the current directory up to the repository root). Flags win over it.")
jobs_option = click.option(
    "-j", "--jobs", type=click.IntRange(min=1), metavar="N",
    help="Worker processes (default: the number of CPU cores; small runs use one).")
cache_dir_option = click.option(
    "--cache-dir", type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
    help="Where the result cache lives (default: $HIPPORT_CACHE_DIR, else ~/.cache/hipport).")
