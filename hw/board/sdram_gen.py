"""The SDRAM controller of the ULX3S board design: LiteDRAM's SDR PHY and controller in a small
Migen top, converted to Verilog for :class:`~hw.board.sdram.SdramMemory` to instantiate.

LiteDRAM's standalone generator only emits DDR PHYs, so this module builds the SDR core itself:
``litedram.phy.GENSDRPHY`` (1:1, one DFI phase), ``LiteDRAMController`` and its crossbar, one
native user port of the chip's 16-bit width (the adapter packs the words of a wider bus itself,
one command a cycle: LiteDRAM's down-converter spends a cycle more per wide word), and a hardware initialisation sequencer (LiteDRAM leaves that to a CPU's firmware; this design has
none). The sequencer replays ``litedram.init``'s own SDR sequence on the DFI, then hands the DFI
to the controller and raises ``init_done``.

Ports of the Verilog module ``TOP`` (all in the one clock domain ``sys_clk``/``sys_rst``):

* the chip side, each pad registered in the PHY: ``sdram_a``, ``sdram_ba``, ``sdram_cs_n``,
  ``sdram_cke``, ``sdram_ras_n``, ``sdram_cas_n``, ``sdram_we_n``, ``sdram_dm``; the DQ bus split
  into ``sdram_dq_o``, ``sdram_dq_oe`` and ``sdram_dq_i`` (the board top puts the tristate
  buffer on the pins; the simulation connects the chip model);
* the user side, LiteDRAM's native port in words of the chip's 16 bits: ``cmd_valid``,
  ``cmd_ready``, ``cmd_we``, ``cmd_addr``; ``wdata_valid``, ``wdata_ready``, ``wdata_data``,
  ``wdata_we`` (byte enables); ``rdata_valid``, ``rdata_ready``, ``rdata_data``; ``init_done``.

Needs the ``sdram`` extra (litedram, litex, migen).
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["TOP", "SdramGeometry", "sdram_geometry", "sdram_verilog", "DEFAULT_MODULE",
           "POWER_UP_US"]

TOP = "vta_sdram_ctrl"
#: The ULX3S's 32 MB chip (boards carry the MT48LC16M16A2 or a compatible IS42S16160).
DEFAULT_MODULE = "MT48LC16M16"
#: Power-up wait with CKE high before the first command (SDR SDRAM datasheets: 100 µs).
POWER_UP_US = 100.0


@dataclass(frozen=True)
class SdramGeometry:
    """The chip as the controller sees it, and the user port's address unit."""

    module: str
    nbanks: int
    nrows: int
    ncols: int
    chip_bits: int            # DQ width
    cl: int                   # CAS latency the PHY programs
    port_bits: int            # user-port word (the chip's DQ width)
    port_addr_bits: int

    @property
    def chip_bytes(self) -> int:
        return self.nbanks * self.nrows * self.ncols * self.chip_bits // 8


def _require():
    from isa.errors import Unavailable
    try:
        import litedram  # noqa: F401
        import migen  # noqa: F401
    except ImportError as exc:
        raise Unavailable(f"the SDRAM board design needs LiteDRAM ({exc}); install the "
                          f"'sdram' extra: pip install -e '.[sdram]'") from None


def _build(module_name: str, clk_hz: float):
    """The Migen top and its ports (name → signal)."""
    _require()
    from litedram import modules
    from litedram.core.controller import LiteDRAMController
    from litedram.core.crossbar import LiteDRAMCrossbar
    from litedram.init import cmds, get_sdram_phy_init_sequence
    from litedram.phy import GENSDRPHY
    from litex.build.io import SDRTristate
    from migen import (Cat, ClockDomain, If, Module, Record, Signal)

    chip = getattr(modules, module_name)(clk_hz, "1:1")
    geom, timing = chip.geom_settings, chip.timing_settings
    pad_layout = [("a", geom.addressbits), ("ba", geom.bankbits), ("cs_n", 1), ("cke", 1),
                  ("ras_n", 1), ("cas_n", 1), ("we_n", 1), ("dm", 2), ("dq", 16)]

    class Top(Module):
        def __init__(self):
            self.clock_domains.cd_sys = ClockDomain("sys")
            pads = Record(pad_layout)
            self.submodules.phy = phy = GENSDRPHY(pads, clk_hz)
            ports = {f"sdram_{n}": getattr(pads, n) for n, _ in pad_layout if n != "dq"}
            # The DQ tristates become registered o/oe/i ports (the timing of LiteX's inferred
            # SDRTristate: one register on each of o, oe and i).
            dq_o, dq_i, dq_oe = Signal(16), Signal(16), Signal()
            specials = phy._fragment.specials
            for special in [s for s in specials if isinstance(s, SDRTristate)]:
                specials.remove(special)
                bit = special.io.start
                self.sync += [dq_o[bit].eq(special.o), special.i.eq(dq_i[bit])]
                if bit == 0:
                    self.sync += dq_oe.eq(special.oe)
            ports.update(sdram_dq_o=dq_o, sdram_dq_oe=dq_oe, sdram_dq_i=dq_i)

            self.submodules.controller = ctl = LiteDRAMController(phy.settings, geom, timing,
                                                                  clk_hz)
            self.submodules.crossbar = xbar = LiteDRAMCrossbar(ctl.interface)
            port = xbar.get_port()
            for name, sig in (("cmd_valid", port.cmd.valid), ("cmd_ready", port.cmd.ready),
                              ("cmd_we", port.cmd.we), ("cmd_addr", port.cmd.addr),
                              ("wdata_valid", port.wdata.valid),
                              ("wdata_ready", port.wdata.ready),
                              ("wdata_data", port.wdata.data), ("wdata_we", port.wdata.we),
                              ("rdata_valid", port.rdata.valid),
                              ("rdata_ready", port.rdata.ready),
                              ("rdata_data", port.rdata.data)):
                ports[name] = sig
            self.comb += port.cmd.last.eq(1)

            # Initialisation: LiteDRAM's SDR sequence, each command followed by its delay in
            # cycles but at least the longest command-to-command time of the chip.
            sequence, _ = get_sdram_phy_init_sequence(phy.settings, timing)
            # (LiteDRAM's timing settings are in cycles already)
            settle = 2 + max(timing.tRFC or 0, timing.tRP, timing.tRCD, timing.tWR, timing.tRC)
            power_up = math.ceil(POWER_UP_US * clk_hz / 1e6)
            steps = []
            for _, addr, bank, cmd, delay in sequence:
                flags = set(cmd.split("|"))
                wait = max(delay, settle, power_up if "DFII_CONTROL_CKE" in flags else 0)
                steps.append((addr, bank, flags, wait))
            init_done = Signal()
            step = Signal(max=len(steps) + 1)
            count = Signal(max=max(w for *_, w in steps) + 2)
            issue = Signal()
            cke = Signal()
            p0 = phy.dfi.p0
            self.comb += p0.cke.eq(cke)
            self.comb += If(init_done, ctl.dfi.connect(phy.dfi, omit={"cke", "odt",
                                                                      "reset_n"}))
            for i, (addr, bank, flags, wait) in enumerate(steps):
                is_cmd = "DFII_COMMAND_CS" in flags
                self.comb += If(~init_done & (step == i) & issue, p0.address.eq(addr),
                                p0.bank.eq(bank),
                                p0.cs_n.eq(0 if is_cmd else 1),
                                p0.ras_n.eq(0 if "DFII_COMMAND_RAS" in flags else 1),
                                p0.cas_n.eq(0 if "DFII_COMMAND_CAS" in flags else 1),
                                p0.we_n.eq(0 if "DFII_COMMAND_WE" in flags else 1))
                self.sync += If((step == i) & issue, count.eq(wait),
                                If("DFII_CONTROL_CKE" in flags, cke.eq(1)))
            self.sync += [
                issue.eq(0),
                If(~init_done,
                   If(count != 0, count.eq(count - 1))
                   .Elif(~issue & (step == len(steps)), init_done.eq(1))
                   .Elif(~issue, issue.eq(1))
                   .Else(step.eq(step + 1))),
            ]
            ports["init_done"] = init_done
            self.ports = ports

    top = Top()
    settings = SdramGeometry(module_name, geom.bankbits and 2 ** geom.bankbits,
                             2 ** geom.rowbits, 2 ** geom.colbits, 16, top.phy.settings.cl,
                             16, len(top.ports["cmd_addr"]))
    return top, settings


@lru_cache(maxsize=8)
def sdram_geometry(clk_hz: float, module: str = DEFAULT_MODULE) -> SdramGeometry:
    return _build(module, clk_hz)[1]


@lru_cache(maxsize=8)
def sdram_verilog(clk_hz: float, module: str = DEFAULT_MODULE) -> str:
    """The Verilog of the Migen top (module ``TOP``) for a ``clk_hz`` system clock.

    Migen names signals in an order that depends on object addresses, so two processes emit
    different (equivalent) texts; the first text is kept in ``build/sdram/``, keyed by this
    file, the LiteX packages' versions and the arguments, so that the Verilator build of a
    design that includes it (keyed by its text) is reused."""
    from importlib.metadata import version

    from ..toolchain import build_dir

    _require()
    key = hashlib.sha256(repr((Path(__file__).read_text(), module, clk_hz,
                               [version(p) for p in ("litedram", "litex", "migen")]))
                         .encode()).hexdigest()[:16]
    path = build_dir("sdram") / f"{TOP}-{key}.v"
    if path.exists():
        return path.read_text()
    text = _convert(clk_hz, module)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)             # atomic: a concurrent builder writes an equivalent text
    return text


def _convert(clk_hz: float, module: str) -> str:
    from migen.fhdl.verilog import convert

    top, _ = _build(module, clk_hz)
    ios = set(top.ports.values()) | {top.cd_sys.clk, top.cd_sys.rst}
    for name, sig in top.ports.items():
        sig.name_override = name
    top.cd_sys.clk.name_override, top.cd_sys.rst.name_override = "sys_clk", "sys_rst"
    return str(convert(top, ios=ios, name=TOP))


def chip_timings(clk_hz: float, module: str = DEFAULT_MODULE):
    """The chip's datasheet minimums (LiteDRAM's module table) in cycles of ``clk_hz``, for the
    behavioural chip model to check the controller against."""
    _require()
    from litedram import modules

    from .sdram_model import ChipTimings

    cls = getattr(modules, module)
    sg = cls.speedgrade_timings["default"]
    rfc = sg.tRFC[1] if isinstance(sg.tRFC, tuple) else sg.tRFC
    # tRAS is missing for some chips in the table; SDR datasheets give 42–45 ns.
    return ChipTimings.from_ns(clk_hz, rcd=sg.tRCD, rp=sg.tRP, ras=sg.tRAS or 42, wr=sg.tWR,
                               rfc=rfc, refi=cls.technology_timings.tREFI)
