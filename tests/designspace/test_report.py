"""The report on an included configuration whose TARGET_MHZ caps its clock below its Fmax: what
it would give at its Fmax, from its own cycles (screening model only, no FPGA tools)."""

import json
import re

from designspace.cache import Cache
from designspace.report import _clock_note, write_results
from designspace.runners import LocalRunner
from designspace.space import load_space
from designspace.sweep import run_sweep
from designspace.workloads import get_workload
from isa.config import load_config

SPACE = """
base = "small"
include = ["@BIG@"]
[params]
LOG_BLOCK_IN = 3                # ecp5-large's GEMM shape and buffers: faster than the big
LOG_BLOCK_OUT = 3               # one at its TARGET_MHZ, slower at its Fmax
LOG_INP_BUFF_SIZE = 12
LOG_WGT_BUFF_SIZE = 15
LOG_ACC_BUFF_SIZE = 14
LOG_UOP_BUFF_SIZE = 11
TARGET_MHZ = 200
[targets]
devices = ["LFE5U-85F"]
[workloads]
names = ["mlp"]
spatial_div = 14
[synthesis]
fmax = "none"
"""


def test_a_capped_clock_is_reported_with_the_throughput_at_fmax(tmp_path):
    # ecp5-large's GEMM with larger buffers (ecp5-large's until session 14: the MLP
    # reloads less) and its clock capped at 30 MHz, far below any model Fmax: the premises
    # below (the grid point beats it capped, it beats the grid point at its Fmax) then hold
    # whatever designspace/calibration.json says
    cfg = load_config("ecp5-large").to_dict()
    cfg.update(LOG_INP_BUFF_SIZE=14, LOG_WGT_BUFF_SIZE=15, LOG_ACC_BUFF_SIZE=16,
               LOG_UOP_BUFF_SIZE=14, TARGET_MHZ=30)
    large_path = tmp_path / "big.json"
    large_path.write_text(json.dumps(cfg))
    path = tmp_path / "s.toml"
    path.write_text(SPACE.replace("@BIG@", str(large_path)))
    result = run_sweep(load_space(path), cache=Cache(None), runner=LocalRunner(1),
                       synthesis="model", progress=False, log=lambda m: None)
    rows = {r["name"]: r for r in result.rows}
    large = rows.pop(str(large_path))
    (grid,) = rows.values()
    target = 30
    assert large["clock_mhz"] == target < large["fmax_mhz"]      # its own TARGET_MHZ
    assert grid["clock_mhz"] == grid["fmax_mhz"] < 200             # runs at its Fmax
    report = (write_results(result, tmp_path / "out", plots=False) / "report.md").read_text()
    (line,) = [ln for ln in report.splitlines() if ln.startswith(f"- `{large_path}`")]
    w = "mlp"
    expected = get_workload(w).macs(14) / large[f"cycles_{w}"] * large["fmax_mhz"] / 1e3
    got = float(re.search(r"at its Fmax it would give ([0-9.e+-]+) GMAC/s", line).group(1))
    assert abs(got - expected) <= 1e-3 * expected, (line, expected)
    assert f"TARGET_MHZ of {target:g} MHz, below its Fmax of {large['fmax_mhz']:g} MHz" in line
    # The grid point is the 85F's pick (the big one is capped at its TARGET_MHZ) and the big one
    # at its Fmax beats it: the report says so, naming the pick.
    assert grid["throughput_gmacs"] > large["throughput_gmacs"]
    assert got > grid["throughput_gmacs"]
    assert (f"more than the pick of the LFE5U-85F ({grid['name']}, "
            f"{grid['throughput_gmacs']:.4g})") in line, line
    assert _clock_note(result, grid) == ""                           # not capped: nothing
