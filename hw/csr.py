"""Control and status registers of the core behind an AXI4-Lite slave."""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from .axi import AxiLiteSignature
from .core import COUNTERS

__all__ = ["ControlRegisters", "REGISTERS", "CSR_ID"]

#: Identification word at 0x7C ("VTA", register-map version 1).
CSR_ID = 0x56544101

#: Register map: byte offset -> (name, access). 32-bit registers.
REGISTERS = {
    0x00: ("CTRL", "rw"),          # write bit 0 = 1: launch; read: bit 0 running, bit 1 done,
                                   #   bit 2 error (ERROR_CODE != 0)
    0x04: ("ERROR_CODE", "r"),
    0x08: ("ERROR_INDEX", "r"),
    0x0C: ("INSN_ADDR", "rw"),
    0x10: ("INSN_COUNT", "rw"),
    0x14: ("DRAM_SIZE", "rw"),
    0x18: ("CYCLES_LO", "r"),
    0x1C: ("CYCLES_HI", "r"),
    **{0x20 + 4 * i: (name.upper(), "r") for i, name in enumerate(COUNTERS)},
    0x7C: ("ID", "r"),
}


class ControlRegisters(wiring.Component):
    """AXI4-Lite slave (12-bit addresses, 32-bit data) holding the register map ``REGISTERS``.

    One transaction at a time per direction: a write is accepted when AW and W are both valid
    (``awready``/``wready`` in that cycle) and answered with ``bvalid`` from the next cycle; a
    read is accepted when AR is valid and answered with ``rvalid`` from the next cycle. A write
    of CTRL with bit 0 set while the core is not running pulses ``launch`` in the next cycle.
    Unmapped reads return 0; writes to read-only registers are ignored. Responses are OKAY.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            "bus": In(AxiLiteSignature()),
            "launch": Out(1), "insn_addr": Out(32), "insn_count": Out(32), "dram_size": Out(32),
            "running": In(1), "done": In(1), "error_code": In(4), "error_index": In(32),
            "cycles": In(64), **{name: In(32) for name in COUNTERS},
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        insn_addr = Signal(32)
        insn_count = Signal(32)
        dram_size = Signal(32)
        m.d.comb += [self.insn_addr.eq(insn_addr), self.insn_count.eq(insn_count),
                     self.dram_size.eq(dram_size)]
        launch = Signal()
        m.d.sync += launch.eq(0)
        m.d.comb += self.launch.eq(launch)

        # Writes.
        bvalid = Signal()
        m.d.comb += [bus.bvalid.eq(bvalid), bus.bresp.eq(0)]
        accept_w = Signal()
        m.d.comb += accept_w.eq(bus.awvalid & bus.wvalid & ~bvalid)
        m.d.comb += [bus.awready.eq(accept_w), bus.wready.eq(accept_w)]
        with m.If(accept_w):
            m.d.sync += bvalid.eq(1)
            with m.Switch(bus.awaddr[2:]):
                with m.Case(0x00 >> 2):
                    with m.If(bus.wdata[0] & ~self.running):
                        m.d.sync += launch.eq(1)
                with m.Case(0x0C >> 2):
                    m.d.sync += insn_addr.eq(bus.wdata)
                with m.Case(0x10 >> 2):
                    m.d.sync += insn_count.eq(bus.wdata)
                with m.Case(0x14 >> 2):
                    m.d.sync += dram_size.eq(bus.wdata)
        with m.Elif(bvalid & bus.bready):
            m.d.sync += bvalid.eq(0)

        # Reads.
        rvalid = Signal()
        rdata = Signal(32)
        m.d.comb += [bus.rvalid.eq(rvalid), bus.rdata.eq(rdata), bus.rresp.eq(0),
                     bus.arready.eq(~rvalid)]
        values = {
            0x00: self.running | (self.done << 1) | ((self.error_code != 0) << 2),
            0x04: self.error_code, 0x08: self.error_index, 0x0C: insn_addr, 0x10: insn_count,
            0x14: dram_size, 0x18: self.cycles[:32], 0x1C: self.cycles[32:],
            **{0x20 + 4 * i: getattr(self, name) for i, name in enumerate(COUNTERS)},
            0x7C: CSR_ID,
        }
        with m.If(bus.arvalid & ~rvalid):
            m.d.sync += rvalid.eq(1)
            with m.Switch(bus.araddr[2:]):
                for offset, value in values.items():
                    with m.Case(offset >> 2):
                        m.d.sync += rdata.eq(value)
                with m.Default():
                    m.d.sync += rdata.eq(0)
        with m.Elif(rvalid & bus.rready):
            m.d.sync += rvalid.eq(0)
        return m
