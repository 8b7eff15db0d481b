"""Build files port with the sources: Makefiles and CMake projects that build with hipcc.

`convert_build_file` takes one build file's bytes and gives a `FileResult` like the source engine's: each change a
`Conversion` in the `build` category, each thing left for a person a `build-untranslated` warning, each nvcc-only
flag dropped a `build-dropped` note. The rules are data (`rules/build/make.toml`, `rules/build/cmake.toml`). Which
files are build files is `hipport.files.build_file_kind`'s call; nothing here knows the command line."""

from __future__ import annotations

from hipport.convert.build.cmake import convert_cmake
from hipport.convert.build.common import (
    CATEGORY,
    DROPPED,
    NOTE,
    UNTRANSLATED,
    BuildContext,
)
from hipport.convert.build.make import convert_makefile
from hipport.convert.build.rules import load_build_rules
from hipport.convert.context import ConvertOptions
from hipport.convert.single_source import hip_path_of_cmake
from hipport.files import build_file_kind
from hipport.model import FileResult

__all__ = ["CATEGORY", "DROPPED", "NOTE", "UNTRANSLATED", "convert_build_file", "convert_build_text"]


def convert_build_text(src: bytes, kind: str, options: ConvertOptions = ConvertOptions(),
                       path: str = "<build file>") -> tuple[FileResult, set[str]]:
    """Convert a build file of ``kind`` ("make" or "cmake"; a "setuptools" `setup.py` is only read, for PyTorch's
    `CUDAExtension`); also returns the ids of the rules that acted."""
    if kind == "setuptools":
        from hipport.convert.pytorch import setup_result

        return setup_result(src, path), set()
    why = hip_path_of_cmake(src) if kind == "cmake" else ""
    if why:  # the project's own HIP build (`enable_language(HIP)`): rewriting its CUDA side breaks NVIDIA's
        return FileResult(path, src, src, hip_path=why), set()
    if options.tree is not None and options.tree.hip_build:  # the tree builds for AMD with its own: this is NVIDIA's
        return FileResult(path, src, src, hip_path=f"the tree's AMD build is {options.tree.hip_build}"), set()
    make_rules, cmake_rules = load_build_rules()
    ctx = BuildContext(path, src.decode("latin-1"), tuple(options.offload_arch), options.roc, make_rules)
    if kind == "make":
        convert_makefile(ctx)
    elif kind == "cmake":
        convert_cmake(ctx, cmake_rules)
    else:
        raise ValueError(f"unknown build file kind {kind!r}")
    return ctx.result(src), ctx.fired


def convert_build_file(src: bytes, options: ConvertOptions = ConvertOptions(), path: str = "Makefile") -> FileResult:
    """Convert one build file, its kind told by its name (`Makefile`, `*.mk`, `CMakeLists.txt`, `*.cmake`)."""
    kind = build_file_kind(path)
    if kind is None:
        raise ValueError(f"{path}: not a build file hipport knows")
    return convert_build_text(src, kind, options, path)[0]
