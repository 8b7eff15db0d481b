"""`hipport compat`: one compatibility header, forwarding headers and build glue, so that a CUDA tree builds for AMD
unchanged. `plan` reads what the engine did to each file, `header` writes the headers, `glue` the CMake and Make
files."""
