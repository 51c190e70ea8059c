"""The FPGA shell on Verilator: AXI4-Lite control registers and the AXI4 master, against
cocotbext-axi's AxiLiteMaster and AxiRam, with and without back-pressure (random pauses, so
random latency of the answers) on every channel; several transactions in flight."""

import json
import os

import numpy as np
import pytest

from hw.axi import AxiMaster
from hw.toolchain import REPO_ROOT
from isa.config import load_config
from isa.encoding import Finish, Load, MemType, Store, encode_program
from isa.errors import ErrorCode
from isa.image import ProgramImage, load_image, save_image
from sim.functional import run_image as run_functional

from .conftest import VECTORS, require_verilator


def crossing_image():
    """LOAD ACC and STORE whose DRAM spans cross a 4 KiB boundary (small configuration)."""
    cfg = load_config("small")
    rng = np.random.default_rng(4)
    dram = np.zeros(3 * 4096, np.uint8)
    acc_base = 3400 // cfg.acc_elem_bytes            # 100 ACC elements: bytes 3392 .. 4992
    n = 100
    dram[acc_base * cfg.acc_elem_bytes:(acc_base + n) * cfg.acc_elem_bytes] = \
        rng.integers(0, 256, n * cfg.acc_elem_bytes, dtype=np.uint8)
    out_base = 7900 // cfg.out_elem_bytes            # stored across 8192
    insns = [
        Load(memory_type=MemType.ACC, sram_base=5, dram_base=acc_base, y_size=1, x_size=n,
             x_stride=n, push_next=True),
        Store(sram_base=5, dram_base=out_base, y_size=2, x_size=n // 2, x_stride=n // 2 + 3,
              pop_prev=True, push_prev=True),
        Load(memory_type=MemType.UOP, x_size=0, pop_next=True),
        Finish(),
    ]
    code = encode_program(insns, cfg)
    dram[10240:10240 + len(code)] = np.frombuffer(code, np.uint8)
    return ProgramImage(dram, 10240, len(insns), cfg)


def streaming_image():
    """Long LOAD INP and WGT and a long STORE (small configuration): many bursts in flight."""
    cfg = load_config("small")
    rng = np.random.default_rng(5)
    dram = rng.integers(0, 256, 24 * 4096, dtype=np.uint8)
    insns = [
        Load(memory_type=MemType.INP, sram_base=0, dram_base=7, y_size=1, x_size=250,
             x_stride=250),
        Load(memory_type=MemType.WGT, sram_base=0, dram_base=3, y_size=4, x_size=30,
             x_stride=35),
        Load(memory_type=MemType.ACC, sram_base=0, dram_base=1000 // cfg.acc_elem_bytes,
             y_size=1, x_size=120, x_stride=120, push_next=True),
        Store(sram_base=0, dram_base=16 * 4096 // cfg.out_elem_bytes + 3, y_size=3,
              x_size=40, x_stride=43, pop_prev=True, push_prev=True),
        Load(memory_type=MemType.UOP, x_size=0, pop_next=True),
        Finish(),
    ]
    code = encode_program(insns, cfg)
    dram[23 * 4096:23 * 4096 + len(code)] = np.frombuffer(code, np.uint8)
    return ProgramImage(dram, 23 * 4096, len(insns), cfg)


def run_shell(images, tmp_path, backpressure):
    require_verilator()
    from cocotb_tools.runner import get_runner

    from hw.rtlsim import build_verilog
    from hw.verilog import shell_verilog
    cfg = images[0].config
    folder = build_verilog(shell_verilog(cfg), "vta_shell", cfg.key)
    jobs = []
    for i, image in enumerate(images):
        save_image(tmp_path / f"in{i}.npz", image)
        jobs.append({"image": str(tmp_path / f"in{i}.npz"), "out": str(tmp_path / f"out{i}.npz")})
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    env = {"VTA_SHELL_JOBS": str(tmp_path / "jobs.json"),
           "VTA_SHELL_BACKPRESSURE": "1" if backpressure else "0",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
           "COCOTB_LOG_LEVEL": "WARNING"}
    get_runner("verilator").test(test_module="tests.hw.cocotb_shell", hdl_toplevel="vta_shell",
                                 hdl_toplevel_lang="verilog", build_dir=folder,
                                 test_dir=tmp_path, extra_env=env,
                                 results_xml=str(tmp_path / "results.xml"),
                                 log_file=tmp_path / "sim.log")
    outs = []
    for job in jobs:
        assert os.path.exists(job["out"]), (tmp_path / "sim.log").read_text()[-3000:]
        outs.append(dict(np.load(job["out"])))
    return outs


@pytest.mark.parametrize("backpressure", [False, True], ids=["no-backpressure", "backpressure"])
def test_shell_runs_programs_over_axi(tmp_path, backpressure):
    vector = VECTORS / "small-pub-conv3x3-pad1-relu.in.npz"
    images = [load_image(vector), crossing_image()]
    from isa.conformance import conformance_programs
    bad = next(p for p in conformance_programs("small") if p.name == "bad-deadlock-load-compute")
    images.append(bad.image)
    images.append(streaming_image())
    # one AxiRam for all: give them the same DRAM size
    size = max(im.dram.size for im in images)
    images = [ProgramImage(np.pad(im.dram, (0, size - im.dram.size)), im.insn_addr,
                           im.insn_count, im.config) for im in images]
    conv, crossing, deadlock, streaming = run_shell(images, tmp_path, backpressure)

    expected = np.load(str(vector).replace(".in.npz", ".expect.npz"))["dram"]
    assert conv["ctrl"] & 0b110 == 0b010 and conv["error_code"] == 0
    assert np.array_equal(conv["dram"][:expected.size], expected)
    assert conv["cycles"] > 0 and conv["compute_busy"] > 0

    assert crossing["error_code"] == 0
    assert np.array_equal(crossing["dram"], run_functional(images[1]).dram)

    assert deadlock["ctrl"] & 0b110 == 0b110
    assert (deadlock["error_code"], deadlock["error_index"]) == \
        (ErrorCode.DEADLOCK, bad.expected_index)
    # several AXI transactions in flight in each direction, answered in order
    assert streaming["error_code"] == 0
    assert np.array_equal(streaming["dram"], run_functional(images[3]).dram)
    assert streaming["most_reads"] > 1 and streaming["most_writes"] > 1
    assert max(streaming["most_reads"], streaming["most_writes"]) <= \
        images[0].config.mem_outstanding
    for out in (conv, crossing, deadlock, streaming):
        assert json.loads(str(out["violations"])) == [], "a burst crossed a 4 KiB boundary"
        assert 0 < out["max_len"] <= images[0].config.max_burst_beats


def test_axi_master_rejects_bursts_that_could_cross_4k():
    cfg = load_config("small").replace(max_burst_beats=256, log_bus_width=9)
    with pytest.raises(ValueError, match="must divide 4096"):
        AxiMaster(cfg)
