"""Hazard checks for `hipport audit`: one module per family of wave64 and atomics problems."""
