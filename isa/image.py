"""Program images (SPEC §5): one accelerator launch as a NumPy ``.npz`` file."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .config import ConfigError, VTAConfig
from .errors import InputError

__all__ = ["ProgramImage", "OutputRegion", "ImageError", "load_image", "save_image"]


class ImageError(InputError):
    """A program image that does not follow SPEC §5; the message says what is wrong."""


@dataclass(frozen=True)
class OutputRegion:
    """A DRAM region to read back after the run."""

    name: str
    addr: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize   # no int64 overflow

    def read(self, dram: np.ndarray) -> np.ndarray:
        return dram[self.addr:self.addr + self.nbytes].view(self.dtype).reshape(self.shape)

    def to_dict(self) -> dict:
        return {"name": self.name, "addr": self.addr, "nbytes": self.nbytes,
                "shape": list(self.shape), "dtype": self.dtype}


@dataclass
class ProgramImage:
    """The whole DRAM, where the instructions are, and the configuration they were built for."""

    dram: np.ndarray
    insn_addr: int
    insn_count: int
    config: VTAConfig
    outputs: list[OutputRegion] = field(default_factory=list)

    def __post_init__(self):
        self.dram = np.ascontiguousarray(self.dram, dtype=np.uint8).reshape(-1)
        self.insn_addr, self.insn_count = int(self.insn_addr), int(self.insn_count)
        self.validate()

    def validate(self) -> None:
        if self.insn_addr < 0 or self.insn_addr % 16:
            raise ImageError(f"insn_addr = {self.insn_addr} must be a non-negative multiple of "
                             f"16 (instructions are 16-byte aligned)")
        if self.insn_count < 1:
            raise ImageError(f"insn_count = {self.insn_count}: an image holds at least one "
                             f"instruction (FINISH included)")
        end = self.insn_addr + 16 * self.insn_count
        if end > self.dram.size:
            raise ImageError(f"the instruction stream [{self.insn_addr}, {end}) runs past the "
                             f"end of DRAM ({self.dram.size} bytes)")
        for region in self.outputs:
            if region.addr < 0 or region.addr + region.nbytes > self.dram.size:
                raise ImageError(f"output {region.name!r} [{region.addr}, "
                                 f"{region.addr + region.nbytes}) lies outside DRAM "
                                 f"({self.dram.size} bytes)")

    @property
    def instruction_bytes(self) -> bytes:
        return self.dram[self.insn_addr:self.insn_addr + 16 * self.insn_count].tobytes()

    def read_outputs(self, dram: np.ndarray | None = None) -> dict[str, np.ndarray]:
        dram = self.dram if dram is None else dram
        return {r.name: r.read(dram).copy() for r in self.outputs}

    def copy(self) -> "ProgramImage":
        return ProgramImage(self.dram.copy(), self.insn_addr, self.insn_count, self.config,
                            list(self.outputs))

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {"dram": self.dram, "insn_addr": np.int64(self.insn_addr),
                  "insn_count": np.int64(self.insn_count),
                  "config": np.str_(self.config.to_json())}
        if self.outputs:
            arrays["outputs"] = np.str_(json.dumps([r.to_dict() for r in self.outputs]))
        return arrays


def save_image(path: "str | Path", image: ProgramImage) -> None:
    """Write ``image`` as an ``.npz`` file (SPEC §5), atomically; like ``np.savez`` it adds
    the ``.npz`` suffix when ``path`` has none."""
    from .safeio import save_npz

    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    save_npz(path, image.to_arrays(), what="image")


def _scalar_int(arrays, key: str) -> int:
    value = arrays[key]
    if value.shape != () or value.dtype.kind not in "iu":
        raise ImageError(f"{key!r} must be an integer scalar, got dtype {value.dtype} "
                         f"shape {value.shape}")
    return int(value)


# Element types an output region may have: plain numbers (no objects, strings or records).
_OUTPUT_KINDS = "biuf"
_MAX_NAME = 256


def _region(entry, k: int) -> OutputRegion:
    """One ``outputs`` entry, every field checked (the message names entry and field)."""
    where = f"'outputs' entry {k}"
    if not isinstance(entry, dict):
        raise ImageError(f"{where} must be an object {{name, addr, shape, dtype}}, got "
                         f"{type(entry).__name__}")
    missing = [key for key in ("name", "addr", "shape", "dtype") if key not in entry]
    if missing:
        raise ImageError(f"{where} lacks {', '.join(missing)}")
    name, addr, shape, dtype = entry["name"], entry["addr"], entry["shape"], entry["dtype"]
    if not isinstance(name, str) or not 0 < len(name) <= _MAX_NAME or not name.isprintable():
        raise ImageError(f"{where}: name must be a printable string of 1 to {_MAX_NAME} "
                         f"characters, got {name!r:.80}")
    where = f"output {name!r}"
    if isinstance(addr, bool) or not isinstance(addr, int) or addr < 0:
        raise ImageError(f"{where}: addr must be a non-negative integer, got {addr!r:.80}")
    if not isinstance(shape, list) or len(shape) > 32 or any(
            isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape):
        raise ImageError(f"{where}: shape must be a list of at most 32 positive integers, got "
                         f"{shape!r:.80}")
    if not isinstance(dtype, str):
        raise ImageError(f"{where}: dtype must be a string such as 'int8', got {dtype!r:.80}")
    try:
        kind = np.dtype(dtype)
    except (TypeError, ValueError, SyntaxError):
        raise ImageError(f"{where}: unknown dtype {dtype!r:.80}") from None
    if kind.kind not in _OUTPUT_KINDS or kind.fields is not None or kind.subdtype is not None:
        raise ImageError(f"{where}: dtype {dtype!r} is not a numeric type (bool, int, uint, "
                         f"float)")
    count = 1
    for d in shape:
        count *= d
    region = OutputRegion(name, addr, tuple(shape), kind.str if kind.byteorder == ">" else
                          kind.name)
    nbytes = count * kind.itemsize
    if "nbytes" in entry and entry["nbytes"] != nbytes:
        raise ImageError(f"{where}: nbytes {entry['nbytes']!r:.40} does not match shape "
                         f"{list(shape)} of {dtype} ({nbytes} bytes)")
    return region


def _parse_outputs(text: str) -> list[OutputRegion]:
    from .safeio import parse_json

    try:
        entries = parse_json(text, what="'outputs'")
    except InputError as exc:
        raise ImageError(str(exc)) from None
    if not isinstance(entries, list):
        raise ImageError(f"'outputs' must be a JSON list of {{name, addr, shape, dtype}} "
                         f"objects, got {type(entries).__name__}")
    regions = [_region(entry, k) for k, entry in enumerate(entries)]
    names = [r.name for r in regions]
    if len(set(names)) != len(names):
        raise ImageError(f"'outputs' names a region twice: "
                         f"{sorted({n for n in names if names.count(n) > 1})}")
    return regions


def _json_text(arrays, key: str) -> str:
    value = arrays[key]
    if value.dtype.kind not in "US" or value.shape != ():
        raise ImageError(f"{key!r} must be a JSON string, got dtype {value.dtype} shape "
                         f"{value.shape}")
    if value.dtype.kind == "S":
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ImageError(f"{key!r} is not UTF-8 text ({exc.reason} at byte "
                             f"{exc.start})") from None
    return str(value)


def load_image(source: "str | Path | bytes") -> ProgramImage:
    """Read and validate an image; :class:`ImageError` explains what is wrong with a bad one."""
    from .safeio import load_arrays

    if not isinstance(source, (bytes, bytearray)):
        try:
            Path(source).stat()
        except FileNotFoundError:
            raise ImageError(f"no such image file: {source}") from None
        except (OSError, ValueError):
            pass                        # load_arrays says what is wrong
    try:
        arrays = load_arrays(source, what="image", label="the file")
    except InputError as exc:
        raise ImageError(f"not a NumPy .npz program image: {exc}") from None
    missing = [k for k in ("dram", "insn_addr", "insn_count", "config") if k not in arrays]
    if missing:
        raise ImageError(f"image lacks {', '.join(missing)} (SPEC §5 needs dram, insn_addr, "
                         f"insn_count and config)")
    dram = arrays["dram"]
    if dram.dtype != np.uint8 or dram.ndim != 1:
        raise ImageError(f"'dram' must be a 1-D uint8 array, got dtype {dram.dtype} "
                         f"shape {dram.shape}")
    try:
        config = VTAConfig.from_json(_json_text(arrays, "config"))
    except ConfigError as exc:
        raise ImageError(f"bad 'config': {exc}") from None
    outputs = _parse_outputs(_json_text(arrays, "outputs")) if "outputs" in arrays else []
    return ProgramImage(dram, _scalar_int(arrays, "insn_addr"),
                        _scalar_int(arrays, "insn_count"), config, outputs)
