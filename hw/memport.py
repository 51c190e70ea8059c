"""The memory port of the core: one request/response protocol and the arbiter behind it.

Protocol (all signals in the ``sync`` domain, a handshake happens in a cycle where ``valid`` and
``ready`` are both high at the rising edge):

* ``cmd`` (initiator → memory): ``addr`` (byte address, aligned to the bus width), ``len``
  (beats − 1, at most ``cfg.max_burst_beats − 1``; a burst never crosses a
  ``max_burst_beats × bus_bytes`` boundary), ``write``.
* ``rd`` (memory → initiator): one beat per handshake, ``data`` and ``last``; beats come in
  address order. Only read bursts produce ``rd`` beats.
* ``wr`` (initiator → memory): ``len + 1`` beats for a write burst, ``data``, ``strb`` (byte
  enables) and ``last``.
* ``wr_ack`` (memory → initiator): a one-cycle pulse when a write burst has been committed.

Exactly one burst is outstanding at a time: after a ``cmd`` handshake the next one may happen
at the earliest in the cycle after the read burst's last ``rd`` handshake or after the write
burst's ``wr_ack`` pulse.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

__all__ = ["ADDR_BITS", "LEN_BITS", "MemPortSignature", "MemArbiter", "CLIENTS"]

ADDR_BITS = 32
LEN_BITS = 8

#: Arbiter inputs in priority order (index 0 wins).
CLIENTS = ("fetch", "load", "compute", "store")


def cmd_layout() -> data.StructLayout:
    return data.StructLayout({"addr": unsigned(ADDR_BITS), "len": unsigned(LEN_BITS),
                              "write": unsigned(1)})


class MemPortSignature(wiring.Signature):
    """The port as seen by its initiator (a DMA engine or the arbiter's output)."""

    def __init__(self, cfg: VTAConfig):
        self._cfg = cfg
        w = cfg.bus_width
        super().__init__({
            "cmd": Out(stream.Signature(cmd_layout())),
            "rd": In(stream.Signature(data.StructLayout({"data": unsigned(w),
                                                         "last": unsigned(1)}))),
            "wr": Out(stream.Signature(data.StructLayout({"data": unsigned(w),
                                                          "strb": unsigned(w // 8),
                                                          "last": unsigned(1)}))),
            "wr_ack": In(1),
        })

    def __eq__(self, other):
        return isinstance(other, MemPortSignature) and self._cfg == other._cfg

    def __repr__(self):
        return f"MemPortSignature({self._cfg.name})"


class MemArbiter(wiring.Component):
    """Grant-and-hold arbiter between fetch, load, compute and store (fixed priority).

    In a cycle where no burst is outstanding and ``halt`` is low, the highest-priority client
    (fetch > load > compute > store) with ``cmd.valid`` is connected combinationally to the
    memory's ``cmd``; when that handshake happens the client owns the port until its burst
    ends (last read beat handshake, or ``wr_ack``). Zero added latency; one burst at a time.
    ``idle`` is high when no burst is outstanding.
    """

    def __init__(self, cfg: VTAConfig, n: int = len(CLIENTS)):
        self._cfg = cfg
        self._n = n
        super().__init__({
            "clients": In(MemPortSignature(cfg)).array(n),
            "mem": Out(MemPortSignature(cfg)),
            "halt": In(1),
            "idle": Out(1),
            "owner": Out(range(n + 1)),  # n = none
        })

    def elaborate(self, platform):
        m = Module()
        busy = Signal()
        grant = Signal(range(self._n))
        is_write = Signal()
        m.d.comb += self.idle.eq(~busy)
        m.d.comb += self.owner.eq(self._n)

        with m.If(~busy):
            with m.If(~self.halt):
                # Priority: the lowest index with a request wins.
                for i in reversed(range(self._n)):
                    client = self.clients[i]
                    with m.If(client.cmd.valid):
                        m.d.comb += [
                            self.mem.cmd.valid.eq(1),
                            self.mem.cmd.payload.eq(client.cmd.payload),
                        ]
                for i in range(self._n):
                    higher = [self.clients[j].cmd.valid for j in range(i)]
                    win = self.clients[i].cmd.valid
                    for h in higher:
                        win = win & ~h
                    with m.If(win):
                        m.d.comb += self.clients[i].cmd.ready.eq(self.mem.cmd.ready)
                        with m.If(self.mem.cmd.ready):
                            m.d.sync += [busy.eq(1), grant.eq(i),
                                         is_write.eq(self.clients[i].cmd.payload.write)]
        with m.Else():
            m.d.comb += self.owner.eq(grant)
            for i in range(self._n):
                client = self.clients[i]
                m.d.comb += [client.rd.payload.eq(self.mem.rd.payload)]
                with m.If(grant == i):
                    m.d.comb += [
                        client.rd.valid.eq(self.mem.rd.valid),
                        self.mem.rd.ready.eq(client.rd.ready),
                        self.mem.wr.valid.eq(client.wr.valid),
                        self.mem.wr.payload.eq(client.wr.payload),
                        client.wr.ready.eq(self.mem.wr.ready),
                        client.wr_ack.eq(self.mem.wr_ack),
                    ]
            with m.If(~is_write & self.mem.rd.valid & self.mem.rd.ready
                      & self.mem.rd.payload.last):
                m.d.sync += busy.eq(0)
            with m.If(is_write & self.mem.wr_ack):
                m.d.sync += busy.eq(0)
        return m
