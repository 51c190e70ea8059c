"""The board's SDRAM as the core's DRAM: LiteDRAM's controller (:mod:`.sdram_gen`, a Verilog
``Instance``) behind an adapter from the core's memory port and the host's word bus.

The controller runs in the core's clock domain (``sync``): LiteDRAM's SDR PHY is happy at any
clock up to the chip's 133 MHz, so no crossing is needed while the core is slower than that.
"""

from __future__ import annotations

from amaranth.hdl import ClockSignal, Const, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from ..memport import MemPortSignature
from .bridge import WordBusSignature
from .sdram_gen import TOP, sdram_geometry, sdram_verilog
from .sdram_model import SdramPinsSignature

__all__ = ["SdramMemory"]


class SdramMemory(wiring.Component):
    """The core's DRAM (``port``) and the host's (``bus``) on the SDRAM chip at ``pins``.

    One burst or host access at a time, the core before the host. A read burst issues one
    native read per beat while its beats fit in a FIFO of ``max_burst_beats`` words (LiteDRAM
    cannot hold back read data) and, since LiteDRAM keeps the order of reads only within a
    bank, while the reads in flight are to the same bank; a write burst issues, per beat, the
    command and then the data, and ``wr_ack`` pulses after the last beat's data is accepted
    (the controller keeps each bank's order, so a later read sees it). ``ready`` is high once
    the chip is initialised; nothing is served before.
    """

    def __init__(self, cfg: VTAConfig, clk_hz: float):
        self._cfg, self._clk_hz = cfg, clk_hz
        self.geometry = sdram_geometry(clk_hz, cfg.bus_width)
        super().__init__({"port": In(MemPortSignature(cfg)), "bus": In(WordBusSignature()),
                          "pins": Out(SdramPinsSignature()), "ready": Out(1)})

    def elaborate(self, platform):
        m = Module()
        cfg, geo, pins = self._cfg, self.geometry, self.pins
        if platform is not None and hasattr(platform, "add_file"):
            platform.add_file(f"{TOP}.v", sdram_verilog(self._clk_hz, cfg.bus_width))
        nat = {n: Signal(w, name=f"nat_{n}") for n, w in (
            ("cmd_valid", 1), ("cmd_ready", 1), ("cmd_we", 1), ("cmd_addr", geo.port_addr_bits),
            ("wdata_valid", 1), ("wdata_ready", 1), ("wdata_data", cfg.bus_width),
            ("wdata_we", cfg.bus_width // 8), ("rdata_valid", 1), ("rdata_data", cfg.bus_width))}
        ports = {"i_sys_clk": ClockSignal(), "i_sys_rst": ResetSignal(), "o_init_done": self.ready,
                 "i_rdata_ready": 1, "i_sdram_dq_i": pins.dq_i, "o_sdram_dq_o": pins.dq_o,
                 "o_sdram_dq_oe": pins.dq_oe}
        for name in ("a", "ba", "cs_n", "cke", "ras_n", "cas_n", "we_n", "dm"):
            ports[f"o_sdram_{name}"] = getattr(pins, name)
        for name, sig in nat.items():
            out = name in ("cmd_ready", "wdata_ready", "rdata_valid", "rdata_data")
            ports[("o_" if out else "i_") + name] = sig
        m.submodules.ctrl = Instance(TOP, **ports)

        # Read data lands in the FIFO; a read command is issued only while its word has room.
        depth = cfg.max_burst_beats
        m.submodules.rfifo = rfifo = SyncFIFOBuffered(width=cfg.bus_width, depth=depth)
        pending = Signal(range(depth + 1))       # reads issued, not yet taken from the FIFO
        m.d.comb += [rfifo.w_en.eq(nat["rdata_valid"]), rfifo.w_data.eq(nat["rdata_data"])]
        issue_read = Signal()
        m.d.comb += issue_read.eq(nat["cmd_valid"] & nat["cmd_ready"] & ~nat["cmd_we"])
        m.d.sync += pending.eq(pending + issue_read - (rfifo.r_en & rfifo.r_rdy))
        # LiteDRAM answers reads in the order the banks execute them, which is the order of
        # the commands only within one bank: a read to another bank waits for the earlier ones.
        words_per_row = geo.ncols * geo.chip_bits // cfg.bus_width
        bank_lo = (words_per_row - 1).bit_length()
        bank_bits = (geo.nbanks - 1).bit_length()
        last_bank = Signal(max(1, bank_bits))
        next_bank = nat["cmd_addr"][bank_lo:bank_lo + bank_bits] if bank_bits else 0
        with m.If(issue_read):
            m.d.sync += last_bank.eq(next_bank)
        self._fsm(m, nat, rfifo, (pending < depth) & ((pending == 0) | (last_bank == next_bank)))
        return m

    def _fsm(self, m, nat, rfifo, room):
        """IDLE → READ / WRITE_CMD ↔ WRITE_DATA → ACK for the core; HOST_* for the host."""
        cfg, port, bus = self._cfg, self.port, self.bus
        shift = (cfg.bus_width // 8).bit_length() - 1
        lanes = cfg.bus_width // 32
        lane_bits = (lanes - 1).bit_length()
        addr = Signal(len(nat["cmd_addr"]))
        to_issue = Signal(range(cfg.max_burst_beats + 1))
        to_take = Signal(range(cfg.max_burst_beats + 1))
        lane = Signal(max(1, lane_bits))
        m.d.comb += [nat["cmd_addr"].eq(addr), port.rd.payload.data.eq(rfifo.r_data),
                     port.rd.payload.last.eq(to_take == 1),
                     nat["wdata_data"].eq(port.wr.payload.data),
                     nat["wdata_we"].eq(port.wr.payload.strb)]
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [port.rcmd.ready.eq(self.ready),
                             port.wcmd.ready.eq(self.ready & ~port.rcmd.valid)]
                with m.If(self.ready & port.rcmd.valid):
                    m.d.sync += [addr.eq(port.rcmd.payload.addr >> shift),
                                 to_issue.eq(port.rcmd.payload.len + 1),
                                 to_take.eq(port.rcmd.payload.len + 1)]
                    m.next = "READ"
                with m.Elif(self.ready & port.wcmd.valid):
                    m.d.sync += addr.eq(port.wcmd.payload.addr >> shift)
                    m.next = "WRITE_CMD"
                with m.Elif(self.ready & bus.stb):
                    m.d.sync += [addr.eq(bus.addr >> lane_bits),
                                 lane.eq(bus.addr[:lane_bits] if lane_bits else 0)]
                    m.next = "HOST_CMD"
            with m.State("READ"):
                m.d.comb += [nat["cmd_valid"].eq((to_issue != 0) & room),
                             port.rd.valid.eq(rfifo.r_rdy), rfifo.r_en.eq(port.rd.ready)]
                with m.If(nat["cmd_valid"] & nat["cmd_ready"]):
                    m.d.sync += [addr.eq(addr + 1), to_issue.eq(to_issue - 1)]
                with m.If(port.rd.valid & port.rd.ready):
                    m.d.sync += to_take.eq(to_take - 1)
                    with m.If(to_take == 1):
                        m.next = "IDLE"
            with m.State("WRITE_CMD"):
                m.d.comb += [nat["cmd_valid"].eq(port.wr.valid), nat["cmd_we"].eq(1)]
                with m.If(nat["cmd_valid"] & nat["cmd_ready"]):
                    m.next = "WRITE_DATA"
            with m.State("WRITE_DATA"):
                m.d.comb += [nat["wdata_valid"].eq(1), port.wr.ready.eq(nat["wdata_ready"])]
                with m.If(nat["wdata_ready"]):
                    m.d.sync += addr.eq(addr + 1)
                    with m.If(port.wr.payload.last):
                        m.next = "ACK"
                    with m.Else():
                        m.next = "WRITE_CMD"
            with m.State("ACK"):
                m.d.comb += port.wr_ack.eq(1)
                m.next = "IDLE"
            self._host_states(m, nat, rfifo, lane, lanes)

    def _host_states(self, m, nat, rfifo, lane, lanes):
        """A host word: a write puts its lane's bytes (the other byte enables low), a read
        takes its lane of the word read."""
        bus = self.bus
        with m.State("HOST_CMD"):
            m.d.comb += [nat["cmd_valid"].eq(1), nat["cmd_we"].eq(bus.we)]
            with m.If(nat["cmd_ready"]):
                with m.If(bus.we):
                    m.next = "HOST_WRITE"
                with m.Else():
                    m.next = "HOST_READ"
        with m.State("HOST_WRITE"):
            m.d.comb += [nat["wdata_valid"].eq(1), nat["wdata_data"].eq(bus.wdata.replicate(lanes)),
                         nat["wdata_we"].eq(Const(0xF, 4) << (lane * 4))]
            with m.If(nat["wdata_ready"]):
                m.d.comb += bus.ack.eq(1)
                m.next = "IDLE"
        with m.State("HOST_READ"):
            m.d.comb += [rfifo.r_en.eq(1), bus.rdata.eq(rfifo.r_data.word_select(lane, 32))]
            with m.If(rfifo.r_rdy):
                m.d.comb += bus.ack.eq(1)
                m.next = "IDLE"
