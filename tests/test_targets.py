"""`--rocm-version` and `--offload-arch` (and the settings `rocm-version`, `offload-arch`) take only the releases and
GPU targets of rules/targets.toml: anything else is one line, exit 2, listing the known ones."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hipport import rocm
from hipport.cli import main
from hipport.cli.options import RELEASES_HELP

KNOWN_RELEASES = "5.0-5.7, 6.0-6.4, 7.0-7.2"
SOURCE = b"#include <cuda_runtime.h>\n__global__ void k(int *o) { o[threadIdx.x] = 1; }\n"


def _one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("hipport: error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize("text, version", [("5.0", (5, 0)), ("6.4.3", (6, 4)), ("7.2", (7, 2)), (" 7.1 ", (7, 1))])
def test_known_releases_are_accepted(text, version):
    assert rocm.rocm_release(text) == version


@pytest.mark.parametrize("text", ["6", "8.0", "7.3", "4.5", "six", "6.x", ""])
def test_unknown_releases_are_refused_with_the_known_ones(text):
    with pytest.raises(rocm.VersionError) as exc:
        rocm.rocm_release(text)
    assert KNOWN_RELEASES in str(exc.value) and "\n" not in str(exc.value)


def test_the_known_releases_are_the_issues_list():
    assert rocm.known_releases_text() == KNOWN_RELEASES
    assert KNOWN_RELEASES in RELEASES_HELP  # the help of both options says what the data says


@pytest.mark.parametrize("target", ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201", "gfx803", "gfx940", "gfx941",
                                    "gfx90c", "gfx9-generic", "gfx9-4-generic", "gfx10-3-generic", "gfx12-generic",
                                    "gfx90a:xnack+", "gfx942:sramecc+:xnack-"])
def test_known_targets_are_accepted(target):
    assert rocm.check_target(target) == target


@pytest.mark.parametrize("target", ["gfx9999", "sm_80", "gfx90", "GFX90A", "gfx1100x", "gfx13-generic", ""])
def test_unknown_targets_are_refused_with_the_known_ones(target):
    with pytest.raises(rocm.TargetError) as exc:
        rocm.check_target(target)
    message = str(exc.value)
    assert "known: gfx600, " in message and "gfx942, " in message and "gfx12-generic" in message
    assert "\n" not in message


@pytest.mark.parametrize("target", ["gfx90a:xnack", "gfx90a:xnack+:xnack-", "gfx90a:wave64+", "gfx942:"])
def test_bad_target_features_are_refused(target):
    with pytest.raises(rocm.TargetError, match="target features are :sramecc\\+/- :xnack\\+/-"):
        rocm.check_target(target)


def test_wave_size_of_every_known_target():
    # GCN (gfx6-gfx9) and CDNA are wave64, RDNA (gfx10+) wave32 in HIP: ../shared/reference/porting-facts.md
    for target in rocm.known_targets().processor_order:
        assert rocm.wave_size(target) == (64 if target[:4] in ("gfx6", "gfx7", "gfx8", "gfx9") else 32), target
    assert rocm.wave_size("gfx700") == 64 and rocm.wave_size("gfx9-4-generic") == 64
    assert rocm.wave_size("gfx10-1-generic") == 32


@pytest.mark.parametrize("command", ["convert", "audit"])
@pytest.mark.parametrize("args, says", [
    (["--rocm-version", "6"], f"--rocm-version: `6` is not a ROCm release; write major.minor, one of "
                              f"{KNOWN_RELEASES} (a patch level like 6.4.3 is fine)"),
    (["--rocm-version", "8.0"], f"--rocm-version: `8.0` names no ROCm release hipport knows; known: "
                                f"{KNOWN_RELEASES} (a patch level like 6.4.3 is fine)"),
    (["--offload-arch", "gfx9999"], "--offload-arch: `gfx9999` is not an AMD GPU target hipport knows; known: "
                                    "gfx600, gfx601, gfx602, gfx700, "),
    (["--offload-arch", "gfx942,gfx9999"], "--offload-arch: `gfx9999` is not an AMD GPU target hipport knows; "),
])
def test_bad_values_on_the_command_line(tmp_path, monkeypatch, command, args, says):
    (tmp_path / "a.cu").write_bytes(SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [command, "a.cu", *args])
    line = _one_error_line(result)
    assert line.startswith(f"hipport: error: {says}"), line
    assert (tmp_path / "a.cu").read_bytes() == SOURCE  # refused before anything was touched


@pytest.mark.parametrize("command", ["convert", "audit"])
def test_known_values_on_the_command_line(tmp_path, monkeypatch, command):
    (tmp_path / "a.cu").write_bytes(SOURCE)
    monkeypatch.chdir(tmp_path)
    args = [command, "a.cu", "--rocm-version", "6.4.3", "--offload-arch", "gfx942:sramecc+:xnack-,gfx11-generic",
            "--no-cache"] + (["--check"] if command == "convert" else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == (1 if command == "convert" else 0), result.output  # convert --check: would change
    assert "error" not in result.output


@pytest.mark.parametrize("command", ["convert", "audit"])
@pytest.mark.parametrize("settings_file", [".hipport.toml", "pyproject.toml"])
@pytest.mark.parametrize("setting, says", [
    ('rocm-version = "8.0"', f"`rocm-version`: `8.0` names no ROCm release hipport knows; known: {KNOWN_RELEASES}"),
    ('rocm-version = "7"', f"`rocm-version`: `7` is not a ROCm release; write major.minor, one of {KNOWN_RELEASES}"),
    ('offload-arch = ["gfx90a", "gfx9999"]', "`offload-arch`: `gfx9999` is not an AMD GPU target hipport knows; "
                                             "known: gfx600, "),
    ('offload-arch = "gfx942:xnack"', "`offload-arch`: `gfx942:xnack`: target features are "),
])
def test_bad_values_in_the_settings(tmp_path, monkeypatch, command, settings_file, setting, says):
    text = setting + "\n" if settings_file == ".hipport.toml" else f"[tool.hipport]\n{setting}\n"
    (tmp_path / settings_file).write_text(text)
    (tmp_path / "a.cu").write_bytes(SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, [command, "a.cu"])
    line = _one_error_line(result)
    assert line.startswith(f"hipport: error: {tmp_path / settings_file}: {says}"), line


def test_known_values_in_the_settings(tmp_path, monkeypatch):
    (tmp_path / ".hipport.toml").write_text('rocm-version = "7.2.1"\noffload-arch = ["gfx950", "gfx1201"]\n')
    (tmp_path / "a.cu").write_bytes(SOURCE)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["convert", "a.cu", "--check", "--no-cache"])
    assert result.exit_code == 1, result.output
    assert "targeting ROCm 7.2 (the `rocm-version` setting of" in result.output


def test_init_refuses_unknown_values_and_writes_nothing(tmp_path):
    for args in (["--rocm-version", "8.0"], ["--offload-arch", "gfx9999"]):
        result = CliRunner().invoke(main, ["init", str(tmp_path), *args])
        _one_error_line(result)
        assert not (tmp_path / ".hipport.toml").exists()
