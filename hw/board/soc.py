"""The board design without the board: core, registers, DRAM and the host link.

Independent of pins and clocks, so the same design runs in simulation (with a simulated serial
line) and in the ULX3S top (:mod:`.ulx3s`).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa import hostlink as H
from isa.config import VTAConfig

from ..axi import AxiLiteSignature
from ..core import COUNTERS, VTACore
from ..csr import ControlRegisters
from ..memport import MemPortSlice
from .bridge import UartBridge, WordBusSignature
from .onchip import OnChipMemory

__all__ = ["WordBusToAxiLite", "BoardSoC", "MEMORIES"]

#: The board design's DRAM variants: on-chip block RAM (bring-up) or the board's SDRAM.
MEMORIES = ("sdram", "onchip")


class WordBusToAxiLite(wiring.Component):
    """A word-bus access as one AXI4-Lite transaction on ``axil`` (12-bit byte offsets).

    A write puts AW and W up together and acknowledges on B; a read puts AR up and acknowledges
    on R. Adds one cycle to the slave's latency."""

    def __init__(self):
        super().__init__({"bus": In(WordBusSignature()), "axil": Out(AxiLiteSignature())})

    def elaborate(self, platform):
        m = Module()
        bus, axil = self.bus, self.axil
        offset = bus.addr[:10] << 2
        m.d.comb += [axil.awaddr.eq(offset), axil.araddr.eq(offset), axil.wdata.eq(bus.wdata),
                     axil.wstrb.eq(0xF), axil.bready.eq(1), axil.rready.eq(1),
                     bus.rdata.eq(axil.rdata)]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(bus.stb & bus.we):
                    m.next = "AW"
                with m.Elif(bus.stb):
                    m.next = "AR"
            with m.State("AW"):
                m.d.comb += [axil.awvalid.eq(1), axil.wvalid.eq(1)]
                with m.If(axil.awready & axil.wready):
                    m.next = "B"
            with m.State("B"):
                with m.If(axil.bvalid):
                    m.d.comb += bus.ack.eq(1)
                    m.next = "IDLE"
            with m.State("AR"):
                m.d.comb += axil.arvalid.eq(1)
                with m.If(axil.arready):
                    m.next = "R"
            with m.State("R"):
                with m.If(axil.rvalid):
                    m.d.comb += bus.ack.eq(1)
                    m.next = "IDLE"
        return m


class BoardSoC(wiring.Component):
    """The VTA core with ``mem_bytes`` of DRAM, reached over a serial line.

    ``memory`` is ``"onchip"`` (block RAM) or ``"sdram"`` (LiteDRAM on the SDRAM chip at the
    ``sdram`` pins; the host sees its first ``mem_bytes``). Ports: ``rx``/``tx`` (the serial
    line at one bit per ``divisor`` cycles), ``leds`` (registered: bit 0 running, bit 1 done, bit 2 error).
    The host's address map is :mod:`isa.hostlink`'s: DRAM from 0, the registers of
    :mod:`isa.registers` at ``CSR_BASE``. ``external_core``: no core inside, its ports are
    the design's port ``core`` (to measure the board's own paths, ``bitstreams.probe``).
    ``dp16kd``: the on-chip memory of ECP5 block-RAM primitives (a synthesis, not a
    simulation; :class:`~hw.board.onchip.OnChipMemory`).
    """

    def __init__(self, cfg: VTAConfig, *, mem_bytes: int, divisor: int, idle_timeout: int,
                 clock_hz: int = 0, memory: str = "onchip", external_core: bool = False,
                 dp16kd: bool = False):
        if memory not in MEMORIES:
            raise ValueError(f"board memory {memory!r}: choose from {', '.join(MEMORIES)}")
        self._cfg, self._mem_bytes, self._clock_hz = cfg, mem_bytes, clock_hz
        self._divisor, self._timeout, self.memory = divisor, idle_timeout, memory
        self._dp16kd = dp16kd
        ports = {"rx": In(1, init=1), "tx": Out(1, init=1), "leds": Out(3)}
        if external_core:
            # the core's ports as the design's own (bitstreams.probe registers them: the
            # board's paths measured without the core's)
            stand_in = VTACore(cfg)
            stand_in._MustUse__silence = True      # built for its signature only
            ports["core"] = In(stand_in.signature)
        if memory == "sdram":
            from .sdram_model import SdramPinsSignature
            ports["sdram"] = Out(SdramPinsSignature())
            # high once the SDRAM is initialised (100 µs after reset): the host link answers
            # memory accesses only then, and its 16-byte receive FIFO cannot hold a host
            # that writes before, so the host waits for INFO_STATUS's STATUS_MEM_READY
            ports["mem_ready"] = Out(1)
        super().__init__(ports)

    @property
    def mem_bytes(self) -> int:
        return self._mem_bytes

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        if "core" in self.signature.members:
            core = wiring.flipped(self.core)
        else:
            m.submodules.core = core = VTACore(cfg)
        m.submodules.csr = csr = ControlRegisters(cfg)
        if self.memory == "sdram":
            from .sdram import SdramMemory
            if not self._clock_hz:
                raise ValueError("the SDRAM board design needs its clock frequency (clock_hz)")
            m.submodules.mem = mem = SdramMemory(cfg, self._clock_hz)
            if self._mem_bytes > mem.geometry.chip_bytes:
                raise ValueError(f"mem_bytes {self._mem_bytes} exceeds the SDRAM's "
                                 f"{mem.geometry.chip_bytes} bytes")
            wiring.connect(m, mem.pins, wiring.flipped(self.sdram))
            m.d.comb += self.mem_ready.eq(mem.ready)
            mem_ready = mem.ready
        else:
            m.submodules.mem = mem = OnChipMemory(cfg, self._mem_bytes, dp16kd=self._dp16kd)
            mem_ready = 1
        m.submodules.bridge = bridge = UartBridge(self._divisor, self._timeout)
        m.submodules.to_csr = to_csr = WordBusToAxiLite()
        # A register slice between the core and its memory: no path from the core's arbiter
        # reaches the memory's block RAM or the host's arbitration (§12 of docs/hardware.md).
        m.submodules.mem_slice = mem_slice = MemPortSlice(cfg)
        wiring.connect(m, core.mem, mem_slice.up)
        wiring.connect(m, mem_slice.down, mem.port)
        wiring.connect(m, to_csr.axil, csr.bus)
        m.d.comb += [bridge.rx.eq(self.rx), self.tx.eq(bridge.tx),
                     core.launch.eq(csr.launch), core.insn_addr.eq(csr.insn_addr),
                     core.insn_count.eq(csr.insn_count), core.dram_size.eq(csr.dram_size)]
        # The LEDs from registers: the error code is the core's choice among its held error
        # indices (combinational), registered before its test (a cycle later on the LED).
        code = Signal.like(core.error_code)
        m.d.sync += [code.eq(core.error_code),
                     self.leds.eq(core.running | (core.done << 1) | ((code != 0) << 2))]
        for name in ("running", "done", "error_code", "error_index", "cycles", *COUNTERS):
            m.d.comb += getattr(csr, name).eq(getattr(core, name))

        # Address decoding: registers at CSR_BASE, the description at INFO_BASE (one page
        # each; answered at once, even before the SDRAM is ready), DRAM below mem_bytes.
        # The decode is registered and an access reaches its slave from its second cycle
        # (`settled`: the same access, so the same address, a cycle before), so no path runs
        # from the address compares into the memory's block-RAM port (Fmax).
        # The slave's acknowledgement and read word reach the bridge through registers, a
        # cycle later (the slaves' answer logic and the bridge's FSM are not one path: Fmax);
        # a slave sees its strobe drop in the cycle after its ack (``settled``), as before.
        host = bridge.bus
        page_bits = (H.PAGE_BYTES // H.WORD_BYTES).bit_length() - 1
        is_csr, is_mem, settled = Signal(), Signal(), Signal()
        ack, rdata = Signal(), Signal(32)
        m.d.sync += [is_csr.eq(host.addr[page_bits:] == H.CSR_BASE // H.PAGE_BYTES),
                     is_mem.eq(host.addr < self._mem_bytes // H.WORD_BYTES),
                     settled.eq(host.stb & ~ack & ~host.ack),
                     host.ack.eq(ack), host.rdata.eq(rdata)]
        stb = host.stb & settled
        for slave, sel in ((to_csr.bus, is_csr), (mem.bus, is_mem)):
            m.d.comb += [slave.addr.eq(host.addr), slave.we.eq(host.we),
                         slave.wdata.eq(host.wdata), slave.stb.eq(stb & sel)]
        # The description's word from a register too (its address compares are 3 LUT levels
        # before the bridge's own): loaded from the address in every cycle, read from the
        # second cycle of an access, when it is the same address's.
        # The page compare and the word's pick are separate registers (one compare each).
        info, is_info = Signal(32), Signal()
        m.d.sync += [info.eq(0),               # unmapped: reads 0
                     is_info.eq(host.addr[page_bits:] == H.INFO_BASE // H.PAGE_BYTES)]
        with m.Switch(host.addr[:page_bits]):
            for index, value in ((H.INFO_MAGIC, H.BOARD_MAGIC),
                                 (H.INFO_DRAM_BYTES, self._mem_bytes),
                                 (H.INFO_CLOCK_HZ, self._clock_hz),
                                 (H.INFO_CONFIG, H.config_word(cfg.key, cfg.bus_width)),
                                 (H.INFO_STATUS, mem_ready * H.STATUS_MEM_READY)):
                with m.Case(index):
                    m.d.sync += info.eq(value)
        with m.If(is_csr):
            m.d.comb += [ack.eq(to_csr.bus.ack), rdata.eq(to_csr.bus.rdata)]
        with m.Elif(is_mem):
            m.d.comb += [ack.eq(mem.bus.ack), rdata.eq(mem.bus.rdata)]
        with m.Else():
            m.d.comb += [ack.eq(stb), rdata.eq(Mux(is_info, info, 0))]  # the description
        return m
