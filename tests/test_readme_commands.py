"""The README's commands, run as a new user runs them: the set-up command in a fresh clone, in a new virtual
environment installed from the package index, and the tour's commands with the hipport that set-up installed.
A README that stops being true to a fresh clone fails here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from needs import need

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def sh_blocks() -> list[list[str]]:
    """Each ```sh block as its command lines, comments stripped."""
    blocks = []
    for body in re.findall(r"```sh\n(.*?)```", README, re.S):
        lines = [re.sub(r"\s+#.*$", "", line).strip() for line in body.splitlines()]
        blocks.append([line for line in lines if line and not line.startswith("#")])
    return blocks


def test_setup_is_two_commands_and_ci_runs_the_second():
    setup = sh_blocks()[0]
    assert len(setup) == 2, setup
    assert setup[1] == "python3 -m pytest -q"
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.rstrip().splitlines()[-1] == setup[1], "`.ci/run` must end with the README's test command"


@pytest.fixture(scope="module")
def fresh_clone(tmp_path_factory):
    """The first set-up command run in a fresh clone of this repository's HEAD; yields the clone with its venv."""
    need(shutil.which("git") and (ROOT / ".git").exists(), "git and a git checkout", "apt-get install git")
    clone = tmp_path_factory.mktemp("readme") / "hipport"
    r = subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    demo = Path("/tmp/hipport-demo")
    shutil.rmtree(demo, ignore_errors=True)
    r = subprocess.run(["bash", "-ec", sh_blocks()[0][0]], cwd=clone, env=env, capture_output=True, text=True,
                       timeout=900)
    if r.returncode != 0 and re.search(r"Could not find a version|Failed to establish|Network is unreachable|"
                                       r"Temporary failure in name resolution", r.stderr + r.stdout):
        need(False, "the package index (set-up installs hipport's dependencies from it)",
             "a machine that reaches PyPI, as CI's does")
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    yield clone, env, demo


def test_setup_converts_the_examples_as_examples_hip_shows(fresh_clone):
    clone, _, demo = fresh_clone
    r = subprocess.run(["diff", "-r", str(demo), str(clone / "examples" / "hip")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:]


def test_the_test_command_finds_the_tests_in_the_venv(fresh_clone):
    clone, env, _ = fresh_clone
    venv_bin = clone / ".venv" / "bin"
    r = subprocess.run(f". {venv_bin}/activate && python3 -m pytest -q --collect-only -p no:cacheprovider",
                       shell=True, executable="/bin/bash", cwd=clone, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert re.search(r"\d+ tests collected", r.stdout), r.stdout[-500:]


def test_tour_commands_run_as_written(fresh_clone, tmp_path):
    """The tour's commands on a copy of the bundled examples named `kernels/`, with the installed hipport: each
    ends with an exit status the README gives for it."""
    clone, env, _ = fresh_clone
    shutil.copytree(clone / "examples" / "cuda", tmp_path / "kernels")
    env = {**env, "PATH": f"{clone / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    commands = [line for block in sh_blocks()[1:] for line in block if line.startswith("hipport ")]
    assert len(commands) >= 6, commands
    for command in commands:
        r = subprocess.run(["bash", "-ec", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
        ok = {0, 1} if command.split()[1] == "audit" else {0}  # audit: 1 is "findings at or above --fail-on"
        assert r.returncode in ok, f"{command}: exit {r.returncode}\n{r.stderr[-2000:]}"
        assert "Traceback" not in r.stderr, f"{command}: {r.stderr[-2000:]}"
    assert (tmp_path / "hipport-report.html").is_file()
    assert (tmp_path.parent / "kernels-hip").is_dir()

