"""The board design on Verilator with a simulated serial line, driven by the driver's own
host-link code (``driver/backends/seriallink.py`` and the ``board`` backend).

:func:`run_on_board_sim` builds :class:`~hw.board.soc.BoardSoC` (on-chip DRAM, or LiteDRAM
with the behavioural SDRAM chip of :mod:`.sdram_model` on its pins; UART bridge) and runs
images through ``BoardBackend(SerialLink(port))`` in a cocotb bridge thread, where
``port`` is :class:`SimSerialPort`: pyserial's ``write``/``read``/``reset_input_buffer`` on the
design's ``rx``/``tx`` pins, bit by bit (8N1, ``divisor`` cycles per bit).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from isa.config import VTAConfig
from isa.image import ProgramImage, save_image

from ..toolchain import REPO_ROOT

__all__ = ["board_verilog", "run_on_board_sim", "SIM_DIVISOR", "TOPLEVEL", "BOARD_SIM_BYTES"]

TOPLEVEL = "vta_board"
#: Clock cycles per bit on the simulated line (the receiver's minimum is 4).
SIM_DIVISOR = 4
CLOCK_NS = 10
#: The DRAM of the simulated SDRAM board (``--link board-sim`` and the tests share one build):
#: enough for the conformance vectors and the digits CNN on ``small``.
BOARD_SIM_BYTES = 64 << 10


def _sdram_board(cfg: VTAConfig, mem_bytes: int, divisor: int):
    """The SDRAM board design with the behavioural chip on its SDRAM pins; the chip model's
    ``violation``/``violation_cycle`` are ports of the simulation top. The chip is clocked on
    the falling edge, as on the board (whose SDRAM clock pin is the inverted core clock)."""
    from amaranth.hdl import ClockDomain, ClockSignal, DomainRenamer, Module, ResetSignal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from .sdram_gen import chip_timings, sdram_geometry
    from .sdram_model import SdramChipModel, Violation
    from .soc import BoardSoC

    clock_hz = round(1e9 / CLOCK_NS)
    geo = sdram_geometry(clock_hz)
    row_bytes = geo.nbanks * geo.ncols * geo.chip_bits // 8
    rows = 1 << max(0, (-(-mem_bytes // row_bytes) - 1).bit_length())

    class SdramBoardSim(wiring.Component):
        def __init__(self):
            super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "leds": Out(3),
                              "violation": Out(range(len(Violation))),
                              "violation_cycle": Out(32), "mem_ready": Out(1)})

        def elaborate(self, platform):
            m = Module()
            m.submodules.soc = soc = BoardSoC(cfg, mem_bytes=mem_bytes, divisor=divisor,
                                              idle_timeout=200 * divisor, clock_hz=clock_hz,
                                              memory="sdram")
            m.domains.chip = cd = ClockDomain("chip", clk_edge="neg", local=True)
            m.d.comb += [cd.clk.eq(ClockSignal()), cd.rst.eq(ResetSignal())]
            chip = SdramChipModel(chip_timings(clock_hz), nbanks=geo.nbanks, rows=rows,
                                  ncols=geo.ncols)
            m.submodules.chip = DomainRenamer("chip")(chip)
            wiring.connect(m, soc.sdram, chip.pins)
            m.d.comb += [soc.rx.eq(self.rx), self.tx.eq(soc.tx), self.leds.eq(soc.leds),
                         self.violation.eq(chip.violation), self.mem_ready.eq(soc.mem_ready),
                         self.violation_cycle.eq(chip.violation_cycle)]
            return m

    return SdramBoardSim()


@lru_cache(maxsize=4)
def board_verilog(cfg: VTAConfig, mem_bytes: int, divisor: int = SIM_DIVISOR,
                  memory: str = "onchip") -> str:
    """The simulation top: the board design on its serial pins; with ``memory="sdram"``
    LiteDRAM's Verilog follows and the chip model sits on the SDRAM pins."""
    from amaranth.back import verilog

    from .soc import BoardSoC
    if memory == "sdram":
        from .sdram_gen import sdram_verilog
        top = _sdram_board(cfg, mem_bytes, divisor)
        text = verilog.convert(top, name=TOPLEVEL, emit_src=False)
        return text + "\n" + sdram_verilog(round(1e9 / CLOCK_NS))
    soc = BoardSoC(cfg, mem_bytes=mem_bytes, divisor=divisor, idle_timeout=200 * divisor,
                   clock_hz=round(1e9 / CLOCK_NS))
    return verilog.convert(soc, name=TOPLEVEL, emit_src=False)


def run_on_board_sim(images, *, mem_bytes: int, timeout: float = 600.0,
                     memory: str = "onchip") -> list[dict]:
    """Run ``images`` (one configuration) on the simulated board; one dict per image with
    ``dram``, ``cycles`` and the counters, or ``error``/``code``/``index`` for a DeviceError.
    With ``memory="sdram"`` a run the chip model caught breaking a rule has ``sdram_violation``
    (the :class:`~hw.board.sdram_model.Violation` name) and ``sdram_violation_cycle``."""
    from cocotb_tools.runner import get_runner

    from ..rtlsim import build_verilog

    images = list(images)
    cfg = images[0].config
    folder = build_verilog(board_verilog(cfg, mem_bytes, memory=memory), TOPLEVEL,
                           f"{cfg.key}-{memory}-{mem_bytes}")
    tmp = Path(tempfile.mkdtemp(prefix="vta-board-"))
    try:
        jobs = []
        for i, image in enumerate(images):
            save_image(tmp / f"in{i}.npz", image)
            jobs.append({"image": str(tmp / f"in{i}.npz"), "out": str(tmp / f"out{i}.npz"),
                         "timeout": timeout})
        (tmp / "jobs.json").write_text(json.dumps(jobs))
        env = {"VTA_BOARD_SIM_JOBS": str(tmp / "jobs.json"), "VTA_BOARD_SIM_DIVISOR":
               str(SIM_DIVISOR), "VTA_BOARD_SIM_SDRAM": "1" if memory == "sdram" else "",
               "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
               "COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "WARNING")}
        get_runner("verilator").test(test_module="hw.board.cocotb_board", hdl_toplevel=TOPLEVEL,
                                     hdl_toplevel_lang="verilog", build_dir=folder,
                                     test_dir=tmp, extra_env=env,
                                     results_xml=str(tmp / "results.xml"),
                                     log_file=tmp / "sim.log")
        out = []
        for job in jobs:
            if not Path(job["out"]).exists():
                raise RuntimeError("the board simulation produced no result:\n"
                                   + (tmp / "sim.log").read_text()[-3000:])
            r = np.load(job["out"])
            out.append({k: r[k] for k in r.files})
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
