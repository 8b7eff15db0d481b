"""What ROCm the output must build with: from the user, else from the installed HIP, else the newest known."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from hipport.rules import RuleError, _read_toml, builtin_rules_dir, load_cached

# The newest release hipport knows: the default target when the user names none and no HIP is installed.
NEWEST_ROCM = (7, 2)
# The GPUs both commands target when neither the command line nor the settings (`offload-arch`) name any:
# MI200 and MI300 (wave64) and RDNA3 (wave32).
DEFAULT_ARCHS = ("gfx90a", "gfx942", "gfx1100")
# GCN (gfx6 to gfx9) and CDNA run 64-lane wavefronts; gfx10+ (RDNA) runs 32 in HIP.
WAVE64_PREFIXES = ("gfx6", "gfx7", "gfx8", "gfx9")


def wave_size(arch: str) -> int:
    """Lanes in a wavefront of ``arch`` as HIP compiles for it (gfx6 to gfx9: 64; gfx10 and later: 32)."""
    return 64 if arch.startswith(WAVE64_PREFIXES) else 32

_VERSION_ARG = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")


class VersionError(ValueError):
    pass


class TargetError(ValueError):
    """A GPU target that names no AMD processor hipport knows."""


def parse_rocm_version(text: str) -> tuple[int, int]:
    """major.minor of a version's text, known release or not (an installed HIP's, a table's)."""
    m = _VERSION_ARG.match(text.strip())
    if not m:
        raise VersionError(f"`{text}` is not a ROCm version; write it like 6.2")
    return int(m.group(1)), int(m.group(2))


class KnownTargets(NamedTuple):
    releases: tuple[tuple[int, int], ...]
    processors: frozenset[str]
    processor_order: tuple[str, ...]  # as the data lists them, for messages
    features: frozenset[str]


def _targets_file() -> Path:
    return builtin_rules_dir() / "targets.toml"


def _read_targets(path: Path) -> KnownTargets:
    data = _read_toml(path)
    releases, processors, features = (data.get(k) for k in ("releases", "processors", "features"))
    for key, value in (("releases", releases), ("processors", processors), ("features", features)):
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise RuleError(f"{path}: `{key}` must be a list of strings")
    bad = [v for v in releases if not re.fullmatch(r"\d+\.\d+", v)]
    bad += [v for v in processors if not re.fullmatch(r"gfx[0-9a-z]+(?:-[0-9]+)*(?:-generic)?", v)]
    bad += [v for v in features if not re.fullmatch(r"[a-z]+", v)]
    if bad:
        raise RuleError(f"{path}: `{bad[0]}` is not a release (X.Y), a processor (gfx...) or a feature name")
    return KnownTargets(tuple(sorted(parse_rocm_version(v) for v in releases)), frozenset(processors),
                        tuple(processors), frozenset(features))


@lru_cache(maxsize=1)
def known_targets() -> KnownTargets:
    """The releases and GPU targets a user may name (`rules/targets.toml`), from the user cache while it is
    unchanged."""
    path = _targets_file()
    return load_cached("targets", [Path(__file__), path], lambda: _read_targets(path))


def known_releases_text() -> str:
    """The known releases as ranges of minors per major: `5.0-5.7, 6.0-6.4, 7.0-7.2`."""
    spans: list[list[tuple[int, int]]] = []
    for v in known_targets().releases:
        if spans and spans[-1][-1][0] == v[0] and spans[-1][-1][1] + 1 == v[1]:
            spans[-1].append(v)
        else:
            spans.append([v])
    return ", ".join(f"{s[0][0]}.{s[0][1]}" + (f"-{s[-1][0]}.{s[-1][1]}" if len(s) > 1 else "") for s in spans)


def rocm_release(text: str) -> tuple[int, int]:
    """major.minor of a release the user named (`--rocm-version`, `rocm-version`), which must be one hipport
    knows: a typo (`6`, `8.0`) would otherwise pick rules for a release nobody has. VersionError otherwise."""
    known = f"{known_releases_text()} (a patch level like 6.4.3 is fine)"
    m = _VERSION_ARG.match(text.strip())
    if not m:
        raise VersionError(f"`{text}` is not a ROCm release; write major.minor, one of {known}")
    version = int(m.group(1)), int(m.group(2))
    if version not in known_targets().releases:
        raise VersionError(f"`{text}` names no ROCm release hipport knows; known: {known}")
    return version


def check_target(text: str) -> str:
    """``text`` stripped, when it names an AMD GPU target hipport knows (`gfx942`, `gfx90a:xnack+`,
    `gfx11-generic`); TargetError listing the known ones otherwise."""
    target = text.strip()
    name, *features = target.split(":")
    known = known_targets()
    feats = " ".join(f":{f}+/-" for f in sorted(known.features))
    if name not in known.processors:
        raise TargetError(f"`{target}` is not an AMD GPU target hipport knows; known: "
                          f"{', '.join(known.processor_order)} (each may add {feats})")
    seen = [f[:-1] for f in features]
    if not all(f[-1:] in ("+", "-") and f[:-1] in known.features for f in features) or len(set(seen)) != len(seen):
        raise TargetError(f"`{target}`: target features are {feats}, each at most once (`{name}:xnack+`)")
    return target


def under(root: Path, path: str | os.PathLike) -> Path:
    """``path`` of the system mounted at ``root`` (``/`` is this one)."""
    return Path(root) / str(path).lstrip("/") if str(root) != "/" else Path(path)


def include_roots_in(root: Path, env: Mapping[str, str]) -> list[Path]:
    """Folders holding `hip/hip_version.h` on the system at ``root``: $ROCM_PATH/include, $HIP_PATH/include,
    /opt/rocm/include, /usr/include (Debian's HIP)."""
    roots = [under(root, Path(env[v]) / "include") for v in ("ROCM_PATH", "HIP_PATH") if env.get(v)]
    roots += [under(root, "/opt/rocm/include"), under(root, "/usr/include")]
    return [r for r in dict.fromkeys(roots) if (r / "hip" / "hip_version.h").is_file()]


@lru_cache(maxsize=1)
def include_roots() -> list[Path]:
    return include_roots_in(Path("/"), os.environ)


def find_installed(roots: list[Path], env: Mapping[str, str]) -> tuple[tuple[int, int], str] | None:
    """(version, where it was read: a hip_version.h path or `hipconfig --version`) of the installed HIP."""
    for root in roots:
        header = root / "hip" / "hip_version.h"
        text = header.read_text(errors="replace")
        major = re.search(r"#define\s+HIP_VERSION_MAJOR\s+(\d+)", text)
        minor = re.search(r"#define\s+HIP_VERSION_MINOR\s+(\d+)", text)
        if major and minor:
            return (int(major.group(1)), int(minor.group(1))), str(header)
    import shutil
    import subprocess  # here: only without hip_version.h

    exe = shutil.which("hipconfig", path=env.get("PATH", os.defpath))
    if exe:
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10,
                                 env=dict(env)).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        m = re.match(r"(\d+)\.(\d+)", out.strip())
        if m:
            return (int(m.group(1)), int(m.group(2))), f"{exe} --version"
    return None


@lru_cache(maxsize=1)
def detect_installed() -> tuple[int, int] | None:
    """Version of the installed HIP, from `hip/hip_version.h`, else `hipconfig --version`."""
    found = find_installed(include_roots(), os.environ)
    return found[0] if found else None


def default_target() -> tuple[int, int]:
    """The release both commands target when neither the command line nor the settings name one: the installed
    HIP, else the newest release hipport knows. One answer, so convert never drops a mask the audit asks to widen."""
    return default_target_and_why()[0]


def default_target_and_why() -> tuple[tuple[int, int], str]:
    """`default_target` and where it came from, as the convert summary says it."""
    installed = detect_installed()
    if installed:
        return installed, "the installed HIP"
    return NEWEST_ROCM, "no HIP installed: the newest release hipport knows"


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
    than the installed one, yet the installed headers have it, the headers are right. From the user cache while
    no header changed: reading them cost the audit of one changed file (a pre-commit hook) a quarter of its time."""
    headers = [header for root in include_roots()
               for sub in ("hip", "hiprand", "hipsparse", "hipblas", "hipfft", "hipsolver", "hipcub")
               if (root / sub).is_dir() for header in (root / sub).rglob("*.h*")]
    return load_cached("hip-names", [Path(__file__), *headers], lambda: _names_in(headers))


def _names_in(headers: list[Path]) -> frozenset[str]:
    names: set[str] = set()
    # A regex pass is 50x faster than lexing these headers and only has to drop comments to be right here.
    comment = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)
    ident = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]{2,}")
    for header in headers:
        try:
            code = comment.sub(b" ", header.read_bytes())
        except OSError:
            continue
        names.update(m.decode("latin-1") for m in ident.findall(code))
    return frozenset(names)


_COMMENT = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)
_WORD_BYTE = re.compile(rb"\w")
_DEVICE_WORDS = re.compile(rb"\b(?:__device__|__DEVICE__|__HOST_DEVICE__|__forceinline__)\b")


@lru_cache(maxsize=1)
def _hip_header_code() -> tuple[tuple[str, bytes], ...]:
    """(path, code without comments) of the installed HIP headers for AMD: hip/*.h and hip/amd_detail/*.h."""
    out = []
    for root in include_roots():
        hip = root / "hip"
        for header in sorted([*hip.glob("*.h"), *(hip / "amd_detail").glob("*.h")]):
            try:
                out.append((str(header), _COMMENT.sub(b" ", header.read_bytes())))
            except OSError:
                continue
        if out:
            break  # the first install found is the one hipcc uses
    return tuple(out)


@lru_cache(maxsize=512)
def hip_device_functions(name: str) -> tuple[tuple[bytes, str], ...]:
    """(parameter list text, header) of each non-template device function named ``name`` that the installed HIP
    headers declare or define at namespace scope (`__device__ inline float atomicMax(float* address, float val)`)."""
    found = []
    # No `\b` before the name: a pattern starting with a literal is searched for as one (14 ms a name -> 1), so the
    # word boundary is checked here.
    pattern = re.compile(re.escape(name.encode()) + rb"\s*\(([^()]*)\)\s*(?:const\s*)?(?:noexcept\s*)?[{;]")
    for path, code in _hip_header_code():
        for m in pattern.finditer(code):
            if m.start() and _WORD_BYTE.match(code, m.start() - 1):
                continue
            before = max(code.rfind(b";", 0, m.start()), code.rfind(b"{", 0, m.start()),
                         code.rfind(b"}", 0, m.start()), code.rfind(b"#", 0, m.start()))
            prefix = code[before + 1 : m.start()]
            if before >= 0 and code[before:before + 1] == b"#":
                prefix = prefix.split(b"\n", 1)[1] if b"\n" in prefix else b""  # after the directive's line
            if _DEVICE_WORDS.search(prefix) and b"template" not in prefix and b"=" not in prefix \
                    and b"return" not in prefix and b"(" not in prefix:
                found.append((m.group(1), path))
    return tuple(found)


