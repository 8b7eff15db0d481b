"""`hipport init` as a team runs it on an existing tree: what it writes, what a second run does, an existing
pre-commit config, the hook-repository form, and exit codes. Every file it writes is read back by the tool that
consumes it (hipport's settings loader, `hipport audit`, a YAML reading of the pre-commit config)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from hipport.files import SOURCE_SUFFIXES

ROOT = Path(__file__).resolve().parents[1]
# A CUDA source with one finding (lane-math-32) that the baseline must absorb, and one file init must not touch.
KERNEL = b"#include <cuda_runtime.h>\n__global__ void k(int *o) { int lane = threadIdx.x & 31; o[lane] = __shfl(1, lane); }\n"
NEW_HAZARD = b"__global__ void n(int *o) { int warp = threadIdx.x / 32; o[warp] = __ballot(1) != 0; }\n"


def hipport(*args, cwd):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "team"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "src" / "k.cu").write_bytes(KERNEL)
    (root / "third_party").mkdir()
    (root / "third_party" / "vendored.cu").write_bytes(NEW_HAZARD)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def hook_files_pattern(config_text: str) -> str:
    m = re.search(r"^\s*files:\s*(\S+)\s*$", config_text, re.M)
    assert m, config_text
    return m.group(1)


def test_init_writes_settings_baseline_and_hook_config(repo):
    sources = snapshot(repo)
    r = hipport("init", "--rocm-version", "6.3", cwd=repo)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[1].rstrip(";") for line in lines] == [".hipport.toml", ".hipport-baseline.json",
                                                                ".pre-commit-config.yaml"], r.stdout
    assert all(line.startswith("wrote ") for line in lines), r.stdout
    # Sources untouched; exactly three files added.
    after = snapshot(repo)
    assert {k: v for k, v in after.items() if k in sources} == sources
    assert sorted(set(after) - set(sources)) == [".hipport-baseline.json", ".hipport.toml", ".pre-commit-config.yaml"]

    settings = tomllib.loads((repo / ".hipport.toml").read_text())
    assert settings == {"rocm-version": "6.3", "offload-arch": settings["offload-arch"],
                        "exclude": ["third_party", "build"], "fail-on": "warning",
                        "baseline": ".hipport-baseline.json"}
    assert settings["offload-arch"] and all(a.startswith("gfx") for a in settings["offload-arch"])
    from hipport.config import load_config
    load_config(repo / ".hipport.toml")  # hipport's own loader accepts every key it wrote

    baseline = json.loads((repo / ".hipport-baseline.json").read_text())
    rules = {e["rule"] for e in baseline["findings"]}
    assert rules == {"lane-math-32"}, baseline  # src/k.cu's finding; third_party is excluded
    assert all("third_party" not in json.dumps(e) for e in baseline["findings"])

    config = (repo / ".pre-commit-config.yaml").read_text()
    assert "repo: local" in config and "id: hipport-audit" in config and "entry: hipport audit" in config
    assert re.search(hook_files_pattern(config), "src/k.cu")


def test_after_init_the_audit_fails_only_on_new_findings(repo):
    assert hipport("init", "--rocm-version", "6.3", cwd=repo).returncode == 0
    r = hipport("audit", ".", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr  # today's finding is in the baseline; third_party excluded
    (repo / "src" / "new.cu").write_bytes(NEW_HAZARD)
    r = hipport("audit", ".", cwd=repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "new.cu:1" in r.stdout and "k.cu" not in r.stdout


def test_default_rocm_version_is_the_installed_hip_else_7_0(repo):
    from hipport.rocm import detect_installed

    r = hipport("init", cwd=repo)
    assert r.returncode == 0, r.stderr
    installed = detect_installed()
    expected = ".".join(map(str, installed)) if installed else "7.2"
    assert tomllib.loads((repo / ".hipport.toml").read_text())["rocm-version"] == expected


def test_second_run_refuses_and_changes_nothing(repo):
    assert hipport("init", "--rocm-version", "6.3", cwd=repo).returncode == 0
    before = snapshot(repo)
    r = hipport("init", "--rocm-version", "7.0", cwd=repo)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "already exists; use --force" in r.stderr and "Traceback" not in r.stderr
    assert snapshot(repo) == before


def test_force_rewrites_settings_and_baseline_but_not_an_existing_hook_config(repo):
    assert hipport("init", "--rocm-version", "6.3", cwd=repo).returncode == 0
    config = (repo / ".pre-commit-config.yaml").read_bytes()
    (repo / "src" / "new.cu").write_bytes(NEW_HAZARD)
    r = hipport("init", "--force", "--rocm-version", "7.0", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert tomllib.loads((repo / ".hipport.toml").read_text())["rocm-version"] == "7.0"
    baseline = json.loads((repo / ".hipport-baseline.json").read_text())
    assert sum(e.get("count", 1) for e in baseline["findings"]) == 2  # k.cu and the new file
    assert (repo / ".pre-commit-config.yaml").read_bytes() == config
    assert "exists; add this to it" in r.stdout and "id: hipport-audit" in r.stdout


def test_existing_pre_commit_config_is_kept_and_the_snippet_printed(repo):
    mine = b"repos:\n  - repo: https://github.com/pre-commit/pre-commit-hooks\n    rev: v4.6.0\n    hooks:\n" \
           b"      - id: trailing-whitespace\n"
    (repo / ".pre-commit-config.yaml").write_bytes(mine)
    r = hipport("init", "--rocm-version", "6.3", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert (repo / ".pre-commit-config.yaml").read_bytes() == mine
    assert "exists; add this to it" in r.stdout
    snippet = r.stdout.split("add this to it:", 1)[1]
    assert "repo: local" in snippet and "id: hipport-audit" in snippet
    assert (repo / ".hipport.toml").is_file() and (repo / ".hipport-baseline.json").is_file()


def test_hook_repo_and_rev(repo):
    r = hipport("init", "--rocm-version", "6.3", "--hook-repo", "https://example.invalid/hipport", "--hook-rev",
                "v0.1.0", cwd=repo)
    assert r.returncode == 0, r.stderr
    config = (repo / ".pre-commit-config.yaml").read_text()
    assert "repo: https://example.invalid/hipport" in config and "rev: v0.1.0" in config
    assert "id: hipport-audit" in config and "repo: local" not in config


def test_root_argument_and_usage_errors(repo, tmp_path):
    r = hipport("init", repo, "--rocm-version", "6.3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (repo / ".hipport.toml").is_file() and not (tmp_path / ".hipport.toml").exists()
    r = hipport("init", tmp_path / "missing", cwd=tmp_path)
    assert r.returncode == 2 and "does not exist" in r.stderr and "Traceback" not in r.stderr
    r = hipport("init", "--bogus", cwd=tmp_path)
    assert r.returncode == 2 and "no such option" in r.stderr.lower()
    r = hipport("init", "--help", cwd=tmp_path)
    assert r.returncode == 0
    for option in ("--rocm-version", "--offload-arch", "--hook-repo", "--hook-rev", "--force"):
        assert option in r.stdout, option


def test_bad_rocm_version_is_a_usage_error_and_leaves_nothing_half_done(repo):
    before = snapshot(repo)
    r = hipport("init", "--rocm-version", "seven", cwd=repo)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert snapshot(repo) == before, "a rejected option must not leave a settings file behind"


def test_local_hook_covers_every_suffix_hipport_reads(repo):
    assert hipport("init", "--rocm-version", "6.3", cwd=repo).returncode == 0
    pattern = hook_files_pattern((repo / ".pre-commit-config.yaml").read_text())
    missing = sorted(s for s in SOURCE_SUFFIXES if not re.search(pattern, f"dir/file{s}"))
    assert not missing, missing


def test_published_hooks_cover_every_suffix_hipport_reads():
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    patterns = re.findall(r"^\s*files:\s*(\S+)\s*$", text, re.M)
    assert len(patterns) == 2
    for pattern in patterns:
        missing = sorted(s for s in SOURCE_SUFFIXES if not re.search(pattern, f"dir/file{s}"))
        assert not missing, missing
