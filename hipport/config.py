"""Project settings from `[tool.hipport]` in pyproject.toml or from `.hipport.toml`; command-line flags win."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

KEYS = {
    "rocm-version": str,
    "defines": list,
    "offload-arch": (list, str),
    "exclude": list,
    "rules": list,
    "launch-syntax": str,
    "roc": bool,
    "hipify-perl": str,
    "fail-on": str,
    "baseline": str,
    "include-dirs": list,
    "verify-hipcc": str,
    "verify-hip-include": str,
    "verify-clang": str,
}

class ConfigError(Exception):
    pass


@dataclass(slots=True)
class Config:
    path: Path | None = None
    values: dict = field(default_factory=dict)

    def get(self, key: str, default=None):
        return self.values.get(key, default)

    @property
    def base(self) -> Path:
        """The project directory, which project paths (settings' `exclude` patterns, baseline entries) are
        relative to: the settings file's directory; without settings, the repository root above the current
        directory, else the current directory. Absolute and resolved."""
        if self.path is not None:
            return self.path.resolve().parent
        return repository_root() or Path.cwd().resolve()

    def paths(self, key: str) -> list[Path]:
        """List-of-path settings, relative to the config file."""
        base = self.path.parent if self.path else Path.cwd()
        return [base / p for p in self.values.get(key, [])]


def repository_root(start: Path | None = None) -> Path | None:
    """The nearest directory holding `.git`, from ``start`` (default: the current directory) upwards."""
    here = (start or Path.cwd()).resolve()
    return next((d for d in (here, *here.parents) if (d / ".git").exists()), None)


def find_config(start: Path | None = None) -> Path | None:
    """The nearest `.hipport.toml`, or `pyproject.toml` with a `[tool.hipport]` table, from ``start`` upwards."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        candidate = d / ".hipport.toml"
        if candidate.is_file():
            return candidate
        pyproject = d / "pyproject.toml"
        if pyproject.is_file() and b"[tool.hipport]" in pyproject.read_bytes():
            return pyproject
        if (d / ".git").exists():
            break
    return None


def find_config_for(paths: list[Path]) -> Path | None:
    """The settings of the inputs: the nearest settings file above each (a folder from itself, a file from its
    folder), as a linter finds its settings, whatever the current directory; without inputs, from the current
    directory. One run has one set of settings: inputs beside different settings files are a ConfigError."""
    if not paths:
        return find_config()
    found: dict[Path | None, Path] = {}
    for p in paths:
        start = p if p.is_dir() else p.parent
        found.setdefault(find_config(start), p)
    if len(found) > 1:
        (a, pa), (b, pb) = list(found.items())[:2]
        raise ConfigError(f"{pa} and {pb} have different settings ({a or 'none'}, {b or 'none'}); run hipport once "
                          "per project, or name the settings with --config")
    return next(iter(found))


def load_config(path: Path | None) -> Config:
    if path is None:
        return Config()
    import tomllib  # here: most projects have no settings file

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    table = data.get("tool", {}).get("hipport", {}) if path.name == "pyproject.toml" else data
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: `[tool.hipport]` must be a table")
    for key, value in table.items():
        if key not in KEYS:
            raise ConfigError(f"{path}: unknown setting `{key}` (known: {', '.join(sorted(KEYS))})")
        if not isinstance(value, KEYS[key]):
            raise ConfigError(f"{path}: setting `{key}` has the wrong type")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: setting `{key}` must be a list of strings")
    if table.get("launch-syntax", "cuda") not in ("cuda", "hip"):
        raise ConfigError(f"{path}: `launch-syntax` must be \"cuda\" or \"hip\"")
    # Checked here so that the message names this file, whichever command reads it.
    if "rocm-version" in table or "offload-arch" in table:
        from hipport.rocm import TargetError, VersionError, check_target, rocm_release  # only with these keys

        try:
            if "rocm-version" in table:
                rocm_release(table["rocm-version"])
            archs = table.get("offload-arch", [])
            for arch in (archs.split(",") if isinstance(archs, str) else archs):
                if arch.strip():
                    check_target(arch)
        except VersionError as exc:
            raise ConfigError(f"{path}: `rocm-version`: {exc}") from None
        except TargetError as exc:
            raise ConfigError(f"{path}: `offload-arch`: {exc}") from None
    return Config(path, dict(table))
