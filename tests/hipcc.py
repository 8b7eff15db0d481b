"""Compile-checking with the real HIP toolchain (Debian's hipcc), for tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from needs import need

HIPCC = shutil.which("hipcc")
ARCH = "gfx90a"
# ROCm 6.2.2's headers with a hipcc stand-in over them (syntax checks only; see its README): what converted code
# targeting 6.2 or later is checked against, since Debian's HIP is 5.2.
ROCM62 = Path(os.environ.get("HIPPORT_ROCM62", Path(__file__).resolve().parents[2] / "shared" / "rocm-6.2.2"))
HIPCC62 = ROCM62 / "bin" / "hipcc"

# The library header folders compile tests include, and the Debian package that ships each (None: Debian has
# none; ROCm's own packages do). A folder not listed here is not checked (C++ and CUDA headers, the test's own).
LIBRARY_PACKAGES = {
    "hip": "libamdhip64-dev", "hiprand": "libhiprand-dev", "rocrand": "librocrand-dev",
    "hipsparse": "libhipsparse-dev", "rocsparse": "librocsparse-dev", "rocprim": "librocprim-dev",
    "hipblas": None, "rocblas": None, "hipfft": None, "rocfft": None, "hipsolver": None, "rocsolver": None,
    "hipcub": None, "rocthrust": None, "thrust": None, "miopen": None, "rccl": None, "hipblaslt": None,
}
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_HAS_INCLUDE = re.compile(rb'__has_include\s*\(\s*[<"]([^>"\n]+)[>"]')


def include_roots() -> list[Path]:
    """Where hipcc finds library headers: $HIPPORT_TEST_INCLUDE_ROOTS (os.pathsep-separated, for tests of this
    check) or ROCm's and Debian's folders."""
    override = os.environ.get("HIPPORT_TEST_INCLUDE_ROOTS")
    if override is not None:
        return [Path(p) for p in override.split(os.pathsep) if p]
    roots = [Path(os.environ[v]) / "include" for v in ("ROCM_PATH", "HIP_PATH") if os.environ.get(v)]
    return roots + [Path("/opt/rocm/include"), Path("/usr/include")]


def _includes(path: Path) -> tuple[tuple[bool, str], ...]:
    """(angle brackets?, name) of each #include in a file."""
    try:
        st = path.stat()
    except OSError:
        return ()
    return _includes_of(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=4096)
def _includes_of(path: Path, mtime_ns: int, size: int) -> tuple[tuple[bool, str], ...]:
    try:
        data = path.read_bytes()
    except OSError:
        return ()
    optional = {m.group(1).strip() for m in _HAS_INCLUDE.finditer(data)}  # included only where it exists
    return tuple((m.group(1) == b"<", m.group(2).decode("utf-8", "replace").strip()) for m in _INCLUDE.finditer(data)
                 if m.group(2).strip() not in optional)


def missing_headers(files, include_dirs=(), roots=None) -> list[tuple[str, str | None]]:
    """(header, Debian package) of every library header (see LIBRARY_PACKAGES) that ``files`` include, directly,
    through their own quoted headers, or through the library headers they include (hipRAND's include rocRAND's),
    and that no include root holds."""
    roots = include_roots() if roots is None else list(roots)
    missing: dict[str, str | None] = {}
    seen: set[Path] = set()
    todo = [Path(f) for f in files]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for angled, name in _includes(current):
            if not angled:
                local = [d / name for d in (current.parent, *map(Path, include_dirs))]
                found = next((p for p in local if p.is_file()), None)
                if found is not None:
                    todo.append(found)
                    continue
            folder = name.split("/", 1)[0] if "/" in name else None
            if folder not in LIBRARY_PACKAGES:
                continue
            found = next((r / name for r in roots if (r / name).is_file()), None)
            if found is None:
                missing.setdefault(name, LIBRARY_PACKAGES[folder])
            elif folder != "hip":  # HIP's own headers come whole with libamdhip64-dev
                todo.append(found)
    return sorted(missing.items())


def require_headers(files, include_dirs=(), roots=None) -> None:
    """Skip (locally) or fail (CI=true) a compile test whose library headers are not installed, naming the
    Debian package that provides each."""
    missing = missing_headers(files, include_dirs, roots)
    if not missing:
        return
    what = ", ".join(f"<{h}>" + (f" (Debian package {p})" if p else " (not packaged by Debian; install ROCm's)")
                     for h, p in missing)
    packages = sorted({p for _, p in missing if p})
    need(None, f"library header {what}", f"apt-get install {' '.join(packages)}" if packages else
         "install the ROCm library from repo.radeon.com")


def require_hipcc() -> None:
    """Skip without hipcc on a developer machine; in CI (CI=true) a missing hipcc is a failure, not a skip."""
    need(HIPCC, "hipcc", "apt-get install hipcc libamdhip64-dev rocm-device-libs")


def require_hipcc62() -> None:
    """Skip without ../shared/rocm-6.2.2 on a developer machine; under CI=true its absence fails."""
    require_hipcc()  # the stand-in runs Debian's clang, which the hipcc package brings
    need(HIPCC62.is_file() and (ROCM62 / "include" / "hip" / "hip_runtime.h").is_file(),
         f"the ROCm 6.2.2 header tree with its hipcc stand-in ({ROCM62})",
         "place it in ../shared/rocm-6.2.2 (see its README), or set HIPPORT_ROCM62")


def tree_for(target: tuple) -> str:
    """Which header tree checks code converted for ROCm ``target``: "6.2" (ROCm 6.2.2's) from 6.2, else "5.2"."""
    return "6.2" if tuple(target[:2]) >= (6, 2) else "5.2"


def syntax_check(path: Path, *extra: str, tree: str = "5.2",
                 target: tuple | None = None) -> subprocess.CompletedProcess:
    """hipcc -fsyntax-only for gfx90a, with Debian's HIP 5.2 (``tree="5.2"``) or ROCm 6.2.2's headers
    (``tree="6.2"``); ``target`` (the ROCm release the code was converted for) picks the tree instead. A target of
    7.0 or later is checked against 6.2.2 with the `*_sync` built-ins on, as 7.0 has them by default. A
    library header the file needs that the tree lacks skips (fails under CI) the calling test first, naming its
    package, instead of failing it with a compiler error."""
    if target is not None:
        tree = tree_for(target)
    includes = [a[2:] for a in extra if a.startswith("-I")]
    headers = [path, *(extra[k + 1] for k, a in enumerate(extra[:-1]) if a == "-include")]
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    if tree == "6.2":
        require_hipcc62()
        require_headers(headers, includes, [ROCM62 / "include"])
        compiler = str(HIPCC62)
        if target is not None and tuple(target[:2]) >= (7, 0):
            extra = ("-DHIP_ENABLE_WARP_SYNC_BUILTINS", *extra)
    else:
        require_headers(headers, includes)
        compiler = HIPCC
    cmd = [compiler, "-x", "hip", f"--offload-arch={ARCH}", "-fsyntax-only", "-std=c++17", "-w", *extra, str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=path.parent, timeout=300)


def hip_env() -> dict:
    return {**os.environ, "HIP_PLATFORM": "amd"}


def require_make() -> None:
    require_hipcc()
    need(shutil.which("make"), "make", "apt-get install make")


def tree_sources(directory: Path) -> list[Path]:
    return [p for p in sorted(Path(directory).rglob("*")) if p.suffix in (".cu", ".cpp", ".hip", ".h", ".cuh")]


def make(directory: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """`make` in ``directory`` with hipcc targeting AMD. Debian installs HIP under /usr, not /opt/rocm. The tree's
    library headers must be installed (else the calling test skips, or fails under CI, naming the package)."""
    require_headers(tree_sources(directory))
    return subprocess.run(["make", "-C", str(directory), "-j2", "ROCM_PATH=/usr", *args], capture_output=True,
                          text=True, env=hip_env(), timeout=timeout)


def cmake_hip_setup(work: Path, sources: Path | None = None) -> tuple[dict, list[str]]:
    """Environment and `cmake` arguments under which CMake's HIP language works with Debian's packages.

    CMake (3.21+) wants `<ROCm root>/lib/cmake/hip-lang/hip-lang-config.cmake` and Clang itself as the HIP compiler;
    Debian (libamdhip64-dev) ships the file under /usr/lib/<multiarch>/cmake/hip-lang and Clang as clang++-15, whose
    HIP driver needs `--rocm-path=/usr` and the device libraries' directory. So: a root folder with a link to the
    package's hip-lang directory, HIPCXX, HIPFLAGS, and the multiarch CMake directory on CMAKE_PREFIX_PATH (for
    amd_comgr, which hip-lang-config finds). On a ROCm install (/opt/rocm) none of this is needed. ``sources``: the
    project, whose library headers must be installed."""
    need(shutil.which("cmake"), "cmake", "apt-get install cmake")
    require_hipcc()
    if sources is not None:  # the project's library headers, checked as `make` checks them
        require_headers(tree_sources(sources))
    env = hip_env()
    args: list[str] = []
    if Path("/opt/rocm/lib/cmake/hip-lang/hip-lang-config.cmake").is_file():
        return env, args
    hip_lang = sorted(Path("/usr/lib").glob("*/cmake/hip-lang/hip-lang-config.cmake"))
    clangs = sorted(Path("/usr/lib").glob("llvm-*/bin/clang++"), key=lambda p: int(p.parts[-3].split("-")[1]))
    bitcode = sorted(Path("/usr/lib").glob("*/amdgcn/bitcode"))
    need(hip_lang and clangs and bitcode, "CMake's HIP language files (hip-lang-config.cmake), clang++, device libs",
         "apt-get install libamdhip64-dev hipcc rocm-device-libs")
    root = work / "rocm-root"
    (root / "lib" / "cmake").mkdir(parents=True, exist_ok=True)
    link = root / "lib" / "cmake" / "hip-lang"
    if not link.exists():
        link.symlink_to(hip_lang[-1].parent)
    env.update(HIPCXX=str(clangs[-1]), HIPFLAGS=f"--rocm-path=/usr --hip-device-lib-path={bitcode[-1]}",
               CMAKE_PREFIX_PATH=str(hip_lang[-1].parent.parent))
    args.append(f"-DCMAKE_HIP_COMPILER_ROCM_ROOT={root}")
    return env, args


# The real ROCm toolchains of ../shared/tools/rocm_chroot.sh: hipcc of ROCm 7.2.4 and 6.4.3 in chroots, with real
# code generation (no GPU needed). `.ci/run` installs both; a developer runs the script once as root.
REAL_HIPCC = {"7.2": "rocm7-hipcc", "6.4": "rocm64-hipcc"}
# A wave64 and a wave32 target: MI300 (gfx942) and RDNA3 (gfx1100).
REAL_ARCHS = ("gfx942", "gfx1100")
_CHROOT_SCRIPT = Path(__file__).resolve().parents[2] / "shared" / "tools" / "rocm_chroot.sh"


def real_hipcc(release: str) -> str:
    """Path of the wrapper for ``release`` ("7.2" or "6.4"); skips (fails under CI=true) without it."""
    exe = shutil.which(REAL_HIPCC[release]) or shutil.which(REAL_HIPCC[release], path="/usr/local/bin")
    need(exe, f"the real ROCm {release} compiler `{REAL_HIPCC[release]}`",
         f"as root: bash {_CHROOT_SCRIPT} {'7' if release == '7.2' else release}")
    return exe


def real_compile(path: Path, release: str = "7.2", archs=REAL_ARCHS, *extra: str,
                 timeout: int = 600) -> subprocess.CompletedProcess:
    """Compile ``path`` (`-c`, object thrown away) with the real hipcc of ROCm ``release`` for each of ``archs``,
    code generation included. The compiler runs in a chroot that sees /tmp and the top-level folder of the file's
    folder; the working directory is the file's folder, so quoted includes resolve as usual."""
    import tempfile

    exe = real_hipcc(release)
    path = Path(path).resolve()
    with tempfile.TemporaryDirectory(prefix="hipport-real-") as out:
        cmd = [exe, "-x", "hip", *(f"--offload-arch={a}" for a in archs), "-std=c++17", "-w", *extra,
               "-c", str(path), "-o", str(Path(out) / "unit.o")]
        return subprocess.run(cmd, capture_output=True, text=True, cwd=path.parent, timeout=timeout,
                              env={k: v for k, v in os.environ.items() if k != "HIP_PLATFORM"})


# nvcc for the NVIDIA build of projects that keep CUDA as their main source (tests/test_single_source.py): their
# converted files must still compile there. Compile only (`-c`, object thrown away); no GPU needed.
NVCC = shutil.which("nvcc") or next((p for p in ("/usr/local/bin/nvcc", "/usr/local/cuda/bin/nvcc")
                                     if os.access(p, os.X_OK)), None)


def require_nvcc() -> str:
    """Path of nvcc; skips without it on a developer machine, fails under CI=true."""
    need(NVCC, "nvcc (CUDA's compiler, for the NVIDIA build of single-source projects)",
         "install the CUDA toolkit's nvcc (CUDA 12 or 13), or put it on PATH")
    return NVCC


def nvcc_compile(path: Path, *extra: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """`nvcc -c -x cu PATH -o /dev/null` from the file's folder, so quoted includes resolve as usual."""
    exe = require_nvcc()
    path = Path(path).resolve()
    return subprocess.run([exe, "-c", "-x", "cu", *extra, str(path), "-o", os.devnull], capture_output=True,
                          text=True, cwd=path.parent, timeout=timeout)


def require_cc() -> str:
    """A C compiler for the CPU-only configuration (`cc`); skips without one, fails under CI=true."""
    exe = shutil.which("cc") or shutil.which("gcc")
    need(exe, "a C compiler (cc)", "apt-get install gcc")
    return exe
