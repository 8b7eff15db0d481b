"""The AMD targets converted build files name when neither the command line nor the settings give any: those of
hipport's defaults that the installed hipcc can build for, asked as `--verify` asks (`-###`, which runs nothing),
else the defaults. A Makefile written for targets the machine's clang does not know fails on the first `make`.

The answer is cached per hipcc (its path, size and time, and the environment variables that move its ROCm), so a
run pays for the question once; `--no-cache` asks again."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from hipport.cache import ResultCache
from hipport.rocm import DEFAULT_ARCHS

# What moves the ROCm a hipcc compiles with, besides the hipcc itself.
_ENV_KEYS = ("HIP_PATH", "ROCM_PATH", "HIP_CLANG_PATH", "HIP_DEVICE_LIB_PATH", "HIP_PLATFORM")


@dataclass(frozen=True, slots=True)
class DefaultTargets:
    targets: tuple[str, ...]
    why: str                       # where they come from, for the summary and `doctor`
    skipped: tuple[tuple[str, str], ...] = ()  # defaults the installed hipcc cannot build for, with why


def default_targets(environ: Mapping[str, str] = os.environ, *, use_cache: bool = True,
                    cache: ResultCache | None = None) -> DefaultTargets:
    hipcc = shutil.which("hipcc", path=environ.get("PATH", os.defpath))
    if hipcc is None:
        return DefaultTargets(DEFAULT_ARCHS, "hipport's defaults (no hipcc on PATH to ask)")
    try:
        st = os.stat(hipcc)
    except OSError:
        return DefaultTargets(DEFAULT_ARCHS, f"hipport's defaults ({hipcc} cannot be read)")
    key = "\0".join([os.path.realpath(hipcc), str(st.st_size), str(st.st_mtime_ns), *DEFAULT_ARCHS,
                     *(f"{k}={environ.get(k, '')}" for k in _ENV_KEYS)]).encode()
    cache = cache or ResultCache("targets", "probe")
    cache.enabled = use_cache
    found = cache.get(key)
    if found is None:
        from hipport.convert.verify import ToolchainError, find_toolchain  # here: a cached answer needs neither

        try:
            toolchain = find_toolchain(DEFAULT_ARCHS, environ)
            found = (toolchain.targets, tuple(toolchain.skipped.items()))
        except ToolchainError:
            found = ((), ())
        cache.put(key, found)
    usable, skipped = found
    if not usable:
        return DefaultTargets(DEFAULT_ARCHS, f"hipport's defaults ({hipcc} builds for none of them)", skipped)
    others = "; ".join(f"{t}: {why}" for t, why in skipped)
    return DefaultTargets(tuple(usable), f"those of hipport's defaults ({','.join(DEFAULT_ARCHS)}) that {hipcc} can "
                          f"build for" + (f" ({others})" if others else ""), tuple(skipped))
