"""The ULX3S top: 25 MHz crystal → ECP5 PLL → the core's clock; the FT231X serial port as the
host link; LEDs 0–2 show running, done, error; the DRAM on chip or on the 32 MB SDRAM (LED 3:
the SDRAM is initialised).

With the SDRAM, LiteDRAM's PHY registers every pad on the core clock's rising edge and the
chip's clock pin is the inverted core clock (a DDR output register), so the chip samples each
command and write word half a cycle after it is launched, and its read data is captured on the
rising edge LiteDRAM's read latency expects (the timing the board simulation's chip model,
clocked on the falling edge, reproduces)."""

from __future__ import annotations

from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Module, Signal
from amaranth.lib.cdc import ResetSynchronizer

from isa import hostlink as H
from isa.config import VTAConfig

from .pll import ecp5_pll, pll_settings
from .soc import BoardSoC

__all__ = ["Ulx3sTop", "uart_divisor", "CRYSTAL_MHZ", "DEFAULT_MEM_BYTES", "SDRAM_BYTES"]

CRYSTAL_MHZ = 25.0
#: On-chip DRAM of the bring-up variant.
DEFAULT_MEM_BYTES = 64 << 10
#: The ULX3S's SDRAM, all of it the core's DRAM in the SDRAM variant.
SDRAM_BYTES = 32 << 20
#: The SDRAM variant's core clock at most, in MHz: its whole design closes at 78.95 MHz (its
#: worst path the SDRAM adapter's, docs/hardware.md §12), below what the on-chip variant of the
#: same configuration meets, so it runs at the lower of this and ``TARGET_MHZ``.
SDRAM_MAX_MHZ = 75
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
    """:class:`BoardSoC` at ``cfg.target_mhz`` (from the PLL; the SDRAM variant at most
    :data:`SDRAM_MAX_MHZ`) on the ULX3S; ``memory`` is ``"onchip"`` (``mem_bytes`` of block
    RAM) or ``"sdram"`` (``mem_bytes`` of the SDRAM, all 32 MB by default)."""

    def __init__(self, cfg: VTAConfig, *, mem_bytes: int | None = None,
                 baud: int = H.DEFAULT_BAUD, memory: str = "onchip"):
        if mem_bytes is None:
            mem_bytes = SDRAM_BYTES if memory == "sdram" else DEFAULT_MEM_BYTES
        self.cfg, self.mem_bytes, self.baud, self.memory = cfg, mem_bytes, baud, memory
        mhz = cfg.target_mhz if memory == "onchip" else min(cfg.target_mhz, SDRAM_MAX_MHZ)
        self.pll = pll_settings(CRYSTAL_MHZ, mhz)
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
                                          clock_hz=round(self.clk_hz), memory=self.memory,
                                          dp16kd=True)
        if self.memory == "sdram":
            self._sdram_pins(m, platform, soc.sdram)
            m.d.comb += platform.request("led", 3).o.eq(soc.mem_ready)
        uart = platform.request("uart", 0)
        m.d.comb += [soc.rx.eq(uart.rx.i), uart.tx.o.eq(soc.tx)]
        for i in range(3):
            m.d.comb += platform.request("led", i).o.eq(soc.leds[i])
        return m

    @staticmethod
    def _sdram_pins(m, platform, pins):
        """The SDRAM pins: the tristate DQ buffer, and the inverted core clock on the chip's
        clock pin (a DDR register sending 0 then 1 in each cycle)."""
        sd = platform.request("sdram", 0, xdr={"clk": 2})
        m.d.comb += [sd.clk.o_clk.eq(ClockSignal("sync")), sd.clk.o0.eq(0), sd.clk.o1.eq(1),
                     sd.clk_en.o.eq(pins.cke), sd.cs.o.eq(~pins.cs_n), sd.we.o.eq(~pins.we_n),
                     sd.ras.o.eq(~pins.ras_n), sd.cas.o.eq(~pins.cas_n), sd.ba.o.eq(pins.ba),
                     sd.a.o.eq(pins.a), sd.dqm.o.eq(pins.dm), sd.dq.o.eq(pins.dq_o),
                     sd.dq.oe.eq(pins.dq_oe), pins.dq_i.eq(sd.dq.i)]
