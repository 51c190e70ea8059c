"""The driver's board backend against the FPGA shell on Verilator: the register map of
isa/registers.py is the one the hardware implements (launch, done, errors, cycles, counters,
and the timeout diagnosis from the busy/stall counters)."""

import json
import os

import numpy as np

from hw.testprog import long_gemm_image
from hw.toolchain import REPO_ROOT
from isa.conformance import conformance_programs
from isa.errors import ErrorCode
from isa.image import ProgramImage, load_image, save_image
from isa.registers import COUNTERS

from .conftest import VECTORS, require_verilator


def test_board_backend_on_the_shell(tmp_path):
    require_verilator()
    from cocotb_tools.runner import get_runner

    from hw.rtlsim import build_verilog, run_images
    from hw.verilog import shell_verilog

    vector = VECTORS / "small-pub-conv3x3-pad1-relu.in.npz"
    conv = load_image(vector)
    bad = next(p for p in conformance_programs("small") if p.name == "bad-dram-store-just-past")
    slow = long_gemm_image("small", 20000)
    images = [conv, bad.image, slow]
    size = max(im.dram.size for im in images)
    # bad-dram-* programs check DRAM_SIZE, so that one keeps its own size
    cfg = conv.config
    folder = build_verilog(shell_verilog(cfg), "vta_shell", cfg.key)
    jobs = []
    for i, (image, timeout) in enumerate(zip(images, (120, 120, 0))):
        save_image(tmp_path / f"in{i}.npz", image)
        jobs.append({"image": str(tmp_path / f"in{i}.npz"), "out": str(tmp_path / f"out{i}.npz"),
                     "timeout": timeout})
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    env = {"VTA_BOARD_JOBS": str(tmp_path / "jobs.json"),
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
           "COCOTB_LOG_LEVEL": "WARNING"}
    get_runner("verilator").test(test_module="tests.hw.cocotb_shell_board",
                                 hdl_toplevel="vta_shell", hdl_toplevel_lang="verilog",
                                 build_dir=folder, test_dir=tmp_path, extra_env=env,
                                 results_xml=str(tmp_path / "results.xml"),
                                 log_file=tmp_path / "sim.log")
    outs = []
    for job in jobs:
        assert os.path.exists(job["out"]), (tmp_path / "sim.log").read_text()[-3000:]
        outs.append(dict(np.load(job["out"])))
    ok, error, timeout = outs
    assert size >= conv.dram.size

    # a run: DRAM, cycles and counters (AxiRam's timing is not the memory model's, so only
    # the micro-op counts equal those of the core's own bench)
    (rtl,) = run_images([conv])
    expected = np.load(str(vector).replace(".in.npz", ".expect.npz"))["dram"]
    assert np.array_equal(ok["dram"], expected)
    assert set(COUNTERS) <= set(ok) and int(ok["cycles"]) > 0
    assert int(ok["gemm_uops"]) == rtl.counters["gemm_uops"] > 0
    assert int(ok["alu_uops"]) == rtl.counters["alu_uops"] > 0
    assert all(int(ok[n]) > 0 for n in ("fetch_busy", "load_busy", "compute_busy",
                                        "store_busy", "mem_busy"))
    assert int(ok["cycles"]) > int(ok["compute_busy"])

    # an error: ERROR_CODE / ERROR_INDEX, the instruction named
    assert (int(error["code"]), int(error["index"])) == (bad.expected_error, bad.expected_index)
    assert bad.expected_error == ErrorCode.DRAM_RANGE
    assert "DRAM_RANGE" in str(error["error"]) and "Store(" in str(error["error"])

    # a timeout: the counters read twice say compute executes
    assert int(timeout["timeout"]) == 1
    assert "compute busy, executing (compute_busy advancing)" in str(timeout["error"])
    assert "load idle" in str(timeout["error"])
