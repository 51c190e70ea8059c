"""Resource estimates before place and route, and the fit check.

Two estimates, both before nextpnr runs:

* :func:`config_estimate` — from the configuration alone, in no time: lower bounds (the GEMM
  array's int8 products, one MULT18X18D each, and the ALU lanes' 32-bit multiplies, three
  each — the partial products below bit 32 —; the buffers' block RAM at the best DP16KD
  aspect ratio). A configuration over these bounds cannot fit whatever the synthesis does.
* :func:`synthesis_estimate` — from Yosys' cell counts after ``synth_ecp5`` (``stat -json``):
  DP16KD and MULT18X18D exactly as nextpnr will place them; LUT4 as LUT4 + 2 per CCU2C carry
  cell + the distributed RAM's slices (:data:`LUTS_PER_DPR16X4`); FF as TRELLIS_FF.
"""

from __future__ import annotations

import math

from isa.config import VTAConfig

from .errors import FitError

__all__ = ["config_estimate", "synthesis_estimate", "check_fit", "dp16kd_blocks",
           "LUTS_PER_DPR16X4"]

# DP16KD aspect ratios (depth, width); 36 bits wide only as a simple dual-port RAM.
_DP16KD_SHAPES = ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))
#: A TRELLIS_DPR16X4 (16 × 4 distributed RAM) takes a slice pair of LUTs plus the write-port
#: slice in nextpnr's ECP5 packing: counted as 6 LUT4 (nextpnr reports it as TRELLIS_COMB).
LUTS_PER_DPR16X4 = 6
#: The low 32 bits of a 32 × 32 product from 18 × 18 multipliers: lo·lo, lo·hi and hi·lo
#: (Yosys maps exactly these: 34 MULT18X18D for 1 × 4 × 4 = 16 + 4 lanes × 3 + 6 in the
#: range checks, 94 for 1 × 8 × 8, counted before STORE's element count took one more).
ALU_MULTS_PER_LANE = 3


def dp16kd_blocks(depth: int, width: int) -> int:
    """Fewest DP16KD blocks for a ``depth`` × ``width`` memory (one write, one read port)."""
    return min(math.ceil(width / w) * math.ceil(depth / d) for d, w in _DP16KD_SHAPES)


def config_estimate(cfg: VTAConfig, extra_memories=()) -> dict:
    """Lower bounds on DP16KD and MULT18X18D from the configuration; ``extra_memories`` are
    (depth, width) pairs of the board design (e.g. its on-chip DRAM)."""
    mems = [(cfg.inp_depth, cfg.inp_elem_bits), (cfg.wgt_depth, cfg.wgt_elem_bits),
            (cfg.acc_depth, cfg.acc_elem_bits), (cfg.acc_depth, cfg.out_elem_bits),
            (cfg.uop_depth, 32), *extra_memories]
    # Small memories go to LUT RAM: only those of at least one block's worth count here.
    brams = sum(dp16kd_blocks(d, w) for d, w in mems if d * w >= 16384)
    mults = cfg.batch * cfg.block_in * cfg.block_out + ALU_MULTS_PER_LANE * cfg.batch * cfg.block_out
    return {"DP16KD": brams, "MULT18X18D": mults}


def synthesis_estimate(stat: dict) -> dict:
    """Resources from Yosys' ``stat -json`` after ``synth_ecp5`` (flattened design)."""
    cells = stat.get("design", stat).get("num_cells_by_type", {})
    return {
        "LUT4": cells.get("LUT4", 0) + 2 * cells.get("CCU2C", 0)
                + LUTS_PER_DPR16X4 * cells.get("TRELLIS_DPR16X4", 0),
        "FF": cells.get("TRELLIS_FF", 0),
        "DP16KD": cells.get("DP16KD", 0) + cells.get("PDPW16KD", 0),
        "MULT18X18D": cells.get("MULT18X18D", 0),
    }


def check_fit(used: dict, board, source: str) -> None:
    """Raise FitError naming every resource of ``used`` over the board's total, and by how
    much; ``source`` says which estimate it is."""
    over = [(r, n, board.total(r)) for r, n in used.items() if n > board.total(r)]
    if over:
        parts = [f"{r} {n} of {total} ({n - total} over, {n / total:.0%})" for r, n, total in over]
        raise FitError(f"does not fit the {board.device} ({source}): " + "; ".join(parts))
