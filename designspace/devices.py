"""The ECP5 devices a sweep targets: their resources and nextpnr's name for them."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Device", "DEVICES", "get_device", "RESOURCES"]

#: The resources a point is measured in, as ``designspace.synth.resources`` counts them from
#: Yosys' cells (LUT4 in LUT4 equivalents: carry cells and distributed RAM occupy LUTs too).
RESOURCES = ("LUT4", "FF", "DP16KD", "MULT18X18D")


@dataclass(frozen=True)
class Device:
    """One ECP5 part (Lattice FPGA-DS-02012, table 1.1)."""

    name: str
    nextpnr_flag: str
    luts: int
    ffs: int
    dp16kd: int
    mult18: int

    def capacity(self, resource: str) -> int:
        return {"LUT4": self.luts, "FF": self.ffs, "DP16KD": self.dp16kd,
                "MULT18X18D": self.mult18}[resource]

    def fits(self, usage: dict, margin: float = 0.0) -> bool:
        """Whether ``usage`` (keys :data:`RESOURCES`) fits with ``margin`` (a fraction) of
        every resource left over."""
        return all(usage[r] <= self.capacity(r) * (1.0 - margin) for r in RESOURCES)


DEVICES = {d.name: d for d in (
    Device("LFE5U-12F", "--12k", 12288, 12288, 32, 28),
    Device("LFE5U-25F", "--25k", 24288, 24288, 56, 28),
    Device("LFE5U-45F", "--45k", 43848, 43848, 108, 72),
    Device("LFE5U-85F", "--85k", 83640, 83640, 208, 156),
)}


def get_device(name: str) -> Device:
    try:
        return DEVICES[name]
    except KeyError:
        raise KeyError(f"unknown device {name!r}; known: {', '.join(DEVICES)}") from None

