"""What this machine offers for porting, compiling and running HIP: the installed ROCm/HIP release, `hipcc` and the
platform it will compile for, AMD GPUs and their wavefront size, the device nodes and whether this user may open
them, a container's flags, and an installed hipify-perl. Plain detection with plain data out, for `hipport doctor`
and `hipport init`; no terminal output here.

Everything read from the file system is read under ``root`` (``/``, or a mounted image, or a test's fake tree):
/sys, /dev, /proc, /etc/group, /opt/rocm, /usr/include. Commands (`hipcc`, `hipconfig`, `rocminfo`, `nvcc`) are
looked up on ``environ["PATH"]`` and run with ``environ``. Every problem found carries the one-line fix."""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import re
import shutil
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hipport import __version__, hipify_perl, rocm
from hipport.rules import RuleError, builtin_rules_dir

_TIMEOUT = 30  # seconds for one external command
_DEBIAN_HIP = "apt-get install hipcc libamdhip64-dev rocm-device-libs"
_ROCM_DOCS = "https://rocm.docs.amd.com/projects/install-on-linux/"


@dataclass
class Problem:
    """Something that stops a use of the machine (compiling, running), with the one-line fix."""

    check: str     # which check found it: rocm, hipcc, gpu, devices, groups, hipify-perl, target
    message: str
    fix: str
    blocks: str    # what it stops: "compile" or "run" (porting itself needs nothing from the machine)


@dataclass
class Gpu:
    name: str              # gfx90a
    wave_size: int         # 64 or 32
    marketing: str = ""    # AMD Instinct MI250X (rocminfo only)
    node: int | None = None        # KFD topology node
    render_minor: int | None = None  # /dev/dri/renderD<minor>
    source: str = ""       # "rocminfo" or the sysfs file


@dataclass
class DeviceNode:
    path: str
    present: bool
    accessible: bool = False
    group: str = ""        # owning group's name (or number)
    gid: int | None = None
    mode: str = ""         # crw-rw----


@dataclass
class Environment:
    hipport_version: str = __version__
    rules: dict = field(default_factory=dict)
    rocm_installed: str | None = None       # "5.2"
    rocm_source: str = ""                   # the hip_version.h read, or `hipconfig --version`
    hipcc: str | None = None                # path
    hipcc_rocm: str | None = None           # "7.2": the ROCm release that hipcc compiles with
    hipcc_rocm_source: str = ""             # "`hipcc --version`" or the hip_version.h read beside hipcc
    warp_sync: str = ""                     # the `*_sync` warp built-ins there: "absent" | "opt-in" | "default"
    warp_sync_macro: str = ""               # the macro that turns them on (opt-in) or off (default)
    platform: str | None = None             # "amd" | "nvidia"
    platform_why: str = ""
    compiler: str = ""                      # "clang 15.0.6 (/usr/bin)" or "nvcc 13.0"
    amd_clang: str = ""                     # the clang hipcc uses with HIP_PLATFORM=amd, when it uses nvcc now
    nvcc: str | None = None
    gpus: list[Gpu] = field(default_factory=list)
    gpu_source: str = ""                    # "rocminfo", "sysfs", or ""
    rocminfo_error: str = ""
    kfd: DeviceNode | None = None
    render: list[DeviceNode] = field(default_factory=list)
    amdgpu_driver: bool = False
    user: str = ""
    groups: list[str] = field(default_factory=list)
    container: str = ""                     # "docker", "podman", "kubernetes", "lxc", "container", or ""
    kernel: str = ""
    os_name: str = ""
    debian: bool = False
    hipify_perl: str | None = None
    hipify_perl_used: bool = False          # hipport loads its renames (not with HIPPORT_HIPIFY_PERL=off)
    hipify_perl_version: str | None = None  # "6.3.0"
    hipify_perl_newer: bool = False
    problems: list[Problem] = field(default_factory=list)

    @property
    def can_compile(self) -> bool:
        return self.hipcc is not None and self.platform == "amd"

    @property
    def usable_gpu(self) -> bool:
        """An AMD GPU this user can run on: found, with /dev/kfd and a render node it may open."""
        return bool(self.gpus) and self.kfd is not None and self.kfd.accessible and \
            any(r.accessible for r in self.render)

    def to_json(self) -> dict:
        data = asdict(self)
        data["can_compile"] = self.can_compile
        data["usable_gpu"] = self.usable_gpu
        return data


@dataclass(frozen=True)
class Identity:
    """Who asks: user id, the group ids of this session, the user name."""

    uid: int
    gids: frozenset[int]
    user: str


def current_identity() -> Identity:
    uid = os.geteuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return Identity(uid, frozenset({os.getegid(), *os.getgroups()}), user)


# ---- hipport's own data -----------------------------------------------------------------------------------------

_SNAPSHOT = re.compile(r"snapshot ([0-9a-f]{6,40})")
_HIP_ADDED = re.compile(r'\bhip_added = "(\d+)\.(\d+)(?:\.(\d+))?"')


def rules_data() -> dict:
    """hipport's rule data: the HIPIFY snapshot its tables come from, the newest HIP release they name, and a
    digest of every bundled rule file (what changes when the data changes)."""
    try:
        base = builtin_rules_dir()
    except RuleError:
        return {"snapshot": None, "tables_hip": None, "digest": None}
    digest = hashlib.sha256()
    snapshot, newest = None, (0, 0, 0)
    for path in sorted(base.rglob("*.toml")):
        data = path.read_bytes()
        digest.update(path.relative_to(base).as_posix().encode() + b"\0" + data)
        if path.parent.name == "mappings":
            text = data.decode("utf-8", "replace")
            m = _SNAPSHOT.search(text[:2000])
            snapshot = snapshot or (m.group(1) if m else None)
            for a, b, c in _HIP_ADDED.findall(text):
                newest = max(newest, (int(a), int(b), int(c or 0)))
    return {"snapshot": snapshot, "tables_hip": ".".join(map(str, newest[:2])) if newest != (0, 0, 0) else None,
            "digest": digest.hexdigest()[:12]}


# ---- small helpers ------------------------------------------------------------------------------------------------

def _run(args: list[str], environ: Mapping[str, str]) -> tuple[int, str, str] | None:
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=_TIMEOUT, env=dict(environ),
                           errors="replace", stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.returncode, r.stdout, r.stderr


def _which(name: str, environ: Mapping[str, str]) -> str | None:
    return shutil.which(name, path=environ.get("PATH", os.defpath))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _group_names(root: Path) -> dict[int, tuple[str, list[str]]]:
    """gid -> (name, members) from the system's /etc/group (this machine's group database when root is /)."""
    out: dict[int, tuple[str, list[str]]] = {}
    text = _read(rocm.under(root, "/etc/group"))
    if text is not None:
        for line in text.splitlines():
            parts = line.split(":")
            if len(parts) >= 4 and parts[2].isdigit():
                out[int(parts[2])] = (parts[0], [m for m in parts[3].split(",") if m])
        return out
    if str(root) == "/":
        for g in grp.getgrall():
            out[g.gr_gid] = (g.gr_name, list(g.gr_mem))
    return out


def _may_open(path: Path, st: os.stat_result, who: Identity, real: bool) -> bool:
    """Read and write access, as opening a device node needs. For this process on this machine, the kernel's
    answer (ACLs included, as logind's `uaccess` gives); otherwise from the mode bits."""
    if real:
        return os.access(path, os.R_OK | os.W_OK)
    if who.uid == 0:
        return True
    mode = st.st_mode
    if st.st_uid == who.uid:
        return mode & 0o600 == 0o600
    if st.st_gid in who.gids:
        return mode & 0o060 == 0o060
    return mode & 0o006 == 0o006


def _node(path: Path, shown: str, who: Identity, real: bool, names) -> DeviceNode:
    try:
        st = path.stat()
    except OSError:
        return DeviceNode(shown, False)
    group = names.get(st.st_gid, (str(st.st_gid), []))[0]
    return DeviceNode(shown, True, _may_open(path, st, who, real), group, st.st_gid, stat.filemode(st.st_mode))


def gfx_name(target_version: int) -> str:
    """KFD's gfx_target_version (major*10000 + minor*100 + stepping) as the LLVM target name: 90010 -> gfx90a,
    110000 -> gfx1100, 90402 -> gfx942."""
    major, minor, step = target_version // 10000, (target_version // 100) % 100, target_version % 100
    return f"gfx{major}{minor:x}{step:x}"


def _properties(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def sysfs_gpus(root: Path) -> list[Gpu]:
    """GPUs in the KFD topology (/sys/class/kfd/kfd/topology/nodes/*/properties); CPU nodes have no gfx target."""
    nodes = rocm.under(root, "/sys/class/kfd/kfd/topology/nodes")
    gpus = []
    try:
        entries = sorted((p for p in nodes.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    except OSError:
        return []
    for node in entries:
        text = _read(node / "properties")
        if text is None:
            continue
        props = _properties(text)
        version = props.get("gfx_target_version", 0)
        if version <= 0:
            continue
        name = gfx_name(version)
        wave = props.get("wave_front_size") or rocm.wave_size(name)
        gpus.append(Gpu(name, wave, node=int(node.name), render_minor=props.get("drm_render_minor"),
                        source=f"/sys/class/kfd/kfd/topology/nodes/{node.name}/properties"))
    return gpus


_AGENT = re.compile(r"^\s*Agent\s+\d+\s*$")
_FIELD = re.compile(r"^  (\S[^:]*?):\s*(.*?)\s*$")


def parse_rocminfo(text: str) -> list[Gpu]:
    """GPU agents in `rocminfo` output: each agent's own (two-space indented) Name, Marketing Name, Device Type,
    Wavefront Size; the ISA and pool sections below an agent are indented further and ignored."""
    agents: list[dict[str, str]] = []
    for line in text.splitlines():
        if _AGENT.match(line):
            agents.append({})
            continue
        m = _FIELD.match(line)
        if m and agents:
            agents[-1].setdefault(m.group(1), m.group(2))
    gpus = []
    for a in agents:
        if a.get("Device Type", "").upper() != "GPU" or not a.get("Name", "").startswith("gfx"):
            continue
        name = a["Name"]
        wave = re.match(r"(\d+)", a.get("Wavefront Size", ""))
        node = re.match(r"(\d+)", a.get("Node", ""))
        gpus.append(Gpu(name, int(wave.group(1)) if wave else rocm.wave_size(name), a.get("Marketing Name", ""),
                        int(node.group(1)) if node else None, source="rocminfo"))
    return gpus


def _container(root: Path, environ: Mapping[str, str]) -> str:
    if rocm.under(root, "/.dockerenv").exists():
        return "docker"
    if rocm.under(root, "/run/.containerenv").exists():
        return "podman"
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    kind = environ.get("container", "")
    if kind:
        return kind
    cgroup = _read(rocm.under(root, "/proc/1/cgroup")) or ""
    for word, name in (("kubepods", "kubernetes"), ("docker", "docker"), ("libpod", "podman"), ("lxc", "lxc")):
        if word in cgroup:
            return name
    return ""


# ---- the whole picture --------------------------------------------------------------------------------------------

SYSTEM_ROOT = Path("/")  # what `detect` looks at when given no root (tests point it at a fake tree)


def detect(root: Path | None = None, environ: Mapping[str, str] | None = None,
           identity: Identity | None = None, full: bool = True, hipcc: str | None = None) -> Environment:
    """Look at the machine (or the system mounted at ``root``) as ``environ`` and ``identity`` see it. ``full``
    False skips what only a report needs (the compiler's version and release, hipify-perl): what `hipport init`
    uses. ``hipcc``: the path of the hipcc to look at instead of the one on PATH (`doctor --hipcc`)."""
    root = Path(SYSTEM_ROOT if root is None else root)
    environ = dict(os.environ if environ is None else environ)
    real = str(root) == "/" and identity is None
    who = identity or current_identity()
    env = Environment(rules=rules_data(), user=who.user)
    names = _group_names(root)
    env.groups = sorted(names.get(g, (str(g), []))[0] for g in who.gids)
    env.container = _container(root, environ)
    env.kernel = (_read(rocm.under(root, "/proc/sys/kernel/osrelease")) or
                  (os.uname().release if str(root) == "/" else "")).strip()
    release = _read(rocm.under(root, "/etc/os-release")) or ""
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', release, re.M)
    env.os_name = m.group(1) if m else ""
    env.debian = rocm.under(root, "/etc/debian_version").is_file()

    _detect_rocm(env, root, environ)
    _detect_hipcc(env, root, environ, full, hipcc)
    _detect_gpus(env, root, environ, who, real, names)
    if full:
        _detect_hipify_perl(env, root, environ)
    return env


def _install_fix(env: Environment) -> str:
    return f"{_DEBIAN_HIP} (or ROCm's own, newer packages: {_ROCM_DOCS})" if env.debian else \
        f"install ROCm: {_ROCM_DOCS}"


def _detect_rocm(env: Environment, root: Path, environ: Mapping[str, str]) -> None:
    found = rocm.find_installed(rocm.include_roots_in(root, environ), environ)
    if found:
        env.rocm_installed = ".".join(map(str, found[0]))
        env.rocm_source = found[1]
    else:
        env.problems.append(Problem("rocm", "no HIP installed (no hip/hip_version.h under $ROCM_PATH, /opt/rocm or "
                                            "/usr; no hipconfig)", _install_fix(env), "compile"))


def _detect_hipcc(env: Environment, root: Path, environ: Mapping[str, str], full: bool = True,
                  given: str | None = None) -> None:
    env.nvcc = _which("nvcc", environ)
    cuda_nvcc = Path(environ.get("CUDA_PATH", "/usr/local/cuda")) / "bin" / "nvcc"
    if env.nvcc is None and rocm.under(root, cuda_nvcc).is_file():
        env.nvcc = str(cuda_nvcc)
    hipcc = given or _which("hipcc", environ)
    if hipcc is None:
        bundled = rocm.under(root, "/opt/rocm/bin/hipcc")
        if bundled.is_file():
            fix = "export PATH=/opt/rocm/bin:$PATH"
            env.problems.append(Problem("hipcc", "hipcc is installed in /opt/rocm/bin, which is not on PATH", fix,
                                        "compile"))
        elif env.rocm_installed:
            env.problems.append(Problem("hipcc", "hipcc not found on PATH",
                                        "apt-get install hipcc" if env.debian else "add ROCm's bin folder to PATH",
                                        "compile"))
        elif not any(p.check == "rocm" for p in env.problems):
            env.problems.append(Problem("hipcc", "hipcc not found on PATH", _install_fix(env), "compile"))
        return
    env.hipcc = hipcc
    forced = environ.get("HIP_PLATFORM", "").strip().lower()
    platform = {"amd": "amd", "hcc": "amd", "nvidia": "nvidia", "nvcc": "nvidia"}.get(forced)
    # A hipcc named on the command line is asked through the hipconfig beside it only: the one on PATH may belong
    # to another install.
    beside = str(Path(hipcc).with_name("hipconfig"))
    hipconfig = beside if given else (_which("hipconfig", environ) or beside)
    answer = _run([hipconfig, "--platform"], environ) if Path(hipconfig).is_file() else None
    said = answer[1].strip().lower() if answer and answer[0] == 0 else ""
    version = None
    told = ""
    if said in ("amd", "nvidia", "hcc", "nvcc"):
        platform = {"hcc": "amd", "nvcc": "nvidia"}.get(said, said)
    elif platform is None and full:  # no hipconfig to ask (a wrapper, such as rocm7-hipcc): what hipcc runs
        version = _run([hipcc, "--version"], environ)
        told = _compiler_of(version[1] if version else "")
        if told:
            platform = "nvidia" if told.startswith("nvcc") else "amd"
    if platform is None:  # nothing to ask: hipcc's own rule, from HIP's hipvars.pm
        platform = "nvidia" if env.nvcc and not _which("clang++", environ) else "amd"
    env.platform = platform
    if forced:
        env.platform_why = f"HIP_PLATFORM={environ['HIP_PLATFORM']} is set"
    else:
        asked = f"`hipconfig --platform` says {said}" if said else \
            (f"no hipconfig to ask; `hipcc --version` names {told.split(' (')[0]}" if told else
             "no hipconfig to ask; hipcc's own rule")
        if platform == "nvidia":
            env.platform_why = f"HIP_PLATFORM is not set and nvcc is installed ({env.nvcc or 'on PATH'}): {asked}"
        elif env.nvcc:
            env.platform_why = f"HIP_PLATFORM is not set; {asked} (nvcc is installed too, at {env.nvcc}: " \
                               f"set HIP_PLATFORM=amd to keep it so)"
        else:
            env.platform_why = f"HIP_PLATFORM is not set; {asked}"
    if platform == "nvidia":
        fix = "export HIP_PLATFORM=amd" + (" (it is set to nvidia now)" if forced else "")
        env.problems.append(Problem("hipcc", f"hipcc compiles for NVIDIA here: {env.platform_why}", fix, "compile"))
    if not full:
        return
    version = version or _run([hipcc, "--version"], environ)
    env.compiler = _compiler_of(version[1] if version else "")
    amd_text = version[1] if version else ""
    if platform == "nvidia":
        amd = _run([hipcc, "--version"], {**environ, "HIP_PLATFORM": "amd"})
        env.amd_clang = _compiler_of(amd[1] if amd else "")
        amd_text = amd[1] if amd else ""
    _detect_hipcc_release(env, hipcc, amd_text)


_HIP_VERSION = re.compile(r"HIP version:\s*(\d+)\.(\d+)")


def _detect_hipcc_release(env: Environment, hipcc: str, version_text: str) -> None:
    """The ROCm release hipcc compiles with, from `hipcc --version` (as HIP_PLATFORM=amd runs it), else from the
    hip_version.h of the install hipcc belongs to (`bin/../include`); and what its `*_sync` warp built-ins need."""
    m = _HIP_VERSION.search(version_text)
    if m:
        release, env.hipcc_rocm_source = (int(m.group(1)), int(m.group(2))), "`hipcc --version`"
    else:
        include = Path(os.path.realpath(hipcc)).parent.parent / "include"
        found = rocm.find_installed([include], {"PATH": ""}) if (include / "hip" / "hip_version.h").is_file() \
            else None
        if found is None:
            return
        release, env.hipcc_rocm_source = found
    env.hipcc_rocm = f"{release[0]}.{release[1]}"
    env.warp_sync, env.warp_sync_macro = warp_sync_state(release)


def warp_sync_state(release: tuple[int, int]) -> tuple[str, str]:
    """("absent" | "opt-in" | "default", the macro that turns them on or off) of the `*_sync` warp built-ins in a
    ROCm release: none before 6.2, behind HIP_ENABLE_WARP_SYNC_BUILTINS up to 6.4, on from 7.0 (the release data
    read from the real headers; `rules/warp.toml` for where they start)."""
    from hipport.releases import release_data
    from hipport.semantic import load_semantic

    if tuple(release) < tuple(load_semantic().sync_opt_in):
        return "absent", ""
    return release_data().sync_state(release)


def _compiler_of(text: str) -> str:
    clang = re.search(r"clang version (\S+)", text)
    if clang:
        where = re.search(r"^InstalledDir:\s*(\S+)", text, re.M)
        return f"clang {clang.group(1)}" + (f" ({where.group(1)})" if where else "")
    nvcc = re.search(r"release (\d+\.\d+)", text)
    if nvcc:
        return f"nvcc {nvcc.group(1)}"
    return ""


def _detect_gpus(env: Environment, root: Path, environ: Mapping[str, str], who: Identity, real: bool,
                 names) -> None:
    env.kfd = _node(rocm.under(root, "/dev/kfd"), "/dev/kfd", who, real, names)
    dri = rocm.under(root, "/dev/dri")
    try:
        renders = sorted((p for p in dri.iterdir() if p.name.startswith("renderD")), key=lambda p: p.name)
    except OSError:
        renders = []
    env.render = [_node(p, f"/dev/dri/{p.name}", who, real, names) for p in renders]
    env.amdgpu_driver = rocm.under(root, "/sys/module/amdgpu").is_dir()

    rocminfo = _which("rocminfo", environ)
    if rocminfo:
        result = _run([rocminfo], environ)
        if result and result[0] == 0:
            env.gpus = parse_rocminfo(result[1])
            env.gpu_source = "rocminfo"
        elif result:
            lines = [ln.strip() for ln in (result[1] + "\n" + result[2]).splitlines() if ln.strip()]
            lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in lines
                     if "libkmod" not in ln and "list of modules" not in ln]
            env.rocminfo_error = lines[-1] if lines else f"exit status {result[0]}"
    if not env.gpus:
        found = sysfs_gpus(root)
        if found:
            env.gpus, env.gpu_source = found, "sysfs"
    by_node = {g.node: g for g in sysfs_gpus(root)} if env.gpu_source == "rocminfo" else {}
    for g in env.gpus:  # rocminfo does not say which render node a GPU is; the KFD topology does
        if g.render_minor is None and g.node in by_node:
            g.render_minor = by_node[g.node].render_minor

    container_fix = ("restart the container with --device=/dev/kfd --device=/dev/dri --group-add video "
                     "--group-add render (Docker/Podman; on Kubernetes, AMD's GPU device plugin)")
    if not env.kfd.present:
        if env.container:
            msg = f"no /dev/kfd inside this {env.container} container: the GPU was not passed in"
            env.problems.append(Problem("devices", msg, container_fix, "run"))
        elif env.amdgpu_driver:
            env.problems.append(Problem("devices", "the amdgpu driver is loaded but there is no /dev/kfd: this GPU "
                                                   "has no ROCm compute support, or KFD is disabled",
                                        "check that the GPU is on ROCm's support list; "
                                        "reinstall amdgpu-dkms and reboot", "run"))
        else:
            env.problems.append(Problem("devices", "no AMD GPU driver: /dev/kfd is missing and amdgpu is not loaded",
                                        "on a machine with an AMD GPU: sudo modprobe amdgpu (or install ROCm's "
                                        "amdgpu-dkms and reboot)", "run"))
        return
    blocked = [n for n in (env.kfd, *env.render) if n.present and not n.accessible]
    if blocked:
        groups = sorted({n.group for n in blocked if n.group})
        paths = ", ".join(n.path for n in blocked)
        user_groups = {name for name, members in names.values() if who.user in members}
        stale = [g for g in groups if g in user_groups]
        if env.container:
            gids = sorted({str(n.gid) for n in blocked if n.gid is not None})
            fix = "restart the container with " + " ".join(f"--group-add {g}" for g in gids) + \
                " (the devices' group ids; the names may differ inside the container)"
        elif stale:
            fix = f"log out and in again (or run `newgrp {stale[0]}`): you were added to {', '.join(stale)} " \
                  f"after this session started"
        else:
            fix = f"sudo usermod -aG {','.join(groups) or 'render,video'} {who.user}, then log out and in again"
        env.problems.append(Problem("groups", f"{paths}: not readable and writable by {who.user} "
                                              f"(groups: {', '.join(env.groups) or 'none'})", fix, "run"))
    if not env.render:
        env.problems.append(Problem("devices", "no /dev/dri/renderD* node: the GPU cannot be opened",
                                    container_fix if env.container else "reinstall the amdgpu driver and reboot",
                                    "run"))
    if not env.gpus and not blocked:
        why = f"rocminfo: {env.rocminfo_error}" if env.rocminfo_error else "none in the KFD topology"
        env.problems.append(Problem("gpu", f"/dev/kfd is present but no AMD GPU was found ({why})",
                                    "check `dmesg | grep -i kfd` and ROCm's GPU support list", "run"))


def _detect_hipify_perl(env: Environment, root: Path, environ: Mapping[str, str]) -> None:
    off = environ.get(hipify_perl.ENV_VAR, "").strip().lower() in hipify_perl.ENV_OFF
    search = {k: v for k, v in environ.items() if not (off and k == hipify_perl.ENV_VAR)}
    found = hipify_perl.find_hipify_perl(environ=search, root=root)
    if found is None or not found[0].is_file():
        return
    env.hipify_perl = str(found[0])
    env.hipify_perl_used = not off
    version = hipify_perl.script_hip_version(found[0])
    if version is None:
        return
    env.hipify_perl_version = ".".join(map(str, version))
    tables = env.rules.get("tables_hip")
    if tables:
        env.hipify_perl_newer = version[:2] > tuple(int(x) for x in tables.split("."))
