"""The README's CI recipes, as a user pastes them: each loads as YAML, has the shape its CI service needs, and each
`hipport` command line in it runs on a small tree with the exit code the job relies on (1 with a finding, 0
without) and leaves the files the next step uploads."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from needs import need

import docs
from hipport.files import SOURCE_SUFFIXES

ROOT = Path(__file__).resolve().parents[1]
README = docs.text()
HAZARD = "__global__ void k(int* o) { o[0] = __shfl(1, threadIdx.x & 31); }\n"
CLEAN = "__global__ void k(int* o) { o[0] = threadIdx.x % warpSize; }\n"


def recipes() -> dict[str, str]:
    """```yaml blocks whose first line names the file they go in: `# .gitlab-ci.yml`."""
    found = {}
    for block in re.findall(r"```yaml\n(.*?)```", README, re.S):
        first = block.split("\n", 1)[0]
        if first.startswith("# ."):
            found[first[2:].strip()] = block
    return found


def load(name: str):
    need(importlib.util.find_spec("yaml"), "PyYAML", "pip install .[test] (it comes with pre-commit)")
    import yaml

    text = recipes().get(name)
    assert text, f"the README has no ```yaml block starting `# {name}`"
    return yaml.safe_load(text)


def tree(tmp_path: Path, source: str) -> Path:
    root = tmp_path / ("dirty" if source == HAZARD else "clean")
    (root / "src").mkdir(parents=True)
    (root / "src" / "k.cu").write_text(source)
    (root / "src" / "notes.txt").write_text("not a source\n")
    return root


def run_hipport(line: str, cwd: Path) -> subprocess.CompletedProcess:
    """A recipe's command line, run with this working tree's hipport."""
    words = shlex.split(line)
    assert words[0] == "hipport", line
    return subprocess.run([sys.executable, "-m", "hipport", *words[1:]], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)


def hipport_lines(lines) -> list[str]:
    out = [line for line in lines if isinstance(line, str) and line.startswith("hipport ")]
    assert out, lines
    return out


def test_the_readme_has_the_three_recipes():
    assert set(recipes()) >= {".github/workflows/hipport.yml", ".gitlab-ci.yml", ".pre-commit-config.yaml"}


def test_github_actions_job(tmp_path):
    workflow = load(".github/workflows/hipport.yml")
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert set(triggers) >= {"push", "pull_request"}
    assert workflow["permissions"]["security-events"] == "write"
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    assert any(s.get("uses", "").startswith("actions/checkout@") for s in steps)
    runs = [s["run"] for s in steps if "run" in s]
    assert any(r.startswith("pip install") for r in runs)
    (upload,) = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert "failure()" in upload["if"] or upload["if"] == "always()"  # the audit's exit 1 must not skip it
    sarif = upload["with"]["sarif_file"]
    for source, code in ((HAZARD, 1), (CLEAN, 0)):
        where = tree(tmp_path, source)
        for line in hipport_lines(runs):
            r = run_hipport(line, where)
            assert r.returncode == code, f"{line}: {r.returncode}\n{r.stdout}{r.stderr}"
        data = json.loads((where / sarif).read_text())
        assert data["version"] == "2.1.0"
        results = data["runs"][0]["results"]
        assert [x["ruleId"] for x in results] == (["lane-math-32"] if code else [])
        if code:
            assert "src/k.cu:1:" in r.stdout  # the text listing is in the job's log


def test_gitlab_ci_job(tmp_path):
    config = load(".gitlab-ci.yml")
    (name, job), = [(k, v) for k, v in config.items() if isinstance(v, dict) and "script" in v]
    assert job["artifacts"]["when"] == "always"
    for source, code in ((HAZARD, 1), (CLEAN, 0)):
        where = tree(tmp_path, source)
        for line in hipport_lines(job["script"]):
            r = run_hipport(line, where)
            assert r.returncode == code, f"{line}: {r.returncode}\n{r.stdout}{r.stderr}"
        for artifact in job["artifacts"]["paths"]:
            assert (where / artifact).is_file(), f"{name}: artifact {artifact} was not written"
        if code:
            assert "src/k.cu:1:" in r.stdout


def test_pre_commit_config(tmp_path):
    from hipport.cli.init import precommit_text

    config = load(".pre-commit-config.yaml")
    (repo,) = config["repos"]
    (hook,) = repo["hooks"]
    assert repo["repo"] == "local" and hook["language"] == "system"
    missing = sorted(s for s in SOURCE_SUFFIXES if not re.search(hook["files"], f"dir/file{s}"))
    assert not missing, missing
    assert not re.search(hook["files"], "dir/notes.txt")
    # What `hipport init` writes, so the two never drift apart.
    block = recipes()[".pre-commit-config.yaml"]
    assert block.split("\n", 1)[1] == precommit_text(None, None)
    for source, code in ((HAZARD, 1), (CLEAN, 0)):
        where = tree(tmp_path, source)
        r = run_hipport(f"{hook['entry']} src/k.cu", where)  # pre-commit appends the staged file names
        assert r.returncode == code, r.stdout + r.stderr


def test_pre_commit_runs_the_recipe(tmp_path):
    """The real pre-commit with the recipe's config, in a scratch repository (needs the `hipport` console script on
    PATH, as `language: system` does)."""
    need(shutil.which("git"), "git", "apt-get install git")
    need(importlib.util.find_spec("pre_commit"), "pre-commit", "pip install .[test]")
    need(shutil.which("hipport"), "the `hipport` console script", "pip install -e .")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}

    def git(*args):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)

    git("init", "-q")
    (repo / ".pre-commit-config.yaml").write_text(recipes()[".pre-commit-config.yaml"])
    (repo / "k.cu").write_text(HAZARD)
    git("add", "-A")
    r = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=repo, capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 1 and "lane-math-32" in r.stdout, r.stdout + r.stderr
    (repo / "k.cu").write_text(CLEAN)
    git("add", "-A")
    r = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=repo, capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", [".github/workflows/hipport.yml", ".gitlab-ci.yml", ".pre-commit-config.yaml"])
def test_recipes_hold_no_tabs_or_trailing_spaces(name):
    """Pasted YAML with a tab fails to load in the CI service; trailing spaces get mangled by editors."""
    block = recipes()[name]
    assert "\t" not in block and not re.search(r" +$", block, re.M)
