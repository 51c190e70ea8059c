"""Cross-check the cycle simulator against the RTL (the driver's ``rtl`` backend).

The Verilated harness cannot dump per-cycle state, but it can stop after any number of
cycles and report the event counters at that point. So the first divergence is found by
bisection on the cycle budget: the first cycle *n* after which some counter differs names the
cycle and the module (the counter's owner); the cycle model's state at *n* is printed beside.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from isa.errors import ErrorCode
from isa.image import ProgramImage, load_image

from .timing.core import COUNTERS, Core

__all__ = ["crosscheck", "Crosscheck", "rtl_prefix", "model_prefix", "describe_state"]


@dataclass
class Crosscheck:
    """The outcome: ``same`` or the first divergence (``cycle``, differing ``counters``)."""

    same: bool
    rtl: dict
    sim: dict
    cycle: int | None = None
    counters: dict = field(default_factory=dict)   # name -> (rtl, sim) at ``cycle`` + 1
    state: str = ""

    def report(self) -> str:
        lines = [f"rtl: {self.rtl}", f"sim: {self.sim}"]
        if self.same:
            lines.append("identical: cycles, error and every counter agree")
        else:
            where = "" if self.cycle is None else f" in cycle {self.cycle}"
            lines.append(f"first divergence{where}: "
                         + ", ".join(f"{k} rtl {a} sim {b}" for k, (a, b) in
                                     self.counters.items()))
            if self.state:
                lines.append(f"cycle model state in that cycle: {self.state}")
        return "\n".join(lines)


def rtl_prefix(image: ProgramImage, cycles: int) -> dict:
    """Run the RTL harness for at most ``cycles`` cycles; its counters, cycles and status."""
    from driver.backends.rtl import build_harness
    exe = build_harness(image.config)
    cfg = image.config
    with tempfile.TemporaryDirectory(prefix="vta-xcheck-") as tmp:
        src, dst = Path(tmp) / "image.bin", Path(tmp) / "result.bin"
        header = np.array([image.dram.size, image.insn_addr, image.insn_count,
                           cfg.mem_latency, cfg.max_burst_beats, cfg.mem_outstanding,
                           cfg.mem_beat_interval, cycles], "<u8")
        src.write_bytes(b"VTAIMG2\0" + header.tobytes() + image.dram.tobytes())
        subprocess.run([str(exe), str(src), str(dst)], check=True)
        raw = dst.read_bytes()
    words = np.frombuffer(raw, "<u8", count=6, offset=8)
    done, cyc, code, index, _bursts, n = (int(w) for w in words)
    counters = dict(zip(COUNTERS, (int(v) for v in np.frombuffer(raw, "<u8", n, 56))))
    return {"done": bool(done), "cycles": cyc, "error": ErrorCode(code).name,
            "error_index": index, "counters": counters}


def model_prefix(image: ProgramImage, cycles: int) -> tuple[dict, Core]:
    """The cycle model run for at most ``cycles`` cycles, in the shape of :func:`rtl_prefix`."""
    core = Core(image.config, image.dram.copy(), image.insn_addr, image.insn_count)
    while not core.done and core.t < cycles:
        core.step()
    return ({"done": core.done, "cycles": core.t, "error": core.error.name,
             "error_index": core.error_index if core.error else 0,
             "counters": dict(core.counters)}, core)


def describe_state(core: Core) -> str:
    f, ld, cp, st = core.fetch, core.load, core.compute, core.store
    names = {"fetch": ("IDLE", "RUN", "END", "STOPPED"), "load": ("IDLE", "EXEC", "RETIRE"),
             "compute": ("IDLE", "LOADING", "RUN", "RETIRE"),
             "store": ("IDLE", "ROW", "WAIT", "RETIRE")}
    parts = [f"fetch {names['fetch'][f.fsm]} at instruction {f.index} ({len(f.buf)} buffered)"]
    for mod in (ld, cp, st):
        parts.append(f"{mod.name} {names[mod.name][mod.fsm]} (instruction {mod.index})")
    parts.append(f"tokens l2g/g2l/g2s/s2g {core.tokens.count}")
    parts.append(f"memory port {'busy for ' + ('fetch', 'load', 'compute', 'store')[core.arb.grant] if core.arb.busy else 'idle'}")
    return "; ".join(parts)


def _key(r: dict) -> tuple:
    return (r["done"], r["cycles"], r["error"], r["error_index"],
            tuple(sorted(r["counters"].items())))


def crosscheck(image, *, limit: int = 1 << 40) -> Crosscheck:
    """Run ``image`` on both; on a difference, bisect for the first cycle that differs."""
    image = image if isinstance(image, ProgramImage) else load_image(image)
    rtl = rtl_prefix(image, limit)
    sim, _ = model_prefix(image, limit)
    if _key(rtl) == _key(sim):
        return Crosscheck(True, rtl, sim)
    lo, hi = 0, max(rtl["cycles"], sim["cycles"]) + 1   # prefixes of lo cycles agree
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _key(rtl_prefix(image, mid)) == _key(model_prefix(image, mid)[0]):
            lo = mid
        else:
            hi = mid
    r, (s, core) = rtl_prefix(image, hi), model_prefix(image, hi)
    diff = {k: (r["counters"][k], s["counters"][k]) for k in COUNTERS
            if r["counters"][k] != s["counters"][k]}
    for k in ("done", "error", "error_index"):
        if r[k] != s[k]:
            diff[k] = (r[k], s[k])
    _, before = model_prefix(image, hi - 1)
    return Crosscheck(False, rtl, sim, hi - 1, diff, describe_state(before))
