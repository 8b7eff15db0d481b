"""Issue 24: the rough edges a new user hit, each kept as a regression test (the defect's number in the name)."""

from __future__ import annotations

import ctypes
import os
import signal

from click.testing import CliRunner

from hipport.cli import main


def _ctypes_call_interrupted_by_sigint() -> None:
    """What a Ctrl-C landing inside a libclang call looks like: the handler raises while ctypes converts an
    argument, and ctypes hands back ArgumentError (a plain Exception) in its place."""
    class Arg:
        @classmethod
        def from_param(cls, value):
            os.kill(os.getpid(), signal.SIGINT)
            return value

    fn = ctypes.CDLL(None).abs
    fn.argtypes = [Arg]
    fn.restype = ctypes.c_int
    fn(1)


def test_1_ctrl_c_inside_a_ctypes_call_exits_130_not_internal_error(tmp_path, monkeypatch):
    import hipport.convert.runner as runner

    def engine(*args, **kwargs):
        _ctypes_call_interrupted_by_sigint()
        raise AssertionError("the signal did not arrive")

    monkeypatch.setattr(runner, "convert_source", engine)
    for name in ("a.cu", "b.cu"):
        (tmp_path / name).write_bytes(b"void f() { cudaFree(0); }\n")
    result = CliRunner().invoke(main, ["convert", str(tmp_path), "--no-cache", "-j1", "--no-hipify-perl"])
    assert result.exit_code == 130, result.output
    assert "internal error" not in result.output
    assert (tmp_path / "b.cu").read_bytes() == b"void f() { cudaFree(0); }\n"


def test_1_a_real_engine_bug_still_costs_one_file(tmp_path, monkeypatch):
    import hipport.convert.runner as runner

    def engine(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(runner, "convert_source", engine)
    (tmp_path / "a.cu").write_bytes(b"void f() { cudaFree(0); }\n")
    result = CliRunner().invoke(main, ["convert", str(tmp_path), "--no-cache", "-j1", "--no-hipify-perl"])
    assert result.exit_code == 3, result.output
    assert "internal error (ValueError: a bug)" in result.output
