"""Command queues (instruction FIFOs between fetch and the modules) and the four token queues."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from isa.arch import HEAD_SETTLE
from isa.arch import TOKEN_QUEUES  # (name, producer, consumer), in the hardware's order
from isa.config import VTAConfig

from .fields import queue_entry

__all__ = ["CommandQueue", "FlagFIFO", "TokenQueues", "TOKEN_QUEUES"]

# r_rdy_next reads the settling shift's second-to-last stage, and it promises the module the
# same head entry next cycle: both need two stages at least.
assert HEAD_SETTLE >= 2, "hw.queues.CommandQueue.r_rdy_next needs HEAD_SETTLE >= 2"


class FlagFIFO(wiring.Component):
    """Amaranth's :class:`~amaranth.lib.fifo.SyncFIFOBuffered` (``depth`` ≥ 2) with the same
    ports and cycles (its output register behind a block-RAM FIFO of ``depth − 1`` entries),
    but the inner FIFO's tests "not empty", "not full", "one entry" and "one short of full"
    are registers set with the level they test, chosen by the write and read of the cycle, and
    the level's next value is chosen among level ± 1 and itself: the late ``w_en`` (fetch's
    dispatch) and ``r_en`` (a module's pop) select among registers and register compares
    instead of feeding a level compare and an adder (Fmax, §12). ``w_rdy`` is the "not full"
    register."""

    def __init__(self, width: int, depth: int):
        assert depth >= 2, "FlagFIFO models SyncFIFOBuffered's depth >= 2"
        self._depth = depth
        super().__init__({
            "w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
            "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1),
            "level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._depth - 1                 # the inner FIFO's entries
        m.submodules.storage = storage = Memory(shape=len(self.w_data), depth=n, init=[])
        w_port, r_port = storage.write_port(), storage.read_port(domain="sync")
        inner = Signal(range(n + 1))
        nonzero = Signal()                  # ``inner != 0``
        room = Signal(init=1)               # ``inner != n``
        one = Signal()                      # ``inner == 1``
        short = Signal(init=n == 1)         # ``inner == n − 1``
        produce = Signal(range(n))
        consume = Signal(range(n))
        do_write, do_read = Signal(), Signal()
        m.d.comb += [
            self.w_rdy.eq(room),
            do_write.eq(self.w_en & room),
            do_read.eq(nonzero & (~self.r_rdy | self.r_en)),   # the output register refills
            w_port.addr.eq(produce), w_port.data.eq(self.w_data), w_port.en.eq(do_write),
            r_port.addr.eq(consume), r_port.en.eq(do_read), self.r_data.eq(r_port.data),
            self.level.eq(inner + self.r_rdy),
        ]

        def incr(v):
            return Mux(v == n - 1, 0, v + 1)

        with m.If(do_write):
            m.d.sync += produce.eq(incr(produce))
        with m.If(do_read):
            m.d.sync += consume.eq(incr(consume))
        up, down = do_write & ~do_read, do_read & ~do_write
        inner_up, inner_down = Signal.like(inner), Signal.like(inner)
        m.d.comb += [inner_up.eq(inner + 1), inner_down.eq(inner - 1)]
        # (each flag: its value after one entry more, after one less, else itself)
        for reg, after_up, after_down in (
                (inner, inner_up, inner_down),
                (nonzero, 1, ~one),
                (room, ~short, 1),
                (one, inner == 0, inner == 2),
                (short, inner == n - 2, inner == n)):
            m.d.sync += reg.eq(Mux(up, after_up, Mux(down, after_down, reg)))
        with m.If(do_read):
            m.d.sync += self.r_rdy.eq(1)
        with m.Elif(self.r_en):
            m.d.sync += self.r_rdy.eq(0)
        return m


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
        assert self._depth >= 2, "CommandQueue's FlagFIFO needs cmd_queue_depth >= 2"
        m = Module()
        m.submodules.fifo = fifo = FlagFIFO(width=len(self.w_data.as_value()),
                                            depth=self._depth)
        # (``w_rdy`` is the FIFO's "not full" register: fetch's dispatch starts from it)
        m.d.comb += [
            fifo.w_data.eq(self.w_data), fifo.w_en.eq(self.w_en),
            self.w_rdy.eq(fifo.w_rdy), fifo.r_en.eq(self.r_en),
            self.level.eq(fifo.level),
        ]
        # The FIFO's output holds while it is not read: ``settled`` shifts in "the same entry
        # as last cycle", and the head register copies it, so r_data equals it once settled.
        stay = Signal()
        m.d.comb += stay.eq(fifo.r_rdy & ~self.r_en)
        settled = Signal(HEAD_SETTLE)
        m.d.sync += settled.eq(Cat(stay, settled[:-1] & stay.replicate(HEAD_SETTLE - 1))
                               if HEAD_SETTLE > 1 else stay)
        head = Signal(queue_entry())
        m.d.sync += head.eq(fifo.r_data)
        # ``settled[-1]`` implies the FIFO's r_rdy (an entry not read stays), so r_rdy is the
        # register itself (Fmax: the modules' start decision, docs/hardware.md §12 step 17).
        m.d.comb += [self.r_data.eq(head), self.r_rdy.eq(settled[-1]),
                     self.r_rdy_next.eq(settled[-2] & ~self.r_en)]
        # ``level == 0`` as a register (the core's DEADLOCK test reads it: Fmax)
        empty = Signal(init=1)
        wrote, read = fifo.w_en & fifo.w_rdy, self.r_en & fifo.r_rdy
        with m.If(wrote ^ read):
            m.d.sync += empty.eq(read & (fifo.level == 1))
        m.d.comb += self.empty.eq(empty)
        return m


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
