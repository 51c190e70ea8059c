"""The load module: LOAD INP and LOAD WGT (2-D DMA with zero padding) into the INP/WGT buffers."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig
from isa.encoding import MemType
from isa.errors import ErrorCode

from .dma import TensorLoader
from .extent import mem_range_checks
from .fields import INDEX_BITS, mem_insn
from .modcommon import (error_index, module_members, mux_ports, raise_error, start_decision,
                        start_outcome)

__all__ = ["LoadModule"]


class LoadModule(wiring.Component):
    """Executes the load queue in order, one instruction at a time.

    Cycle *s* (IDLE, head visible, tokens present): the instruction starts — its queue entry and
    its g2l token (``pop_next``) are popped, the range checks (computed in the cycles the entry
    sat at the queue's head, ``hw.extent``) decide, and for ``x_size ≥ 1`` the
    INP or WGT :class:`~hw.dma.TensorLoader` is started. *s* + 1 …: EXEC until the loader's
    ``busy`` is low; then one RETIRE cycle pushes l2g (``push_next``); IDLE follows.
    A no-op (``x_size == 0``) is START, RETIRE: two cycles. Range errors are raised in the
    start cycle (SRAM before DRAM); fetch has already checked the fields.
    """

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        super().__init__({
            **module_members(cfg),
            "g2l_avail_next": In(1), "pop_g2l": Out(1), "push_l2g": Out(1), "l2g_overflow": In(1),
            "inp_waddr": Out(cfg.log_inp_depth), "inp_wdata": Out(cfg.inp_elem_bits),
            "inp_wen": Out(1),
            "wgt_waddr": Out(cfg.log_wgt_depth), "wgt_wdata": Out(cfg.wgt_elem_bits),
            "wgt_wen": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        m.submodules.inp = inp = TensorLoader(cfg, elem_bytes=cfg.inp_elem_bytes,
                                              sram_bits=cfg.inp_elem_bits,
                                              addr_bits=cfg.log_inp_depth)
        m.submodules.wgt = wgt = TensorLoader(cfg, elem_bytes=cfg.wgt_elem_bytes,
                                              sram_bits=cfg.wgt_elem_bits,
                                              addr_bits=cfg.log_wgt_depth)
        head = Signal(mem_insn())
        m.d.comb += head.eq(self.head.word)
        is_inp = Signal()
        m.d.sync += is_inp.eq(head.memory_type == MemType.INP)
        # the port's selects, one-hot registers (``hw.modcommon.mux_ports``)
        sel_inp, sel_wgt = Signal(), Signal()
        insn = Signal(mem_insn())
        index = Signal(INDEX_BITS)
        m.d.comb += [
            inp.insn.eq(head), wgt.insn.eq(head),
            self.inp_waddr.eq(inp.wr_addr), self.inp_wdata.eq(inp.wr_data),
            self.inp_wen.eq(inp.wr_en),
            self.wgt_waddr.eq(wgt.wr_addr), self.wgt_wdata.eq(wgt.wr_data),
            self.wgt_wen.eq(wgt.wr_en),
        ]
        mux_ports(m, self.port, [(sel_inp, inp.port), (sel_wgt, wgt.port)])

        checks = mem_range_checks(m, head, dram_size=self.dram_size, padded=True, kinds={
            MemType.INP: (cfg.inp_elem_bytes, cfg.inp_depth),
            MemType.WGT: (cfg.wgt_elem_bytes, cfg.wgt_depth)})
        inp_sram_bad, inp_dram_bad = checks[MemType.INP]
        wgt_sram_bad, wgt_dram_bad = checks[MemType.WGT]
        sram_bad = Signal()
        dram_bad = Signal()
        m.d.comb += [sram_bad.eq(Mux(is_inp, inp_sram_bad, wgt_sram_bad)),
                     dram_bad.eq(Mux(is_inp, inp_dram_bad, wgt_dram_bad))]

        # Decoded from the head a cycle ahead (it sits there HEAD_SETTLE cycles before it
        # starts), so the start condition is a few gates on registers (Fmax).
        noop = Signal()
        m.d.sync += noop.eq(head.x_size == 0)
        go = Signal()
        error_index(m, self, self.head.index, index)
        with m.FSM() as fsm:
            with m.State("IDLE"):
                m.d.comb += self.idle.eq(1)
                # taken in every idle cycle (used once the instruction runs; the port's
                # selection changes with no burst in flight): off the start condition's path
                m.d.sync += [insn.eq(head), index.eq(self.head.index), sel_inp.eq(is_inp),
                             sel_wgt.eq(~is_inp)]
                with m.If(go):
                    m.d.comb += self.pop_g2l.eq(head.pop_next)
                    with start_outcome(m, self, noop=noop, sram_bad=sram_bad,
                                       dram_bad=dram_bad):
                        m.next = "EXEC"
            with m.State("EXEC"):
                with m.If(~inp.busy & ~wgt.busy):
                    m.next = "RETIRE"
            with m.State("RETIRE"):
                m.d.comb += self.push_l2g.eq(insn.push_next)
                with m.If(insn.push_next & self.l2g_overflow):
                    raise_error(m, self, ErrorCode.TOKEN_OVERFLOW)
                m.next = "IDLE"
        m.d.comb += go.eq(start_decision(m, self, retire=fsm.ongoing("RETIRE"),
                                         needs=[(head.pop_next, self.g2l_avail_next)]))
        # the loaders' starts as ``go`` and the registered decodes (``go`` implies IDLE:
        # ``hw.modcommon.start_decision``), not under the FSM's state decode (Fmax: the start
        # reaches the walkers' ``nz`` through one gate more, not three)
        ok = Signal()
        m.d.comb += [ok.eq(~noop & ~sram_bad & ~dram_bad),
                     inp.start.eq(go & ok & is_inp), wgt.start.eq(go & ok & ~is_inp)]
        return m


