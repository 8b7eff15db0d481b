"""`--help` documents every option of every command: each option has help text, and `hipport CMD --help` lists it
and exits 0."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from hipport.cli import _LAZY_COMMANDS

ROOT = Path(__file__).resolve().parents[1]


def _commands():
    for name, (module, attr) in sorted(_LAZY_COMMANDS.items()):
        command = getattr(importlib.import_module(module), attr)
        yield [name], command
        if isinstance(command, click.Group):
            for sub, subcommand in sorted(command.commands.items()):
                yield [name, sub], subcommand


COMMANDS = list(_commands())


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_is_documented(path, command):
    r = subprocess.run([sys.executable, "-m", "hipport", *path, "--help"], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        assert param.help and param.help.strip(), f"hipport {' '.join(path)} {param.opts[0]}: no help text"
        assert any(opt in r.stdout for opt in param.opts), f"{param.opts} not in `hipport {' '.join(path)} --help`"
