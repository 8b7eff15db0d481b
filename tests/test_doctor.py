"""`hipport doctor` (and `hipport init`, which uses the same detection) on fake machines: a sysfs/dev/etc tree passed
as `--root`, and fake `hipcc`, `hipconfig`, `rocminfo`, `nvcc` on PATH. Nothing here looks at this machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from hipport import environment
from hipport.environment import Identity, detect, gfx_name, parse_rocminfo

ROOT = Path(__file__).resolve().parents[1]

ROCMINFO_AGENT = """\
*******
Agent {n}
*******
  Name:                    {name}
  Uuid:                    GPU-{n}
  Marketing Name:          {marketing}
  Vendor Name:             AMD
  Feature:                 KERNEL_DISPATCH
  Node:                    {node}
  Device Type:             GPU
  Wavefront Size:          {wave}(0x{wave:x})
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--{name}:sramecc+:xnack-
"""
ROCMINFO_CPU = """\
ROCk module is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.14
==========
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD EPYC 7763 64-Core Processor
  Marketing Name:          AMD EPYC 7763 64-Core Processor
  Node:                    0
  Device Type:             CPU
"""
GPUS = {
    "gfx90a": {"version": 90010, "wave": 64, "marketing": "AMD Instinct MI250X"},
    "gfx1100": {"version": 110000, "wave": 32, "marketing": "Radeon RX 7900 XTX"},
    "gfx1030": {"version": 100300, "wave": 32, "marketing": "Radeon RX 6800"},
}

# hipcc's rule (HIP's hipvars.pm) as the fakes apply it: HIP_PLATFORM wins; else, with no clang++ of its own (the
# Debian case), nvcc on PATH means NVIDIA.
_PLATFORM = """
import os, shutil, sys
forced = os.environ.get("HIP_PLATFORM")
platform = forced or ("nvidia" if shutil.which("nvcc") else "amd")
"""
FAKES = {
    "hipconfig": _PLATFORM + """
if "--platform" in sys.argv: sys.stdout.write(platform)
elif "--version" in sys.argv: sys.stdout.write("{hip}.41133-0")
""",
    "hipcc": _PLATFORM + """
if platform == "nvidia":
    print("nvcc: NVIDIA (R) Cuda compiler driver\\nCuda compilation tools, release 12.4, V12.4.131")
else:
    print("HIP version: {hip}.41133-0\\nAMD clang version 17.0.0\\nInstalledDir: /opt/rocm/llvm/bin")
""",
    "nvcc": 'print("Cuda compilation tools, release 12.4, V12.4.131")\n',
    "rocminfo": "import sys\nsys.stdout.write({text!r})\nsys.exit({code})\n",
}


class Machine:
    """A fake system root and a PATH of fake commands."""

    def __init__(self, tmp_path: Path):
        self.root = tmp_path / "root"
        self.bin = tmp_path / "bin"
        self.root.mkdir()
        self.bin.mkdir()
        self.write("proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
        self.write("etc/os-release", 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\n')
        self.write("etc/group", "root:x:0:\nvideo:x:44:\nrender:x:4242:\nalice:x:1000:\n")

    def write(self, rel: str, text: str, mode: int | None = None) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if mode is not None:
            path.chmod(mode)
        return path

    def command(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text(f"#!{sys.executable}\n{body}")
        path.chmod(0o755)

    def rocm(self, version: str = "6.2", hipcc: bool = True) -> Machine:
        major, minor = version.split(".")
        self.write("opt/rocm/include/hip/hip_version.h",
                   f"#define HIP_VERSION_MAJOR {major}\n#define HIP_VERSION_MINOR {minor}\n")
        if hipcc:
            self.command("hipcc", FAKES["hipcc"].replace("{hip}", version))
            self.command("hipconfig", FAKES["hipconfig"].replace("{hip}", version))
        return self

    def gpu(self, *names: str, rocminfo: bool = True, kfd_mode: int = 0o666, render_mode: int = 0o666) -> Machine:
        self.write("sys/module/amdgpu/version", "6.8\n")
        self.write("dev/kfd", "", kfd_mode)
        os.chown(self.root / "dev/kfd", os.getuid(), 4242) if os.geteuid() == 0 else None
        self.write("sys/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 64\nsimd_count 0\n"
                                                                    "gfx_target_version 0\n")
        text = ROCMINFO_CPU
        for k, name in enumerate(names, 1):
            g = GPUS[name]
            self.write(f"sys/class/kfd/kfd/topology/nodes/{k}/properties",
                       f"cpu_cores_count 0\nsimd_count 440\nwave_front_size {g['wave']}\n"
                       f"gfx_target_version {g['version']}\ndrm_render_minor {127 + k}\n")
            self.write(f"dev/dri/renderD{127 + k}", "", render_mode)
            text += ROCMINFO_AGENT.format(n=k + 1, node=k, name=name, marketing=g["marketing"], wave=g["wave"])
        if rocminfo:
            self.command("rocminfo", FAKES["rocminfo"].format(text=text, code=0))
        return self

    def env(self, **extra: str) -> dict[str, str]:
        drop = {"HIP_PLATFORM", "ROCM_PATH", "HIP_PATH", "CUDA_PATH", "KUBERNETES_SERVICE_HOST", "container", "CI"}
        base = {k: v for k, v in os.environ.items() if k not in drop}
        return {**base, "PATH": str(self.bin), **extra}

    def doctor(self, *args: str, **extra: str) -> subprocess.CompletedProcess:
        env = self.env(**extra)
        env["PYTHONPATH"] = str(ROOT)
        return subprocess.run([sys.executable, "-m", "hipport", "doctor", "--root", str(self.root), *args],
                              capture_output=True, text=True, env=env, cwd=self.root, timeout=120)

    def report(self, *args: str, **extra: str) -> tuple[dict, subprocess.CompletedProcess]:
        r = self.doctor("--json", *args, **extra)
        assert r.stdout, r.stderr
        return json.loads(r.stdout), r


@pytest.fixture
def machine(tmp_path):
    return Machine(tmp_path)


ALICE = Identity(uid=1000, gids=frozenset({1000}), user="alice")


# -- no ROCm at all: a laptop porting code ------------------------------------------------------------------------

def test_no_rocm_says_so_in_a_few_lines_and_porting_works(machine):
    r = machine.doctor()
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) <= 6, r.stdout
    assert "no ROCm on this machine" in lines[0]
    assert "Porting works without them" in r.stdout and "ROCm 7.2" in r.stdout
    assert any(line.startswith("to compile: ") for line in lines), r.stdout
    assert any(line.startswith("to run on a GPU: ") for line in lines), r.stdout
    r = machine.doctor("--require-gpu")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "--require-gpu: no usable AMD GPU" in r.stderr
    assert machine.doctor("--require-hipcc").returncode == 1


def test_no_rocm_json(machine):
    data, r = machine.report()
    assert r.returncode == 0 and data["exit"] == 0
    assert data["schema"] == "hipport-doctor/1" and data["can_port"] is True
    assert data["rocm_installed"] is None and data["hipcc"] is None and data["gpus"] == []
    assert data["usable_gpu"] is False and data["can_compile"] is False
    assert data["target"]["rocm"] == "7.2" and data["target"]["offload_arch"] == ["gfx90a", "gfx942", "gfx1100"]
    assert data["rules"]["snapshot"] and data["audit_rules"] >= 16 and data["hipport_version"]
    checks = {p["check"]: p for p in data["problems"]}
    assert set(checks) == {"rocm", "devices"}
    assert all(p["fix"] and "\n" not in p["fix"] for p in data["problems"])
    assert "amdgpu" in checks["devices"]["fix"]
    data, r = machine.report("--require-gpu")
    assert r.returncode == 1 and data["exit"] == 1 and data["unmet"] == ["--require-gpu: no usable AMD GPU"]


def test_debian_gets_the_apt_line(machine):
    machine.write("etc/debian_version", "12.7\n")
    data, _ = machine.report()
    (rocm,) = [p for p in data["problems"] if p["check"] == "rocm"]
    assert rocm["fix"].startswith("apt-get install hipcc libamdhip64-dev rocm-device-libs")


# -- GPUs ------------------------------------------------------------------------------------------------------------

def test_wave64_gpu_from_rocminfo(machine):
    machine.rocm("6.2").gpu("gfx90a")
    data, r = machine.report("--require-gpu", "--require-hipcc")
    assert r.returncode == 0, r.stdout + r.stderr
    assert data["rocm_installed"] == "6.2" and data["rocm_source"].endswith("opt/rocm/include/hip/hip_version.h")
    assert data["target"]["rocm"] == "6.2" and "installed HIP" in data["target"]["rocm_from"]
    assert data["gpu_source"] == "rocminfo"
    (gpu,) = data["gpus"]
    assert (gpu["name"], gpu["wave_size"], gpu["marketing"], gpu["render_minor"]) == \
        ("gfx90a", 64, "AMD Instinct MI250X", 128)
    assert data["platform"] == "amd" and data["compiler"] == "clang 17.0.0 (/opt/rocm/llvm/bin)"
    assert data["usable_gpu"] is True and data["can_compile"] is True and data["problems"] == []
    r = machine.doctor()
    assert r.returncode == 0, r.stderr
    assert "gfx90a (wave64) AMD Instinct MI250X" in r.stdout
    assert "running on an AMD GPU: yes" in r.stdout and "compiling for AMD with hipcc: yes" in r.stdout


def test_wave32_gpu_from_sysfs_without_rocminfo(machine):
    machine.rocm("6.4").gpu("gfx1100", rocminfo=False)
    data, r = machine.report("--require-gpu")
    assert r.returncode == 0, r.stdout + r.stderr
    assert data["gpu_source"] == "sysfs"
    (gpu,) = data["gpus"]
    assert (gpu["name"], gpu["wave_size"], gpu["node"], gpu["render_minor"]) == ("gfx1100", 32, 1, 128)
    assert gpu["source"] == "/sys/class/kfd/kfd/topology/nodes/1/properties"


def test_a_gpu_outside_the_targets_is_pointed_out(machine):
    machine.rocm("6.2").gpu("gfx1030", "gfx90a")
    data, r = machine.report()
    assert r.returncode == 0
    assert [(g["name"], g["wave_size"]) for g in data["gpus"]] == [("gfx1030", 32), ("gfx90a", 64)]
    (note,) = [p for p in data["problems"] if p["check"] == "target"]
    assert "gfx1030" in note["message"] and "offload-arch" in note["fix"]


def test_gfx_names_and_rocminfo_parsing():
    assert [gfx_name(v) for v in (90010, 90402, 90008, 110000, 100300, 80003)] == \
        ["gfx90a", "gfx942", "gfx908", "gfx1100", "gfx1030", "gfx803"]
    text = ROCMINFO_CPU + ROCMINFO_AGENT.format(n=2, node=1, name="gfx942", marketing="AMD Instinct MI300X", wave=64)
    (gpu,) = parse_rocminfo(text)
    assert (gpu.name, gpu.wave_size, gpu.marketing, gpu.node) == ("gfx942", 64, "AMD Instinct MI300X", 1)


def test_rocminfo_failing_with_kfd_present_is_reported(machine):
    machine.rocm("6.2").gpu()  # /dev/kfd, no GPU node
    machine.write("dev/dri/renderD128", "", 0o666)
    machine.command("rocminfo", FAKES["rocminfo"].format(
        text="hsa api call failure at: rocminfo.cc:1306\nCall returned HSA_STATUS_ERROR_OUT_OF_RESOURCES\n", code=1))
    data, r = machine.report("--require-gpu")
    assert r.returncode == 1
    assert data["rocminfo_error"] == "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES"
    (gpu,) = [p for p in data["problems"] if p["check"] == "gpu"]
    assert "HSA_STATUS_ERROR_OUT_OF_RESOURCES" in gpu["message"]


# -- device access ---------------------------------------------------------------------------------------------------

def _kfd_owned_by_render(machine: Machine) -> None:
    """/dev/kfd and the render node belong to group render (4242), rw for the group only."""
    for rel in ("dev/kfd", "dev/dri/renderD128"):
        path = machine.root / rel
        path.chmod(0o660)
        if os.geteuid() == 0:
            os.chown(path, 0, 4242)


def test_no_kfd_access_names_the_group_to_join(machine):
    machine.rocm("6.2").gpu("gfx90a", rocminfo=False)
    _kfd_owned_by_render(machine)
    env = detect(machine.root, machine.env(), identity=ALICE)
    assert env.gpus and not env.kfd.accessible and not env.usable_gpu
    (problem,) = [p for p in env.problems if p.check == "groups"]
    assert "/dev/kfd" in problem.message and "alice" in problem.message
    if os.geteuid() == 0:  # the fake nodes could be given group render (4242)
        assert problem.fix == "sudo usermod -aG render alice, then log out and in again"
    else:
        assert problem.fix.startswith("sudo usermod -aG ")
    assert problem.blocks == "run"
    # In the group since this session started: log in again; in the group in this session: usable.
    machine.write("etc/group", "root:x:0:\nvideo:x:44:\nrender:x:4242:alice\nalice:x:1000:\n")
    env = detect(machine.root, machine.env(), identity=ALICE)
    if os.geteuid() == 0:
        (problem,) = [p for p in env.problems if p.check == "groups"]
        assert problem.fix.startswith("log out and in again (or run `newgrp render`)")
        joined = Identity(1000, frozenset({1000, 4242}), "alice")
        assert detect(machine.root, machine.env(), identity=joined).usable_gpu


def test_no_kfd_access_in_a_container_gives_the_group_id_flag(machine):
    if os.geteuid() != 0:
        pytest.skip("giving the fake device nodes group 4242 needs root")  # not a missing input: no need()
    machine.rocm("6.2").gpu("gfx90a", rocminfo=False)
    _kfd_owned_by_render(machine)
    machine.write(".dockerenv", "")
    env = detect(machine.root, machine.env(), identity=ALICE)
    (problem,) = [p for p in env.problems if p.check == "groups"]
    assert problem.fix.startswith("restart the container with --group-add 4242")


def test_no_kfd_access_on_the_command_line(machine, monkeypatch):
    """The CLI with this identity (in-process, as the fake nodes are opened by mode bits for another user)."""
    from hipport.cli import main

    machine.rocm("6.2").gpu("gfx90a", rocminfo=False)
    _kfd_owned_by_render(machine)
    monkeypatch.setattr(environment, "current_identity", lambda: ALICE)
    runner = CliRunner()
    result = runner.invoke(main, ["doctor", "--root", str(machine.root), "--require-gpu"], env=machine.env())
    assert result.exit_code == 1, result.output
    assert "/dev/kfd" in result.output and "NOT accessible" in result.output
    assert "fix: sudo usermod -aG" in result.output
    result = runner.invoke(main, ["doctor", "--root", str(machine.root)], env=machine.env())
    assert result.exit_code == 0, result.output  # porting still works


def test_container_without_the_gpu_passed_in(machine):
    machine.rocm("6.2")
    machine.write(".dockerenv", "")
    data, r = machine.report("--require-gpu")
    assert r.returncode == 1 and data["container"] == "docker"
    (problem,) = [p for p in data["problems"] if p["check"] == "devices"]
    assert "--device=/dev/kfd --device=/dev/dri --group-add video" in problem["fix"]


# -- hipcc's platform ------------------------------------------------------------------------------------------------

def test_nvcc_present_without_hip_platform(machine):
    machine.rocm("6.2").gpu("gfx90a")
    machine.command("nvcc", FAKES["nvcc"])
    data, r = machine.report("--require-hipcc")
    assert r.returncode == 1 and data["unmet"] == ["--require-hipcc: hipcc compiles for nvidia"]
    assert data["platform"] == "nvidia" and data["nvcc"] == str(machine.bin / "nvcc")
    assert "HIP_PLATFORM is not set" in data["platform_why"] and "nvcc" in data["platform_why"]
    assert data["compiler"] == "nvcc 12.4" and data["amd_clang"].startswith("clang 17.0.0")
    (problem,) = [p for p in data["problems"] if p["check"] == "hipcc"]
    assert problem["fix"] == "export HIP_PLATFORM=amd" and problem["blocks"] == "compile"
    r = machine.doctor()
    assert r.returncode == 0, r.stderr
    assert "fix: export HIP_PLATFORM=amd" in r.stdout and "compiling for AMD with hipcc: no" in r.stdout
    # With the fix applied: AMD, and the why says so.
    data, r = machine.report("--require-hipcc", HIP_PLATFORM="amd")
    assert r.returncode == 0 and data["platform"] == "amd" and data["platform_why"] == "HIP_PLATFORM=amd is set"
    assert not [p for p in data["problems"] if p["check"] == "hipcc"]


def test_hipcc_in_opt_rocm_but_not_on_path(machine):
    machine.rocm("6.2", hipcc=False)
    machine.write("opt/rocm/bin/hipcc", "", 0o755)
    data, r = machine.report("--require-hipcc")
    assert r.returncode == 1
    (problem,) = [p for p in data["problems"] if p["check"] == "hipcc"]
    assert problem["fix"] == "export PATH=/opt/rocm/bin:$PATH"


# -- hipcc's ROCm release and its warp *_sync built-ins ---------------------------------------------------------------

@pytest.mark.parametrize("hip, state, macro", [
    ("5.7", "absent", ""),
    ("6.1", "absent", ""),  # the *_sync forms arrived in 6.2
    ("6.2", "opt-in", "HIP_ENABLE_WARP_SYNC_BUILTINS"),
    ("6.4", "opt-in", "HIP_ENABLE_WARP_SYNC_BUILTINS"),  # still opt-in in 6.4.3 (checked on the real headers)
    ("7.0", "default", "HIP_DISABLE_WARP_SYNC_BUILTINS"),
    ("7.2", "default", "HIP_DISABLE_WARP_SYNC_BUILTINS"),
])
def test_hipcc_release_and_warp_sync_state(machine, hip, state, macro):
    machine.rocm(hip)
    data, r = machine.report()
    assert r.returncode == 0, r.stderr
    assert data["hipcc_rocm"] == hip and data["hipcc_rocm_source"] == "`hipcc --version`"
    assert (data["warp_sync"], data["warp_sync_macro"]) == (state, macro)
    r = machine.doctor("-v")
    assert r.returncode == 0, r.stderr
    expected = {"absent": f"none in ROCm {hip} (they arrived in 6.2)",
                "opt-in": f"opt-in in ROCm {hip}: declared only with -D{macro}",
                "default": f"on by default in ROCm {hip} (-D{macro} turns them off)"}[state]
    assert expected in " ".join(r.stdout.split()), r.stdout


def test_hipcc_release_from_the_header_beside_it(machine):
    """A hipcc whose --version names no HIP release: the hip_version.h of its install (bin/../include)."""
    machine.command("hipcc", 'print("clang version 19.0.0")\n')
    (machine.bin.parent / "include" / "hip").mkdir(parents=True)
    (machine.bin.parent / "include" / "hip" / "hip_version.h").write_text(
        "#define HIP_VERSION_MAJOR 6\n#define HIP_VERSION_MINOR 4\n")
    data, r = machine.report()
    assert r.returncode == 0, r.stderr
    assert data["hipcc_rocm"] == "6.4" and data["warp_sync"] == "opt-in"
    assert data["hipcc_rocm_source"] == str(machine.bin.parent / "include" / "hip" / "hip_version.h")


def test_hipcc_option_names_another_hipcc(machine, tmp_path):
    """`--hipcc PATH`: a wrapper with no hipconfig beside it (as rocm7-hipcc), nvcc on PATH: its --version says it
    runs clang, so it compiles for AMD; its release is told apart from the installed HIP, with a note."""
    machine.rocm("5.7")
    machine.command("nvcc", FAKES["nvcc"])
    wrapper = tmp_path / "wrap" / "rocm7-hipcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!{sys.executable}\nprint('HIP version: 7.2.53211-9999\\nDebian clang version 22.1.8')\n")
    wrapper.chmod(0o755)
    data, r = machine.report("--hipcc", str(wrapper))
    assert r.returncode == 0, r.stderr
    assert data["hipcc"] == str(wrapper) and data["platform"] == "amd" and data["rocm_installed"] == "5.7"
    assert "`hipcc --version` names clang 22.1.8" in data["platform_why"]
    assert data["hipcc_rocm"] == "7.2" and data["warp_sync"] == "default"
    (note,) = [p for p in data["problems"] if p["check"] == "target"]
    assert f"{wrapper} compiles with ROCm 7.2" in note["message"] and "--rocm-version 7.2" in note["fix"]
    assert f"--verify --hipcc {wrapper}" in data["verify"]
    r = machine.doctor("--hipcc", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--hipcc" in r.stderr


# -- hipify-perl and the target ------------------------------------------------------------------------------------

def test_installed_hipify_perl_newer_than_the_tables(machine):
    machine.rocm("6.4")
    machine.write("opt/rocm/bin/hipify-perl", 'if ($version) {\n    print STDERR "HIP version 6.4.1\\n";\n}\n')
    data, _ = machine.report(HIPPORT_HIPIFY_PERL="")
    assert data["hipify_perl"].endswith("opt/rocm/bin/hipify-perl") and data["hipify_perl_version"] == "6.4.1"
    assert data["hipify_perl_newer"] is True and data["hipify_perl_used"] is True
    data, _ = machine.report(HIPPORT_HIPIFY_PERL="off")
    assert data["hipify_perl_used"] is False and data["hipify_perl_newer"] is True


def test_settings_newer_than_the_installed_hip(machine):
    machine.rocm("5.7").gpu("gfx90a")
    (machine.root / ".hipport.toml").write_text('rocm-version = "7.0"\noffload-arch = ["gfx90a"]\n')
    data, r = machine.report()
    assert r.returncode == 0
    assert data["target"]["rocm"] == "7.0" and "rocm-version" in data["target"]["rocm_from"]
    (note,) = [p for p in data["problems"] if p["check"] == "target"]
    assert "HIP 5.7 is installed" in note["message"] and 'rocm-version = "5.7"' in note["fix"]


def test_usage_errors(machine, tmp_path):
    r = machine.doctor("--root", str(tmp_path / "nowhere"))
    assert r.returncode == 2, r.stdout + r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("rocm-version = [\n")
    r = machine.doctor("--config", str(bad))
    assert r.returncode == 2 and "bad.toml" in r.stderr


def test_help_documents_every_option():
    r = subprocess.run([sys.executable, "-m", "hipport", "doctor", "--help"], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    for option in ("--json", "--require-gpu", "--require-hipcc", "--root", "--hipcc", "--config", "--verbose",
                   "--help"):
        assert option in r.stdout, option
    assert "Exit status" in r.stdout and "HIP_PLATFORM=amd" in r.stdout


# -- `hipport init` fills its settings from the same detection -------------------------------------------------------

def _init(machine: Machine, monkeypatch, *args: str):
    from hipport.cli import main

    repo = machine.root / "project"
    (repo / ".git").mkdir(parents=True, exist_ok=True)
    (repo / "k.cu").write_text("__global__ void k(int* o) { o[threadIdx.x % warpSize] = 1; }\n")
    monkeypatch.setattr(environment, "SYSTEM_ROOT", machine.root)
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(main, ["init", *args], env=machine.env())
    settings = tomllib.loads((repo / ".hipport.toml").read_text()) if (repo / ".hipport.toml").exists() else None
    return result, settings, repo


def test_init_targets_this_machines_rocm_and_gpus(machine, monkeypatch):
    machine.rocm("6.2").gpu("gfx90a", "gfx1100")
    result, settings, repo = _init(machine, monkeypatch)
    assert result.exit_code == 0, result.output
    assert settings["rocm-version"] == "6.2" and settings["offload-arch"] == ["gfx1100", "gfx90a"]
    assert "this machine's GPUs" in (repo / ".hipport.toml").read_text()
    assert "ROCm 6.2 (the installed HIP)" in result.output


def test_init_without_rocm_uses_the_defaults(machine, monkeypatch):
    result, settings, _ = _init(machine, monkeypatch)
    assert result.exit_code == 0, result.output
    assert settings["rocm-version"] == "7.2" and settings["offload-arch"] == ["gfx90a", "gfx942", "gfx1100"]


def test_init_flags_win_over_detection(machine, monkeypatch):
    machine.rocm("6.2").gpu("gfx90a")
    result, settings, _ = _init(machine, monkeypatch, "--rocm-version", "7.0", "--offload-arch", "gfx942,gfx1100")
    assert result.exit_code == 0, result.output
    assert settings["rocm-version"] == "7.0" and settings["offload-arch"] == ["gfx942", "gfx1100"]
    result, _, _ = _init(machine, monkeypatch, "--force", "--offload-arch", "sm_80")
    assert result.exit_code == 2 and "sm_80" in result.output


def test_readme_example_is_what_doctor_prints_on_a_machine_without_rocm(machine):
    import re

    import docs

    readme = docs.text()
    m = re.search(r"```\n\$ hipport doctor\n(.*?)```", readme, re.S)
    assert m, "the README's doctor example is gone; update this test with it"
    r = machine.doctor()
    assert r.returncode == 0, r.stderr
    assert r.stdout == m.group(1)
