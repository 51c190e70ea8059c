"""Program images (SPEC §5): one accelerator launch as a NumPy ``.npz`` file."""

from __future__ import annotations

import io
import json
import zipfile
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
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

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
    """Write ``image`` as an ``.npz`` file (SPEC §5)."""
    np.savez_compressed(path, **image.to_arrays())


def _scalar_int(arrays, key: str) -> int:
    value = arrays[key]
    if value.shape != () or value.dtype.kind not in "iu":
        raise ImageError(f"{key!r} must be an integer scalar, got dtype {value.dtype} "
                         f"shape {value.shape}")
    return int(value)


def _parse_outputs(text: str) -> list[OutputRegion]:
    try:
        entries = json.loads(text)
        regions = []
        for entry in entries:
            region = OutputRegion(str(entry["name"]), int(entry["addr"]),
                                  tuple(int(d) for d in entry["shape"]), str(entry["dtype"]))
            np.dtype(region.dtype)
            if "nbytes" in entry and int(entry["nbytes"]) != region.nbytes:
                raise ImageError(f"output {region.name!r}: nbytes {entry['nbytes']} does not "
                                 f"match shape {list(region.shape)} of {region.dtype}")
            regions.append(region)
        return regions
    except ImageError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise ImageError(f"'outputs' must be a JSON list of {{name, addr, shape, dtype}} "
                         f"objects: {exc}") from None


def load_image(source: "str | Path | bytes") -> ProgramImage:
    """Read and validate an image; :class:`ImageError` explains what is wrong with a bad one."""
    try:
        data = io.BytesIO(source) if isinstance(source, bytes) else source
        with np.load(data, allow_pickle=False) as npz:
            arrays = {key: npz[key] for key in npz.files}
    except FileNotFoundError:
        raise ImageError(f"no such image file: {source}") from None
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise ImageError(f"not a NumPy .npz program image ({exc})") from None
    missing = [k for k in ("dram", "insn_addr", "insn_count", "config") if k not in arrays]
    if missing:
        raise ImageError(f"image lacks {', '.join(missing)} (SPEC §5 needs dram, insn_addr, "
                         f"insn_count and config)")
    dram = arrays["dram"]
    if dram.dtype != np.uint8 or dram.ndim != 1:
        raise ImageError(f"'dram' must be a 1-D uint8 array, got dtype {dram.dtype} "
                         f"shape {dram.shape}")
    config_text = arrays["config"]
    if config_text.dtype.kind not in "US" or config_text.shape != ():
        raise ImageError(f"'config' must be a JSON string, got dtype {config_text.dtype}")
    try:
        config = VTAConfig.from_json(str(config_text))
    except ConfigError as exc:
        raise ImageError(f"bad 'config': {exc}") from None
    outputs = _parse_outputs(str(arrays["outputs"])) if "outputs" in arrays else []
    return ProgramImage(dram, _scalar_int(arrays, "insn_addr"),
                        _scalar_int(arrays, "insn_count"), config, outputs)
