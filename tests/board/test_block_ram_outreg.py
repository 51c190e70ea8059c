"""``hw.sram.block_ram(out_reg=True)``: on an ECP5 platform the read data register is the
DP16KD's own output register (the command queues' heads, docs/hardware.md §12 session 20; the
buffers' readers, session 22), with its own clock enable (``out_en``) where asked, and the
write registered before the memory (``write_reg``); elsewhere an inferred memory and fabric
registers of the same behaviour, which the unit tests and the RTL conformance runs
simulate."""

import math
import re

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth_boards.ulx3s import ULX3S_85F_Platform

from hw.fields import queue_entry
from hw.queues import CommandQueue
from hw.sram import DP16KD_MODES, block_ram
from isa.config import load_config


def _dp16kds(text):
    """[(parameters, pins)] of every DP16KD instance in Verilog ``text``."""
    out = []
    for params, body in re.findall(r"DP16KD\s*#\((.*?)\)\s*\w+\s*\((.*?)\);", text, re.S):
        p = dict(re.findall(r"\.(\w+)\(([^)]*)\)", params))
        pins = dict(re.findall(r"\.(\w+)\(([^)]*)\)", body))
        out.append((p, pins))
    return out


class _Ram(wiring.Component):
    def __init__(self, width, depth, reads=1, out_en=False, write_reg=False):
        self._width, self._depth, self._reads = width, depth, reads
        self._out_en, self._write_reg = out_en, write_reg
        abits = (depth - 1).bit_length()
        super().__init__({"waddr": In(abits), "wdata": In(width), "we": In(1),
                          "raddr": In(abits), "ren": In(1), "oce": In(1, init=1),
                          "q": Out(width), "q2": Out(width)})

    def elaborate(self, platform):
        m = Module()
        wp, rps = block_ram(m, "ram", shape=self._width, depth=self._depth, out_reg=True,
                            reads=self._reads, out_en=self._out_en,
                            write_reg=self._write_reg, platform=platform)
        m.d.comb += [wp.addr.eq(self.waddr), wp.data.eq(self.wdata), wp.en.eq(self.we)]
        for rp, q in zip(rps, (self.q, self.q2)):
            m.d.comb += [rp.addr.eq(self.raddr), rp.en.eq(self.ren), q.eq(rp.data)]
            if self._out_en:
                m.d.comb += rp.out_en.eq(self.oce)
        return m


def test_command_queue_head_is_the_block_rams_output_register():
    cfg = load_config("ecp5-large")
    width = queue_entry().size
    text = verilog.convert(CommandQueue(cfg), platform=ULX3S_85F_Platform(), name="q",
                           emit_src=False)
    insts = _dp16kds(text)
    assert len(insts) == math.ceil(width / 36)          # 512 slots: the 36-bit mode
    for params, pins in insts:
        assert params["DATA_WIDTH_A"] == params["DATA_WIDTH_B"] == "32'd36"
        assert params["REGMODE_A"] == params["REGMODE_B"] == '"OUTREG"'
        assert pins["OCEA"] == pins["OCEB"] == "1'h1"
        assert pins["WEA"] == "1'h1" and pins["WEB"] == "1'h0"
        assert [pins[f"ADA{k}"] for k in range(5)] == ["1'h1"] * 4 + ["1'h0"]
        assert all(pins[f"ADB{k}"] == "1'h0" for k in range(5))
        assert pins["RSTA"] == pins["RSTB"] == "rst"
    # no fabric register holds the head: r_data comes from the block RAMs' output pins
    assert "storage_r0_q" not in text and "reg [159:0]" not in text


def test_without_an_ecp5_platform_the_register_is_modelled():
    text = verilog.convert(CommandQueue(load_config("ecp5-large")), name="q", emit_src=False)
    assert _dp16kds(text) == [] and "storage_r0_q" in text


@pytest.mark.parametrize("depth", sorted(DP16KD_MODES))
def test_each_depth_takes_the_mode_that_holds_it(depth):
    mode = DP16KD_MODES[depth]
    width = 40
    bits = mode if mode >= 18 else min(mode, 8)
    shift = {1: 0, 2: 1, 4: 2, 9: 3, 18: 4, 36: 5}[mode]
    text = verilog.convert(_Ram(width, depth), platform=ULX3S_85F_Platform(), name="r",
                           emit_src=False)
    insts = _dp16kds(text)
    assert len(insts) == math.ceil(width / bits)
    for params, pins in insts:
        assert params["DATA_WIDTH_B"] == f"32'd{mode}" and params["REGMODE_B"] == '"OUTREG"'
        # the word address starts above the mode's unused (or byte-enable) pins
        assert re.fullmatch(r"raddr\[0\]", pins[f"ADB{shift}"]), pins[f"ADB{shift}"]
        assert re.fullmatch(r"waddr\[0\]", pins[f"ADA{shift}"]), pins[f"ADA{shift}"]
        assert pins["CEB"] == "ren"


def test_two_read_ports_are_two_copies_written_alike():
    text = verilog.convert(_Ram(36, 512, reads=2), platform=ULX3S_85F_Platform(), name="r",
                           emit_src=False)
    insts = _dp16kds(text)
    assert len(insts) == 2
    assert {pins["DIA0"] for _, pins in insts} == {"wdata[0]"}
    assert {pins["CEA"] for _, pins in insts} == {"we"}


def test_out_en_is_the_output_registers_clock_enable():
    text = verilog.convert(_Ram(36, 512, out_en=True), platform=ULX3S_85F_Platform(),
                           name="r", emit_src=False)
    (params, pins), = _dp16kds(text)
    assert pins["OCEB"] == pins["OCEA"] != "1'h1" and pins["CEB"] == "ren"


def test_write_reg_writes_from_registers():
    text = verilog.convert(_Ram(36, 512, write_reg=True), platform=ULX3S_85F_Platform(),
                           name="r", emit_src=False)
    (params, pins), = _dp16kds(text)
    # the data, address and enable pins come from the write registers, not the inputs
    assert pins["CEA"] != "we" and "ram_w1_en" in text and "ram_w1_data" in text
    assert "wdata[0]" not in pins["DIA0"]


def test_registered_write_and_held_output_in_simulation():
    """The fabric model: a write presented in *w* lands in *w* + 1 (a read issued then still
    gets the old word), so a read issued in *w* + 2 sees it, two cycles later; the output
    register holds while ``out_en`` is low."""
    from amaranth.sim import Simulator

    dut = _Ram(16, 512, out_en=True, write_reg=True)
    seen = {}

    async def bench(ctx):
        ctx.set(dut.ren, 1)
        ctx.set(dut.raddr, 5)
        ctx.set(dut.waddr, 5)
        ctx.set(dut.wdata, 0xBEEF)
        ctx.set(dut.we, 1)                      # presented in w
        await ctx.tick()
        ctx.set(dut.we, 0)                      # w + 1: it lands at the end of this cycle
        await ctx.tick()
        await ctx.tick()
        seen["w+1"] = ctx.get(dut.q)            # the read issued in w + 1, in w + 3
        await ctx.tick()
        seen["w+2"] = ctx.get(dut.q)            # the read issued in w + 2, in w + 4
        ctx.set(dut.raddr, 6)
        ctx.set(dut.oce, 0)                     # hold: the register keeps 0xBEEF
        for _ in range(3):
            await ctx.tick()
        seen["held"] = ctx.get(dut.q)
        ctx.set(dut.oce, 1)
        await ctx.tick()
        seen["after"] = ctx.get(dut.q)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == {"w+1": 0, "w+2": 0xBEEF, "held": 0xBEEF, "after": 0}
