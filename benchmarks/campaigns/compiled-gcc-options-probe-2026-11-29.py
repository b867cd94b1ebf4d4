"""Probe: ``compiled-block-cost-probe-2026-11-29b.py`` (verify blocks against a one-token step, eager and
compiled engines) with the compiled engine's C++ kernels built without
:data:`specdec.engine.compiling.GCC_REGISTER_OPTIONS` when given ``without``, with them otherwise. Run it
once each way, each in a fresh process: a first try timed two compiled engines side by side in one process,
the second built after switching the options off, and both had the options' costs.

    python benchmarks/campaigns/compiled-gcc-options-probe-2026-11-29.py [without]
"""

import runpy
import sys
from pathlib import Path

from specdec.engine import compiling

if sys.argv[1:] == ["without"]:
    compiling.gcc_options = dict  # inductor's own compiler options only
print("GCC options:", compiling.gcc_options(), flush=True)
runpy.run_path(str(Path(__file__).with_name("compiled-block-cost-probe-2026-11-29b.py")), run_name="__main__")
