"""The board's SDRAM as the core's DRAM: LiteDRAM's controller (:mod:`.sdram_gen`, a Verilog
``Instance``) behind an adapter from the core's memory port and the host's word bus.

The controller runs in the core's clock domain (``sync``): LiteDRAM's SDR PHY is happy at any
clock up to the chip's 133 MHz, so no crossing is needed while the core is slower than that.

Why responses stay in order with several bursts in flight: the adapter drives one master of
LiteDRAM's crossbar, and the crossbar *locks* a master to a bank while that bank machine holds
one of its commands (until the command's column access is issued); a command to another bank
waits for the lock. So the column accesses, and with them the read data (a fixed latency after
its access) and the write-data requests, come in the order of the commands. The adapter can
therefore issue commands freely, across banks, without waiting for data.
"""

from __future__ import annotations

from amaranth.hdl import Cat, ClockSignal, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO, SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from ..memport import LEN_BITS, MemPortSignature
from .bridge import WordBusSignature
from .sdram_gen import TOP, sdram_geometry, sdram_verilog
from .sdram_model import SdramPinsSignature

__all__ = ["SdramMemory"]


class SdramMemory(wiring.Component):
    """The core's DRAM (``port``) and the host's (``bus``) on the SDRAM chip at ``pins``.

    LiteDRAM's native port is the chip's width (16 bits): a bus beat is ``ratio`` native
    accesses at consecutive addresses, one command a cycle. Reads: up to ``cfg.mem_outstanding``
    bursts are accepted on ``rcmd``; their native reads are issued back to back while the read
    FIFO (``2 × max_burst_beats`` beats) has room for every word issued (LiteDRAM cannot hold
    back read data), the words are packed into beats, and ``last`` comes from a FIFO of the
    accepted bursts' lengths. Writes: up to ``cfg.mem_outstanding`` bursts in flight; the beats
    wait in a FIFO and a native write is issued only for a word already there (LiteDRAM takes
    write data, without a handshake, when the bank executes the write); ``wr_ack`` pulses
    when the last word of a burst is taken (each bank keeps its order, so a later read of the
    address sees it). The command channel alternates between the read and the write engine a
    burst at a time. The host's word waits until the core's traffic has drained. ``ready`` is
    high once the chip is initialised; nothing is served before.
    """

    def __init__(self, cfg: VTAConfig, clk_hz: float):
        self._cfg, self._clk_hz = cfg, clk_hz
        self.geometry = sdram_geometry(clk_hz)
        self.ratio = cfg.bus_width // self.geometry.port_bits
        super().__init__({"port": In(MemPortSignature(cfg)), "bus": In(WordBusSignature()),
                          "pins": Out(SdramPinsSignature()), "ready": Out(1)})

    def elaborate(self, platform):
        m = Module()
        geo, pins = self.geometry, self.pins
        if platform is not None and hasattr(platform, "add_file"):
            platform.add_file(f"{TOP}.v", sdram_verilog(self._clk_hz))
        nat = {n: Signal(w, name=f"nat_{n}") for n, w in (
            ("cmd_valid", 1), ("cmd_ready", 1), ("cmd_we", 1), ("cmd_addr", geo.port_addr_bits),
            ("wdata_valid", 1), ("wdata_ready", 1), ("wdata_data", geo.port_bits),
            ("wdata_we", geo.port_bits // 8), ("rdata_valid", 1),
            ("rdata_data", geo.port_bits))}
        ports = {"i_sys_clk": ClockSignal(), "i_sys_rst": ResetSignal(), "o_init_done": self.ready,
                 "i_rdata_ready": 1, "i_sdram_dq_i": pins.dq_i, "o_sdram_dq_o": pins.dq_o,
                 "o_sdram_dq_oe": pins.dq_oe}
        for name in ("a", "ba", "cs_n", "cke", "ras_n", "cas_n", "we_n", "dm"):
            ports[f"o_sdram_{name}"] = getattr(pins, name)
        for name, sig in nat.items():
            out = name in ("cmd_ready", "wdata_ready", "rdata_valid", "rdata_data")
            ports[("o_" if out else "i_") + name] = sig
        m.submodules.ctrl = Instance(TOP, **ports)

        # the host's word has the native data paths while it is served
        self._host_rd, self._host_wr = Signal(), Signal()
        rd_cmd, rd_idle = self._reads(m, nat)
        wr_cmd, wr_idle = self._writes(m, nat)
        host_cmd, host_busy = self._host(m, nat, rd_idle & wr_idle)
        self._command_mux(m, nat, rd_cmd, wr_cmd, host_cmd, host_busy)
        return m

    def _engine(self, m, kind, cmd, can_take):
        """A burst's native commands: ``cmd`` (the port's rcmd or wcmd) is taken when the last
        burst's commands are all issued and ``can_take``; returns (want, addr, issued) where
        ``issued`` is driven by the command mux."""
        shift = (self._cfg.bus_width // 8).bit_length() - 1
        unit = (self.geometry.port_bits // 8).bit_length() - 1
        addr = Signal(self.geometry.port_addr_bits, name=f"{kind}_addr")
        left = Signal(LEN_BITS + self.ratio.bit_length(), name=f"{kind}_left")
        issued = Signal(name=f"{kind}_issued")
        # `left != 0` as a register loaded with its next value: the command mux starts from
        # flip-flops (Fmax)
        busy = Signal(name=f"{kind}_busy")
        m.d.comb += cmd.ready.eq(self.ready & ~busy & can_take)
        with m.If(cmd.valid & cmd.ready):
            m.d.sync += [addr.eq((cmd.payload.addr >> shift) << (shift - unit)),
                         left.eq((cmd.payload.len + 1) * self.ratio), busy.eq(1)]
        with m.Elif(issued):
            m.d.sync += [addr.eq(addr + 1), left.eq(left - 1), busy.eq(left != 1)]
        return busy, addr, issued

    def _reads(self, m, nat):
        """Read bursts: native reads while the FIFO has room for them, words packed into beats.
        Returns ((want, addr, issued), idle)."""
        cfg, port, ratio, pb = self._cfg, self.port, self.ratio, self.geometry.port_bits
        depth = 2 * cfg.max_burst_beats
        m.submodules.rfifo = rfifo = SyncFIFOBuffered(width=cfg.bus_width, depth=depth)
        m.submodules.rlens = rlens = SyncFIFO(width=LEN_BITS, depth=cfg.mem_outstanding)
        # native words issued and not yet taken by the core, in words
        credit = Signal(range(depth * ratio + 1))
        bursts = Signal(range(cfg.mem_outstanding + 1))
        want, addr, issued = self._engine(m, "rd", port.rcmd, rlens.w_rdy)
        m.d.comb += [rlens.w_en.eq(port.rcmd.valid & port.rcmd.ready),
                     rlens.w_data.eq(port.rcmd.payload.len)]
        # pack: the first word of a beat ends in its low bits
        pack = Signal(cfg.bus_width)
        part = Signal(range(ratio))
        full = Cat(pack[pb:], nat["rdata_data"])
        with m.If(nat["rdata_valid"] & ~self._host_rd):
            m.d.sync += [pack.eq(full), part.eq(0 if ratio == 1 else part + 1)]
            with m.If(part == ratio - 1):
                m.d.sync += part.eq(0)
        m.d.comb += [rfifo.w_en.eq(nat["rdata_valid"] & (part == ratio - 1) & ~self._host_rd),
                     rfifo.w_data.eq(full)]
        # the core takes beats; ``last`` closes the burst at the head of ``rlens``
        taken = Signal(LEN_BITS)
        beat = port.rd.valid & port.rd.ready
        m.d.comb += [port.rd.valid.eq(rfifo.r_rdy), rfifo.r_en.eq(port.rd.ready),
                     port.rd.payload.data.eq(rfifo.r_data),
                     port.rd.payload.last.eq(taken == rlens.r_data),
                     rlens.r_en.eq(beat & (taken == rlens.r_data))]
        with m.If(beat):
            m.d.sync += taken.eq(Mux(taken == rlens.r_data, 0, taken + 1))
        # `credit < depth × ratio` as a register loaded with its next value: no path from the
        # credit's adder through the command mux back into it (Fmax)
        credit_next = Signal.like(credit)
        room = Signal(init=1)
        m.d.comb += credit_next.eq(credit + issued - Mux(beat, ratio, 0))
        m.d.sync += [credit.eq(credit_next), room.eq(credit_next < depth * ratio),
                     bursts.eq(bursts + rlens.w_en - rlens.r_en)]
        return (want & room, addr, issued), (bursts == 0) & (credit == 0) & ~want

    def _writes(self, m, nat):
        """Write bursts: beats into a FIFO, a native write per word already there, ``wr_ack``
        with a burst's last word. Returns ((want, addr, issued), idle)."""
        cfg, port, ratio, pb = self._cfg, self.port, self.ratio, self.geometry.port_bits
        depth = cfg.max_burst_beats
        m.submodules.wfifo = wfifo = SyncFIFOBuffered(
            width=cfg.bus_width + cfg.bus_width // 8 + 1, depth=depth)
        bursts = Signal(range(cfg.mem_outstanding + 1))
        want, addr, issued = self._engine(m, "wr", port.wcmd, bursts < cfg.mem_outstanding)
        m.d.comb += [wfifo.w_en.eq(port.wr.valid), port.wr.ready.eq(wfifo.w_rdy),
                     wfifo.w_data.eq(Cat(port.wr.payload.data, port.wr.payload.strb,
                                         port.wr.payload.last))]
        # ``part`` of the head beat's words are written
        part = Signal(range(ratio))
        head = wfifo.r_data
        taken = nat["wdata_ready"] & ~self._host_wr
        done_beat = taken & (part == ratio - 1)
        m.d.comb += [nat["wdata_data"].eq(head[:cfg.bus_width].word_select(part, pb)),
                     nat["wdata_we"].eq(head[cfg.bus_width:-1].word_select(part, pb // 8)),
                     wfifo.r_en.eq(done_beat),
                     port.wr_ack.eq(done_beat & head[-1])]
        with m.If(taken):
            m.d.sync += part.eq(0 if ratio == 1 else part + 1)
            with m.If(part == ratio - 1):
                m.d.sync += part.eq(0)
        m.d.sync += bursts.eq(bursts + (port.wcmd.valid & port.wcmd.ready) - port.wr_ack)
        # Words in the FIFO that no command has claimed yet (FIFO level × ratio − ``part``, less
        # the words commanded and not yet written), kept as a counter: a beat entering adds
        # ``ratio`` (the FIFO's level counts it from the next cycle), a command takes one. Its
        # `!= 0` is a register loaded with the next value: the command mux starts from
        # flip-flops, not from the FIFO's level through two carry chains (Fmax).
        unclaimed = Signal(range(depth * ratio + 1))
        unclaimed_next = Signal.like(unclaimed)
        claimable = Signal()
        m.d.comb += unclaimed_next.eq(unclaimed + Mux(wfifo.w_en & wfifo.w_rdy, ratio, 0)
                                      - issued)
        m.d.sync += [unclaimed.eq(unclaimed_next), claimable.eq(unclaimed_next != 0)]
        return (want & claimable, addr, issued), (bursts == 0) & ~want

    def _host(self, m, nat, core_idle):
        """A host word as ``32 / port_bits`` native accesses once the core's traffic has
        drained: a write puts the word's halves, a read packs them. Returns ((want, addr,
        issued), busy)."""
        bus, pb = self.bus, self.geometry.port_bits
        n = 32 // pb
        addr = Signal(self.geometry.port_addr_bits, name="host_addr")
        left = Signal(range(n + 1))
        words = Signal(range(n + 1))       # words written or read back
        issued = Signal(name="host_issued")
        word = Signal(32)
        busy = Signal()
        m.d.comb += [self._host_rd.eq(busy & ~bus.we), self._host_wr.eq(busy & bus.we),
                     bus.rdata.eq(word)]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.ready & bus.stb & core_idle):
                    m.d.sync += [addr.eq(bus.addr * n), left.eq(n), words.eq(0)]
                    m.next = "BUSY"
            with m.State("BUSY"):
                m.d.comb += busy.eq(1)
                with m.If(issued):
                    m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                with m.If(bus.we):
                    m.d.comb += [nat["wdata_data"].eq(bus.wdata.word_select(words, pb)),
                                 nat["wdata_we"].eq((1 << pb // 8) - 1)]
                    with m.If(nat["wdata_ready"]):
                        m.d.sync += words.eq(words + 1)
                with m.Elif(nat["rdata_valid"]):
                    m.d.sync += [word.eq(Cat(word[pb:], nat["rdata_data"])),
                                 words.eq(words + 1)]
                with m.If(words == n):
                    m.d.comb += bus.ack.eq(1)
                    m.next = "IDLE"
        return (busy & (left != 0), addr, issued), busy

    def _command_mux(self, m, nat, rd, wr, host, host_busy):
        """One native command a cycle: the host's while it is served; otherwise the read or
        the write engine, keeping the one that has the channel until its burst is issued."""
        writing = Signal()
        (rd_want, rd_addr, rd_issued), (wr_want, wr_addr, wr_issued) = rd, wr
        host_want, host_addr, host_issued = host
        use_wr = Signal()
        m.d.comb += use_wr.eq(wr_want & (writing | ~rd_want))
        fire = nat["cmd_valid"] & nat["cmd_ready"]
        with m.If(host_busy):
            m.d.comb += [nat["cmd_valid"].eq(host_want), nat["cmd_we"].eq(self.bus.we),
                         nat["cmd_addr"].eq(host_addr), host_issued.eq(fire)]
        with m.Elif(use_wr):
            m.d.comb += [nat["cmd_valid"].eq(1), nat["cmd_we"].eq(1),
                         nat["cmd_addr"].eq(wr_addr), wr_issued.eq(fire)]
        with m.Else():
            m.d.comb += [nat["cmd_valid"].eq(rd_want), nat["cmd_addr"].eq(rd_addr),
                         rd_issued.eq(fire)]
        # a burst keeps the channel while it has words to issue; then the other side may
        with m.If(wr_want & ~rd_want):
            m.d.sync += writing.eq(1)
        with m.Elif(rd_want & ~wr_want):
            m.d.sync += writing.eq(0)
