"""The ULX3S top: 25 MHz crystal → ECP5 PLL → the core's clock; the FT231X serial port as the
host link; LEDs 0–2 show running, done, error."""

from __future__ import annotations

from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Module, Signal
from amaranth.lib.cdc import ResetSynchronizer

from isa import hostlink as H
from isa.config import VTAConfig

from .pll import ecp5_pll, pll_settings
from .soc import BoardSoC

__all__ = ["Ulx3sTop", "uart_divisor", "CRYSTAL_MHZ", "DEFAULT_MEM_BYTES"]

CRYSTAL_MHZ = 25.0
#: On-chip DRAM of the bring-up variant.
DEFAULT_MEM_BYTES = 64 << 10
#: A baud rate within 2 % of the wanted one is within the 8N1 receiver's tolerance.
BAUD_TOLERANCE = 0.02


def uart_divisor(clk_hz: float, baud: int) -> int:
    """Clock cycles per bit for ``baud`` at ``clk_hz``; a ValueError if the error is over 2 %."""
    div = round(clk_hz / baud)
    if div < 4 or abs(clk_hz / div - baud) > BAUD_TOLERANCE * baud:
        raise ValueError(f"a {clk_hz / 1e6:g} MHz clock cannot make {baud} baud within "
                         f"{BAUD_TOLERANCE:.0%} (nearest {clk_hz / max(div, 1):.0f} baud)")
    return div


class Ulx3sTop(Elaboratable):
    """:class:`BoardSoC` at ``cfg.target_mhz`` (from the PLL) on the ULX3S."""

    def __init__(self, cfg: VTAConfig, *, mem_bytes: int = DEFAULT_MEM_BYTES,
                 baud: int = H.DEFAULT_BAUD):
        self.cfg, self.mem_bytes, self.baud = cfg, mem_bytes, baud
        self.pll = pll_settings(CRYSTAL_MHZ, cfg.target_mhz)
        self.clk_hz = self.pll.fout_mhz * 1e6
        self.divisor = uart_divisor(self.clk_hz, baud)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync")
        clk25 = platform.request("clk25", 0)
        locked = Signal()
        clk = Signal()                    # the PLL's output: the core's clock
        ecp5_pll(m, self.pll, clk25.i, clk, locked)
        m.d.comb += ClockSignal("sync").eq(clk)
        m.submodules.reset = ResetSynchronizer(~locked, domain="sync")
        platform.add_clock_constraint(clk, self.clk_hz)
        m.submodules.soc = soc = BoardSoC(self.cfg, mem_bytes=self.mem_bytes,
                                          divisor=self.divisor,
                                          idle_timeout=int(H.IDLE_TIMEOUT_S * self.clk_hz),
                                          clock_hz=round(self.clk_hz))
        uart = platform.request("uart", 0)
        m.d.comb += [soc.rx.eq(uart.rx.i), uart.tx.o.eq(soc.tx)]
        for i in range(3):
            m.d.comb += platform.request("led", i).o.eq(soc.leds[i])
        return m
