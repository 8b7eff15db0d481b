"""`hipport convert`: CUDA sources to HIP. `engine` converts one file's bytes through the passes (`macros`,
`callsites`, `launch`, `renames`, `includes`) over a shared `context`; `runner` reads, converts and writes many
files; `summary` tallies the results. Nothing here imports the audit or the command line.

The names below are imported on first use, not with the package: a module of the package (the build-file
converters, `verify`) must be importable without every pass of the engine."""

from hipport.lazy import lazy_names

__all__ = ["ConvertOptions", "convert_source"]


__getattr__ = lazy_names(__name__, {"ConvertOptions": "hipport.convert.context",
                                     "convert_source": "hipport.convert.engine"}, globals())
