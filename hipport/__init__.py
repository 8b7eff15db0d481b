"""hipport: port CUDA sources to HIP and flag what renaming alone cannot fix."""

__version__ = "0.1.0"
