"""The board design on Verilator with a simulated serial line, driven by the driver's own
host-link code (``driver/backends/seriallink.py`` and the ``board`` backend).

:func:`run_on_board_sim` builds :class:`~hw.board.soc.BoardSoC` (on-chip DRAM, UART bridge)
and runs images through ``BoardBackend(SerialLink(port))`` in a cocotb bridge thread, where
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

__all__ = ["board_verilog", "run_on_board_sim", "SIM_DIVISOR", "TOPLEVEL"]

TOPLEVEL = "vta_board"
#: Clock cycles per bit on the simulated line (the receiver's minimum is 4).
SIM_DIVISOR = 4
CLOCK_NS = 10


@lru_cache(maxsize=4)
def board_verilog(cfg: VTAConfig, mem_bytes: int, divisor: int = SIM_DIVISOR) -> str:
    from amaranth.back import verilog

    from .soc import BoardSoC
    soc = BoardSoC(cfg, mem_bytes=mem_bytes, divisor=divisor, idle_timeout=200 * divisor,
                   clock_hz=round(1e9 / CLOCK_NS))
    return verilog.convert(soc, name=TOPLEVEL, emit_src=False)


def run_on_board_sim(images, *, mem_bytes: int, timeout: float = 600.0) -> list[dict]:
    """Run ``images`` (one configuration) on the simulated board; one dict per image with
    ``dram``, ``cycles`` and the counters, or ``error``/``code``/``index`` for a DeviceError."""
    from cocotb_tools.runner import get_runner

    from ..rtlsim import build_verilog

    images = list(images)
    cfg = images[0].config
    folder = build_verilog(board_verilog(cfg, mem_bytes), TOPLEVEL, f"{cfg.key}-{mem_bytes}")
    tmp = Path(tempfile.mkdtemp(prefix="vta-board-"))
    try:
        jobs = []
        for i, image in enumerate(images):
            save_image(tmp / f"in{i}.npz", image)
            jobs.append({"image": str(tmp / f"in{i}.npz"), "out": str(tmp / f"out{i}.npz"),
                         "timeout": timeout})
        (tmp / "jobs.json").write_text(json.dumps(jobs))
        env = {"VTA_BOARD_SIM_JOBS": str(tmp / "jobs.json"), "VTA_BOARD_SIM_DIVISOR":
               str(SIM_DIVISOR),
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
