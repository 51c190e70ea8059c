"""The load module (``hw/load.py``): LOAD INP/WGT into the INP and WGT buffers."""

from __future__ import annotations

from isa.config import VTAConfig
from isa.encoding import MemType

from .common import ModuleBase, range_error
from .dma import TensorLoader

__all__ = ["LoadModule"]

IDLE, EXEC, RETIRE = range(3)


class LoadModule(ModuleBase):
    """``hw.load.LoadModule``: start in *s* (IDLE, head visible, g2l token if ``pop_next``):
    queue entry and token popped, range checks (SRAM before DRAM), the INP or WGT
    :class:`TensorLoader` started; EXEC from *s* + 1 until the loader's ``busy`` is low; one
    RETIRE cycle pushes l2g. A no-op (``x_size == 0``) takes two cycles (START, RETIRE).
    """

    name = "load"

    def __init__(self, cfg: VTAConfig, dram_size: int, execute):
        super().__init__()
        self.inp = TensorLoader(cfg, cfg.inp_elem_bytes)
        self.wgt = TensorLoader(cfg, cfg.wgt_elem_bytes)
        self.geom = {MemType.INP: (self.inp, cfg.inp_elem_bytes, cfg.inp_depth),
                     MemType.WGT: (self.wgt, cfg.wgt_elem_bytes, cfg.wgt_depth)}
        self.active = self.inp
        self.dram_size = dram_size
        self.execute = execute
        self.start = None         # loader started this cycle

    def cmd(self):
        return self.active.cmd()

    def rd_ready(self) -> bool:
        return self.active.rd_ready()

    def comb(self, t: int, head_valid: bool, head, halt: bool, g2l_avail: bool) -> None:
        self.clear()
        self.start = None
        fsm = self.fsm
        if fsm == IDLE:
            self.idle = True
            if head_valid and not halt:
                index, d = head
                f = d.f
                if f["pop_next"] and not g2l_avail:
                    self.blocked = True
                    return
                self.pop = True
                if f["x_size"] == 0:
                    return
                loader, eb, depth = self.geom[f["memory_type"]]
                code = range_error(f, elem_bytes=eb, depth=depth, dram_size=self.dram_size,
                                   padded=True)
                if code:
                    self.err, self.err_index = code, index
                else:
                    self.start = loader
        elif fsm == RETIRE:
            self.push = (False, bool(self.d.f["push_next"]))

    def update(self, t: int, head, cmd_fire: bool, rd_valid: bool, rd_last: bool) -> None:
        fsm = self.fsm
        start = self.start
        a = self.active
        if fsm == IDLE and not self.pop and a.fsm == 0 and not cmd_fire and not rd_valid:
            return              # idle, nothing starts, the loader idle: no change
        other = self.wgt if a is self.inp else self.inp
        if fsm == EXEC and not a.busy and not other.busy:
            self.fsm = RETIRE
        a.update(start is a, head[1].f if start is a else None, cmd_fire, rd_valid, rd_last)
        if start is other:
            other.update(True, head[1].f, False, False, False)
            self.active = other
        if fsm == IDLE and self.pop:
            self.index, self.d = head
            self.started_at = t
            if self.d.f["x_size"] == 0:
                self.execute(self.d)
                self.fsm = RETIRE
            elif start is not None:
                self.execute(self.d)
                self.fsm = EXEC
        elif fsm == RETIRE:
            self.retired(t)
            self.fsm = IDLE
