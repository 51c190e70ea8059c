"""Programs as files (one ``.npz``, JSON metadata and uint8 arrays, never pickle) and as text."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

from ..arch import STAGES
from ..asm import format_insn
from ..config import ConfigError, VTAConfig
from ..encoding import IsaError, decode
from .program import Launch, Program, ProgramError, Region, encode_words

__all__ = ["ProgramFormatError", "save_program", "load_program", "program_bytes", "dump_program",
           "FORMAT", "FORMAT_VERSION"]

FORMAT = "vta-program"
FORMAT_VERSION = 1


class ProgramFormatError(ProgramError):
    """A saved program that cannot be read: not a program file, another version, corrupted."""


def _digest(meta: dict, arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for key in sorted(arrays):
        h.update(key.encode())
        h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()


def _to_arrays(program: Program) -> dict[str, np.ndarray]:
    cfg = program.config
    index = {r.name: i for i, r in enumerate(program.regions)}
    arrays: dict[str, np.ndarray] = {}
    regions = []
    for i, r in enumerate(program.regions):
        regions.append({"name": r.name, "kind": r.kind, "nbytes": r.nbytes, "align": r.align,
                        "shape": None if r.shape is None else list(r.shape), "dtype": r.dtype,
                        "fill": r.fill, "data": r.data is not None})
        if r.data is not None:
            arrays[f"region{i}"] = np.asarray(r.data)
    launches = []
    for launch in program.launches:
        k = launch.index
        words = encode_words(launch.instructions, cfg)
        arrays[f"launch{k}_words"] = np.frombuffer(words, np.uint8)
        arrays[f"launch{k}_stages"] = np.array([STAGES.index(s) for s in launch.stages],
                                               np.uint8)
        arrays[f"launch{k}_raw"] = np.array([isinstance(w, int) for w in launch.instructions],
                                            np.bool_)
        arrays[f"launch{k}_relocs"] = np.array([(i, index[r]) for i, r in launch.relocs],
                                               np.int64).reshape(-1, 2)
        launches.append({"insns": launch.insns, "uops": launch.uops,
                         "count": len(launch.instructions)})
    meta = {"format": FORMAT, "version": FORMAT_VERSION, "name": program.name,
            "config": json.loads(cfg.to_json()), "config_name": cfg.name,
            "regions": regions, "launches": launches}
    meta["sha256"] = _digest(meta, arrays)
    arrays["meta"] = np.str_(json.dumps(meta))
    return arrays


def program_bytes(program: Program) -> bytes:
    """The file :func:`save_program` writes, as bytes (:func:`load_program` reads them)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **_to_arrays(program))
    return buf.getvalue()


def save_program(path: "str | Path", program: Program) -> None:
    """Write ``program`` to ``path`` (written whole to a temporary name, then renamed)."""
    path = Path(path)
    arrays = _to_arrays(program)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **arrays)
    tmp.replace(path)


def _read(source) -> dict[str, np.ndarray]:
    try:
        data = io.BytesIO(source) if isinstance(source, bytes) else source
        with np.load(data, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except FileNotFoundError:
        raise ProgramFormatError(f"no such program file: {source}") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ProgramFormatError(f"not a saved VTA program (unreadable .npz: {exc})") from None


def load_program(source: "str | Path | bytes") -> Program:
    """Read a program written by :func:`save_program`; :class:`ProgramFormatError` says what
    is wrong with a bad file."""
    arrays = _read(source)
    if "meta" not in arrays or arrays["meta"].dtype.kind != "U" or arrays["meta"].shape != ():
        raise ProgramFormatError("not a saved VTA program (no 'meta' string)")
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except ValueError as exc:
        raise ProgramFormatError(f"corrupted program file: 'meta' is not JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ProgramFormatError("not a saved VTA program (format is not 'vta-program')")
    if meta.get("version") != FORMAT_VERSION:
        raise ProgramFormatError(f"program file version {meta.get('version')!r}: this "
                                 f"version reads version {FORMAT_VERSION}; compile it again")
    digest = meta.pop("sha256", None)
    if digest != _digest(meta, arrays):
        raise ProgramFormatError("corrupted program file: the content does not match its "
                                 "SHA-256 checksum")
    try:
        return _from_meta(meta, arrays)
    except ProgramError as exc:
        raise ProgramFormatError(f"invalid program file: {exc}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ConfigError,
            IsaError) as exc:
        raise ProgramFormatError(f"invalid program file: {type(exc).__name__}: {exc}") from None


def _from_meta(meta: dict, arrays: dict[str, np.ndarray]) -> Program:
    cfg = VTAConfig.from_json(json.dumps(meta["config"]), name=meta.get("config_name", "custom"))
    regions = []
    for i, r in enumerate(meta["regions"]):
        data = arrays[f"region{i}"] if r["data"] else None
        regions.append(Region(r["name"], r["kind"], int(r["nbytes"]), int(r["align"]),
                              None if r["shape"] is None else tuple(r["shape"]), r["dtype"],
                              int(r["fill"]), data))
    launches = []
    for k, entry in enumerate(meta["launches"]):
        words = arrays[f"launch{k}_words"]
        stages, raw = arrays[f"launch{k}_stages"], arrays[f"launch{k}_raw"]
        count = int(entry["count"])
        if words.size != 16 * count or stages.size != count or raw.size != count:
            raise ValueError(f"launch {k}: {count} instructions but {words.size} bytes")
        insns, decoded = [], {}
        for i in range(count):
            word = int.from_bytes(words[16 * i:16 * i + 16].tobytes(), "little")
            if not raw[i] and word not in decoded:
                decoded[word] = decode(word, cfg)
            insns.append(word if raw[i] else decoded[word])
        relocs = tuple((int(i), regions[int(r)].name) for i, r in arrays[f"launch{k}_relocs"])
        launches.append(Launch(k, tuple(insns), tuple(STAGES[s] for s in stages), relocs,
                               entry["insns"], entry["uops"]))
    return Program(cfg, meta["name"], tuple(regions), tuple(launches))


def dump_program(program: Program, *, instructions: bool = True) -> str:
    """Regions, then each launch's instructions in ``vta asm`` syntax (only its size without
    ``instructions``); a relocated address reads ``dram_base=REGION+OFFSET`` (in elements of
    the instruction's memory type)."""
    cfg = program.config
    lines = [f"program {program.name!r} for configuration {cfg.name!r}: "
             f"{len(program.launches)} launch(es), {program.instruction_count} instructions",
             "counters: " + ", ".join(f"{k} {v}" for k, v in program.counters().items()),
             "", f"{'region':<24} {'kind':<12} {'bytes':>10} {'align':>6}  shape/dtype"]
    for r in program.regions:
        what = "" if r.shape is None else f"{list(r.shape)} {r.dtype}"
        lines.append(f"{r.name:<24} {r.kind:<12} {r.nbytes:>10} {program.alignment(r.name):>6}"
                     f"  {what}")
    for launch in program.launches:
        lines += ["", f"launch {launch.index}: {len(launch)} instructions in {launch.insns}"
                  + (f", micro-ops in {launch.uops}" if launch.uops else "")]
        if not instructions:
            continue
        relocs = dict(launch.relocs)
        for i, (insn, stage) in enumerate(zip(launch.instructions, launch.stages)):
            if isinstance(insn, int):
                text = f"WORD {insn:#034x}"
            elif i in relocs:
                text = format_insn(insn.replace(dram_base=0)).replace(
                    "dram_base=0x0", f"dram_base={relocs[i]}+{insn.dram_base}")
            else:
                text = format_insn(insn)
            lines.append(f"{i:>6} {stage:<7} {text}")
    return "\n".join(lines) + "\n"
