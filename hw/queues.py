"""Command queues (instruction FIFOs between fetch and the modules) and the four token queues."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.arch import HEAD_SETTLE
from isa.arch import TOKEN_QUEUES  # (name, producer, consumer), in the hardware's order
from isa.config import VTAConfig

from .fields import queue_entry
from .sram import block_ram

__all__ = ["CommandQueue", "TokenQueues", "TOKEN_QUEUES"]

# r_rdy_next reads the settling shift's second-to-last stage, and it promises the module the
# same head entry next cycle: both need two stages at least.
assert HEAD_SETTLE >= 2, "hw.queues.CommandQueue.r_rdy_next needs HEAD_SETTLE >= 2"



class CommandQueue(wiring.Component):
    """A FIFO of ``cfg.cmd_queue_depth`` (instruction, index) entries.

    Capacity exactly ``cfg.cmd_queue_depth``. An entry written in cycle *t* (``w_en & w_rdy``)
    into an empty queue reaches the FIFO's head in *t* + 2; a read (``r_en``) in cycle *t*
    brings the next entry, if any, there in *t* + 1. The module sees an entry (``r_rdy``,
    ``r_data``) only after it has sat at the head for ``HEAD_SETTLE`` cycles: ``r_data`` is a
    register behind the FIFO's memory, and the module's pipelined checks of that entry
    (``hw.extent``) have settled by then. So *t* + 2 + HEAD_SETTLE, resp. *t* + 1 + HEAD_SETTLE.
    ``level`` counts every entry written and not yet read (including one not yet at the head),
    ``empty`` (``level == 0``) is a register; one read and one write per cycle. ``r_rdy`` is
    a register (the last stage of the settling shift); ``r_rdy_next`` is its value in the next
    cycle, for a module that decides a cycle ahead whether it starts
    (``hw.modcommon.start_decision``); once set it says the head is the same entry as now
    (``HEAD_SETTLE`` ≥ 2).
    """

    def __init__(self, cfg: VTAConfig):
        self._depth = cfg.cmd_queue_depth
        layout = queue_entry()
        super().__init__({
            "w_data": In(layout), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(layout), "r_en": In(1), "r_rdy": Out(1), "r_rdy_next": Out(1),
            "level": Out(range(cfg.cmd_queue_depth + 1)), "empty": Out(1),
        })

    def elaborate(self, platform):
        assert self._depth >= 2, "CommandQueue keeps one entry in its output, the rest in memory"
        m = Module()
        head, out_valid, level_one = self._fifo(m, platform)
        # The FIFO's output holds while it is not read: ``settled`` shifts in "the same entry
        # as last cycle", and the head register (the memory's output register: no route
        # from the block RAM's slow output, §12) copies it, so r_data equals it once settled.
        stay = Signal()
        m.d.comb += stay.eq(out_valid & ~self.r_en)
        settled = Signal(HEAD_SETTLE)
        m.d.sync += settled.eq(Cat(stay, settled[:-1] & stay.replicate(HEAD_SETTLE - 1))
                               if HEAD_SETTLE > 1 else stay)
        # ``settled[-1]`` implies the FIFO's output is valid (an entry not read stays), so
        # r_rdy is the register itself (Fmax: the modules' start decision, §12 step 17).
        m.d.comb += [self.r_data.eq(head), self.r_rdy.eq(settled[-1]),
                     self.r_rdy_next.eq(settled[-2] & ~self.r_en)]
        # ``level == 0`` as a register (the core's DEADLOCK test reads it: Fmax)
        empty = Signal(init=1)
        wrote, read = self.w_en & self.w_rdy, self.r_en & out_valid
        with m.If(wrote ^ read):
            m.d.sync += empty.eq(read & level_one)
        m.d.comb += self.empty.eq(empty)
        return m

    def _fifo(self, m, platform):
        """The FIFO behind the head: Amaranth's ``SyncFIFOBuffered`` cycle for cycle (a
        memory of ``depth − 1`` entries read synchronously into its output, which is valid
        from the cycle after the read), made here so that its flags are registers: ``w_rdy``
        (the memory not full) and "the memory not empty" are loaded with their next values
        (the counts compared with constants, the late handshakes only choosing), so fetch's
        dispatch and the memory's read enable start from flip-flops (Fmax). Its memory has
        a power-of-two number of slots (the pointers wrap by themselves) and undefined
        read-write collisions (:mod:`hw.sram`): the entry read is never the one written, as the
        memory holds at most ``depth − 1`` entries and is read only when not empty. Its count is
        the pointers' difference (no counter: its update would follow both handshakes).
        Returns (the head: the output data a cycle later, from the block RAM's own output
        register where it has one; output valid; ``level == 1``)."""
        inner_depth = self._depth - 1
        slots = 1 << inner_depth.bit_length()     # more than inner_depth
        wp, (rp,) = block_ram(m, "storage", shape=len(self.w_data.as_value()), depth=slots,
                              out_reg=True, platform=platform)
        produce = Signal(range(slots))
        consume = Signal(range(slots))
        # the entries in the memory (at most inner_depth < slots: the difference is exact)
        inner = Signal(range(slots))
        m.d.comb += inner.eq(produce - consume)
        inner_nz = Signal()                        # ``inner != 0``, set with the pointers
        w_rdy = Signal(init=1)                     # ``inner != inner_depth``, likewise
        out_valid = Signal()
        do_write, do_read = Signal(), Signal()     # into the memory; out of it into the output
        m.d.comb += [
            self.w_rdy.eq(w_rdy),
            do_write.eq(self.w_en & w_rdy),
            do_read.eq(inner_nz & (~out_valid | self.r_en)),
            wp.addr.eq(produce), wp.data.eq(self.w_data), wp.en.eq(do_write),
            rp.addr.eq(consume), rp.en.eq(do_read),
            self.level.eq(inner + out_valid),
        ]
        with m.If(do_write):
            m.d.sync += produce.eq(produce + 1)
        with m.If(do_read):
            m.d.sync += consume.eq(consume + 1)
        # the flags' next values for each value of ``do_read`` (the latest: the module's
        # start), made from ``do_write`` and the count; ``do_read`` only chooses (Fmax)
        m.d.sync += [
            inner_nz.eq(Mux(do_read, do_write | (inner != 1), inner_nz | do_write)),
            w_rdy.eq(Mux(do_write, do_read | (inner != inner_depth - 1), w_rdy | do_read)),
        ]
        with m.If(do_read):
            m.d.sync += out_valid.eq(1)
        with m.Elif(self.r_en):
            m.d.sync += out_valid.eq(0)
        level_one = Signal()
        m.d.comb += level_one.eq(Mux(out_valid, ~inner_nz, inner == 1))
        return rp.data, out_valid, level_one


class TokenQueues(wiring.Component):
    """Four token counters (l2g, g2l, g2s, s2g), each ``0 .. cfg.token_queue_depth``.

    ``pop[i]``/``push[i]`` in cycle *t* change ``count[i]`` at the end of *t* (a simultaneous
    push and pop cancel out). ``overflow[i]`` is high (combinationally) in a cycle whose push
    would take the count past the depth: the core raises TOKEN_OVERFLOW and the count saturates.
    ``avail[i]`` (``count[i] != 0``) is a register of its own; ``avail_next[i]`` says the
    count is nonzero in the next cycle *unless the consumer pops now* (``avail | push``): the
    consumer, the only one to pop, uses it to decide a cycle ahead whether it can start
    (``hw.modcommon.start_decision``), a decision that never follows a pop of its own. A pop
    only ever takes an available token.
    """

    def __init__(self, cfg: VTAConfig):
        self._depth = cfg.token_queue_depth
        n = len(TOKEN_QUEUES)
        super().__init__({
            "push": In(1).array(n), "pop": In(1).array(n),
            "count": Out(range(cfg.token_queue_depth + 1)).array(n),
            "overflow": Out(1).array(n),
            "avail": Out(1).array(n), "avail_next": Out(1).array(n),
        })

    def elaborate(self, platform):
        m = Module()
        for i in range(len(TOKEN_QUEUES)):
            count = Signal(range(self._depth + 1), name=f"count_{TOKEN_QUEUES[i][0]}")
            avail = Signal(name=f"avail_{TOKEN_QUEUES[i][0]}")
            push, pop = self.push[i], self.pop[i]
            m.d.comb += [self.count[i].eq(count), self.avail[i].eq(avail),
                         self.avail_next[i].eq(avail | push)]
            # one push or one pop: nonzero after a push, or after a pop from 2 or more
            with m.If(push ^ pop):
                m.d.sync += avail.eq(push | (count >= 2))
            # ``count == depth`` as a register too: the overflow, an error that halts the
            # modules, is then a gate on registers (Fmax)
            full = Signal(name=f"full_{TOKEN_QUEUES[i][0]}")
            with m.If(push ^ pop):
                m.d.sync += full.eq(push & (count >= self._depth - 1))
            with m.If(push & ~pop):
                with m.If(full):
                    m.d.comb += self.overflow[i].eq(1)
                with m.Else():
                    m.d.sync += count.eq(count + 1)
            with m.Elif(pop & ~push):
                m.d.sync += count.eq(count - 1)
        return m
