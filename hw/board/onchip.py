"""On-chip memory as the core's DRAM (the bring-up variant of a board design).

:class:`MemPortSram` is the only module of the board that speaks the core's memory-port protocol
(``hw/memport.py``); everything behind it sees a plain synchronous SRAM port. When the memory
port changes, this adapter is what changes.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from ..memport import MemPortSignature
from ..sram import DP16KD_MODES, dp16kd, dp16kd_data_bits
from .bridge import WordBusSignature

__all__ = ["SramSignature", "MemPortSram", "OnChipMemory"]


class SramSignature(wiring.Signature):
    """A synchronous SRAM port of ``width``-bit words with an output register, seen from its
    user: a cycle in which ``ren`` is high reads the word at ``raddr`` into the memory's
    latch and moves the latch into the output register ``rdata`` (both held otherwise), so
    ``rdata`` is the word at ``raddr`` of the earlier of the last two cycles ``ren`` was
    high; ``wen`` (one bit per byte) writes ``wdata`` at ``waddr``."""

    def __init__(self, width: int, addr_bits: int):
        super().__init__({"raddr": Out(addr_bits), "ren": Out(1), "rdata": In(width),
                          "waddr": Out(addr_bits), "wdata": Out(width), "wen": Out(width // 8)})


def _kept(shape, name):
    # Yosys merges identical flip-flops (opt_merge) whatever a wire's `keep` says: a copy is
    # kept because its next value reads its own (a counter, or a flag's hold), not this
    # attribute, which only keeps its name in the netlist (the structural tests find it)
    return Signal(shape, name=name, attrs={"keep": 1})


class SramLane:
    """One copy of the adapter's registers that drive a group of block RAMs: ``addr`` (the
    word address of the block RAMs' pins), ``read``/``write`` (the adapter is in READ/WRITE), ``out_valid`` (the
    output stage holds a beat); ``ren`` (a read burst's stages move: the output register
    loads) and ``stall`` (they hold) are one LUT of them and ``rd.ready``."""

    def __init__(self, addr_bits: int, g: int):
        self.addr = _kept(addr_bits, f"lane{g}_addr")
        self.read, self.write = _kept(1, f"lane{g}_read"), _kept(1, f"lane{g}_write")
        self.out_valid = _kept(1, f"lane{g}_out_valid")
        self.ren, self.stall = Signal(name=f"lane{g}_ren"), Signal(name=f"lane{g}_stall")


class MemPortSram(wiring.Component):
    """The core's memory port (``port``) onto an SRAM port (``sram``), one burst at a time.

    The port allows several bursts in flight; this memory accepts one at a time (it holds
    ``rcmd.ready``/``wcmd.ready`` low meanwhile), a read before a write offered in the same
    cycle. Timing, for a command handshake in cycle *t*: a read's first beat is offered in
    *t* + 3 (the block RAM's output register offers it), then one beat per cycle while the
    core accepts; a write's beats are accepted from
    *t* + 1, one per cycle, and ``wr_ack`` pulses in the cycle after the last. Commands are
    accepted when no burst is under way and ``hold`` is low. ``idle`` is high when no burst is
    under way: the SRAM port is free for another user in such a cycle unless the core offers
    a command (``busy_next``). ``stall`` is high when a read burst's stages hold: the only
    cycles in which the SRAM's latch must keep its word.

    ``copies``: the registers that drive the SRAM's address and enables (the address, "in
    READ", "in WRITE", the output stage's valid) again in ``copies`` copies, one per group
    of block RAMs (:attr:`lanes`), each updated from its own values, so that every
    block-RAM pin is a register or one LUT of registers placed beside its group, not a net
    fanned out to the whole memory (Fmax). A lane's address is the SRAM's: while its lane has
    no burst and takes no command it follows ``claim_addr`` (another user's, who owns the SRAM
    from a cycle in which the adapter is idle and then holds it: the address is the user's
    from the cycle after, and the decision to grant the SRAM is no input of the address
    registers: Fmax); ``sram`` reads the SRAM's word (its other members are the adapter's own
    view, for a single SRAM).
    """

    def __init__(self, cfg: VTAConfig, addr_bits: int, copies: int = 1):
        self._cfg = cfg
        super().__init__({"port": In(MemPortSignature(cfg)), "hold": In(1), "idle": Out(1),
                          "busy_next": Out(1), "stall": Out(1),
                          "claim_addr": In(addr_bits),
                          "sram": Out(SramSignature(cfg.bus_width, addr_bits))})
        self.lanes = [SramLane(addr_bits, g) for g in range(copies)]

    def elaborate(self, platform):
        m = Module()
        port, sram = self.port, self.sram
        shift = (self._cfg.bus_width // 8).bit_length() - 1
        addr = Signal.like(sram.raddr)
        left = Signal(range(self._cfg.max_burst_beats + 1))
        more = Signal()                      # left != 0, as a register (the enables' depth)
        out_valid, out_last, a_valid, a_last = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [port.rd.valid.eq(out_valid), port.rd.payload.data.eq(sram.rdata),
                     port.rd.payload.last.eq(out_last), sram.raddr.eq(addr),
                     sram.waddr.eq(addr), sram.wdata.eq(port.wr.payload.data)]
        m.d.comb += self.busy_next.eq(port.rcmd.valid | port.wcmd.valid)
        take_read, take_write = Signal(), Signal()
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.idle.eq(1), port.rcmd.ready.eq(~self.hold),
                             port.wcmd.ready.eq(~self.hold & ~port.rcmd.valid)]
                m.d.comb += [take_read.eq(port.rcmd.valid & ~self.hold),
                             take_write.eq(port.wcmd.valid & ~port.rcmd.valid & ~self.hold)]
                with m.If(port.rcmd.valid & ~self.hold):
                    m.d.sync += [addr.eq(port.rcmd.payload.addr >> shift),
                                 left.eq(port.rcmd.payload.len + 1), more.eq(1)]
                    m.next = "READ"
                with m.Elif(port.wcmd.valid & ~self.hold):
                    m.d.sync += [addr.eq(port.wcmd.payload.addr >> shift),
                                 left.eq(port.wcmd.payload.len + 1)]
                    m.next = "WRITE"
            with m.State("READ"):
                # Two stages: the memory's latch (A) and its output register (B), which offers
                # the beat. Both move when B is empty or the core takes its beat, and hold
                # together otherwise.
                advance = ~out_valid | port.rd.ready
                m.d.comb += [sram.ren.eq(advance), self.stall.eq(~advance)]
                with m.If(advance):
                    m.d.sync += [a_valid.eq(more), a_last.eq(left == 1),
                                 out_valid.eq(a_valid), out_last.eq(a_last)]
                    with m.If(more):
                        m.d.sync += [addr.eq(addr + 1), left.eq(left - 1), more.eq(left != 1)]
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
        for lane in self.lanes:
            self._lane(m, lane, shift, take_read, take_write, more, a_valid)
        return m

    def _lane(self, m, lane, shift, take_read, take_write, more, a_valid):
        """``lane``'s registers follow the FSM's, each from its own values (the same cycle)."""
        port = self.port
        advance = ~lane.out_valid | port.rd.ready
        m.d.comb += [lane.ren.eq(lane.read & advance), lane.stall.eq(lane.read & ~advance)]
        with m.If(lane.ren):
            m.d.sync += lane.out_valid.eq(a_valid)
            with m.If(more):
                m.d.sync += lane.addr.eq(lane.addr + 1)
            with m.Elif(~a_valid & lane.out_valid):
                m.d.sync += lane.read.eq(0)        # the FSM's READ -> IDLE
        with m.If(lane.write & port.wr.valid):
            m.d.sync += lane.addr.eq(lane.addr + 1)
            with m.If(port.wr.payload.last):
                m.d.sync += lane.write.eq(0)       # the FSM's WRITE -> ACK
        with m.If(~lane.read & ~lane.write):
            m.d.sync += lane.addr.eq(self.claim_addr)
        with m.If(take_read):
            m.d.sync += [lane.read.eq(1), lane.addr.eq(port.rcmd.payload.addr >> shift)]
        with m.Elif(take_write):
            m.d.sync += [lane.write.eq(1), lane.addr.eq(port.wcmd.payload.addr >> shift)]


class OnChipMemory(wiring.Component):
    """``size`` bytes of block RAM as the core's DRAM (``port``) and the host's (``bus``).

    The core has priority: a host access is granted in a cycle in which the adapter is idle and
    the core requests nothing, and served from the register ``grant`` in the next cycle (the
    adapter held; the block RAMs' address registers hold the host's word when it is
    granted), so no path runs from the core's command valid to the block RAMs (Fmax); a write
    is acknowledged in that cycle, a read three cycles later (the word passes the block RAM's
    output register and a register beside the block RAMs; the core's next command waits the
    one cycle the output register is the host's). The block RAMs are driven in groups, each
    by its own copy of the registers behind their pins (:class:`SramLane`). Word addresses past the memory wrap around
    (the core's DRAM_SIZE check keeps it inside; the host link checks the host).

    ``dp16kd``: build the memory of ECP5 DP16KD primitives with their output register
    (``REGMODE = "OUTREG"``: Yosys never infers it, and without it the block RAM's 5.6 ns
    clock-to-output starts the board's worst path) for a synthesis; otherwise (simulation, or
    a geometry one DP16KD mode cannot hold without a multiplexer) an inferred memory and a
    register of the same behaviour.
    """

    def __init__(self, cfg: VTAConfig, size: int, *, dp16kd: bool = False):
        bus_bytes = cfg.bus_width // 8
        if size <= 0 or size % bus_bytes or size & (size - 1):
            raise ValueError(f"on-chip memory size {size} must be a power of two and a "
                             f"multiple of the bus width ({bus_bytes} bytes)")
        self._cfg, self._size, self._dp16kd = cfg, size, dp16kd
        self._depth = size // bus_bytes
        super().__init__({"port": In(MemPortSignature(cfg)), "bus": In(WordBusSignature())})

    def elaborate(self, platform):
        m = Module()
        cfg, w = self._cfg, self._cfg.bus_width
        addr_bits = max(1, (self._depth - 1).bit_length())
        gbits = _group_bits(self._depth, w)
        groups = w // gbits
        srams = [SramSignature(gbits, addr_bits).create(path=(f"sram{g}",))
                 for g in range(groups)]
        oces = [Signal(name=f"oce{g}") for g in range(groups)]  # the output registers load
        if self._dp16kd and self._depth in _DP16KD_WIDTH:
            _dp16kd_memory(m, srams, oces, addr_bits)
        else:
            _modelled_memory(m, srams, oces, self._depth)
        m.submodules.adapter = ad = MemPortSram(cfg, addr_bits, copies=groups)
        wiring.connect(m, wiring.flipped(self.port), ad.port)

        bus = self.bus
        lanes = w // 32                      # 32-bit words per memory word
        lane_bits = (lanes - 1).bit_length()
        word = bus.addr[lane_bits:lane_bits + addr_bits]
        lane = bus.addr[:lane_bits] if lane_bits else 0
        read_lane = Signal(max(1, lane_bits))
        grant = Signal()                     # the host owns the SRAM port in this cycle
        wrote = Signal()                     # ... to write: acknowledged in this cycle
        reading = Signal()                   # the block RAM's latch holds the host's word
        answer = Signal()                    # the word is in the output register
        answered = Signal()                  # ... and in `host_rdata`: acknowledged
        # The grant is decided a cycle ahead from registers (the bridge's access, the slice's
        # command valid, the adapter's state) and held for one cycle with the host's address,
        # data and byte enables: no path runs from the core's commands or the bridge's state
        # to the block RAMs' pins but a multiplexer selected by `grant`. The adapter takes no
        # command in the cycle of the decision (none is offered) nor while the host owns the
        # port or its output register.
        decide = Signal()
        free = Signal(init=1)                # ~grant & ~reading & ~answer & ~answered
        m.d.comb += decide.eq(bus.stb & free & ad.idle & ~ad.busy_next)
        m.d.sync += free.eq(~decide & ~(grant & ~wrote) & ~reading & ~answer)
        host_wdata = Signal(w)
        host_wen = Signal(w // 8)            # zero but in a granted write
        m.d.sync += [grant.eq(decide), wrote.eq(decide & bus.we),
                     host_wdata.eq(bus.wdata.replicate(lanes)),
                     host_wen.eq(Mux(decide & bus.we, 0xF << (4 * lane), 0))]
        held = Signal()                      # grant | reading, as one register
        m.d.sync += held.eq(decide | (grant & ~wrote))
        m.d.comb += ad.hold.eq(held)
        m.d.sync += [reading.eq(grant & ~wrote), answer.eq(reading), answered.eq(answer)]
        m.d.sync += read_lane.eq(lane)
        # the lanes' addresses (the block RAMs' pins) follow the host's word while the adapter
        # is idle, so they hold it when the host is granted (its address stays until the ack)
        m.d.comb += ad.claim_addr.eq(word)
        # Each group of block RAMs has its own copy of the grant and of "reading", and of the
        # adapter's registers (`MemPortSram.lanes`): every pin below is a register or one LUT
        # of registers of its group (and the core's `rd.ready`/`wr` inputs). A copy's next
        # value reads the copy itself (Yosys merges identical flip-flops).
        for g, (sram, oce, lane) in enumerate(zip(srams, oces, ad.lanes)):
            g_grant, g_reading = _kept(1, f"grant{g}"), _kept(1, f"reading{g}")
            m.d.sync += [g_grant.eq(bus.stb & ~g_grant & free & ad.idle
                                    & ~ad.busy_next),                    # `decide`
                         g_reading.eq(g_grant & ~wrote)]
            lo, bytes_ = g * gbits, gbits // 8
            # The latch reads in every cycle but those in which a burst's stages hold (a read
            # has no side effect, and a word read while it is written is never used: the
            # output register takes a host's word from the latch the cycle after): the read
            # enable is then not a function of the host's arbitration (Fmax).
            m.d.comb += sram.ren.eq(~lane.stall)
            # the adapter writes nothing while the host owns the port (it is idle and held)
            port_strb = ad.port.wr.payload.strb[lo // 8:lo // 8 + bytes_]
            m.d.comb += sram.wen.eq(Mux(lane.write & ad.port.wr.valid, port_strb, 0)
                                    | host_wen[lo // 8:lo // 8 + bytes_])
            m.d.comb += [sram.raddr.eq(lane.addr), sram.waddr.eq(lane.addr),
                         sram.wdata.eq(Mux(g_grant, host_wdata[lo:lo + gbits],
                                           ad.port.wr.payload.data[lo:lo + gbits]))]
            # the adapter reads only in its READ state, so in `reading` (it is held idle) and
            # in `answer` (idle: a command taken then reads from the cycle after) the output
            # register is the host's
            m.d.comb += oce.eq(lane.ren | g_reading)
        rdata = Cat(*(sram.rdata for sram in srams))
        # the host's word registered beside the block RAMs: the host's read path (its
        # multiplexers, the bridge's shift register) starts at a register, not at the block
        # RAMs' outputs spread over the die (Fmax)
        host_rdata = Signal(32)
        with m.If(answer):
            m.d.sync += host_rdata.eq(rdata.word_select(read_lane, 32))
        m.d.comb += [ad.sram.rdata.eq(rdata), bus.rdata.eq(host_rdata),
                     bus.ack.eq(wrote | answered)]
        return m


# DP16KD data width (bits of a word per block RAM) for a memory of each depth: one block RAM
# holds the whole depth, so no block RAM's output passes a multiplexer; 9 is the x9 mode
# (one byte and its unused parity bit); wider modes would need byte enables (the host's
# word writes).
_DP16KD_WIDTH = {d: w for d, w in DP16KD_MODES.items() if w <= 9}


# Block RAMs per copy of the registers that drive their pins (MemPortSram.lanes): 8 of the
# ecp5-small DRAM's 32 (measured: docs/hardware.md §12, step 16).
_BRAMS_PER_COPY = 8


def _group_bits(depth, width):
    """Bits of a word per group of block RAMs with its own copy of the driving registers:
    the whole word where no single DP16KD mode holds the depth (the model's fallback)."""
    if depth not in _DP16KD_WIDTH:
        return width
    return min(width, _BRAMS_PER_COPY * dp16kd_data_bits(_DP16KD_WIDTH[depth]))


def _modelled_memory(m, srams, oces, depth):
    """For each group, an inferred memory and a register after it: ``sram``'s contract, for
    simulation."""
    for g, (sram, oce) in enumerate(zip(srams, oces)):
        width = len(sram.wdata)
        m.submodules[f"mem{g}"] = mem = Memory(shape=width, depth=depth, init=[])
        rp = mem.read_port()
        wp = mem.write_port(granularity=8)
        out = Signal(width, name=f"mem{g}_out")
        with m.If(oce):
            m.d.sync += out.eq(rp.data)
        m.d.comb += [rp.addr.eq(sram.raddr), rp.en.eq(sram.ren), wp.addr.eq(sram.waddr),
                     wp.data.eq(sram.wdata), wp.en.eq(sram.wen), sram.rdata.eq(out)]


def _dp16kd_memory(m, srams, oces, addr_bits):
    """Each group's ``sram`` contract of DP16KD block RAMs side by side, each a slice of the
    group's word: port A writes, port B reads into its output register (loaded when its
    group's ``oce``)."""
    mode = _DP16KD_WIDTH[1 << addr_bits]
    bits = dp16kd_data_bits(mode)            # data bits per block RAM
    i = 0
    for g, (sram, oce) in enumerate(zip(srams, oces)):
        dout = []
        for lo in range(0, len(sram.wdata), bits):
            do = Signal(bits, name=f"dram_do{i}")
            dout.append(do)
            m.submodules[f"dram{i}"] = dp16kd(mode=mode, waddr=sram.waddr, raddr=sram.raddr,
                                              wdata=sram.wdata[lo:lo + bits],
                                              we=sram.wen[lo // 8], ren=sram.ren, oce=oce,
                                              dout=do)
            i += 1
        m.d.comb += sram.rdata.eq(Cat(*dout))
