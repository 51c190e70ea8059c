"""``vta trace-plot``: draw a cycle-simulator trace (Chrome trace JSON) as a timeline picture.

One row per block (fetch, load, compute, store, memory port); each instruction is a bar coloured
by its kind, waits for a token or a full command queue are hatched grey, memory bursts are
coloured by direction. The x axis is in clock cycles.
"""

from __future__ import annotations

import json
from pathlib import Path

from isa.errors import InputError

__all__ = ["register", "plot_trace", "load_trace"]

_COLOURS = {"LOAD": "#4c72b0", "GEMM": "#dd8452", "ALU": "#55a868", "STORE": "#c44e52",
            "FINISH": "#8172b3", "read": "#64b5cd", "write": "#da8bc3"}
_WAIT = "#bbbbbb"


def load_trace(path: "str | Path") -> tuple[dict[int, str], list[dict]]:
    """Thread names by id and the complete ('X') events of a trace file."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read trace {path}: {exc}") from None
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        raise ValueError(f"{path} holds no timeline events (was it written with --trace?)")
    return names, spans


def plot_trace(path: "str | Path", out: "str | Path", *, start: int | None = None,
               end: int | None = None, title: str | None = None) -> Path:
    """Render the trace at ``path`` as a PNG (or any format matplotlib knows) at ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    names, spans = load_trace(path)
    last = max(e["ts"] + e["dur"] for e in spans)
    lo, hi = start or 0, end if end is not None else last
    rows = sorted(names)
    fig, ax = plt.subplots(figsize=(12, 0.55 * len(rows) + 1.4), dpi=120)
    for row, tid in enumerate(rows):
        for e in spans:
            if e["tid"] != tid or e["ts"] + e["dur"] < lo or e["ts"] > hi:
                continue
            kind = e["name"].split()[0]
            stall = e.get("cat") == "stall"
            ax.broken_barh([(e["ts"], max(e["dur"], 0.5))], (row - 0.38, 0.76),
                           facecolors=_WAIT if stall else _COLOURS.get(kind, "#999999"),
                           edgecolor="white" if not stall else "#888888", linewidth=0.3,
                           hatch="///" if stall else None)
    ax.set_yticks(range(len(rows)), [names[t] for t in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("clock cycle")
    ax.set_title(title or f"{Path(path).name}: {last:,} cycles")
    legend = [Patch(facecolor=c, label=k) for k, c in _COLOURS.items()]
    legend.append(Patch(facecolor=_WAIT, hatch="///", label="waiting (token / full queue)"))
    fig.legend(handles=legend, loc="lower center", ncol=len(legend), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    out = Path(out)
    fig.savefig(out)
    plt.close(fig)
    return out


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "trace-plot", help="draw a cycle-simulator trace as a timeline picture",
        description="Draw the Chrome-trace JSON written by 'vta run --backend cycle --trace' "
                    "as a PNG: one row per block, instructions coloured by kind, waits hatched.")
    p.add_argument("trace", help="trace JSON from 'vta run --backend cycle --trace FILE.json'")
    p.add_argument("-o", "--out", required=True, help="picture to write (.png, .svg, .pdf)")
    p.add_argument("--start", type=int, default=None, help="first cycle to show")
    p.add_argument("--end", type=int, default=None, help="last cycle to show")
    p.set_defaults(func=_main)


def _main(args) -> int:
    try:
        out = plot_trace(args.trace, args.out, start=args.start, end=args.end)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    print(f"wrote {out}")
    return 0
