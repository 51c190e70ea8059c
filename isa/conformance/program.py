"""The conformance-program record and how a backend's result is checked against it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ErrorCode
from ..image import ProgramImage, save_image

__all__ = ["ConformanceProgram"]


@dataclass
class ConformanceProgram:
    """One conformance case.

    ``image`` is the program (its ``outputs`` name the DRAM regions its STOREs write);
    ``expected`` maps each output name to the contents a conforming backend leaves there,
    computed with numpy from what the program means (never by a simulator). A program that
    must be rejected has ``expected_error`` and ``expected_index`` (the instruction at fault)
    instead. ``expected_counters`` (functional-simulator counters, reference §5.7) are given
    where cheap: gemm_counter, alu_counter, inp/wgt/acc/uop_load_nbytes, out_store_nbytes.
    """

    name: str
    image: ProgramImage
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    expected_error: ErrorCode | None = None
    expected_index: int | None = None
    expected_counters: dict | None = None
    tags: tuple[str, ...] = ()
    description: str = ""

    @property
    def is_bad(self) -> bool:
        return self.expected_error is not None

    @property
    def config(self):
        return self.image.config

    def check_dram(self, dram: np.ndarray) -> list[str]:
        """Mismatches between the DRAM after a run and the expectation ([] when it conforms)."""
        problems = []
        regions = {r.name: r for r in self.image.outputs}
        for name, want in self.expected.items():
            got = regions[name].read(np.asarray(dram, np.uint8))
            want = np.asarray(want).astype(got.dtype).reshape(got.shape)
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)
                first = tuple(int(i) for i in bad[0])
                problems.append(f"{self.name}: output {name!r} differs at {len(bad)} of "
                                f"{got.size} positions; first at {first}: got {got[first]}, "
                                f"expected {want[first]}")
        return problems

    def check_counters(self, counters: dict) -> list[str]:
        problems = []
        for key, want in (self.expected_counters or {}).items():
            if key in counters and int(counters[key]) != int(want):
                problems.append(f"{self.name}: counter {key} = {counters[key]}, expected {want}")
        return problems

    def check_run(self, run) -> list[str]:
        """Run this program with ``run(image)`` — any backend: it returns an object with
        ``dram`` (and optionally ``counters``), or raises an exception carrying ``code`` and
        ``index`` (like ``sim.functional.SimulationError``) — and list what does not conform."""
        try:
            result = run(self.image)
        except Exception as exc:   # noqa: BLE001 - any backend's error type
            code, index = getattr(exc, "code", None), getattr(exc, "index", None)
            if not self.is_bad:
                return [f"{self.name}: unexpected error {exc!r}"]
            if code is None:
                raise
            if (code, index) != (self.expected_error, self.expected_index):
                return [f"{self.name}: raised {getattr(code, 'name', code)} at instruction "
                        f"{index}, expected {self.expected_error.name} at "
                        f"{self.expected_index}"]
            return []
        if self.is_bad:
            return [f"{self.name}: ran to completion, expected {self.expected_error.name} at "
                    f"instruction {self.expected_index}"]
        problems = self.check_dram(result.dram)
        counters = getattr(result, "counters", None)
        if counters:
            problems += self.check_counters(counters)
        return problems

    # ------------------------------------------------------------------ files
    def save(self, directory: "str | Path") -> Path:
        """Write ``NAME.in.npz`` (the image, SPEC §5) and ``NAME.expect.npz`` (expected output
        regions under their names, counters, and for bad programs ``error``/``error_index``)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.name}.in.npz"
        save_image(path, self.image)
        arrays: dict = {f"out_{k}": np.asarray(v) for k, v in self.expected.items()}
        for key, value in (self.expected_counters or {}).items():
            arrays[key] = np.int64(value)
        if self.is_bad:
            arrays["error"] = np.str_(self.expected_error.name)
            arrays["error_code"] = np.int64(int(self.expected_error))
            arrays["error_index"] = np.int64(self.expected_index)
        arrays["meta"] = np.str_(json.dumps({"name": self.name, "tags": list(self.tags),
                                             "description": self.description,
                                             "config": self.image.config.name}))
        np.savez_compressed(directory / f"{self.name}.expect.npz", **arrays)
        return path
