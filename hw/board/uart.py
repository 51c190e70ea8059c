"""8N1 serial receiver and transmitter, one bit every ``divisor`` clock cycles."""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UartTx", "UartRx", "MIN_DIVISOR"]

#: The receiver samples mid-bit, half a bit after the start edge: it needs a few cycles per bit.
MIN_DIVISOR = 4


def _check(divisor: int) -> int:
    if not isinstance(divisor, int) or divisor < MIN_DIVISOR:
        raise ValueError(f"UART divisor {divisor!r} must be an integer >= {MIN_DIVISOR} "
                         f"clock cycles per bit")
    return divisor


class UartTx(wiring.Component):
    """``data`` (a byte stream) out on ``tx``, LSB first: start bit, 8 data bits, stop bit.

    A byte accepted in cycle *t* drives the start bit from *t* + 1; ``data.ready`` is high again
    once the stop bit has lasted ``divisor`` cycles (one byte per 10 × ``divisor`` cycles).
    """

    def __init__(self, divisor: int):
        self._div = _check(divisor)
        super().__init__({"data": In(stream.Signature(8)), "tx": Out(1, init=1)})

    def elaborate(self, platform):
        m = Module()
        shift = Signal(10, init=0x3FF)      # stop, data[7:0], start; LSB goes out first
        bits = Signal(range(11))
        timer = Signal(range(self._div))
        m.d.comb += [self.tx.eq(shift[0]), self.data.ready.eq(bits == 0)]
        with m.If(bits == 0):
            with m.If(self.data.valid):
                m.d.sync += [shift.eq((1 << 9) | (self.data.payload << 1)), bits.eq(10),
                             timer.eq(self._div - 1)]
        with m.Elif(timer == 0):
            m.d.sync += [shift.eq((1 << 9) | (shift >> 1)), bits.eq(bits - 1),
                         timer.eq(self._div - 1)]
        with m.Else():
            m.d.sync += timer.eq(timer - 1)
        return m


class UartRx(wiring.Component):
    """``rx`` (asynchronous, synchronised here) to ``data``, one-cycle ``valid`` per byte.

    A falling edge starts a byte; the start bit is checked half a bit later and every bit is
    sampled a whole bit after the previous one. A byte whose stop bit is low (a framing error
    or a break) is dropped. No back-pressure: the consumer must take a byte within 10 bits.
    """

    def __init__(self, divisor: int):
        self._div = _check(divisor)
        super().__init__({"rx": In(1, init=1), "data": Out(stream.Signature(8, always_ready=True))})

    def elaborate(self, platform):
        m = Module()
        rx = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, rx, init=1)
        timer = Signal(range(self._div))
        bits = Signal(range(10))
        shift = Signal(8)
        m.d.sync += self.data.valid.eq(0)
        m.d.comb += self.data.payload.eq(shift)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~rx):
                    m.d.sync += timer.eq(self._div // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(rx):
                    m.next = "IDLE"                 # a glitch, not a start bit
                with m.Else():
                    m.d.sync += [timer.eq(self._div - 1), bits.eq(8)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [shift.eq((rx << 7) | (shift >> 1)), bits.eq(bits - 1),
                                 timer.eq(self._div - 1)]
                    with m.If(bits == 1):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += self.data.valid.eq(rx)
                    m.next = "IDLE"
        return m
