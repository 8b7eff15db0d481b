"""The `hipport` command line: one module per command (`convert`, `audit`, `rules`, `init`, `doctor`), the options
they share in `options`. Porting logic lives in `hipport.convert` and `hipport.audit`; reports in `hipport.report`.

Ctrl-C at any moment gives one line and exit 130, never a traceback. While this module loads (click, then the
command's own imports) nothing has been written, so when hipport is the program a SIGINT then prints the line and
leaves at once; from :meth:`_LazyGroup.main` on, it raises ``hipport.files.Interrupted`` (held during a write),
which ``main`` turns into the same line."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys


def _leave_at_once(signum, frame) -> None:  # nothing is written yet: no clean-up to wait for
    os.write(2, f"hipport: interrupted by {signal.Signals(signum).name}\n".encode())
    os._exit(128 + signum)


def _is_the_program() -> bool:
    """hipport runs as its own program (console script or `python -m hipport`), not imported by another (tests)."""
    main_module = sys.modules.get("__main__")
    spec = getattr(main_module, "__spec__", None)
    if spec is not None and spec.name == "hipport.__main__":
        return True
    name = os.path.basename(getattr(main_module, "__file__", None) or "")
    return name in ("hipport", "hipport.exe", "hipport-script.py")


if _is_the_program() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    try:
        signal.signal(signal.SIGINT, _leave_at_once)
    except ValueError:  # not the main thread
        pass

import importlib  # after the handler: these imports take most of the start-up time

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

    def main(self, *args, **kwargs):
        """Run the command line; SIGINT anywhere in it: one line, exit 130 (a command may say more first)."""
        from hipport.files import (
            Interrupted,
            catching_swallowed_interrupts,
            interrupt,
            on_deferred_signal,
        )

        def deferred(signum: int) -> None:
            raise Interrupted(signum)

        try:
            old = signal.getsignal(signal.SIGINT)
            if old is signal.SIG_IGN:  # started with SIGINT ignored (a background job): keep it so
                return super().main(*args, **kwargs)
            signal.signal(signal.SIGINT, interrupt)
        except ValueError:  # not the main thread: leave signals alone
            return super().main(*args, **kwargs)
        old_action = on_deferred_signal(deferred)
        try:
            with catching_swallowed_interrupts():
                return super().main(*args, **kwargs)
        except Interrupted as exc:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the message short
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            click.echo(f"hipport: interrupted by {exc.name}", err=True)
            sys.exit(exc.exit_code)
        finally:
            on_deferred_signal(old_action)
            if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
                signal.signal(signal.SIGINT, old)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="hipport")
def main() -> None:
    """Port CUDA sources to HIP and flag what renaming alone cannot fix."""



def run() -> None:
    """The `hipport` program (`python -m hipport`, the console script): the command line, then an exit that skips
    the interpreter's teardown, freeing every object and unloading libclang one by one (60 ms of a 0.3 s
    pre-commit run). Exit handlers still run and the output is flushed; `main` itself, for callers in a process
    that goes on, ends as usual."""
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed, status 1, as Python does
        with contextlib.suppress(Exception):
            print(code, file=sys.stderr)
        code = 1
    with contextlib.suppress(Exception):
        run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
        if run_exit_handlers is not None:
            run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader went away (`| head`): as Python's own exit would say, status 120
            code = code or 120
        except Exception:
            pass
    os._exit(code)


_LAZY_COMMANDS = {
    "convert": ("hipport.cli.convert", "convert"),
    "audit": ("hipport.cli.audit", "audit"),
    "compat": ("hipport.cli.compat", "compat"),
    "rules": ("hipport.cli.rules", "rules"),
    "init": ("hipport.cli.init", "init"),
    "doctor": ("hipport.cli.doctor", "doctor"),
}
