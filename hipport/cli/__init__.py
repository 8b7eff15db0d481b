"""The `hipport` command line: one module per command (`convert`, `audit`, `rules`, `init`), the options they
share in `options`. Porting logic lives in `hipport.convert` and `hipport.audit`; reports in `hipport.report`."""

from __future__ import annotations

import importlib

import click

from hipport import __version__


class _LazyGroup(click.Group):
    """Subcommands imported only when used: `convert` (the pre-commit path) never loads the audit checks."""

    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *_LAZY_COMMANDS})

    def get_command(self, ctx, name):
        if name in _LAZY_COMMANDS:
            module, attr = _LAZY_COMMANDS[name]
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hipport")
def main() -> None:
    """Port CUDA sources to HIP and flag what renaming alone cannot fix."""



_LAZY_COMMANDS = {
    "convert": ("hipport.cli.convert", "convert"),
    "audit": ("hipport.cli.audit", "audit"),
    "rules": ("hipport.cli.rules", "rules"),
    "init": ("hipport.cli.init", "init"),
}
