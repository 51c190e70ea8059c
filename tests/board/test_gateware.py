"""Board gateware pieces in Amaranth's simulator: the UART against a bit-level model, and the
PLL and baud-rate arithmetic against the ECP5's documented limits."""

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator
from hypothesis import given, settings, strategies as st

from hw.board.pll import PllError, pll_settings
from hw.board.uart import UartRx, UartTx
from hw.board.ulx3s import uart_divisor
from isa import hostlink as H


def _loopback(data, divisor):
    m = Module()
    m.submodules.tx = tx = UartTx(divisor)
    m.submodules.rx = rx = UartRx(divisor)
    m.d.comb += rx.rx.eq(tx.tx)
    got, line = [], []

    async def bench(ctx):
        for byte in data:
            ctx.set(tx.data.valid, 1)
            ctx.set(tx.data.payload, byte)
            await ctx.tick().until(tx.data.ready)
            ctx.set(tx.data.valid, 0)
            await ctx.tick()
        await ctx.tick().repeat(12 * divisor)

    async def receiver(ctx):
        while True:
            await ctx.tick()
            line.append(ctx.get(tx.tx))
            if ctx.get(rx.data.valid):
                got.append(ctx.get(rx.data.payload))

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_testbench(receiver, background=True)
    sim.run()
    return got, line


@settings(max_examples=4, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 255), min_size=1, max_size=6), st.sampled_from([4, 5, 17]))
def test_uart_loopback_and_8n1_framing(data, divisor):
    got, line = _loopback(data, divisor)
    assert got == data
    # the first byte on the line: start 0, data LSB first, stop 1, each `divisor` cycles long
    start = line.index(0)
    first = [line[start + i * divisor + divisor // 2] for i in range(10)]
    assert first == [0] + [(data[0] >> i) & 1 for i in range(8)] + [1]


def test_pll_settings_respect_the_ecp5_limits():
    for mhz in (25, 40, 50, 60, 75, 100, 125):
        s = pll_settings(25.0, mhz)
        assert abs(s.fout_mhz - mhz) < 1e-9
        assert 400 <= s.vco_mhz <= 800 and 3.125 <= 25.0 / s.clki_div <= 400
        assert 1 <= s.clkfb_div <= 80 and 1 <= s.clkop_div <= 128
    with pytest.raises(PllError, match="cannot make 1000 MHz"):
        pll_settings(25.0, 1000)


def test_baud_divisor_at_the_ft231x_maximum():
    assert H.DEFAULT_BAUD == H.FT231X_MAX_BAUD == 3_000_000
    assert uart_divisor(60e6, 3_000_000) == 20
    assert uart_divisor(100e6, 3_000_000) == 33            # 3.03 Mbaud, 1 % off
    with pytest.raises(ValueError, match="cannot make 3000000 baud"):
        uart_divisor(10e6, 3_000_000)                       # 3.3 cycles per bit


def test_sdram_variant_elaborates_for_the_ulx3s(tmp_path):
    """The SDRAM top: LiteDRAM's Verilog goes into the build, every SDRAM pin is constrained,
    the host sees the whole 32 MB, and an SDRAM build has a folder of its own."""
    pytest.importorskip("litedram")
    pytest.importorskip("amaranth_boards")
    from bitstreams.boards import get_board
    from bitstreams.build import output_dir
    from hw.board.sdram_gen import TOP
    from hw.board.ulx3s import SDRAM_BYTES, Ulx3sTop
    from isa.config import load_config

    cfg = load_config("ecp5-small")
    board = get_board("ulx3s-85f")
    top = Ulx3sTop(cfg, memory="sdram")
    assert top.mem_bytes == SDRAM_BYTES == 32 << 20
    plan = board.make_platform().build(top, name="vta_board", build_dir=str(tmp_path),
                                       do_build=False)
    verilog = plan.files[f"{TOP}.v"]
    assert f"module {TOP}(" in verilog and "sdram_dq_oe" in verilog
    lpf = plan.files["vta_board.lpf"]
    # clk F19, DQ J16 (bit 0) and J17 (bit 15), A12 G19, DQM E20
    for site in ("F19", "J16", "J17", "G19", "E20", "P20"):
        assert f'SITE "{site}"' in lpf, site
    assert output_dir(board, cfg, memory="sdram").name == "ulx3s-85f-ecp5-small-sdram"
    assert output_dir(board, cfg).name == "ulx3s-85f-ecp5-small"


def test_the_ulx3s_top_clocks_the_core_at_100_mhz_with_the_host_link_in_tolerance():
    """Issue #12's goal clock: the PLL makes exactly 100 MHz from the 25 MHz crystal and the
    UART's divisor gives 3 Mbaud within the link's 2 %."""
    from hw.board.ulx3s import BAUD_TOLERANCE, CRYSTAL_MHZ, Ulx3sTop
    from isa.config import load_config

    top = Ulx3sTop(load_config("ecp5-small").replace(target_mhz=100))
    assert CRYSTAL_MHZ == 25.0 and top.pll.fout_mhz == 100.0 and top.clk_hz == 100e6
    assert top.divisor == 33
    baud = top.clk_hz / top.divisor
    assert abs(baud - H.DEFAULT_BAUD) <= BAUD_TOLERANCE * H.DEFAULT_BAUD
    assert abs(baud / H.DEFAULT_BAUD - 1) > 0.01      # 3.03 Mbaud: 1.01 % over, not exact


def test_the_sdram_variant_runs_its_core_at_most_at_its_own_clock():
    """The SDRAM board design closes below the on-chip one: it runs at the lower of
    TARGET_MHZ and SDRAM_MAX_MHZ; the on-chip variant at TARGET_MHZ."""
    from hw.board.ulx3s import SDRAM_MAX_MHZ, Ulx3sTop
    from isa.config import load_config

    cfg = load_config("ecp5-small").replace(target_mhz=90)
    assert Ulx3sTop(cfg).clk_hz == 90e6 and Ulx3sTop(cfg).divisor == 30
    sdram = Ulx3sTop(cfg, memory="sdram")
    assert SDRAM_MAX_MHZ < 90 and sdram.clk_hz == SDRAM_MAX_MHZ * 1e6
    assert sdram.divisor == round(SDRAM_MAX_MHZ / 3)
    slow = cfg.replace(target_mhz=60)
    assert Ulx3sTop(slow, memory="sdram").clk_hz == 60e6
