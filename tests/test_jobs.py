"""Results and outputs are identical with one worker and with several."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Enough files for the worker pool to start (workers.PARALLEL_MIN_FILES)."""
    root = tmp_path_factory.mktemp("jobs") / "tree"
    for k in range(4):
        shutil.copytree(ROOT / "examples" / "cuda", root / f"copy{k}")
    return root


def test_convert_output_is_identical(tree, tmp_path):
    outs = []
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}"
        r = run("convert", tree, "-o", out, "-j", jobs, "--rocm-version", "5.2", "--cache-dir", tmp_path / f"c{jobs}")
        assert r.returncode == 0, r.stderr
        outs.append(({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}, r.stderr))
    assert outs[0] == outs[1]
    diffs = [run("convert", "--diff", tree, "-j", jobs, "--rocm-version", "5.2", "--cache-dir", tmp_path / f"d{jobs}")
             for jobs in (1, 2)]
    assert [d.returncode for d in diffs] == [0, 0], diffs[0].stderr
    assert diffs[0].stdout == diffs[1].stdout and diffs[0].stdout


def test_audit_output_is_identical(tree, tmp_path):
    """Each run starts from an empty cache of its own, so both compute every file."""
    results = [run("audit", tree, "-j", jobs, "--cache-dir", tmp_path / f"j{jobs}", "--report", "json", "-o", "-")
               for jobs in (1, 2)]
    assert results[0].returncode == results[1].returncode == 1
    assert results[0].stdout == results[1].stdout and b'"findings"' in results[0].stdout
    texts = [run("audit", tree, "-j", jobs, "--cache-dir", tmp_path / f"t{jobs}") for jobs in (1, 2)]
    assert texts[0].returncode == texts[1].returncode == 1
    assert texts[0].stdout == texts[1].stdout and texts[0].stderr == texts[1].stderr
