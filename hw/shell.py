"""The FPGA top: the core with an AXI4-Lite register slave and an AXI4 memory master."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from .axi import AxiLiteSignature, AxiMaster, AxiSignature
from .core import COUNTERS, VTACore
from .csr import ControlRegisters
from .memport import ADDR_BITS

__all__ = ["VTAShell"]


class VTAShell(wiring.Component):
    """``s_axil``: the host's register port (:data:`hw.csr.REGISTERS`); ``m_axi``: memory.

    Adds no latency to the core's memory port (the AXI master is combinational); a launch
    written over AXI4-Lite reaches the core one cycle after the write handshake.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            "s_axil": In(AxiLiteSignature()),
            "m_axi": Out(AxiSignature(addr_width=ADDR_BITS, data_width=cfg.bus_width)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = VTACore(self._cfg)
        m.submodules.csr = csr = ControlRegisters(self._cfg)
        m.submodules.axi = axi = AxiMaster(self._cfg)
        wiring.connect(m, wiring.flipped(self.s_axil), csr.bus)
        wiring.connect(m, core.mem, axi.port)
        wiring.connect(m, axi.axi, wiring.flipped(self.m_axi))
        m.d.comb += [core.launch.eq(csr.launch), core.insn_addr.eq(csr.insn_addr),
                     core.insn_count.eq(csr.insn_count), core.dram_size.eq(csr.dram_size)]
        for name in ("running", "done", "error_code", "error_index", "cycles", *COUNTERS):
            m.d.comb += getattr(csr, name).eq(getattr(core, name))
        return m
