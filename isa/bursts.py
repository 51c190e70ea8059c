"""How a transfer is split into memory-port bursts (docs/hardware.md §2, "Burst splitting")."""

from __future__ import annotations

from .config import VTAConfig

__all__ = ["span_beats"]


def span_beats(cfg: VTAConfig, addr: int, nbytes: int) -> list[tuple[int, int]]:
    """The bursts ``(byte address, beats)`` a transfer of ``nbytes`` at ``addr`` is split into.

    A transfer covers the bus-aligned beats ``addr // B … (addr + nbytes − 1) // B``; each
    burst takes as many as remain up to the next ``MAX_BURST_BEATS × B`` boundary, so no
    burst crosses one (nor a 4 KiB page, which that boundary divides).
    """
    bb, mb = cfg.bus_bytes, cfg.max_burst_beats
    first, last = addr // bb, (addr + nbytes - 1) // bb
    out, cur = [], first
    while cur <= last:
        n = min(last - cur + 1, mb - cur % mb)
        out.append((cur * bb, n))
        cur += n
    return out
