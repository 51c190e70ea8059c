"""The screening model against a real synthesis (Yosys synth_ecp5 of the tiny core: about a
minute), the block-RAM count against Yosys' mapping, and the shared-synthesis rule."""

import os

import pytest

from designspace.cache import Cache
from designspace.devices import DEVICES
from designspace.model import ScreeningModel, dp16kd_count, shape_of
from designspace.sweep import HW_NEUTRAL_KEYS, _samples, synth_task
from designspace.synth import SynthesisError, finished_synthesis, resources, tool_path
from isa.config import load_config


def _tools_or_skip():
    try:
        tool_path("yosys")
    except SynthesisError as exc:
        if os.environ.get("CI"):        # `make` installs the tools: missing means broken
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def _calibration_rtl_is_current() -> bool:
    """Whether the shipped calibration's syntheses are of today's Verilog (each run names the
    SHA-256 of the Verilog it synthesised; one run is checked)."""
    from designspace.sweep import load_calibration, verilog_task
    from isa.config import VTAConfig
    run = next((r for r in load_calibration() if "verilog_sha256" in r), None)
    if run is None:
        return False
    neutral = {k: VTAConfig().to_dict()[k] for k in HW_NEUTRAL_KEYS}   # no effect on the RTL
    return verilog_task({**run["point"], **neutral})["sha256"] == run["verilog_sha256"]


def test_model_against_a_real_synthesis_of_tiny(tmp_path):
    _tools_or_skip()
    if not _calibration_rtl_is_current():
        # Not a model error: the RTL changed since the calibration's syntheses.
        pytest.xfail("designspace/calibration.json was synthesised from another RTL: refresh "
                     "it (make sweep, then python -m designspace.calibrate)")
    from designspace.space import CONFIG_KEYS
    cfg = load_config("tiny")
    d = cfg.to_dict()
    d["LOG_BLOCK_IN"] = d["LOG_BLOCK_OUT"] = d.pop("LOG_BLOCK")
    real = synth_task({k: d[k] for k in CONFIG_KEYS}, str(tmp_path))
    used = resources(real["cells"])
    assert used["LUT4"] > 1000 and used["FF"] > 1000 and used["MULT18X18D"] > 0
    # Block RAM: exactly the memories of the core as Yosys maps them.
    assert used["DP16KD"] == dp16kd_count(cfg)
    # The other resources: the model fitted without tiny's GEMM shape predicts it within the
    # error it reports for itself (leave-one-shape-out over the shipped calibration).
    samples = _samples(Cache(None))
    others = [s for s in samples if shape_of(s.config) != shape_of(cfg)]
    assert len(others) >= 2, "designspace/calibration.json must hold other runs than tiny"
    reported = ScreeningModel(samples).errors()
    pred = ScreeningModel(others).predict(cfg)
    for key in ("LUT4", "FF", "MULT18X18D"):
        err = abs(pred[key] - used[key]) / used[key]
        assert err <= reported[key]["max"] + 0.05, (key, pred[key], used[key], reported[key])
    assert DEVICES["LFE5U-25F"].fits(used)
    # The netlist is recorded as finished, so nextpnr may reuse it instead of synthesising.
    assert finished_synthesis(tmp_path) == real
    (tmp_path / "core.json").unlink()
    assert finished_synthesis(tmp_path) is None


def test_dp16kd_count_matches_the_shipped_syntheses():
    samples = _samples(Cache(None))
    assert samples
    for s in samples:
        assert dp16kd_count(s.config) == s.resources["DP16KD"], s.config


def test_hw_neutral_keys_do_not_change_the_verilog():
    from hw.verilog import core_verilog
    tiny = load_config("tiny")
    assert set(HW_NEUTRAL_KEYS) == {"MEM_LATENCY", "TARGET_MHZ"}
    other = tiny.replace(mem_latency=tiny.mem_latency + 7, target_mhz=tiny.target_mhz // 2)
    assert core_verilog(other) == core_verilog(tiny)


def test_tools_run_at_niceness_10_not_stacked_on_a_niced_sweep():
    import subprocess
    import sys
    from designspace.synth import TOOL_NICENESS, _nice_prefix
    here = os.nice(0)
    prefix = _nice_prefix()
    assert (prefix[1:] == ["-n", str(TOOL_NICENESS - here)]) if here < TOOL_NICENESS \
        else prefix == []
    # A sweep started under `nice` (niceness 10 already): the tools are not pushed to 19.
    code = "from designspace.synth import _nice_prefix; print(_nice_prefix())"
    out = subprocess.run(["nice", "-n", str(max(0, TOOL_NICENESS - here)), sys.executable,
                          "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_a_quiet_tool_failure_quotes_the_error_of_its_own_log(tmp_path):
    # `yosys -q -l yosys.log` prints nothing and keeps its ERROR line in yosys.log (the case of
    # Yosys 0.70's ABC9 assertion on one sweep point): the message must still say what failed.
    import sys
    from designspace.synth import _run
    script = ("open('yosys.log','w').write('2.46 ABC\\nERROR: Assert failed in rtlil.cc\\n');"
              "raise SystemExit(1)")
    with pytest.raises(SynthesisError, match=r"status 1: ERROR: Assert failed in rtlil\.cc "
                                             r"\(log: .*yosys\.log\)"):
        _run([sys.executable, "-c", script], tmp_path, 30, "Yosys", tmp_path / "yosys.out")
