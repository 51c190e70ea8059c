"""The store module (``hw/store.py``): STORE of the OUT buffer (narrowed ACC) to DRAM."""

from __future__ import annotations

from isa.config import VTAConfig

from .common import ModuleBase, range_error
from .dma import DmaWriter

__all__ = ["StoreModule"]

IDLE, WAIT, RETIRE = range(3)


class StoreModule(ModuleBase):
    """``hw.store.StoreModule``: start in *s* (g2s token if ``pop_prev``), range checks, the
    :class:`DmaWriter` started for all ``y_size`` rows (row *y* at ``dram_base + y · x_stride``)
    and the OUT-buffer reader for the ``y_size · x_size`` dense elements; WAIT from *s* + 1
    until the writer's ``busy`` is low; one RETIRE cycle pushes s2g. ``x_size == 0`` or
    ``y_size == 0``: START, RETIRE. The OUT reader keeps one registered element in front of
    the writer (the first is there in *s* + 2).
    """

    name = "store"

    def __init__(self, cfg: VTAConfig, dram_size: int, execute):
        super().__init__()
        self.eb = cfg.out_elem_bytes
        self.depth = cfg.acc_depth
        self.writer = DmaWriter(cfg, self.eb, 16)
        self.dram_size = dram_size
        self.execute = execute
        self.left = 0
        self.valid = False
        self.go = False           # the instruction passes its checks this cycle

    def cmd(self):
        return self.writer.cmd()

    def wr_valid(self) -> bool:
        return self.writer.wr_valid(self.valid)

    def comb(self, t: int, head_valid: bool, head, halt: bool, g2s_avail: bool) -> None:
        self.clear()
        self.go = False
        fsm = self.fsm
        if fsm == IDLE:
            self.idle = True
            if head_valid and not halt:
                index, d = head
                f = d.f
                if f["pop_prev"] and not g2s_avail:
                    self.blocked = True
                    return
                self.pop = True
                if f["x_size"] == 0:
                    self.go = True
                    return
                code = range_error(f, elem_bytes=self.eb, depth=self.depth,
                                   dram_size=self.dram_size, padded=False)
                if code:
                    self.err, self.err_index = code, index
                else:
                    self.go = True
        elif fsm == RETIRE:
            self.push = (bool(self.d.f["push_prev"]), False)

    def update(self, t: int, head, cmd_fire: bool, wr_ready: bool, wr_ack: bool) -> None:
        fsm = self.fsm
        if fsm == IDLE and not self.go and not self.valid and not self.left:
            return              # idle, nothing starts, the OUT reader empty: no change
        w = self.writer
        start = fsm == IDLE and self.go and head[1].f["y_size"] != 0 and head[1].f["x_size"] != 0
        inp_ready = w.inp_ready(wr_ready)
        advance = not self.valid or inp_ready
        wbusy = w.busy
        if start:
            f = head[1].f
            eb = self.eb
            w.update(True, (f["dram_base"] * eb) & 0xFFFFFFFF, f["x_size"], f["y_size"],
                     (f["x_stride"] * eb) & 0xFFFFFFFF, False, False, False, False)
            self.left = f["x_size"] * f["y_size"]
            self.valid = False
        else:
            if wbusy:
                w.update(False, 0, 0, 0, 0, cmd_fire, self.valid, wr_ready, wr_ack)
            if advance:
                self.valid = self.left != 0
                if self.left:
                    self.left -= 1
        if fsm == IDLE:
            if self.go:
                self.index, self.d = head
                self.started_at = t
                self.execute(self.d)
                self.fsm = WAIT if start else RETIRE
        elif fsm == WAIT:
            if not wbusy:
                self.fsm = RETIRE
        else:
            self.retired(t)
            self.fsm = IDLE
