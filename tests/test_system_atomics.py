"""rules/rocm/system_atomics.toml is what the real compilers generate (tools/gen_system_atomics.py), and the release
lookup `atomic-pcie` reads it through."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from hipport.releases import system_cas_loops
from needs import need

ROOT = Path(__file__).resolve().parents[1]


def test_the_data_is_what_the_compilers_generate():
    for release, tool in (("6.4", "rocm64-hipcc"), ("7.2", "rocm7-hipcc")):
        need(shutil.which(tool), f"the real ROCm {release} compiler `{tool}`",
             "as root: bash ../shared/tools/rocm_chroot.sh")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_system_atomics.py"), "--check"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr


def test_a_release_is_answered_only_from_a_release_compiled_with_at_or_below_it():
    # 6.4.3 expands min and max, 7.2.4 and/or/xor too (written by hand from the generated code, checked above)
    assert {"atomicMax_system", "atomicMin_system"} <= system_cas_loops((6, 4))
    assert "atomicOr_system" not in system_cas_loops((6, 4))
    assert {"atomicAnd_system", "atomicOr_system", "atomicXor_system"} <= system_cas_loops((7, 2))
    assert system_cas_loops((7, 3)) == system_cas_loops((7, 2))
    assert system_cas_loops((7, 0)) == frozenset()   # no 7.0 compiler was read
    assert system_cas_loops((6, 2)) == frozenset()
    assert "atomicAdd_system" not in system_cas_loops((7, 2))  # a hardware add: PCIe's fetch-add
