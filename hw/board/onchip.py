"""On-chip memory as the core's DRAM (the bring-up variant of a board design).

:class:`MemPortSram` is the only module of the board that speaks the core's memory-port protocol
(``hw/memport.py``); everything behind it sees a plain synchronous SRAM port. When the memory
port changes, this adapter is what changes.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from ..memport import MemPortSignature
from .bridge import WordBusSignature

__all__ = ["SramSignature", "MemPortSram", "OnChipMemory"]


class SramSignature(wiring.Signature):
    """A synchronous SRAM port of ``width``-bit words, seen from its user: ``rdata`` is the
    word at ``raddr`` of the cycle before in which ``ren`` was high (held otherwise);
    ``wen`` (one bit per byte) writes ``wdata`` at ``waddr``."""

    def __init__(self, width: int, addr_bits: int):
        super().__init__({"raddr": Out(addr_bits), "ren": Out(1), "rdata": In(width),
                          "waddr": Out(addr_bits), "wdata": Out(width), "wen": Out(width // 8)})


class MemPortSram(wiring.Component):
    """The core's memory port (``port``) onto an SRAM port (``sram``), one burst at a time.

    The port allows several bursts in flight; this memory accepts one at a time (it holds
    ``rcmd.ready``/``wcmd.ready`` low meanwhile), a read before a write offered in the same
    cycle. Timing, for a command handshake in cycle *t*: a read's first beat is offered in
    *t* + 3 (the block RAM's output passes a register), then one beat per cycle while the
    core accepts; a write's beats are accepted from
    *t* + 1, one per cycle, and ``wr_ack`` pulses in the cycle after the last. Commands are
    accepted when no burst is under way and ``hold`` is low. ``idle`` is high when no burst is
    under way: the SRAM port is free for another user in such a cycle unless the core offers
    a command (``busy_next``).
    """

    def __init__(self, cfg: VTAConfig, addr_bits: int):
        self._cfg = cfg
        super().__init__({"port": In(MemPortSignature(cfg)), "hold": In(1), "idle": Out(1),
                          "busy_next": Out(1),
                          "sram": Out(SramSignature(cfg.bus_width, addr_bits))})

    def elaborate(self, platform):
        m = Module()
        port, sram = self.port, self.sram
        shift = (self._cfg.bus_width // 8).bit_length() - 1
        addr = Signal.like(sram.raddr)
        left = Signal(range(self._cfg.max_burst_beats + 1))
        out_valid, out_last, a_valid, a_last = Signal(), Signal(), Signal(), Signal()
        out_data = Signal.like(port.rd.payload.data)
        m.d.comb += [port.rd.valid.eq(out_valid), port.rd.payload.data.eq(out_data),
                     port.rd.payload.last.eq(out_last), sram.raddr.eq(addr),
                     sram.waddr.eq(addr), sram.wdata.eq(port.wr.payload.data)]
        m.d.comb += self.busy_next.eq(port.rcmd.valid | port.wcmd.valid)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.idle.eq(1), port.rcmd.ready.eq(~self.hold),
                             port.wcmd.ready.eq(~self.hold & ~port.rcmd.valid)]
                with m.If(port.rcmd.valid & ~self.hold):
                    m.d.sync += [addr.eq(port.rcmd.payload.addr >> shift),
                                 left.eq(port.rcmd.payload.len + 1)]
                    m.next = "READ"
                with m.Elif(port.wcmd.valid & ~self.hold):
                    m.d.sync += [addr.eq(port.wcmd.payload.addr >> shift),
                                 left.eq(port.wcmd.payload.len + 1)]
                    m.next = "WRITE"
            with m.State("READ"):
                # Two stages: the read port's output (A) and a plain register (B) that offers
                # the beat, so the block RAM's clock-to-output ends in a flip-flop, not in the
                # memory-port slice's multiplexer (Fmax). Both move when B is empty or the
                # core takes its beat, and hold together otherwise.
                advance = ~out_valid | port.rd.ready
                m.d.comb += sram.ren.eq(advance)
                with m.If(advance):
                    m.d.sync += [a_valid.eq(left != 0), a_last.eq(left == 1),
                                 out_valid.eq(a_valid), out_last.eq(a_last),
                                 out_data.eq(sram.rdata)]
                    with m.If(left != 0):
                        m.d.sync += [addr.eq(addr + 1), left.eq(left - 1)]
                    with m.Elif(~a_valid & out_valid):
                        m.next = "IDLE"             # the last beat was taken in this cycle
            with m.State("WRITE"):
                m.d.comb += port.wr.ready.eq(1)
                with m.If(port.wr.valid):
                    m.d.comb += sram.wen.eq(port.wr.payload.strb)
                    m.d.sync += addr.eq(addr + 1)
                    with m.If(port.wr.payload.last):
                        m.next = "ACK"
            with m.State("ACK"):
                m.d.comb += port.wr_ack.eq(1)
                m.next = "IDLE"
        return m


class OnChipMemory(wiring.Component):
    """``size`` bytes of block RAM as the core's DRAM (``port``) and the host's (``bus``).

    The core has priority: a host access is served in a cycle in which the adapter is idle and
    the core requests nothing; a write is acknowledged in that cycle, a read two cycles later
    (the word passes a register; the core's next command waits the one cycle the block RAM's
    output is the host's). Word addresses past the memory wrap around
    (the core's DRAM_SIZE check keeps it inside; the host link checks the host).
    """

    def __init__(self, cfg: VTAConfig, size: int):
        bus_bytes = cfg.bus_width // 8
        if size <= 0 or size % bus_bytes or size & (size - 1):
            raise ValueError(f"on-chip memory size {size} must be a power of two and a "
                             f"multiple of the bus width ({bus_bytes} bytes)")
        self._cfg, self._size = cfg, size
        self._depth = size // bus_bytes
        super().__init__({"port": In(MemPortSignature(cfg)), "bus": In(WordBusSignature())})

    def elaborate(self, platform):
        m = Module()
        cfg, w = self._cfg, self._cfg.bus_width
        addr_bits = max(1, (self._depth - 1).bit_length())
        m.submodules.mem = mem = Memory(shape=w, depth=self._depth, init=[])
        rp = mem.read_port()
        wp = mem.write_port(granularity=8)
        m.submodules.adapter = ad = MemPortSram(cfg, addr_bits)
        wiring.connect(m, wiring.flipped(self.port), ad.port)

        bus = self.bus
        lanes = w // 32                      # 32-bit words per memory word
        lane_bits = (lanes - 1).bit_length()
        word = bus.addr[lane_bits:lane_bits + addr_bits]
        lane = bus.addr[:lane_bits] if lane_bits else 0
        read_lane = Signal(max(1, lane_bits))
        reading = Signal()                   # the block RAM's output is the host's word
        answer = Signal()                    # the word is in `rdata`: acknowledged
        rdata = Signal(w)
        host = Signal()                      # the host owns the SRAM port in this cycle
        m.d.comb += host.eq(bus.stb & ~reading & ~answer & ad.idle & ~ad.busy_next)
        m.d.comb += ad.hold.eq(reading)
        m.d.sync += [reading.eq(host & ~bus.we), answer.eq(reading)]
        m.d.sync += read_lane.eq(lane)
        # the whole memory word registered on the way to the host link: the block RAM's
        # clock-to-output (no output register) and the host's read multiplexers are not one
        # path (Fmax)
        with m.If(reading):
            m.d.sync += rdata.eq(rp.data)
        with m.If(host):
            m.d.comb += [rp.addr.eq(word), rp.en.eq(~bus.we), wp.addr.eq(word),
                         wp.data.eq(bus.wdata.replicate(lanes)),
                         wp.en.eq(bus.we.replicate(4) << (4 * lane))]
        with m.Else():
            m.d.comb += [rp.addr.eq(ad.sram.raddr), rp.en.eq(ad.sram.ren),
                         wp.addr.eq(ad.sram.waddr), wp.data.eq(ad.sram.wdata),
                         wp.en.eq(ad.sram.wen)]
        m.d.comb += [ad.sram.rdata.eq(rp.data),
                     bus.rdata.eq(rdata.word_select(read_lane, 32)),
                     bus.ack.eq((host & bus.we) | answer)]
        return m
