"""The package's layering, read from the source with `ast` (not from what happens to be imported at run time):
shared ground at the top of `hipport/` imports nothing above it; `convert` and `audit` never import each other
nor the command line; reports render and import no command. A new import across these lines fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hipport"

# Layer of a module: its first package below `hipport`, or "shared" for a module at the top.
FORBIDDEN = {
    "shared": {"convert", "audit", "cli", "report"},
    "convert": {"audit", "cli", "report"},
    "audit": {"convert", "cli", "report"},
    "report": {"cli"},
    "cli": set(),
}


def _layer(module: str) -> str:
    if module == "hipport.__main__":  # `python -m hipport` is the command line
        return "cli"
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in FORBIDDEN:
        return parts[1]
    return "shared"


def _module_name(path: Path, package: Path) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every `hipport...` module the file imports, wherever the import stands (lazy imports count too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("hipport")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("hipport"):
            # `from hipport import rocm` imports the module hipport.rocm.
            if node.module == "hipport":
                found += [(node.lineno, f"hipport.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def _violations(package: Path = PACKAGE) -> list[str]:
    out = []
    for path in sorted(package.rglob("*.py")):
        here = _module_name(path, package)
        layer = _layer(here)
        for line, target in _imports(path):
            if _layer(target) in FORBIDDEN[layer] and target != "hipport":
                out.append(f"{path.relative_to(package.parent)}:{line}: {layer} module `{here}` imports `{target}`")
    return out


def test_no_import_crosses_the_layers():
    assert _violations() == []


def test_the_check_sees_a_forbidden_import(tmp_path):
    # The checker itself must be able to fail: plant a forbidden import in a copy of the tree.
    import shutil

    copy = tmp_path / "hipport"
    shutil.copytree(PACKAGE, copy)
    (copy / "convert" / "planted.py").write_text("def f():\n    from hipport.audit import audit_source\n")
    (copy / "scan_extra.py").write_text("from hipport.cli.options import fail\n")
    found = _violations(copy)
    assert any("convert/planted.py:2" in v and "hipport.audit" in v for v in found), found
    assert any("scan_extra.py:1" in v and "hipport.cli.options" in v for v in found), found


@pytest.mark.parametrize("package", ["convert", "audit", "cli", "report"])
def test_each_layer_is_a_package(package):
    assert (PACKAGE / package / "__init__.py").is_file()
