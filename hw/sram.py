"""The core's block RAMs: one write port, synchronous read ports, and no promise about a read
of the entry being written in the same cycle.

Amaranth's read port promises the old data on such a collision; an ECP5 DP16KD does not, so
Yosys keeps the promise in fabric (a write delayed by a cycle and a bypass multiplexer after
the read data: a LUT and a route on every block-RAM path, docs/hardware.md §12). The core
never uses a colliding read's data: the ACC readers forward every write landing in their read's
cycle, a command queue never reads the entry being written, and the tokens and the compute
sequence keep INP, WGT, UOP and OUT reads apart from their writes. So these memories carry
:data:`COLLISION_ATTR`, and a synthesis may mark their collisions undefined
(:data:`bitstreams.yosys.UNDEFINED_COLLISIONS`; the bitstream build does not yet: it placed
and routed worse on ecp5-large, docs/hardware.md §12 session 18).

That reasoning is checked, not trusted: elaborated inside :func:`poisoned_collisions` (the
``poison`` RTL build of :mod:`hw.rtlsim`), every read that collides with a write returns the
inverse of the old data, and the conformance programs must still give the functional
simulator's DRAM (tests/hw/test_rtl_collisions.py).

A read register right behind a block RAM (the command queues' heads, and every buffer's
reader: the ACC, UOP, INP, WGT and OUT data registers) can be the memory's own
(``out_reg``): on an ECP5 the DP16KD's output register, instantiated here because Yosys never
infers it; elsewhere a fabric register that behaves alike. Such a memory's writes go straight
to its block RAMs, where Yosys's collision emulation put a register beside each block RAM on
the write data (docs/hardware.md §12 session 20: that matters for wide buffers), unless
``write_reg`` puts it back (the ACC buffer: its readers forward the write it delays).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from amaranth.hdl import (Cat, ClockSignal, Const, Instance, Module, Mux, ResetSignal, Shape,
                          Signal)
from amaranth.lib.memory import Memory

__all__ = ["COLLISION_ATTR", "MAX_READS", "block_ram", "poisoned_collisions", "ReadPort",
           "DP16KD_MODES", "dp16kd", "dp16kd_data_bits", "on_ecp5"]

#: The attribute (value ``"undefined"``) on a memory whose same-cycle read-write collisions
#: the design never depends on.
COLLISION_ATTR = "vta_collision"
#: At most this many read ports per memory (the ACC buffer has two; the build's Yosys commands
#: mark each count's collision mask).
MAX_READS = 2

_POISON = ContextVar("vta_poison_collisions", default=False)


@contextmanager
def poisoned_collisions():
    """Elaborate inside this block to make every colliding read return garbage (simulation)."""
    token = _POISON.set(True)
    try:
        yield
    finally:
        _POISON.reset(token)


@dataclass(frozen=True)
class ReadPort:
    """A read port's ``addr``, ``en`` and ``data`` (a poisoned, registered or DP16KD read),
    and the output register's enable ``out_en`` (``block_ram``'s ``out_en``; else None)."""
    addr: Signal
    en: Signal
    data: Signal
    out_en: Signal | None = None


@dataclass(frozen=True)
class WritePort:
    """A write port's ``addr``, ``data`` and ``en`` (one bit), as Amaranth's has them."""
    addr: Signal
    data: Signal
    en: Signal


def block_ram(m: Module, name: str, *, shape, depth: int, reads: int = 1,
              out_reg: bool = False, out_en: bool = False, write_reg: bool = False,
              platform=None, init=None):
    """A memory ``name`` in ``m`` with one write port and ``reads`` synchronous read ports
    (data the cycle after the address, held while ``en`` is low); returns
    ``(write_port, [read_port, ...])``.

    ``out_reg``: each read port's ``data`` is instead a register loaded in every cycle with
    that data (so two cycles after the address; reset to zero). On an ECP5 ``platform`` this
    is the DP16KD's own output register (``REGMODE = "OUTREG"``; a copy of the memory per
    read port), so the register's users see no block-RAM clock-to-output (5.6 ns,
    docs/hardware.md §12). ``out_en``: that register loads only while the port's ``out_en``
    (DP16KD's ``OCE``; reset high) is high.

    ``write_reg``: the write port's address, data and enable pass a register before the
    memory, so a write presented in cycle *w* lands in *w* + 1 (a read issued in *w* + 1
    collides with it: its readers forward it). The registers can sit by the block RAMs, where
    Yosys's collision emulation put them for an inferred memory (§12 session 20).

    ``init``: initial contents (test benches; the memory is then ``m.submodules[name]``)."""
    if not 1 <= reads <= MAX_READS:
        raise ValueError(f"a block RAM has 1 to {MAX_READS} read ports, not {reads}")
    width = Shape.cast(shape).width
    if out_reg and on_ecp5(platform) and not _POISON.get() and depth <= max(DP16KD_MODES) \
            and not init:
        wp, rps = _dp16kd_ram(m, name, width, depth, reads, out_en)
    else:
        mem = Memory(shape=shape, depth=depth, init=init or [],
                     attrs={COLLISION_ATTR: "undefined"})
        m.submodules[name] = mem
        wp = mem.write_port()
        rps = [mem.read_port() for _ in range(reads)]
        if _POISON.get():
            rps = [_poison(m, f"{name}_r{i}", wp, rp) for i, rp in enumerate(rps)]
        if out_reg:
            rps = [_registered(m, f"{name}_r{i}", rp, width, out_en)
                   for i, rp in enumerate(rps)]
    if write_reg:
        wp = _write_registered(m, name, wp)
    return wp, rps


def _write_registered(m: Module, name: str, wp) -> WritePort:
    # the enable is reset (no write after a reset); address and data follow in every cycle
    front = WritePort(Signal.like(wp.addr, name=f"{name}_w_addr"),
                      Signal.like(wp.data, name=f"{name}_w_data"),
                      Signal(len(wp.en), name=f"{name}_w_en"))
    addr = Signal.like(wp.addr, name=f"{name}_w1_addr", reset_less=True)
    data = Signal.like(wp.data, name=f"{name}_w1_data", reset_less=True)
    en = Signal(len(wp.en), name=f"{name}_w1_en")
    m.d.sync += [addr.eq(front.addr), data.eq(front.data), en.eq(front.en)]
    m.d.comb += [wp.addr.eq(addr), wp.data.eq(data), wp.en.eq(en)]
    return front


def on_ecp5(platform) -> bool:
    """Whether ``platform`` (an ``elaborate`` argument) builds for an ECP5."""
    return getattr(platform, "family", None) == "ecp5"


def _registered(m: Module, name: str, rp, width: int, out_en: bool) -> ReadPort:
    # the model of the DP16KD's output register (OCE high or ``out_en``, reset with the
    # domain)
    data = Signal(width, name=f"{name}_q")
    oce = Signal(name=f"{name}_oce", init=1) if out_en else None
    with m.If(oce if out_en else 1):
        m.d.sync += data.eq(rp.data)
    return ReadPort(rp.addr, rp.en, data, oce)


#: DP16KD modes: data width for each depth a single block holds (36 bits wide only as a
#: simple dual-port RAM: port A writes, B reads, the data on both output buses).
DP16KD_MODES = {512: 36, 1024: 18, 2048: 9, 4096: 4, 8192: 2, 16384: 1}
# the mode's unused low address pins (byte enables in the 18- and 36-bit modes)
_ADDR_SHIFT = {1: 0, 2: 1, 4: 2, 9: 3, 18: 4, 36: 5}


def dp16kd_data_bits(mode: int) -> int:
    """Data bits a DP16KD holds per word in ``mode``: the mode's width, but one byte in the
    9-bit mode (its ninth, parity bit unused)."""
    return min(mode, 8) if mode < 18 else mode


def dp16kd(*, mode: int, waddr, raddr, wdata, we, ren, oce, dout, rst=0) -> Instance:
    """One DP16KD in ``mode`` (data bits, a key of :data:`DP16KD_MODES`' values): port A
    writes ``wdata`` at word ``waddr`` while ``we``, port B reads word ``raddr`` into its
    latch while ``ren`` and the latch into its output register while ``oce`` (synchronous
    reset ``rst``); ``dout`` is that register. Pins as Yosys's own ECP5 block-RAM map drives
    them (``brams_map_16kd.v``), with both output registers on."""
    bits = dp16kd_data_bits(mode)
    shift = _ADDR_SHIFT[mode]
    pins = {"i_CLKA": ClockSignal(), "i_CLKB": ClockSignal(), "i_RSTA": rst, "i_RSTB": rst,
            "i_OCEA": oce, "i_OCEB": oce, "i_CEB": ren, "i_WEB": 0}
    wa_bits = Cat(waddr, Const(0, 14))[:14 - shift]
    ra_bits = Cat(raddr, Const(0, 14))[:14 - shift]
    if mode == 36:            # write enable on CEA, the byte enables on ADA0-3
        pins.update({"i_CEA": we, "i_WEA": 1})
        low_a = [1, 1, 1, 1, 0]
    elif mode == 18:          # byte enables on ADA0-1
        pins.update({"i_CEA": 1, "i_WEA": we})
        low_a = [1, 1, 0, 0]
    else:
        pins.update({"i_CEA": 1, "i_WEA": we})
        low_a = [0] * shift
    for k in range(14):
        pins[f"i_ADA{k}"] = low_a[k] if k < shift else wa_bits[k - shift]
        pins[f"i_ADB{k}"] = 0 if k < shift else ra_bits[k - shift]
    for k in range(3):
        pins[f"i_CSA{k}"] = pins[f"i_CSB{k}"] = 0
    # the data's low 18 bits on port A's input and (36-bit mode) port A's output bus, the
    # rest on port B's; narrower modes read on port B alone
    low_out = "DOA" if mode == 36 else "DOB"
    for k in range(18):
        pins[f"i_DIA{k}"] = wdata[k] if k < bits else 0
        pins[f"i_DIB{k}"] = wdata[18 + k] if bits > 18 else 0
        if k < bits:
            pins[f"o_{low_out}{k}"] = dout[k]
        if bits > 18:
            pins[f"o_DOB{k}"] = dout[18 + k]
    return Instance("DP16KD", p_DATA_WIDTH_A=mode, p_DATA_WIDTH_B=mode,
                    p_REGMODE_A="OUTREG" if mode == 36 else "NOREG", p_REGMODE_B="OUTREG",
                    p_RESETMODE="SYNC", p_CSDECODE_A="0b000", p_CSDECODE_B="0b000",
                    p_WRITEMODE_A="NORMAL", p_WRITEMODE_B="NORMAL", p_GSR="DISABLED", **pins)


def _dp16kd_ram(m: Module, name: str, width: int, depth: int, reads: int, out_en: bool):
    """``block_ram(out_reg=True)`` of DP16KDs side by side, each a slice of the word in the
    mode that holds the whole depth (no read multiplexer); one such copy per read port,
    all written alike (as Yosys maps a memory with several read ports)."""
    depth_pow2 = min(d for d in DP16KD_MODES if d >= depth)
    mode = DP16KD_MODES[depth_pow2]
    bits = dp16kd_data_bits(mode)
    abits = max(1, (depth_pow2 - 1).bit_length())
    wp = WritePort(Signal(abits, name=f"{name}_waddr"), Signal(width, name=f"{name}_wdata"),
                   Signal(name=f"{name}_we"))
    rps = []
    for r in range(reads):
        sfx = f"_r{r}" if reads > 1 else ""
        rp = ReadPort(Signal(abits, name=f"{name}{sfx}_raddr"),
                      Signal(name=f"{name}{sfx}_ren", init=1),
                      Signal(width, name=f"{name}{sfx}_q"),
                      Signal(name=f"{name}{sfx}_oce", init=1) if out_en else None)
        for i, lo in enumerate(range(0, width, bits)):
            n = min(bits, width - lo)
            wdata = Signal(bits, name=f"{name}{sfx}_di{i}")
            dout = Signal(bits, name=f"{name}{sfx}_do{i}")
            m.d.comb += [wdata[:n].eq(wp.data[lo:lo + n]), rp.data[lo:lo + n].eq(dout[:n])]
            m.submodules[f"{name}{sfx}{i}"] = dp16kd(
                mode=mode, waddr=wp.addr, raddr=rp.addr, wdata=wdata, we=wp.en, ren=rp.en,
                oce=rp.out_en if out_en else 1, dout=dout, rst=ResetSignal())
        rps.append(rp)
    return wp, rps


def _poison(m: Module, name: str, wp, rp) -> ReadPort:
    # ``hit``: the data register was last loaded in a cycle that wrote the entry it read
    addr = Signal.like(rp.addr, name=f"{name}_addr")
    en = Signal(init=1, name=f"{name}_en")
    data = Signal.like(rp.data, name=f"{name}_data")
    hit = Signal(name=f"{name}_collided")
    m.d.comb += [rp.addr.eq(addr), rp.en.eq(en), data.eq(Mux(hit, ~rp.data, rp.data))]
    with m.If(en):
        m.d.sync += hit.eq(wp.en.any() & (wp.addr == addr))
    return ReadPort(addr, en, data)
