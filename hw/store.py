"""The store module: STORE of narrowed accumulators (the OUT buffer) to DRAM with strides."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig
from isa.errors import ErrorCode

from .dma import PREPARE_CYCLES, DmaWriter, _log2
from .dsp import RegisteredProduct
from .extent import mem_range_checks
from .fields import INDEX_BITS, mem_insn
from .modcommon import error_index, module_members, raise_error, start_decision, start_outcome
from .sram import block_ram

__all__ = ["StoreModule", "out_buffer"]


def out_buffer(m: Module, cfg: VTAConfig, *, platform=None):
    """The OUT buffer ``out_buf`` (``hw.core``: the compute module writes, STORE reads):
    (write port, read port), the read through the block RAM's own output register, which
    advances with STORE's ``out_ren`` as the latch does (``hw.sram.block_ram``'s ``out_reg``,
    ``out_en``; ``hw.core`` drives both enables): the register STORE's writer reads (Fmax: the block RAM's clock-to-output and a route into a
    fabric register were on ecp5-large's worst list, §12 session 22)."""
    wp, (rp,) = block_ram(m, "out_buf", shape=cfg.out_elem_bits, depth=cfg.acc_depth,
                          out_reg=True, out_en=True, platform=platform)
    return wp, rp


class StoreModule(wiring.Component):
    """Executes the store queue in order, one instruction at a time.

    Cycle *s* (IDLE, head visible, g2s token present if ``pop_prev``): start — queue entry and
    token popped, the range checks (pipelined while the entry sat at the queue's head) decide
    (SRAM before DRAM; fetch checked the fields), and (checks
    passed, ``x_size, y_size ≥ 1``) the :class:`~hw.dma.DmaWriter` is started for ``y_size``
    rows of ``x_size`` OUT elements (row *y* at DRAM element ``dram_base + y · x_stride``) and
    the OUT-buffer reader for the ``y_size · x_size`` dense elements from ``sram_base``. WAIT
    from *s* + 1 until the writer's ``busy`` is low (its last ``wr_ack`` seen), then one RETIRE
    cycle pushes s2g (``push_prev``). ``x_size == 0`` or ``y_size == 0``: START, RETIRE. The
    OUT-buffer reader is two stages in front of the writer, both held while the writer is not
    ready: the block RAM's read latch runs one element ahead of its output register, which
    the writer reads (:func:`out_buffer`; the first read at the start edge *s*), so the
    first element is there in *s* + 2, the next in the cycle after each one is taken.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            **module_members(cfg),
            "g2s_avail_next": In(1), "pop_g2s": Out(1), "push_s2g": Out(1), "s2g_overflow": In(1),
            "out_raddr": Out(cfg.log_acc_depth), "out_ren": Out(1),
            "out_rdata": In(cfg.out_elem_bits),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        eb = cfg.out_elem_bytes
        m.submodules.writer = writer = DmaWriter(cfg, elem_bytes=eb, count_bits=16,
                                                   prepare_cycles=PREPARE_CYCLES)
        wiring.connect(m, wiring.flipped(self.port), writer.port)
        head = Signal(mem_insn())
        m.d.comb += head.eq(self.head.word)
        insn = Signal(mem_insn())
        index = Signal(INDEX_BITS)
        raddr = Signal(cfg.log_acc_depth)
        left = Signal(32)
        valid = Signal()
        advance = Signal()
        # The element the writer reads is the block RAM's output register, loaded from its
        # read latch (Fmax: a DP16KD without its output register takes 5.8 ns from clock to
        # data, and the writer's lane select and the board's write-data register were behind
        # it); the latch reads one element ahead, both move together on ``advance``
        # (``out_ren``; in an idle cycle the register takes what the writer will not read).
        s2_data = self.out_rdata
        m.d.comb += [
            advance.eq(~valid | writer.inp.ready),
            # (idle: the head's first element, read at the start edge whatever came before)
            self.out_ren.eq(advance), self.out_raddr.eq(Mux(self.idle, head.sram_base, raddr)),
            writer.inp.valid.eq(valid), writer.inp.payload.eq(s2_data),
            writer.addr.eq(head.dram_base << _log2(eb)), writer.count.eq(head.x_size),
            writer.rows.eq(head.y_size), writer.stride.eq(head.x_stride << _log2(eb)),
        ]
        sram_bad, dram_bad = mem_range_checks(m, head, dram_size=self.dram_size, padded=False,
                                              kinds={"out": (eb, cfg.acc_depth)})["out"]

        # the element count and the no-op tests registered from the head (it sits there
        # HEAD_SETTLE cycles before it starts): off the start condition's path (Fmax). The
        # count is a MULT18X18D's output register (hw.dsp): the fabric register after the
        # block's combinational mode put the route from the DSP column on the path (12.39 ns
        # on ecp5-large, docs/hardware.md §12 session 16)
        m.submodules.count_mul = count_mul = RegisteredProduct(
            len(head.x_size), len(head.y_size), 32, is_signed=False)
        area = count_mul.p
        noop, no_rows = Signal(), Signal()
        m.d.comb += [count_mul.a.eq(head.x_size), count_mul.b.eq(head.y_size)]
        m.d.sync += [noop.eq(head.x_size == 0), no_rows.eq(head.y_size == 0)]
        row_start = Signal()
        # ``left != 0`` a register set with ``left`` (Fmax: the writer's ``inp.ready`` reaches
        # the reader's enables through one gate, not a 32-bit OR). ``left`` follows ``area``
        # in every idle cycle; the start sets ``more`` alone (it starts only with x_size,
        # y_size ≥ 1, so with ``area`` ≥ 1), so the start condition drives one flip-flop
        more = Signal()
        with m.If(self.idle):
            m.d.sync += [left.eq(area), more.eq(row_start), valid.eq(0)]
        with m.Elif(advance):
            m.d.sync += valid.eq(more)
            with m.If(more):
                # (``left ≥ 1`` with ``more``: ``left != 1`` is ``left ≥ 2``, a borrow, a carry
                # chain and no LUT tree)
                m.d.sync += [raddr.eq(raddr + 1), left.eq(left - 1),
                             more.eq(~(left - 2)[-1])]

        error_index(m, self, self.head.index, index)
        go = Signal()
        with m.FSM() as fsm:
            with m.State("IDLE"):
                m.d.comb += self.idle.eq(1)
                # taken in every idle cycle (used once the instruction runs; the OUT reader
                # is idle): off the start condition's path (Fmax). The block RAM reads the
                # head's ``sram_base`` at the start edge (the compute module's OUT writes
                # this STORE waits for lie before the token it pops), so ``raddr`` starts at
                # the element after it.
                m.d.sync += [insn.eq(head), index.eq(self.head.index),
                             raddr.eq(head.sram_base + 1)]
                with m.If(go):
                    m.d.comb += self.pop_g2s.eq(head.pop_prev)
                    with start_outcome(m, self, noop=noop, sram_bad=sram_bad,
                                       dram_bad=dram_bad):
                        with m.If(no_rows):
                            m.next = "RETIRE"
                        with m.Else():
                            m.next = "WAIT"
            with m.State("WAIT"):
                with m.If(~writer.busy):
                    m.next = "RETIRE"
            with m.State("RETIRE"):
                m.d.comb += self.push_s2g.eq(insn.push_prev)
                with m.If(insn.push_prev & self.s2g_overflow):
                    raise_error(m, self, ErrorCode.TOKEN_OVERFLOW)
                m.next = "IDLE"
        m.d.comb += go.eq(start_decision(m, self, retire=fsm.ongoing("RETIRE"),
                                         needs=[(head.pop_prev, self.g2s_avail_next)]))
        # the writer's start as ``go`` and the registered decodes (``go`` implies IDLE:
        # ``hw.modcommon.start_decision``), not under the FSM's state decode (Fmax)
        m.d.comb += [row_start.eq(go & ~noop & ~sram_bad & ~dram_bad & ~no_rows),
                     writer.start.eq(row_start)]
        return m
