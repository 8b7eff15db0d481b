"""`hipport convert`: CUDA sources to HIP. `engine` converts one file's bytes through the passes (`macros`,
`callsites`, `launch`, `renames`, `includes`) over a shared `context`; `runner` reads, converts and writes many
files; `summary` tallies the results. Nothing here imports the audit or the command line."""

from hipport.convert.context import ConvertOptions
from hipport.convert.engine import convert_source

__all__ = ["ConvertOptions", "convert_source"]
