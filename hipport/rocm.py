"""What ROCm the output must build with: from the user, else from the installed HIP, else the newest known."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

# The newest release hipport knows: the default target when the user names none and no HIP is installed.
NEWEST_ROCM = (7, 0)
# The GPUs both commands target when neither the command line nor the settings (`offload-arch`) name any:
# MI200 and MI300 (wave64) and RDNA3 (wave32).
DEFAULT_ARCHS = ("gfx90a", "gfx942", "gfx1100")

_VERSION_ARG = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")


class VersionError(ValueError):
    pass


def parse_rocm_version(text: str) -> tuple[int, int]:
    m = _VERSION_ARG.match(text.strip())
    if not m:
        raise VersionError(f"`{text}` is not a ROCm version; write it like 6.2")
    return int(m.group(1)), int(m.group(2))


@lru_cache(maxsize=1)
def include_roots() -> list[Path]:
    roots = []
    for env in ("ROCM_PATH", "HIP_PATH"):
        if os.environ.get(env):
            roots.append(Path(os.environ[env]) / "include")
    roots += [Path("/opt/rocm/include"), Path("/usr/include")]
    return [r for r in roots if (r / "hip" / "hip_version.h").is_file()]


@lru_cache(maxsize=1)
def detect_installed() -> tuple[int, int] | None:
    """Version of the installed HIP, from `hip/hip_version.h`, else `hipconfig --version`."""
    for root in include_roots():
        text = (root / "hip" / "hip_version.h").read_text(errors="replace")
        major = re.search(r"#define\s+HIP_VERSION_MAJOR\s+(\d+)", text)
        minor = re.search(r"#define\s+HIP_VERSION_MINOR\s+(\d+)", text)
        if major and minor:
            return int(major.group(1)), int(minor.group(1))
    exe = shutil.which("hipconfig")
    if exe:
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        m = re.match(r"(\d+)\.(\d+)", out.strip())
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def default_target() -> tuple[int, int]:
    """The release both commands target when neither the command line nor the settings name one: the installed
    HIP, else the newest release hipport knows. One answer, so convert never drops a mask the audit asks to widen."""
    return detect_installed() or NEWEST_ROCM


@lru_cache(maxsize=256)
def installed_header_layout(header: str) -> str:
    """Library headers moved into folders (`hipblas/hipblas.h`); an older install has only the flat file."""
    if "/" not in header or header.startswith("hip/"):
        return header
    flat = header.rsplit("/", 1)[1]
    roots = include_roots()
    if not roots or any((r / header).is_file() for r in roots):
        return header
    if any((r / flat).is_file() for r in roots):
        return flat
    return header


@lru_cache(maxsize=1)
def installed_names() -> frozenset[str]:
    """Identifiers in the code (not comments) of the installed HIP headers: where a table says a name arrived in a later release
    than the installed one, yet the installed headers have it, the headers are right."""
    names: set[str] = set()
    # A regex pass is 50x faster than lexing these headers and only has to drop comments to be right here.
    comment = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)
    ident = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]{2,}")
    for root in include_roots():
        for sub in ("hip", "hiprand", "hipsparse", "hipblas", "hipfft", "hipsolver", "hipcub"):
            folder = root / sub
            if not folder.is_dir():
                continue
            for header in folder.rglob("*.h*"):
                try:
                    code = comment.sub(b" ", header.read_bytes())
                except OSError:
                    continue
                names.update(m.decode("latin-1") for m in ident.findall(code))
    return frozenset(names)
