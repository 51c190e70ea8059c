"""Control and status registers of the core behind an AXI4-Lite slave."""

from __future__ import annotations

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa import registers as R
from isa.config import VTAConfig
from isa.registers import COUNTERS, CSR_ID, REGISTERS

from .axi import AxiLiteSignature

__all__ = ["ControlRegisters", "REGISTERS", "CSR_ID"]

# The map (offsets, access, CTRL bits, CSR_ID, counters) is isa/registers.py's; this module
# only wires it to the core.

#: Registers (consecutive word offsets) among which a read's first stage picks one.
GROUP = 8


class ControlRegisters(wiring.Component):
    """AXI4-Lite slave (12-bit addresses, 32-bit data) holding the register map ``REGISTERS``.

    One transaction at a time per direction: a write is accepted when AW and W are both valid
    (``awready``/``wready`` in that cycle) and answered with ``bvalid`` from the next cycle; a
    read is accepted when AR is valid and answered with ``rvalid`` from two cycles later (the
    word is picked in two registered stages; the core's status, CTRL and the error registers,
    as it was a cycle before the handshake). A write of CTRL with bit 0 set while the core is
    not running pulses ``launch`` in the next cycle.
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
                with m.Case(R.CTRL >> 2):
                    with m.If(bus.wdata[R.CTRL_LAUNCH.bit_length() - 1] & ~self.running):
                        m.d.sync += launch.eq(1)
                with m.Case(R.INSN_ADDR >> 2):
                    m.d.sync += insn_addr.eq(bus.wdata)
                with m.Case(R.INSN_COUNT >> 2):
                    m.d.sync += insn_count.eq(bus.wdata)
                with m.Case(R.DRAM_SIZE >> 2):
                    m.d.sync += dram_size.eq(bus.wdata)
        with m.Elif(bvalid & bus.bready):
            m.d.sync += bvalid.eq(0)

        # Reads, in two registered stages: a 32-bit word picked among all the registers is 5+
        # LUT levels, too many for one cycle (Fmax). The handshake cycle picks one word per
        # group of GROUP offsets (low address bits) and whether the offset is mapped at all;
        # the next cycle picks the group; rvalid rises in the cycle after that.
        rvalid, picking, mapped = Signal(), Signal(), Signal()
        rdata = Signal(32)
        m.d.comb += [bus.rvalid.eq(rvalid), bus.rdata.eq(rdata), bus.rresp.eq(0),
                     bus.arready.eq(~rvalid & ~picking)]
        # The core's status as registers, a cycle old when read: its error code and index
        # are the core's choice among held candidates (LUT levels before they arrive), which
        # must not add to the read's picking stage (Fmax). Nothing a host polls can tell.
        running, done = Signal(), Signal()
        error_code, error_index = Signal.like(self.error_code), Signal.like(self.error_index)
        m.d.sync += [running.eq(self.running), done.eq(self.done),
                     error_code.eq(self.error_code), error_index.eq(self.error_index)]
        by_name = {
            "CTRL": running | (done << 1) | ((error_code != 0) << 2),
            "ERROR_CODE": error_code, "ERROR_INDEX": error_index,
            "INSN_ADDR": insn_addr, "INSN_COUNT": insn_count, "DRAM_SIZE": dram_size,
            "CYCLES_LO": self.cycles[:32], "CYCLES_HI": self.cycles[32:],
            **{name.upper(): getattr(self, name) for name in COUNTERS},
            "ID": CSR_ID,
        }
        assert (R.CTRL_RUNNING, R.CTRL_DONE, R.CTRL_ERROR) == (1, 2, 4)   # the CTRL word above
        values = {offset >> 2: by_name[name] for offset, (name, _) in REGISTERS.items()}
        low = (GROUP - 1).bit_length()
        high = max(1, max(values).bit_length() - low)      # word index bits above a group
        groups = [Signal(32, name=f"rgroup{g}") for g in range(1 << high)]
        group = Signal(high)
        word = bus.araddr[2:]
        with m.If(bus.arvalid & ~rvalid & ~picking):
            m.d.sync += [picking.eq(1), group.eq(word[low:low + high]),
                         mapped.eq(word[low + high:] == 0)]
            for g, held in enumerate(groups):
                with m.Switch(word[:low]):
                    for k in range(GROUP):
                        with m.Case(k):
                            m.d.sync += held.eq(values.get((g << low) | k, 0))
        with m.Elif(picking):
            m.d.sync += [picking.eq(0), rvalid.eq(1),
                         rdata.eq(Mux(mapped, Array(groups)[group], 0))]
        with m.Elif(rvalid & bus.rready):
            m.d.sync += rvalid.eq(0)
        return m
