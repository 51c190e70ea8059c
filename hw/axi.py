"""AXI4 master adapter of the memory port, and the AXI4 / AXI4-Lite signatures of the shell."""

from __future__ import annotations

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from isa.config import VTAConfig

from .memport import ADDR_BITS, MemPortSignature

__all__ = ["AxiSignature", "AxiLiteSignature", "AxiMaster", "AXI_CACHE", "AXI_PROT"]

#: AxCACHE: normal non-cacheable bufferable; AxPROT: data, secure, unprivileged.
AXI_CACHE = 0b0011
AXI_PROT = 0b000


class AxiSignature(wiring.Signature):
    """AXI4 as seen by the master (single ID, INCR bursts)."""

    def __init__(self, *, addr_width: int, data_width: int, id_width: int = 1):
        def ax():
            return {"id": Out(id_width), "addr": Out(addr_width), "len": Out(8), "size": Out(3),
                    "burst": Out(2), "lock": Out(1), "cache": Out(4), "prot": Out(3),
                    "valid": Out(1), "ready": In(1)}
        members = {}
        for ch in ("aw", "ar"):
            members.update({ch + k: v for k, v in ax().items()})
        members.update({"wdata": Out(data_width), "wstrb": Out(data_width // 8), "wlast": Out(1),
                        "wvalid": Out(1), "wready": In(1),
                        "bid": In(id_width), "bresp": In(2), "bvalid": In(1), "bready": Out(1),
                        "rid": In(id_width), "rdata": In(data_width), "rresp": In(2),
                        "rlast": In(1), "rvalid": In(1), "rready": Out(1)})
        super().__init__(members)


class AxiLiteSignature(wiring.Signature):
    """AXI4-Lite as seen by the master (the host)."""

    def __init__(self, *, addr_width: int = 12, data_width: int = 32):
        super().__init__({
            "awaddr": Out(addr_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1),
            "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
            "rdata": In(data_width), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
        })


class AxiMaster(wiring.Component):
    """Memory port → AXI4 master. Combinational, zero latency, channel for channel.

    ``rcmd`` is AR, ``wcmd`` AW (ID 0, INCR, AxSIZE = log2 bus bytes, AxLEN = ``len``); R beats
    are the ``rd`` beats (``rlast`` is ``last``); ``wr`` beats are W; a B handshake (``bready``
    always high) is ``wr_ack``. The port's several bursts in flight are several outstanding
    AXI transactions of one ID, so the slave answers them in order, as the port requires. The core's bursts never cross a
    ``max_burst_beats × bus_bytes`` boundary, which must divide 4 KiB: so no burst crosses a
    4 KiB boundary (checked here). Responses other than OKAY are ignored.
    """

    def __init__(self, cfg: VTAConfig):
        span = cfg.max_burst_beats * cfg.bus_bytes
        if 4096 % span:
            self._MustUse__silence = True    # not elaborated: no "unused" warning
            raise ValueError(f"MAX_BURST_BEATS × bus bytes = {span} must divide 4096 so that no "
                             f"AXI burst crosses a 4 KiB boundary")
        self._cfg = cfg
        super().__init__({
            "port": In(MemPortSignature(cfg)),
            "axi": Out(AxiSignature(addr_width=ADDR_BITS, data_width=cfg.bus_width)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        p, a = self.port, self.axi
        size = cfg.bus_bytes.bit_length() - 1
        for ch, cmd in (("aw", p.wcmd), ("ar", p.rcmd)):
            m.d.comb += [getattr(a, ch + "addr").eq(cmd.payload.addr),
                         getattr(a, ch + "len").eq(cmd.payload.len),
                         getattr(a, ch + "size").eq(size),
                         getattr(a, ch + "burst").eq(0b01),
                         getattr(a, ch + "cache").eq(AXI_CACHE),
                         getattr(a, ch + "prot").eq(AXI_PROT)]
        m.d.comb += [
            a.awvalid.eq(p.wcmd.valid), p.wcmd.ready.eq(a.awready),
            a.arvalid.eq(p.rcmd.valid), p.rcmd.ready.eq(a.arready),
            p.rd.valid.eq(a.rvalid), p.rd.payload.data.eq(a.rdata), p.rd.payload.last.eq(a.rlast),
            a.rready.eq(p.rd.ready),
            a.wvalid.eq(p.wr.valid), a.wdata.eq(p.wr.payload.data), a.wstrb.eq(p.wr.payload.strb),
            a.wlast.eq(p.wr.payload.last), p.wr.ready.eq(a.wready),
            a.bready.eq(1), p.wr_ack.eq(a.bvalid),
        ]
        return m


