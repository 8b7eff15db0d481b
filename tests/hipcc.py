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
