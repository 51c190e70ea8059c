"""The ECP5 PLL (EHXPLLL): divider settings for a wanted output clock, and the instance."""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Instance, Module, Signal

__all__ = ["PllSettings", "pll_settings", "ecp5_pll", "PllError"]

# Lattice TN1263 (ECP5 sysCLOCK PLL): the VCO runs at 400–800 MHz, the phase detector at
# 3.125–400 MHz (input after CLKI_DIV), CLKI_DIV 1–128, CLKFB_DIV 1–80, CLKOP_DIV 1–128.
VCO_MHZ = (400.0, 800.0)
PFD_MHZ = (3.125, 400.0)


class PllError(ValueError):
    """No PLL setting reaches the wanted frequency closely enough."""


@dataclass(frozen=True)
class PllSettings:
    clki_div: int
    clkfb_div: int
    clkop_div: int
    fin_mhz: float

    @property
    def fout_mhz(self) -> float:
        return self.fin_mhz * self.clkfb_div / self.clki_div

    @property
    def vco_mhz(self) -> float:
        return self.fout_mhz * self.clkop_div


def pll_settings(fin_mhz: float, fout_mhz: float, tolerance: float = 0.005) -> PllSettings:
    """The setting whose output is closest to ``fout_mhz`` (feedback from CLKOP), with the
    VCO nearest the middle of its range among equals."""
    best = None
    for clki in range(1, 129):
        pfd = fin_mhz / clki
        if not PFD_MHZ[0] <= pfd <= PFD_MHZ[1]:
            continue
        for fb in range(1, 81):
            fout = pfd * fb
            for op in range(1, 129):
                vco = fout * op
                if not VCO_MHZ[0] <= vco <= VCO_MHZ[1]:
                    continue
                score = (abs(fout - fout_mhz), abs(vco - sum(VCO_MHZ) / 2))
                if best is None or score < best[0]:
                    best = (score, PllSettings(clki, fb, op, fin_mhz))
    if best is None or best[0][0] > tolerance * fout_mhz:
        raise PllError(f"the ECP5 PLL cannot make {fout_mhz:g} MHz from {fin_mhz:g} MHz "
                       f"(closest: {best[1].fout_mhz if best else 'none'} MHz)")
    return best[1]


def ecp5_pll(m: Module, settings: PllSettings, clkin, clkout, locked) -> None:
    """Add an EHXPLLL to ``m``: ``clkin`` in, ``clkout`` = CLKOP (also the feedback)."""
    m.submodules.pll = Instance(
        "EHXPLLL",
        a_FREQUENCY_PIN_CLKI=str(settings.fin_mhz),
        a_FREQUENCY_PIN_CLKOP=f"{settings.fout_mhz:.6f}",
        a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
        a_MFG_GMCREF_SEL="2",
        p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
        p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
        p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
        p_CLKI_DIV=settings.clki_div, p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=settings.clkop_div,
        p_CLKOP_CPHASE=settings.clkop_div - 1, p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP",
        p_CLKFB_DIV=settings.clkfb_div,
        i_RST=0, i_STDBY=0, i_CLKI=clkin, o_CLKOP=clkout, i_CLKFB=clkout,
        i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1,
        i_PLLWAKESYNC=0, i_ENCLKOP=0, o_LOCK=locked)
