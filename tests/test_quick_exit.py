"""`hipport` as a program leaves without the interpreter's teardown (`cli.run`, issue 25): its exit status, its
output and the exit handlers registered during the run are all kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HIPPORT_HIPIFY_PERL": "off"}

DRIVER = """
import atexit, sys
atexit.register(lambda: print("handler ran", flush=True))
sys.argv = ["hipport", *sys.argv[1:]]
from hipport.cli import run
run()
print("never reached")
"""


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", DRIVER, *args], capture_output=True, text=True, env=ENV, cwd=cwd,
                          timeout=300)


def test_status_output_and_exit_handlers_survive(tmp_path):
    r = _run("--version", cwd=tmp_path)
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["hipport, version 0.1.0", "handler ran"]

    r = _run("no-such-command", cwd=tmp_path)
    assert r.returncode == 2
    assert "No such command 'no-such-command'" in r.stderr
    assert r.stdout.splitlines() == ["handler ran"]


def test_an_audit_with_findings_keeps_its_status_and_its_lines(tmp_path):
    (tmp_path / "k.cu").write_text("__global__ void k(int *o) { int lane = threadIdx.x & 31; o[lane] = __shfl(1, lane); }\n")
    r = subprocess.run([sys.executable, "-m", "hipport", "audit", "k.cu", "--no-cache"], capture_output=True,
                       text=True, env=ENV, cwd=tmp_path, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "k.cu:1:52: warning lane-math-32:" in r.stdout
    assert r.stderr.strip() == "1 finding (1 warning) in 1 file"
