"""The boards ``make bitstream`` knows: platform (from amaranth-boards), device, totals."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import UsageError

__all__ = ["Board", "BOARDS", "get_board", "RESOURCES"]

#: The resources a report lists, in order: nextpnr's names → the report's names.
RESOURCES = {"TRELLIS_COMB": "LUT4", "TRELLIS_FF": "FF", "DP16KD": "DP16KD",
             "MULT18X18D": "MULT18X18D"}


@dataclass(frozen=True)
class Board:
    name: str
    device: str
    package: str
    speed: str
    platform: str           # class name in amaranth_boards.<module>
    module: str
    totals: tuple           # (("LUT4", n), ...) of the device (Lattice FPGA-DS-02012)
    openfpgaloader_board: str

    def make_platform(self):
        import importlib
        return getattr(importlib.import_module(f"amaranth_boards.{self.module}"), self.platform)()

    def total(self, resource: str) -> int:
        return dict(self.totals)[resource]


BOARDS = {
    "ulx3s-85f": Board("ulx3s-85f", "LFE5U-85F", "CABGA381", "6", "ULX3S_85F_Platform", "ulx3s",
                       (("LUT4", 83640), ("FF", 83640), ("DP16KD", 208), ("MULT18X18D", 156)),
                       "ulx3s"),
    "ulx3s-45f": Board("ulx3s-45f", "LFE5U-45F", "CABGA381", "6", "ULX3S_45F_Platform", "ulx3s",
                       (("LUT4", 43848), ("FF", 43848), ("DP16KD", 108), ("MULT18X18D", 72)),
                       "ulx3s"),
}


def get_board(name: str) -> Board:
    try:
        return BOARDS[name.lower()]
    except KeyError:
        raise UsageError(f"unknown board {name!r}; known boards: {', '.join(BOARDS)}") from None
