"""Pieces every execution module (load, compute, store) shares: its interface to the core."""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib.wiring import In, Out

from isa.errors import ErrorCode

from .alu import one_hot
from .fields import INDEX_BITS, queue_entry
from .memport import MemPortSignature

__all__ = ["module_members", "start_decision", "raise_error", "error_index", "mux_ports",
           "start_outcome", "ERR_BITS"]

ERR_BITS = 4


def module_members(cfg) -> dict:
    """Ports of a module towards its command queue, the token queues and the error latch."""
    return {
        "head": In(queue_entry()), "head_valid": In(1), "pop": Out(1),
        "head_valid_next": In(1),   # head_valid in the next cycle (hw.queues.CommandQueue)
        "halt": In(1), "dram_size": In(32),
        "err": Out(1), "err_code": Out(ERR_BITS), "err_index": Out(INDEX_BITS),
        "idle": Out(1),      # in its IDLE state (between instructions)
        "blocked": Out(1),   # IDLE with a head instruction whose tokens are missing
        "stopped": Out(1),   # ``blocked`` but for the halt: a register (the core's DEADLOCK test)
        "port": Out(MemPortSignature(cfg)),
    }


def start_decision(m: Module, comp, *, retire, needs) -> Signal:
    """The module's start condition, ``idle & head_valid & ~halt & tokens``, from two
    flip-flops: ``ready`` (idle, head valid, its tokens there) is computed a cycle ahead
    from next-cycle values, and only ``halt`` joins it (Fmax, docs/hardware.md §12 step 17).

    ``retire``: high in the state that returns to IDLE (the FSM is idle next cycle if it is
    idle and does not start, or retiring). ``needs``: ``(head flag, avail_next)`` per token
    the head pops if its flag is set (``hw.queues.TokenQueues.avail_next``, exact here: a
    head valid next cycle was not popped now, so no token was). The head next cycle is the
    head of now whenever ``head_valid_next`` is set (``hw.queues.CommandQueue``). Drives
    ``pop``, ``blocked`` (IDLE with a head whose tokens are missing) and ``stopped`` (the
    same without the halt: its register); returns ``go``
    (= ``pop``), every start of the cycle is ``go`` and registered decodes of the head."""
    ready, stopped = Signal(name="ready"), Signal(name="stopped")
    tokens_next = Cat(*[~flag | avail for flag, avail in needs]).all()
    soon = Signal(name="head_soon")
    m.d.comb += soon.eq(comp.head_valid_next & (comp.idle | retire))
    m.d.sync += [ready.eq(soon & tokens_next), stopped.eq(soon & ~tokens_next)]
    go = Signal(name="go")
    m.d.comb += [go.eq(ready & ~comp.halt), comp.pop.eq(go),
                 comp.blocked.eq(stopped & ~comp.halt), comp.stopped.eq(stopped)]
    return go


def raise_error(m: Module, comp, code: ErrorCode):
    m.d.comb += [comp.err.eq(1), comp.err_code.eq(code)]


def error_index(m: Module, comp, head_index, index):
    """``err_index``: the head's index in IDLE (an error at the start), else the running
    instruction's. It never waits for the error conditions, so the core's index compares run
    in parallel with them (Fmax)."""
    m.d.comb += comp.err_index.eq(Mux(comp.idle, head_index, index))


def start_outcome(m: Module, comp, *, noop, sram_bad, dram_bad):
    """The start cycle's common choice (``go`` high, IDLE): a no-op retires at once (returns
    to the caller's RETIRE through ``m.next``), a range error is raised (SRAM before DRAM,
    the FSM stays in IDLE: the core halts), else the caller starts its work under the
    returned ``with`` (the ``m.Else()`` block: ``with start_outcome(...):``)."""
    with m.If(noop):
        m.next = "RETIRE"
    with m.Elif(sram_bad):
        raise_error(m, comp, ErrorCode.SRAM_RANGE)
    with m.Elif(dram_bad):
        raise_error(m, comp, ErrorCode.DRAM_RANGE)
    return m.Else()


def mux_ports(m: Module, port, children):
    """Connect one of several initiator ports (``(select, child_port)``) to ``port``.

    The selects are one-hot (at most one high) and should be registers decided before the
    transfer starts (e.g. set in IDLE from the head's memory type, as hw.load's ``sel_inp``
    and ``sel_wgt``): ``port``'s signals are the AND-OR of the children's (each select a
    LUT input beside the child's signal, no chain of priority multiplexers) and each child's
    ``wr_ack`` and ``ready`` one AND. Only the selected child drives ``rcmd``'s payload,
    ``wcmd`` and ``wr`` and sees the ``ready``s and ``wr_ack``; ``rcmd.valid`` and the read
    data channel are not selected: every child sees the ``rd`` payload and ``rd.valid``, and
    ``rcmd.valid`` and ``rd.ready`` are the ORs of the children's (Fmax: the arbiter's grant
    and the memory's read handshake cross no selection), so a child not selected must hold
    them low (an idle engine does: a DMA reader's ``rcmd.valid`` is its walker's ``nz``, a
    :class:`~hw.dma.TensorLoader`'s reader is ready only in its DATA state). The selection
    may change only while no burst of the selected child is in flight (between instructions).
    """
    def either(get):
        return [(sel, Value.cast(get(child))) for sel, child in children]

    def drive(get):
        target = Value.cast(get(port))
        m.d.comb += target.eq(one_hot(len(target), either(get)))

    for getter in (lambda p: p.rcmd.payload, lambda p: p.wcmd.valid, lambda p: p.wcmd.payload,
                   lambda p: p.wr.valid, lambda p: p.wr.payload):
        drive(getter)
    # ``rcmd.valid`` the OR of the children's, ungated (a child not selected is idle: a DMA
    # reader's ``valid`` is its walker's ``nz``, low while idle): the arbiter's grant reads
    # one LUT of flip-flops per client, not the selection (Fmax)
    m.d.comb += port.rcmd.valid.eq(Cat(*[child.rcmd.valid for _, child in children]).any())
    # ``rd.ready`` the OR of the children's, ungated as ``rd.valid`` (a child not selected
    # holds it low): the read handshake crosses one LUT of the children's readies, not the
    # selection (Fmax: the memory's read data → the arbiter's read bookkeeping)
    m.d.comb += port.rd.ready.eq(Cat(*[child.rd.ready for _, child in children]).any())
    for sel, child in children:
        m.d.comb += [child.rd.payload.eq(port.rd.payload),
                     child.rcmd.ready.eq(sel & port.rcmd.ready),
                     child.wcmd.ready.eq(sel & port.wcmd.ready),
                     child.rd.valid.eq(port.rd.valid),
                     child.wr.ready.eq(sel & port.wr.ready),
                     child.wr_ack.eq(sel & port.wr_ack)]
