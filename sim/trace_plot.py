"""``vta trace-plot``: draw a cycle-simulator trace (Chrome trace JSON) as a timeline picture.

One row per block (fetch, load, compute, store, memory port); each instruction is a bar coloured
by its kind, waits for a token or a full command queue are hatched grey, memory bursts are
coloured by direction. The x axis is in clock cycles.
"""

from __future__ import annotations

from pathlib import Path

from isa.errors import InputError, Unavailable

__all__ = ["register", "plot_trace", "load_trace"]

_COLOURS = {"LOAD": "#4c72b0", "GEMM": "#dd8452", "ALU": "#55a868", "STORE": "#c44e52",
            "FINISH": "#8172b3", "read": "#64b5cd", "write": "#da8bc3"}
_WAIT = "#bbbbbb"


#: Largest time stamp accepted (cycles; 2^53 keeps float arithmetic exact).
_MAX_TS = 1 << 53


def load_trace(path: "str | Path") -> tuple[dict[int, str], list[dict]]:
    """Thread names by id and the complete ('X') events of a trace file.

    Raises :class:`InputError` (a ``ValueError``) naming the first malformed event."""
    from isa.safeio import parse_json, read_text

    doc = parse_json(read_text(path, what="trace"), what=f"trace {path}")
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError(f"{path}: 'traceEvents' must be a list of events")
    names, spans = {}, []
    for k, e in enumerate(events):
        if not isinstance(e, dict):
            raise InputError(f"{path}: event {k} is not an object")
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            args = e.get("args")
            if not (_is_int(e.get("tid")) and isinstance(args, dict)
                    and isinstance(args.get("name"), str)):
                raise InputError(f"{path}: event {k}: a thread_name event needs an integer "
                                 f"'tid' and args.name")
            names[e["tid"]] = args["name"]
        elif e.get("ph") == "X":
            bad = [key for key in ("ts", "dur") if not _is_time(e.get(key))]
            if bad or not _is_int(e.get("tid")) or not isinstance(e.get("name"), str) \
                    or not e["name"].strip():
                what = f"'{bad[0]}' must be a number in [0, 2^53]" if bad else \
                    "it needs an integer 'tid' and a non-empty 'name'"
                raise InputError(f"{path}: event {k}: {what}")
            spans.append(e)
    if not spans:
        raise InputError(f"{path} holds no timeline events (was it written with --trace?)")
    unnamed = sorted({e["tid"] for e in spans} - set(names))
    for tid in unnamed:
        names[tid] = f"thread {tid}"
    return names, spans


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= _MAX_TS


def _is_time(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and 0 <= value <= _MAX_TS


def plot_trace(path: "str | Path", out: "str | Path", *, start: int | None = None,
               end: int | None = None, title: str | None = None) -> Path:
    """Render the trace at ``path`` as a PNG (or any format matplotlib knows) at ``out``."""
    from isa.safeio import atomic_output, check_output

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    out = check_output(out, what="picture")
    fmt = out.suffix.lstrip(".").lower()
    names, spans = load_trace(path)
    last = max(e["ts"] + e["dur"] for e in spans)
    lo, hi = start or 0, end if end is not None else last
    if hi <= lo:
        raise InputError(f"nothing to draw: the window [{lo}, {hi}] is empty (the trace ends "
                         f"at cycle {last:,})")
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
    try:
        with atomic_output(out, what="picture") as fh:
            fig.savefig(fh, format=fmt)
    finally:
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
    _check_format(args.out)
    for option, value in (("--start", args.start), ("--end", args.end)):
        if value is not None and value < 0:
            raise InputError(f"{option} {value}: a cycle number is not negative")
    out = plot_trace(args.trace, args.out, start=args.start, end=args.end)
    print(f"wrote {out}")
    return 0


def _check_format(out) -> None:
    """Refuse a picture format matplotlib cannot write, before reading the trace."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError:
        raise Unavailable("vta trace-plot needs matplotlib: pip install -e '.[plot]'") from None

    formats = FigureCanvasAgg.get_supported_filetypes()
    fmt = Path(out).suffix.lstrip(".").lower()
    if fmt not in formats:
        raise InputError(f"cannot draw {str(out)!r}: the name must end in one of "
                         f"{', '.join('.' + f for f in sorted(formats))}")
