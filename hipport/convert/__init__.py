"""`hipport convert`: CUDA sources to HIP. `engine` converts one file's bytes through the passes (`macros`,
`callsites`, `launch`, `renames`, `includes`) over a shared `context`; `runner` reads, converts and writes many
files; `summary` tallies the results. Nothing here imports the audit or the command line.

The names below are imported on first use, not with the package: a module of the package (the build-file
converters, `verify`) must be importable without every pass of the engine."""

__all__ = ["ConvertOptions", "convert_source"]


def __getattr__(name: str):
    if name == "ConvertOptions":
        from hipport.convert import context as module
    elif name == "convert_source":
        from hipport.convert import engine as module
    else:
        raise AttributeError(f"module 'hipport.convert' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value  # found once; then an ordinary attribute
    return value
