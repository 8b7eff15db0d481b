"""Compile-checking with the real HIP toolchain (Debian's hipcc), for tests."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from needs import need

HIPCC = shutil.which("hipcc")
ARCH = "gfx90a"


def require_hipcc() -> None:
    """Skip without hipcc on a developer machine; in CI (CI=true) a missing hipcc is a failure, not a skip."""
    need(HIPCC, "hipcc", "apt-get install hipcc libamdhip64-dev rocm-device-libs")


def syntax_check(path: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HIP_PLATFORM": "amd"}
    cmd = [HIPCC, "-x", "hip", f"--offload-arch={ARCH}", "-fsyntax-only", "-std=c++17", "-w", *extra, str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=path.parent, timeout=300)


def hip_env() -> dict:
    return {**os.environ, "HIP_PLATFORM": "amd"}


def require_make() -> None:
    require_hipcc()
    need(shutil.which("make"), "make", "apt-get install make")


def make(directory: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """`make` in ``directory`` with hipcc targeting AMD. Debian installs HIP under /usr, not /opt/rocm."""
    return subprocess.run(["make", "-C", str(directory), "-j2", "ROCM_PATH=/usr", *args], capture_output=True,
                          text=True, env=hip_env(), timeout=timeout)


def cmake_hip_setup(work: Path) -> tuple[dict, list[str]]:
    """Environment and `cmake` arguments under which CMake's HIP language works with Debian's packages.

    CMake (3.21+) wants `<ROCm root>/lib/cmake/hip-lang/hip-lang-config.cmake` and Clang itself as the HIP compiler;
    Debian (libamdhip64-dev) ships the file under /usr/lib/<multiarch>/cmake/hip-lang and Clang as clang++-15, whose
    HIP driver needs `--rocm-path=/usr` and the device libraries' directory. So: a root folder with a link to the
    package's hip-lang directory, HIPCXX, HIPFLAGS, and the multiarch CMake directory on CMAKE_PREFIX_PATH (for
    amd_comgr, which hip-lang-config finds). On a ROCm install (/opt/rocm) none of this is needed."""
    need(shutil.which("cmake"), "cmake", "apt-get install cmake")
    require_hipcc()
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
