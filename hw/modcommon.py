"""Pieces every execution module (load, compute, store) shares: its interface to the core."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib.wiring import In, Out

from isa.errors import ErrorCode

from .fields import INDEX_BITS, queue_entry
from .memport import MemPortSignature

__all__ = ["module_members", "raise_error", "mux_ports", "ERR_BITS"]

ERR_BITS = 4


def module_members(cfg) -> dict:
    """Ports of a module towards its command queue, the token queues and the error latch."""
    return {
        "head": In(queue_entry()), "head_valid": In(1), "pop": Out(1),
        "halt": In(1), "dram_size": In(32),
        "err": Out(1), "err_code": Out(ERR_BITS), "err_index": Out(INDEX_BITS),
        "idle": Out(1),      # in its IDLE state (between instructions)
        "blocked": Out(1),   # IDLE with a head instruction whose tokens are missing
        "port": Out(MemPortSignature(cfg)),
    }


def raise_error(m: Module, comp, code: ErrorCode, index):
    m.d.comb += [comp.err.eq(1), comp.err_code.eq(code), comp.err_index.eq(index)]


def mux_ports(m: Module, port, children):
    """Connect one of several initiator ports (``(select, child_port)``) to ``port``.

    Only the selected child drives ``cmd``/``wr``; every child sees ``rd`` and ``wr_ack`` but
    ``rd.ready`` comes from the selected one.
    """
    for sel, child in children:
        m.d.comb += [child.rd.payload.eq(port.rd.payload)]
        with m.If(sel):
            m.d.comb += [
                port.cmd.valid.eq(child.cmd.valid), port.cmd.payload.eq(child.cmd.payload),
                child.cmd.ready.eq(port.cmd.ready),
                child.rd.valid.eq(port.rd.valid), port.rd.ready.eq(child.rd.ready),
                port.wr.valid.eq(child.wr.valid), port.wr.payload.eq(child.wr.payload),
                child.wr.ready.eq(port.wr.ready), child.wr_ack.eq(port.wr_ack),
            ]
