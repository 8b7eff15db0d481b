"""Issue 11 ("Trust"), items 1, 4, 5 and 6: outputs never land on inputs or on each other; audit reads files the
way convert does; settings' excludes and baselines hold however hipport is called; one line instead of a
traceback. Every command-line test checks the exit status and the exact message line."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CUDA_A = b"#include <cuda_runtime.h>\nvoid f(float *p) { cudaFree(p); }\n"
CUDA_B = b"#include <cuda_runtime.h>\nvoid g(float **p) { cudaMalloc(p, 4); }\n"
HAZARD = b"__global__ void k(int *o) { int lane = threadIdx.x & 31; o[lane] = __shfl(1, lane); }\n"
HAZARD_LINE = "{p}:1:52: warning lane-math-32: `threadIdx.x & 31` computes a lane index for 32-lane warps; use " \
              "`% warpSize`"
EXIT_FINDINGS, EXIT_USAGE, EXIT_FAILED, EXIT_SIGINT = 1, 2, 3, 130
UTF16_MESSAGE = "{p}: UTF-16 text; hipport reads 8-bit text only (UTF-8, Latin-1...); skipped"


def hipport(*args, cwd):
    return subprocess.run([sys.executable, "-m", "hipport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def lines(text: str) -> list[str]:
    return text.splitlines()


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# -- 1. -o never writes over an input, nor twice on one path ---------------------------------------------------

def test_convert_output_dir_over_a_nested_input_is_refused_before_writing(tmp_path):
    (tmp_path / "src" / "src").mkdir(parents=True)
    (tmp_path / "src" / "k.cu").write_bytes(CUDA_A)
    (tmp_path / "src" / "src" / "k.cu").write_bytes(CUDA_B)
    before = snapshot(tmp_path)
    r = hipport("convert", "src", "-o", ".", cwd=tmp_path)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert lines(r.stderr) == ["hipport: error: src/k.cu: the output of src/src/k.cu would overwrite the input "
                               "src/k.cu; nothing written"]
    assert snapshot(tmp_path) == before  # not even ./k.cu, the first output, which collides with nothing


def test_convert_output_inside_the_input_tree_without_a_file_there_is_refused(tmp_path):
    (tmp_path / "src" / "src").mkdir(parents=True)
    (tmp_path / "src" / "src" / "k.cu").write_bytes(CUDA_B)
    (tmp_path / "src" / "k.txt").write_bytes(b"notes\n")
    before = snapshot(tmp_path)
    r = hipport("convert", "src", "-o", ".", cwd=tmp_path)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert lines(r.stderr) == ["hipport: error: src/k.cu: the output of src/src/k.cu would be written inside the "
                               "input tree src; nothing written"]
    assert snapshot(tmp_path) == before


def test_convert_two_outputs_on_one_path_are_refused(tmp_path):
    for side, data in (("a", CUDA_A), ("b", CUDA_B)):
        (tmp_path / side / "src").mkdir(parents=True)
        (tmp_path / side / "src" / "k.cu").write_bytes(data)
    r = hipport("convert", "a/src", "b/src", "-o", "out", cwd=tmp_path)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert lines(r.stderr) == ["hipport: error: out/src/k.cu: the output of a/src/k.cu and the output of "
                               "b/src/k.cu would both be written here; nothing written"]
    assert not (tmp_path / "out").exists()


def test_convert_outputs_differing_only_in_case_are_a_collision(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    (tmp_path / "x" / "K.cu").write_bytes(CUDA_A)
    (tmp_path / "y" / "k.cu").write_bytes(CUDA_B)
    r = hipport("convert", "x/K.cu", "y/k.cu", "-o", "out", cwd=tmp_path)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert lines(r.stderr) == ["hipport: error: out/k.cu: the output of x/K.cu and the output of y/k.cu would both "
                               "be written here where letter case is ignored (as out/K.cu and out/k.cu); "
                               "nothing written"]
    assert not (tmp_path / "out").exists()


def test_convert_output_over_an_input_differing_only_in_case_is_refused(tmp_path):
    (tmp_path / "src" / "src").mkdir(parents=True)
    (tmp_path / "src" / "K.cu").write_bytes(CUDA_A)
    (tmp_path / "src" / "src" / "k.cu").write_bytes(CUDA_B)
    r = hipport("convert", "src/src", "src/K.cu", "-o", "SRC", cwd=tmp_path)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert lines(r.stderr) == ["hipport: error: SRC/K.cu: the output of src/K.cu would overwrite the input src/K.cu "
                               "where letter case is ignored; nothing written"]
    assert not (tmp_path / "SRC").exists()


def test_audit_report_or_baseline_over_an_input_is_refused(tmp_path):
    (tmp_path / "k.cu").write_bytes(HAZARD)
    r = hipport("audit", "k.cu", "--report", "json", "-o", "k.cu", cwd=tmp_path)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert lines(r.stderr) == ["hipport: error: k.cu: the json report would overwrite the input k.cu; "
                               "nothing written"]
    r = hipport("audit", "k.cu", "--write-baseline", "k.cu", cwd=tmp_path)
    assert r.returncode == EXIT_USAGE, r.stderr
    assert lines(r.stderr) == ["hipport: error: k.cu: the baseline would overwrite the input k.cu; nothing written"]
    assert (tmp_path / "k.cu").read_bytes() == HAZARD


# -- 4. audit reads files as convert does ------------------------------------------------------------------------

def test_audit_utf16_file_is_named_and_fails_while_its_utf8_copy_has_findings(tmp_path):
    (tmp_path / "k16.cu").write_bytes(b"\xff\xfe" + HAZARD.decode().encode("utf-16-le"))
    (tmp_path / "k8.cu").write_bytes(HAZARD)
    r = hipport("audit", "k16.cu", cwd=tmp_path)
    assert r.returncode == EXIT_FAILED, r.stderr
    assert lines(r.stderr) == ["hipport: error: " + UTF16_MESSAGE.format(p="k16.cu"),
                               "0 findings in 0 files; 1 file not audited (named above)"]
    r = hipport("audit", "-q", "k8.cu", cwd=tmp_path)
    assert r.returncode == EXIT_FINDINGS
    assert lines(r.stdout) == [HAZARD_LINE.format(p="k8.cu")]


def _bad_inputs(root: Path) -> None:
    root.mkdir()
    (root / "utf16.cu").write_bytes(b"\xff\xfe" + HAZARD.decode().encode("utf-16-le"))
    (root / "binary.cu").write_bytes(bytes(range(256)) * 8)
    os.mkfifo(root / "fifo.cu")
    (root / "broken.cu").symlink_to("missing.cu")


@pytest.mark.parametrize("how", ["directory", "files"])
def test_audit_and_convert_name_the_same_bad_inputs_with_the_same_messages(tmp_path, how):
    root = tmp_path / "t"
    _bad_inputs(root)
    names = ["binary.cu", "broken.cu", "fifo.cu", "utf16.cu"]
    args = ["t"] if how == "directory" else [f"t/{n}" for n in names]
    audit = hipport("audit", *args, cwd=tmp_path)
    convert = hipport("convert", "--check", *args, cwd=tmp_path)
    assert audit.returncode == EXIT_FAILED and convert.returncode == EXIT_FAILED, audit.stderr + convert.stderr
    from_audit = [line.removeprefix("hipport: error: ") for line in lines(audit.stderr)
                  if line.startswith("hipport: error: ")]
    from_convert = [line.removeprefix("error: ") for line in lines(convert.stderr) if line.startswith("error: ")]
    broken = ("t/broken.cu: broken symlink (its target missing.cu does not exist); skipped" if how == "directory"
              else "t/broken.cu: cannot read (No such file or directory); skipped")
    assert sorted(from_audit) == sorted(from_convert) == [
        "t/binary.cu: looks binary; skipped", broken, "t/fifo.cu: a FIFO, not a source file; skipped",
        UTF16_MESSAGE.format(p="t/utf16.cu")]
    assert lines(audit.stderr)[-1] == "0 findings in 0 files; 4 files not audited (named above)"


def test_audit_symlink_out_of_the_tree_is_named_unless_followed(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "outside.cu").write_bytes(HAZARD)
    (tmp_path / "t" / "link.cu").symlink_to(tmp_path / "outside.cu")
    r = hipport("audit", "t", cwd=tmp_path)
    assert r.returncode == EXIT_FAILED, r.stderr
    assert lines(r.stderr) == [f"hipport: error: t/link.cu: symlink to {tmp_path / 'outside.cu'}, outside the input "
                               "tree; not followed without --follow-symlinks",
                               "0 findings in 0 files; 1 file not audited (named above)"]
    r = hipport("audit", "-q", "--follow-symlinks", "t", cwd=tmp_path)
    assert r.returncode == EXIT_FINDINGS, r.stderr
    assert lines(r.stdout) == [HAZARD_LINE.format(p="t/link.cu")]


def test_audit_unreadable_file_in_a_json_report_is_named(tmp_path):
    (tmp_path / "k16.cu").write_bytes(b"\xff\xfe" + HAZARD.decode().encode("utf-16-le"))
    r = hipport("audit", "k16.cu", "--report", "json", "-o", "r.json", cwd=tmp_path)
    assert r.returncode == EXIT_FAILED, r.stderr
    assert lines(r.stderr) == ["hipport: error: " + UTF16_MESSAGE.format(p="k16.cu"),
                               "wrote json report to r.json",
                               "0 findings in 0 files; 1 file not audited (named above)"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert UTF16_MESSAGE.format(p="k16.cu") in json.dumps(report)


# -- 5. settings hold however hipport is called --------------------------------------------------------------

@pytest.fixture
def project(tmp_path):
    """A repository whose settings exclude third_party/ and accept the hazard in src/k.cu by a baseline."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "third_party").mkdir()
    (tmp_path / "src" / "k.cu").write_bytes(HAZARD)
    (tmp_path / "third_party" / "x.cu").write_bytes(HAZARD + CUDA_A)
    (tmp_path / ".hipport.toml").write_text('exclude = ["third_party"]\nbaseline = "ci/base.json"\n')
    (tmp_path / "ci").mkdir()
    r = hipport("audit", ".", "--write-baseline", "../ci/base.json", cwd=tmp_path / "src")  # written from src/
    assert r.returncode == 0, r.stderr
    assert lines(r.stderr) == ["wrote 1 finding to ../ci/base.json"]
    return tmp_path


def test_write_baseline_paths_are_relative_to_the_settings_directory(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_bytes(HAZARD)
    (tmp_path / ".hipport.toml").write_text('fail-on = "warning"\n')
    r = hipport("audit", ".", "--write-baseline", "../base.json", cwd=tmp_path / "src")
    assert r.returncode == 0, r.stderr
    assert lines(r.stderr) == ["wrote 1 finding to ../base.json"]
    data = json.loads((tmp_path / "base.json").read_text())
    assert [e["path"] for e in data["findings"]] == ["src/k.cu"]


@pytest.mark.parametrize("cwd, path", [(".", "src/k.cu"), ("src", "."), ("src", "k.cu"), (".", "src/../src/k.cu"),
                                       (".", "./src"), ("third_party", "../src/k.cu"), (".", "ABS")])
def test_baseline_matches_from_any_directory_and_any_spelling(project, cwd, path):
    if path == "ABS":
        path = project / "src" / "k.cu"
    r = hipport("audit", path, cwd=project / cwd)
    assert r.returncode == 0, r.stdout + r.stderr
    assert lines(r.stderr) == ["0 findings in 1 file; 1 in the baseline not shown"]


@pytest.mark.parametrize("cwd, path", [(".", "third_party/x.cu"), ("third_party", "x.cu"), (".", "ABS"),
                                       ("src", "../third_party/x.cu"), (".", "third_party")])
def test_settings_exclude_applies_to_files_named_on_the_command_line(project, cwd, path):
    if path == "ABS":
        path = project / "third_party" / "x.cu"
    r = hipport("audit", path, cwd=project / cwd)
    assert r.returncode == 0, r.stdout + r.stderr
    assert lines(r.stderr) == ["0 findings in 0 files"]
    r = hipport("convert", "--check", path, cwd=project / cwd)
    assert r.returncode == 0, r.stdout + r.stderr
    assert lines(r.stderr) == ["hipport: 0 files scanned, 0 would change, 0 references converted"]
    assert (project / "third_party" / "x.cu").read_bytes() == HAZARD + CUDA_A


# -- 6. one line, never a traceback -------------------------------------------------------------------------------

def test_write_baseline_into_a_missing_directory_is_one_line(tmp_path):
    (tmp_path / "k.cu").write_bytes(HAZARD)
    (tmp_path / "afile").write_bytes(b"")
    for target, parent in (("missing/dir/b.json", "missing/dir"), ("afile/b.json", "afile")):
        r = hipport("audit", "k.cu", "--write-baseline", target, cwd=tmp_path)
        assert r.returncode == EXIT_USAGE, r.stderr
        assert lines(r.stderr) == [f"hipport: error: {target}: cannot write the baseline: {parent} is not a "
                                   "directory"]
    assert not (tmp_path / "missing").exists()


def test_single_report_to_a_path_ending_in_a_slash_is_a_directory(tmp_path):
    (tmp_path / "k.cu").write_bytes(HAZARD)
    r = hipport("audit", "k.cu", "--report", "json", "-o", "reports/", cwd=tmp_path)
    assert r.returncode == EXIT_FINDINGS, r.stderr
    assert lines(r.stderr) == ["wrote json report to reports/hipport-report.json",
                               "1 finding (1 warning) in 1 file"]
    assert json.loads((tmp_path / "reports" / "hipport-report.json").read_text())["schema"] == "hipport-audit/1"
    r = hipport("audit", "k.cu", "--report", "json", "-o", "one.json", cwd=tmp_path)  # no slash: a file
    assert r.returncode == EXIT_FINDINGS, r.stderr
    assert lines(r.stderr) == ["wrote json report to one.json", "1 finding (1 warning) in 1 file"]
    assert (tmp_path / "one.json").is_file()


def test_output_help_says_what_o_means(tmp_path):
    r = hipport("audit", "--help", cwd=tmp_path)
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    assert "A path ending in / or an existing directory is a directory" in text
    assert "3 some files could not be read or lexed" in text


INTERRUPT_DRIVER = """
import os, runpy, signal, sys
target = sys.argv[1]
class InterruptOnImport:  # consulted for every module not yet loaded, by `import` and importlib alike
    def find_spec(self, name, path=None, module=None):
        if name == target:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, InterruptOnImport())
sys.argv = ["hipport", *sys.argv[2:]]
runpy.run_module("hipport", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("module, command", [
    ("click", "audit"),                       # hipport.cli loading: nothing of hipport's own is set up yet
    ("hipport.cli.audit", "audit"),           # the command's module, loaded lazily
    ("hipport.audit.checks", "audit"),        # deep in the audit's imports
    ("hipport.convert.engine", "convert"),    # the convert command's imports
])
def test_sigint_while_hipport_loads_is_one_line_and_130(tmp_path, module, command):
    (tmp_path / "k.cu").write_bytes(HAZARD)
    # --no-cache: a file audited before (by another test, same bytes) comes from the result cache without the checks
    # ever being imported, and then no SIGINT is sent.
    r = subprocess.run([sys.executable, "-c", INTERRUPT_DRIVER, module, command, "--no-cache", "k.cu"],
                       capture_output=True,
                       text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == EXIT_SIGINT, r.stderr
    assert lines(r.stderr) == ["hipport: interrupted by SIGINT"]
    assert (tmp_path / "k.cu").read_bytes() == HAZARD


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigint_during_an_audit_is_one_line_and_130(tmp_path, jobs):
    tree = tmp_path / "t"
    tree.mkdir()
    sample = sorted((ROOT / "examples" / "cuda").rglob("*.cu"))
    for i in range(400):
        shutil.copyfile(sample[i % len(sample)], tree / f"f{i}.cu")
    p = subprocess.Popen([sys.executable, "-m", "hipport", "audit", "--no-cache", "-j", jobs, "t"], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    time.sleep(2.0)
    assert p.poll() is None, "the audit ended before the signal; make the tree larger"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == EXIT_SIGINT, err
    assert lines(err) == ["hipport: interrupted by SIGINT"]
