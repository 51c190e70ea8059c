"""The host link: LiteX's UART bridge protocol (:mod:`isa.hostlink`) as a 32-bit bus master.

Reimplemented from the protocol description, not from LiteX's sources.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from isa import hostlink as H

from .uart import UartRx, UartTx

__all__ = ["WordBusSignature", "UartBridge"]


class WordBusSignature(wiring.Signature):
    """A 32-bit word bus, seen from its master: ``stb`` is held with ``addr`` (word address),
    ``we`` and ``wdata`` until the slave pulses ``ack`` (``rdata`` is valid with ``ack`` of a
    read). One access at a time."""

    def __init__(self):
        super().__init__({
            "addr": Out(H.ADDR_WORD_BITS), "we": Out(1), "wdata": Out(32), "stb": Out(1),
            "ack": In(1), "rdata": In(32),
        })


class UartBridge(wiring.Component):
    """Serial line (``rx``, ``tx``) to ``bus`` accesses.

    Bytes pass through a 16-byte receive FIFO, so the bridge may wait on a slow access while
    the host keeps sending. ``timeout`` cycles without a byte in the middle of a command drop
    the command. Throughput: one word per four bytes on the line, in both directions.
    """

    def __init__(self, divisor: int, timeout: int):
        self._divisor, self._timeout = divisor, timeout
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1),
                          "bus": Out(WordBusSignature())})

    def elaborate(self, platform):
        m = Module()
        m.submodules.urx = urx = UartRx(self._divisor)
        m.submodules.utx = utx = UartTx(self._divisor)
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=8, depth=16)
        m.d.comb += [urx.rx.eq(self.rx), self.tx.eq(utx.tx),
                     fifo.w_data.eq(urx.data.payload), fifo.w_en.eq(urx.data.valid)]
        # The FSM takes its bytes from a one-entry register, refilled from the FIFO when empty:
        # the FIFO's read enable comes from flip-flops only, not from the FSM's decode (a byte
        # arrives every ~30 cycles at the fastest baud, so one byte every two cycles is plenty).
        byte, got = Signal(8), Signal()
        # the byte's decode as registers loaded with it: the FSM's tests are flip-flops
        is_write, is_cmd = Signal(), Signal()
        m.d.comb += fifo.r_en.eq(~got)
        with m.If(fifo.r_rdy & ~got):
            m.d.sync += [byte.eq(fifo.r_data), got.eq(1),
                         is_write.eq(fifo.r_data == H.CMD_WRITE),
                         is_cmd.eq((fifo.r_data == H.CMD_WRITE)
                                   | (fifo.r_data == H.CMD_READ))]

        cmd_write = Signal()
        count = Signal(8)
        # `count == 0` and `count == 1` as registers set with `count` (two LUT levels of an
        # 8-bit compare off the FSM's transitions and the strobe's enable: Fmax)
        count_zero, count_one = Signal(), Signal()
        addr = self.bus.addr
        shift = Signal(32)
        nbytes = Signal(range(5))
        idle = Signal(range(self._timeout + 1))
        # The bus's strobe and direction are registers too (set with the transition into an
        # access): the slaves' decode starts from flip-flops.
        stb, we = Signal(), Signal()
        m.d.comb += [self.bus.stb.eq(stb), self.bus.we.eq(we), self.bus.wdata.eq(shift)]

        # An idle timer that runs while a command waits for its next byte. `timed_out` is
        # `idle == timeout` as a register, loaded with the value that compare has in the next
        # cycle (the counter's compare is three LUT levels before the FSM's own: Fmax).
        waiting = Signal()
        timed_out = Signal()
        with m.If(got | ~waiting):
            m.d.sync += [idle.eq(0), timed_out.eq(self._timeout == 0)]
        with m.Elif(idle != self._timeout):
            m.d.sync += [idle.eq(idle + 1), timed_out.eq(idle == self._timeout - 1)]

        def take(m):
            """Wait for a byte of the command; drop the command on a timeout. The byte is
            consumed in the cycle the FSM sees it (``got``)."""
            m.d.comb += waiting.eq(1)
            with m.If(got):
                m.d.sync += got.eq(0)

        def decrement(m):
            """One word of the command done: ``count`` and its flags move on."""
            m.d.sync += [count.eq(count - 1), count_zero.eq(count_one), count_one.eq(count == 2)]

        with m.FSM():
            with m.State("CMD"):
                with m.If(got):
                    m.d.sync += got.eq(0)
                    with m.If(is_cmd):
                        m.d.sync += [cmd_write.eq(is_write), we.eq(is_write)]
                        m.next = "LEN"
            with m.State("LEN"):
                take(m)
                with m.If(timed_out):
                    m.next = "CMD"
                with m.Elif(got):
                    m.d.sync += [count.eq(byte), count_zero.eq(byte == 0),
                                 count_one.eq(byte == 1), nbytes.eq(4)]
                    m.next = "ADDR"
            with m.State("ADDR"):
                take(m)
                with m.If(timed_out):
                    m.next = "CMD"
                with m.Elif(got):
                    m.d.sync += [shift.eq((shift << 8) | byte), nbytes.eq(nbytes - 1)]
                    with m.If(nbytes == 1):
                        m.d.sync += [nbytes.eq(4), addr.eq(((shift << 8) | byte)[:len(addr)])]
                        with m.If(count_zero):
                            m.next = "CMD"
                        with m.Elif(cmd_write):
                            m.next = "WDATA"
                        with m.Else():
                            m.d.sync += stb.eq(1)
                            m.next = "READ"
            with m.State("WDATA"):
                with m.If(stb):
                    with m.If(self.bus.ack):
                        m.d.sync += [stb.eq(0), addr.eq(addr + 1), nbytes.eq(4)]
                        decrement(m)
                        with m.If(count_one):
                            m.next = "CMD"
                with m.Else():
                    take(m)
                    with m.If(timed_out):
                        m.next = "CMD"
                    with m.Elif(got):
                        m.d.sync += [shift.eq((shift << 8) | byte), nbytes.eq(nbytes - 1)]
                        with m.If(nbytes == 1):
                            m.d.sync += stb.eq(1)
            with m.State("READ"):
                with m.If(self.bus.ack):
                    m.d.sync += [stb.eq(0), shift.eq(self.bus.rdata), nbytes.eq(4)]
                    m.next = "SEND"
            with m.State("SEND"):
                m.d.comb += [utx.data.valid.eq(1), utx.data.payload.eq(shift[24:])]
                with m.If(utx.data.ready):
                    m.d.sync += [shift.eq(shift << 8), nbytes.eq(nbytes - 1)]
                    with m.If(nbytes == 1):
                        m.d.sync += addr.eq(addr + 1)
                        decrement(m)
                        with m.If(count_one):
                            m.next = "CMD"
                        with m.Else():
                            m.d.sync += stb.eq(1)
                            m.next = "READ"
        return m
