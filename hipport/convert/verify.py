"""`convert --verify`: does the converted tree compile? Every translation unit goes through the installed `hipcc`
(HIP_PLATFORM=amd, for the targets the installed clang knows, with the project's `defines`): with code generation
(`-c`) where hipcc links ROCm's device libraries for every target, which a real ROCm toolchain does, else syntax
only (a clang over a header tree). Each error is matched, where it can be, to a known cause and its fix
(`rules/verify.toml`).

Nothing here prints or knows the command line: the command builds `TreeFile`s (files on disk, or converted texts
to compile from a temporary copy), calls `verify_tree`, and renders the `VerifyResult`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hipport.rules import RuleError, _read_toml, builtin_rules_dir

UNIT_SUFFIXES = frozenset({".cu", ".hip"})
CXX_SUFFIXES = frozenset({".cpp", ".cc", ".cxx"})  # units when they use HIP (see `is_unit`)
STD = "-std=c++17"   # what ROCm's clang compiles HIP as by default from ROCm 6 (Debian's hipcc 5.2 says c++11)
ERRORS_PER_UNIT = 3
UNIT_TIMEOUT = 600
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_HIP_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"](?:hip|hip[a-z]+|roc[a-z]+)/', re.M)
_LOCATED = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<message>.*)$")
_DRIVER = re.compile(r"^(?P<path>[^\s:]+): (?:fatal )?error: (?P<message>.*)$")
_NVIDIA = re.compile(r"\bnvcc\b|NVIDIA|Cuda compilation tools", re.I)
_HIP_VERSION = re.compile(r"HIP version:\s*(\d+)\.(\d+)")


class ToolchainError(Exception):
    """`--verify` cannot run: no hipcc, a hipcc that targets NVIDIA, or no target the installed clang knows. The
    message is one line."""


@dataclass(frozen=True, slots=True)
class Cause:
    id: str
    pattern: re.Pattern
    cause: str
    fix: str
    example: str = ""  # an error text this cause is the first to match (checked by the tests)


@dataclass(frozen=True, slots=True)
class Toolchain:
    hipcc: str
    hip_version: tuple[int, int] | None  # from `hipcc --version`
    env: Mapping[str, str]                # the environment hipcc runs in (HIP_PLATFORM=amd)
    platform_was: str | None = None       # HIP_PLATFORM as the user's environment set it, when not "amd"
    targets: tuple[str, ...] = ()         # the asked targets hipcc can compile for
    skipped: Mapping[str, str] = field(default_factory=dict)  # the others -> why
    flags: tuple[str, ...] = ()           # given before hipport's own (a clang over a header tree: HIP-Clang's flags)
    described: str = ""                   # what compiles, for the summary and `doctor`
    codegen: bool = False                 # it links the device libraries for every target: compile with `-c`

    @property
    def command(self) -> list[str]:
        return [self.hipcc, *self.flags]


@dataclass(frozen=True, slots=True)
class TreeFile:
    """One file of the converted tree. ``path`` is where hipcc reads it; with ``text`` set, the file is written
    there first, inside a temporary copy (``path`` is then relative to that copy's root)."""
    path: Path
    shown: str                    # how messages name it
    text: bytes | None = None     # converted text to stage in a temporary copy (None: on disk as it is)
    changed: bool = False         # hipport changed it
    origin: Path | None = None    # the source it was converted from, when ``path`` is a copy elsewhere


@dataclass(frozen=True, slots=True)
class CompileError:
    path: str          # as the user knows it ("" for the compiler driver's own errors)
    line: int
    col: int
    message: str
    cause: Cause | None = None
    cause_text: str = ""  # the cause, filled in
    fix: str = ""         # its fix, filled in

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.col}" if self.path and self.line else (self.path or "hipcc")


@dataclass(slots=True)
class UnitResult:
    shown: str
    ok: bool
    errors: list[CompileError] = field(default_factory=list)
    more: int = 0       # errors beyond those kept


@dataclass(slots=True)
class VerifyResult:
    targets: tuple[str, ...] = ()
    skipped_targets: dict[str, str] = field(default_factory=dict)  # target -> why
    notes: list[str] = field(default_factory=list)
    units: list[UnitResult] = field(default_factory=list)
    hip_version: tuple[int, int] | None = None
    compiler: str = ""  # a clang over a header tree: what compiled (empty: the hipcc named by hip_version)
    codegen: bool = False  # compiled with code generation (`-c`), not only `-fsyntax-only`

    @property
    def failed(self) -> list[UnitResult]:
        return [u for u in self.units if not u.ok]


# -- the rule data ----------------------------------------------------------------------------------------------

@lru_cache(maxsize=4)
def load_causes(path: Path | None = None) -> tuple[Cause, ...]:
    """`[[cause]]` tables of rules/verify.toml: `id`, `error` (a regex searched in the error text), `cause`,
    `fix` (both may use the regex's named groups and {installed}/{target}, the HIP releases), `example` (an error
    text the entry must be the first to match), `source` (optional)."""
    path = path or builtin_rules_dir() / "verify.toml"
    data = _read_toml(path)
    entries = data.get("cause", [])
    if not isinstance(entries, list):
        raise RuleError(f"{path}: `[[cause]]` must be an array of tables")
    out, seen = [], set()
    for n, e in enumerate(entries, 1):
        where = f"{path}: `[[cause]]` #{n}"
        if not isinstance(e, dict):
            raise RuleError(f"{where} must be a table")
        unknown = set(e) - {"id", "error", "cause", "fix", "example", "source"}
        if unknown:
            raise RuleError(f"{where} has unknown key `{sorted(unknown)[0]}`")
        for key in ("id", "error", "cause", "fix", "example"):
            if not isinstance(e.get(key), str) or not e[key]:
                raise RuleError(f"{where} needs `{key}`, a non-empty string")
        if e["id"] in seen:
            raise RuleError(f"{where}: id `{e['id']}` is used twice")
        seen.add(e["id"])
        try:
            pattern = re.compile(e["error"])
        except re.error as exc:
            raise RuleError(f"{where}: `error` is not a valid regex ({exc})") from None
        out.append(Cause(e["id"], pattern, e["cause"], e["fix"], e["example"]))
    return tuple(out)


class _Fill(dict):
    def __missing__(self, key):
        return "?"


def explain(message: str, causes: Iterable[Cause], context: Mapping[str, str]) -> tuple[Cause | None, str, str]:
    """(the first cause whose regex finds ``message``, its cause text, its fix), filled in."""
    for cause in causes:
        m = cause.pattern.search(message)
        if m:
            values = _Fill(context)
            values.update({k: v for k, v in m.groupdict().items() if v is not None})
            return cause, cause.cause.format_map(values), cause.fix.format_map(values)
    return None, "", ""


# -- the toolchain ----------------------------------------------------------------------------------------------

def _run(cmd: list[str], env: Mapping[str, str], cwd: str | None = None, timeout: int = 60):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=dict(env), cwd=cwd,
                          timeout=timeout)


def find_toolchain(targets: Iterable[str], environ: Mapping[str, str] = os.environ, *, hipcc: str | None = None,
                   clang: str | None = None, hip_include: str | os.PathLike | None = None) -> Toolchain:
    """The compiler `--verify` runs, and which of ``targets`` it compiles for: ``hip_include`` (a ROCm include
    tree, with ``clang`` or the clang++ on PATH), else ``hipcc`` (a path), else the hipcc on PATH, run with
    HIP_PLATFORM=amd. ToolchainError when there is none, when hipcc still drives nvcc, or when it knows none of
    the targets."""
    if hip_include is not None:
        return header_tree_toolchain(targets, hip_include, clang, environ)
    if clang is not None:
        raise ToolchainError("--clang needs --hip-include DIR (the ROCm include tree it compiles against)")
    if hipcc is not None:
        found = shutil.which(hipcc) if os.sep not in hipcc else (hipcc if os.access(hipcc, os.X_OK) else None)
        if found is None or not os.path.isfile(found):
            raise ToolchainError(f"--hipcc: {hipcc} is not an executable file; name ROCm's bin/hipcc")
        hipcc = found
    else:
        hipcc = shutil.which("hipcc", path=environ.get("PATH", os.defpath))
    if hipcc is None:
        raise ToolchainError("--verify needs hipcc, and none is on PATH (Debian: apt-get install hipcc "
                             "libamdhip64-dev rocm-device-libs; ROCm: add /opt/rocm/bin to PATH; without ROCm: "
                             "--hip-include ROCM/include --clang clang++)")
    platform = environ.get("HIP_PLATFORM")
    env = {**environ, "HIP_PLATFORM": "amd"}
    try:
        out = _run([hipcc, "--version"], env)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"--verify: {hipcc} --version failed ({exc})") from None
    text = out.stdout + out.stderr
    if _NVIDIA.search(text):
        raise ToolchainError(f"--verify: {hipcc} runs NVIDIA's nvcc even with HIP_PLATFORM=amd (which hipport sets); "
                             "the check needs HIP-Clang: put an AMD HIP install's hipcc first on PATH "
                             "(HIP_PATH/ROCM_PATH pointing at it)")
    m = _HIP_VERSION.search(text)
    version = (int(m.group(1)), int(m.group(2))) if m else None
    toolchain = Toolchain(hipcc, version, env, platform if platform not in (None, "", "amd") else None)
    usable, skipped, linked = _probe(toolchain, targets)
    if not usable:
        why = "; ".join(f"{t}: {w}" for t, w in skipped.items())
        raise ToolchainError(f"--verify: no target the installed hipcc can compile for ({why}); name one with "
                             "--offload-arch (gfx90a...)")
    codegen = linked >= set(usable)
    return Toolchain(hipcc, version, env, toolchain.platform_was, usable, skipped, described=f"{hipcc} (HIP "
                     f"{'.'.join(map(str, version)) if version else 'version unknown'}; "
                     f"{'code generation' if codegen else 'syntax only'})", codegen=codegen)


_HEADER_VERSION = re.compile(rb"#\s*define\s+HIP_VERSION_(MAJOR|MINOR)\s+(\d+)")
CLANG_NAMES = ("clang++", "clang++-18", "clang++-17", "clang++-16", "clang++-15")


def tree_version(include: Path) -> tuple[int, int] | None:
    """The HIP release of an include tree, from its `hip/hip_version.h`."""
    try:
        text = (include / "hip" / "hip_version.h").read_bytes()
    except OSError:
        return None
    found = {m.group(1).decode(): int(m.group(2)) for m in _HEADER_VERSION.finditer(text)}
    return (found["MAJOR"], found["MINOR"]) if {"MAJOR", "MINOR"} <= set(found) else None


def header_tree_toolchain(targets: Iterable[str], hip_include: str | os.PathLike, clang: str | None,
                          environ: Mapping[str, str] = os.environ) -> Toolchain:
    """A clang compiling HIP against a ROCm include tree without a ROCm install, with the flags ROCm's hipcc
    gives HIP-Clang (as `../shared/rocm-6.2.2/bin/hipcc` does): no device libraries (`-nogpulib`), the tree's
    headers in place of the installed ones (`-nogpuinc`, `-isystem`), clang's CUDA/HIP wrappers, and the AMD
    platform macros. Syntax checks only: nothing can be code-generated without device libraries."""
    include = Path(hip_include).resolve()
    if not (include / "hip" / "hip_runtime.h").is_file():
        raise ToolchainError(f"--hip-include: {hip_include} has no hip/hip_runtime.h; name a ROCm include folder "
                             "(ROCM/include)")
    path = environ.get("PATH", os.defpath)
    names = (clang,) if clang else CLANG_NAMES
    found = next((f for n in names if (f := shutil.which(n, path=path) if os.sep not in n else
                                       (n if os.access(n, os.X_OK) else None))), None)
    if found is None:
        raise ToolchainError(f"--clang: {clang} is not an executable clang" if clang else
                             "--hip-include needs a clang++ (none on PATH): name one with --clang")
    env = {**environ, "HIP_PLATFORM": "amd"}
    try:
        r = _run([found, "-print-resource-dir"], env)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolchainError(f"--clang: {found} -print-resource-dir failed ({exc})") from None
    wrappers = Path(r.stdout.strip()) / "include" / "cuda_wrappers"
    if r.returncode != 0 or not (wrappers.parent / "__clang_hip_runtime_wrapper.h").is_file():
        raise ToolchainError(f"--clang: {found} has no HIP support (no __clang_hip_runtime_wrapper.h in its "
                             "resource folder); name a clang++ of release 14 or newer")
    flags = ("-nogpulib", "-nogpuinc", "-isystem", str(wrappers), "-isystem", str(include),
             "-include", "__clang_hip_runtime_wrapper.h", "-D__HIP_PLATFORM_AMD__=1", "-D__HIP_ROCclr__=1")
    version = tree_version(include)
    toolchain = Toolchain(found, version, env, flags=flags)
    usable, skipped = probe_targets(toolchain, targets)
    if not usable:
        why = "; ".join(f"{t}: {w}" for t, w in skipped.items())
        raise ToolchainError(f"--verify: no target {found} can compile for ({why}); name one with "
                             "--offload-arch (gfx90a...)")
    shown = ".".join(map(str, version)) if version else "version unknown"
    return Toolchain(found, version, env, None, usable, skipped, flags,
                     f"{found} over the headers of {include} (HIP {shown}; syntax only)")


def probe_targets(toolchain: Toolchain, targets: Iterable[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """The targets hipcc's clang accepts, with its device libraries installed (asked with `-###`, which runs
    nothing), and the others with the reason."""
    usable, skipped, _linked = _probe(toolchain, targets)
    return usable, skipped


# In the jobs `-###` prints, the device libraries a target's device code is linked with: a toolchain that names
# them for a target can generate its code; a clang over a header tree (`-nogpulib`) names none.
_LINKS_DEVICE_LIBS = "-mlink-builtin-bitcode"


def _probe(toolchain: Toolchain, targets: Iterable[str]) -> tuple[tuple[str, ...], dict[str, str], set[str]]:
    """`probe_targets`, and the targets whose device code links ROCm's device libraries."""
    targets = list(dict.fromkeys(targets))
    linked: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="hipport-verify-") as tmp:
        probe = Path(tmp) / "probe.hip"
        probe.write_bytes(b"")

        def ask(target: str) -> str | None:
            try:
                r = _run([*toolchain.command, "-###", "-x", "hip", f"--offload-arch={target}", "-fsyntax-only", "-w",
                          str(probe)], toolchain.env, cwd=tmp)
            except (OSError, subprocess.SubprocessError) as exc:
                return f"hipcc failed ({exc})"
            for line in (r.stdout + r.stderr).splitlines():
                m = _DRIVER.match(line.strip())
                if m:
                    return _target_reason(m.group("message"))
            if r.returncode == 0 and _LINKS_DEVICE_LIBS in r.stdout + r.stderr:
                linked.add(target)
            return None if r.returncode == 0 else f"hipcc exit {r.returncode}"

        with ThreadPoolExecutor(max(1, min(8, len(targets)))) as pool:
            reasons = list(pool.map(ask, targets))
    usable = tuple(t for t, why in zip(targets, reasons) if why is None)
    return usable, {t: why for t, why in zip(targets, reasons) if why is not None}, linked


def _target_reason(message: str) -> str:
    if "invalid target ID" in message or "unsupported" in message and "architecture" in message:
        return "not known to the installed clang"
    if "device library" in message:
        return "no ROCm device library installed for it"
    return message.split(";")[0]


# -- the tree ---------------------------------------------------------------------------------------------------

def is_unit(path: Path, text: bytes, changed: bool) -> bool:
    """A file compiled on its own: .cu and .hip files, and C++ files hipport changed or that include HIP."""
    suffix = path.suffix.lower()
    if suffix in UNIT_SUFFIXES:
        return True
    return suffix in CXX_SUFFIXES and (changed or bool(_HIP_INCLUDE.search(text)))


def included_files(files: Mapping[Path, bytes], include_dirs: Iterable[Path]) -> set[Path]:
    """The files of ``files`` (absolute, normalised paths) that another of them #includes, resolved as the
    compiler would: quoted names beside the including file first, then the include directories."""
    dirs = [Path(os.path.normpath(d)) for d in include_dirs]
    known = set(files)
    found: set[Path] = set()
    for path, text in files.items():
        for m in _INCLUDE.finditer(text):
            name = m.group(2).decode("utf-8", "replace").strip()
            where = ([path.parent] if m.group(1) == b'"' else []) + dirs
            for d in where:
                candidate = Path(os.path.normpath(d / name))
                if candidate in known:
                    if candidate != path:
                        found.add(candidate)
                    break
    return found


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def define_args(defines: Iterable[str]) -> list[str]:
    """The settings' `defines` as hipcc options: `NAME` / `NAME=VALUE` -> `-DNAME...`, `!NAME` (a name the AMD
    build never defines) -> `-UNAME`."""
    out = []
    for item in defines:
        item = str(item).strip()
        if item.startswith("!"):
            if item[1:].strip():
                out.append(f"-U{item[1:].strip()}")
        elif item:
            out.append(f"-D{item}")
    return out


def verify_tree(files: list[TreeFile], toolchain: Toolchain, *,
                include_dirs: Iterable[Path] = (), roots: Iterable[Path] = (), jobs: int = 1,
                target_release: tuple[int, int] | None = None, causes: tuple[Cause, ...] | None = None,
                errors_per_unit: int = ERRORS_PER_UNIT, defines: Iterable[str] = ()) -> VerifyResult:
    """Compile every translation unit of ``files`` with hipcc, ``jobs`` at a time. ``roots``: the top folders of
    the tree as hipcc sees it (searched with -I after the unit's own folder); ``include_dirs``: the project's;
    ``defines``: the project's switches for its AMD build (settings' `defines`). Files with ``text`` are written
    to a temporary copy first, removed afterwards."""
    causes = load_causes() if causes is None else causes
    usable = toolchain.targets
    result = VerifyResult(usable, dict(toolchain.skipped), hip_version=toolchain.hip_version,
                          compiler=toolchain.described if toolchain.flags else "", codegen=toolchain.codegen)
    switches = define_args(defines)
    if toolchain.platform_was:
        result.notes.append(f"HIP_PLATFORM={toolchain.platform_was} in the environment; hipport runs hipcc with "
                            "HIP_PLATFORM=amd")
    installed = toolchain.hip_version
    if installed and target_release and target_release > installed:
        result.notes.append(f"converted for ROCm {target_release[0]}.{target_release[1]}, but hipcc is HIP "
                            f"{installed[0]}.{installed[1]}: what newer releases add will not compile here "
                            f"(--rocm-version {installed[0]}.{installed[1]} converts for it)")
    context = {"installed": f"{installed[0]}.{installed[1]}" if installed else "the installed HIP's version",
               "target": f"{target_release[0]}.{target_release[1]}" if target_release else "?"}
    with tempfile.TemporaryDirectory(prefix="hipport-verify-") as tmp:
        staged = _stage(files, Path(tmp))
        texts = {p: (f.text if f.text is not None else _read(p)) for p, f in staged.items()}
        # Relative roots and folders are inside the temporary copy; absolute ones stay as they are.
        root_dirs = [Path(os.path.normpath(Path(tmp) / r)) for r in roots]
        include_dirs = [Path(os.path.normpath(Path(tmp) / d)) for d in include_dirs]
        included = included_files(texts, [*root_dirs, *include_dirs])
        units = [p for p, f in staged.items() if p not in included and is_unit(p, texts[p], f.changed)]
        shown = {str(p): f.shown for p, f in staged.items()}

        stop = threading.Event()

        def compile_one(path: Path) -> UnitResult:
            f = staged[path]
            if stop.is_set():
                return UnitResult(f.shown, False, [CompileError("", 0, 0, "not compiled: interrupted")])
            args = [*switches, *(f"-I{d}" for d in dict.fromkeys([*root_dirs, *include_dirs]))]
            cwd = path.parent
            if f.origin is not None:  # a copy: what it includes from beside its source, outside the tree
                args += ["-idirafter", str(f.origin.parent)]
                if f.text is not None and f.origin.parent.is_dir():
                    # run from the source's folder: a hipcc confined to the folders around its working directory
                    # (ROCm in a chroot, such as rocm7-hipcc) then sees that folder as well as the copy in /tmp
                    cwd = f.origin.parent
            return _compile(toolchain, usable, path, args, shown, Path(tmp), causes, context, errors_per_unit,
                            f.shown, cwd)

        pool = ThreadPoolExecutor(max(1, jobs))
        try:
            result.units = list(pool.map(compile_one, sorted(units, key=lambda p: staged[p].shown)))
        except BaseException:  # Ctrl-C, SIGTERM: no unit starts any more, the running compilers are stopped
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            _stop_running()
            raise
        pool.shutdown()
    return result


_running: set[subprocess.Popen] = set()
_running_lock = threading.Lock()


def _stop_running() -> None:
    with _running_lock:
        for proc in list(_running):
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)  # hipcc and the clang it started


def _run_compiler(cmd: list[str], env: Mapping[str, str], cwd: str, timeout: int) -> subprocess.CompletedProcess:
    """`subprocess.run`, with the process known to `_stop_running` while it runs."""
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          env=dict(env), cwd=cwd, start_new_session=True) as proc:
        with _running_lock:
            _running.add(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        finally:
            with _running_lock:
                _running.discard(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _stage(files: list[TreeFile], tmp: Path) -> dict[Path, TreeFile]:
    """Absolute, normalised path -> file; texts written under ``tmp``."""
    staged: dict[Path, TreeFile] = {}
    for f in files:
        if f.text is not None:
            target = tmp / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.text)
        else:
            target = f.path
        staged[Path(os.path.normpath(os.path.abspath(target)))] = f
    return staged


def _compile(toolchain: Toolchain, targets: tuple[str, ...], unit: Path, include_args: list[str],
             shown: Mapping[str, str], tmp: Path, causes, context, limit: int, name: str,
             cwd: Path | None = None) -> UnitResult:
    cwd = unit.parent if cwd is None else cwd
    compiled = unit
    if "\n" in unit.name:
        # hipcc hands its arguments to a shell with each odd character backslashed, and a backslash-newline is
        # no character there: the compiler is asked for another file. It reads the unit through a link with a
        # plain name instead; the unit's folder is searched for its quoted includes as it would have been.
        compiled = _alias(unit, tmp / ".units")
        include_args = ["-iquote", str(unit.parent), *include_args]
        shown = {**shown, str(compiled): shown.get(str(unit), name)}
    if toolchain.codegen:  # the object is thrown away with the temporary folder
        objects = tmp / ".objects"
        objects.mkdir(exist_ok=True)
        mode = ["-c", "-o", str(objects / f"{hashlib.sha256(os.fsencode(unit)).hexdigest()[:16]}.o")]
    else:
        mode = ["-fsyntax-only"]
    cmd = [*toolchain.command, "-x", "hip", *(f"--offload-arch={t}" for t in targets), *mode, STD, "-w",
           "-fno-color-diagnostics", *include_args, str(compiled)]
    try:
        r = _run_compiler(cmd, toolchain.env, cwd=str(cwd), timeout=UNIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        return UnitResult(name, False, [CompileError("", 0, 0, f"hipcc took more than {UNIT_TIMEOUT} s; stopped")])
    except OSError as exc:
        return UnitResult(name, False, [CompileError("", 0, 0, f"hipcc could not run ({exc.strerror})")])
    errors = parse_errors(r.stderr + r.stdout, cwd, shown, tmp, causes, context)
    if r.returncode == 0:
        return UnitResult(name, True)
    if not errors:
        last = next((l for l in reversed((r.stderr + r.stdout).splitlines()) if l.strip()), "")
        errors = [CompileError("", 0, 0, f"hipcc exit {r.returncode}" + (f": {last.strip()}" if last else ""))]
    unique = list(dict.fromkeys(errors))
    return UnitResult(name, False, unique[:limit], max(0, len(unique) - limit))


def _alias(unit: Path, folder: Path) -> Path:
    """A symbolic link to ``unit`` in ``folder``, named after a hash of its path: units compiled at once each get
    their own."""
    folder.mkdir(exist_ok=True)
    link = folder / f"{hashlib.sha256(os.fsencode(unit)).hexdigest()[:16]}.hip"
    with contextlib.suppress(FileExistsError):
        link.symlink_to(unit)
    return link


def parse_errors(output: str, cwd: Path, shown: Mapping[str, str], tmp: Path, causes, context) -> list[CompileError]:
    """The error lines of a compiler's output, in order, with paths as the user knows them."""
    errors = []
    # A name holding a line break splits its diagnostics over two lines, and the second would name another
    # file (`b.cu` for `a<newline>b.cu`): each known one stands as a token while the output is cut into lines.
    broken = sorted((p for p in shown if len(f"{p}x".splitlines()) > 1), key=len, reverse=True)
    for i, p in enumerate(broken):
        output = output.replace(p, f"\0{i}\0")

    def mend(text: str) -> str:
        return re.sub("\0(\\d+)\0", lambda m: broken[int(m.group(1))], text) if broken else text

    for line in output.splitlines():
        m = _LOCATED.match(line)
        if m:
            path, line_no, col = mend(m.group("path")), int(m.group("line")), int(m.group("col"))
        else:
            m = _DRIVER.match(line)
            if not m:
                continue
            path, line_no, col = "", 0, 0
        message = mend(m.group("message").strip())
        if message.startswith("too many errors emitted"):
            continue
        cause, cause_text, fix = explain(message, causes, context)
        errors.append(CompileError(_user_path(path, cwd, shown, tmp) if path else "", line_no, col, message, cause,
                                   cause_text, fix))
    return errors


def _user_path(path: str, cwd: Path, shown: Mapping[str, str], tmp: Path) -> str:
    full = os.path.normpath(os.path.join(cwd, path))
    if full in shown:
        return shown[full]
    real = os.path.realpath(full)
    if real in shown:
        return shown[real]
    tmp_text = os.path.normpath(str(tmp)) + os.sep
    if full.startswith(tmp_text):
        return full[len(tmp_text):]
    return path
