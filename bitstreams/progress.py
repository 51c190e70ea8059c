"""A progress display for the long tool runs: stage, elapsed time and the tool's latest step,
on one rewritten line on a terminal, one line per change otherwise."""

from __future__ import annotations

import re
import sys
import time

__all__ = ["Progress", "step_of"]

# Yosys: "3.14. Executing ABC9 pass." → "ABC9"; nextpnr: its phase lines.
_YOSYS_STEP = re.compile(r"^\d+\.\d+\. Executing (\S+)")   # the synth script's own steps
_NEXTPNR_STEPS = (("Packing", "packing"), ("Running placer", "placing"),
                  ("Running timing-driven placement", "placing"),
                  ("Running detail placement", "detail placement"),
                  ("Routing globals", "routing globals"), ("Router2", "routing"),
                  ("Routing..", "routing"), ("Running router", "routing"),
                  ("Program finished normally", "done"))


def step_of(tool: str, line: str) -> str | None:
    """The step a log line of ``tool`` starts, if it starts one."""
    if tool == "yosys":
        m = _YOSYS_STEP.match(line)
        return m.group(1).lower() if m else None
    if tool == "nextpnr":
        for key, step in _NEXTPNR_STEPS:
            if key in line:
                return step
    return None


class Progress:
    def __init__(self, stream=None, enabled: bool = True):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.monotonic()
        self.stage, self.step = "", ""
        self._last = ""

    def _show(self, text: str, final: bool = False) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
        elif text != self._last:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._last = text

    def _line(self) -> str:
        t = int(time.monotonic() - self.t0)
        step = f": {self.step}" if self.step else ""
        return f"[{t // 60:3d}:{t % 60:02d}] {self.stage}{step}"

    def start(self, stage: str) -> None:
        if self.stage and self.tty:
            self._show(self._line(), final=True)
        self.stage, self.step = stage, ""
        self._show(self._line())

    def update(self, step: str) -> None:
        if step != self.step:
            self.step = step
            self._show(self._line())

    def done(self, text: str) -> None:
        if self.tty:
            self._show(self._line(), final=True)
        self._show(text, final=True)
