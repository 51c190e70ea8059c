"""The program value: symbolic DRAM regions, launches of relocatable instructions, and linking
against a memory layout into program images (SPEC §5)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from ..arch import FUNCTIONAL_COUNTERS, MemType, Opcode, elem_bytes
from ..config import VTAConfig
from ..encoding import Alu, Gemm, IsaError, Load, Store, encode
from ..image import OutputRegion, ProgramImage
from ..layout import mem_layout

__all__ = ["ProgramError", "LinkError", "Region", "Launch", "Program", "LinkedProgram",
           "REGION_KINDS", "DATA_KINDS", "default_align", "auto_layout", "relocate",
           "relocate_list", "functional_counters",
           "write_launch"]

#: Kinds of DRAM regions. ``uops`` and ``instructions`` are generated, one of each per launch.
REGION_KINDS = ("parameter", "input", "output", "activation", "scratch", "uops", "instructions")
#: Kinds whose contents the program itself carries.
DATA_KINDS = ("parameter", "uops")


class ProgramError(RuntimeError):
    """A program that cannot be built, linked or loaded; the message says why."""


class LinkError(ProgramError):
    """A memory layout that does not fit the program (alignment, overlap, size)."""


def default_align(cfg: VTAConfig) -> int:
    """The default region alignment: 16 (instructions) or the largest DRAM element."""
    return max(16, *(elem_bytes(cfg, m) for m in MemType))


@dataclass(frozen=True)
class Region:
    """A symbolic block of DRAM. ``data`` (read-only uint8, ``nbytes`` long) is carried by
    parameter and micro-op regions; other regions start as ``fill`` bytes (inputs: the array
    given at link time). ``shape``/``dtype`` say how to read the region back."""

    name: str
    kind: str
    nbytes: int
    align: int
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    fill: int = 0
    data: np.ndarray | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.kind not in REGION_KINDS:
            raise ProgramError(f"region {self.name!r}: unknown kind {self.kind!r} (one of "
                               f"{', '.join(REGION_KINDS)})")
        if self.nbytes < 0 or self.align < 1 or self.align & (self.align - 1):
            raise ProgramError(f"region {self.name!r}: size {self.nbytes} must be "
                               f"non-negative and align {self.align} a power of two")
        if self.data is not None:
            data = np.frombuffer(np.ascontiguousarray(self.data).tobytes(), np.uint8)
            if data.size != self.nbytes:
                raise ProgramError(f"region {self.name!r}: {data.size} bytes of data for "
                                   f"{self.nbytes} bytes")
            data.setflags(write=False)
            object.__setattr__(self, "data", data)
        if self.shape is not None:
            object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
            if self.dtype is None or math.prod(self.shape) * np.dtype(self.dtype).itemsize \
                    != self.nbytes:
                raise ProgramError(f"region {self.name!r}: shape {self.shape} of "
                                   f"{self.dtype} is not {self.nbytes} bytes")

    def __repr__(self) -> str:
        return f"<Region {self.name!r} {self.kind} {self.nbytes} B>"


@dataclass(frozen=True)
class Launch:
    """One accelerator launch: instructions (an ``isa.encoding`` instruction, or a raw 128-bit
    word), the stage of each, and relocations ``(index, region)``: the instruction's
    ``dram_base`` is an element offset inside that region until linked."""

    index: int
    instructions: tuple
    stages: tuple[str, ...]
    relocs: tuple[tuple[int, str], ...]
    insns: str                  # the name of the launch's instruction region
    uops: str | None = None     # the name of its micro-op region, if it loads micro-ops

    def __len__(self) -> int:
        return len(self.instructions)

    def regions_used(self) -> tuple[str, ...]:
        """Data regions its LOADs and STOREs address (its micro-op region aside), in first-use
        order."""
        return tuple(dict.fromkeys(r for _, r in self.relocs if r != self.uops))

    def stores(self) -> tuple[str, ...]:
        """Regions its STOREs write."""
        return tuple(dict.fromkeys(r for i, r in self.relocs
                                   if self.instructions[i].opcode == Opcode.STORE))


def relocate_list(insns, relocs, layout: Mapping[str, int], cfg: VTAConfig,
                  where: str = "") -> list:
    """``insns`` with the ``dram_base`` of every relocated instruction made absolute."""
    insns = list(insns)
    for i, name in relocs:
        insn = insns[i]
        eb = elem_bytes(cfg, insn.memory_type)
        addr = layout[name]
        if addr % eb:
            raise LinkError(f"region {name!r} at 0x{addr:x} is not aligned to the {eb}-byte "
                            f"{MemType(insn.memory_type).name} element that instruction {i}"
                            f"{where} reads it as")
        new = object.__new__(type(insn))   # insn.replace() without re-running the constructor
        new.__dict__.update(insn.__dict__, dram_base=addr // eb + insn.dram_base)
        insns[i] = new
    return insns


def relocate(launch: Launch, layout: Mapping[str, int], cfg: VTAConfig) -> list:
    """The launch's instructions with every relocated ``dram_base`` made absolute."""
    return relocate_list(launch.instructions, launch.relocs, layout, cfg,
                         f" of launch {launch.index}")


def encode_words(insns, cfg: VTAConfig, where: str = "") -> bytes:
    """Instructions (or raw words) as 16-byte little-endian words. Streams repeat the same
    instructions (no-ops, a kernel's GEMM per tile), so each distinct one is encoded once."""
    cache: dict = {}
    words = []
    for i, insn in enumerate(insns):
        word = cache.get(insn)
        if word is None:
            try:
                value = insn if isinstance(insn, int) else encode(insn, cfg)
            except IsaError as exc:
                raise LinkError(f"{where}{exc.at(i)}") from None
            word = cache[insn] = int(value).to_bytes(16, "little")
        words.append(word)
    return b"".join(words)


def _encode_linked(launch: Launch, layout: Mapping[str, int], cfg: VTAConfig) -> bytes:
    """The launch's words with relocated addresses: each distinct unrelocated instruction is
    encoded once and its ``dram_base`` field patched per use (the field of ``mem_layout``)."""
    field = mem_layout()["dram_base"]
    clear = ~(field.mask << field.offset)
    words = bytearray(encode_words(launch.instructions, cfg, f"launch {launch.index}: "))
    for i, name in launch.relocs:
        insn = launch.instructions[i]
        eb = elem_bytes(cfg, insn.memory_type)
        addr = layout[name]
        if addr % eb:
            raise LinkError(f"region {name!r} at 0x{addr:x} is not aligned to the {eb}-byte "
                            f"{MemType(insn.memory_type).name} element that instruction {i} "
                            f"of launch {launch.index} reads it as")
        base = addr // eb + insn.dram_base
        if not 0 <= base <= field.mask:
            raise LinkError(f"launch {launch.index}: instruction {i}: dram_base = {base} "
                            f"(region {name!r} at 0x{addr:x}) does not fit in "
                            f"{field.width} bits")
        word = int.from_bytes(words[16 * i:16 * i + 16], "little") & clear
        words[16 * i:16 * i + 16] = (word | (base << field.offset)).to_bytes(16, "little")
    return bytes(words)


def write_launch(dram: np.ndarray, launch: Launch, regions: Mapping[str, Region],
                 layout: Mapping[str, int], cfg: VTAConfig) -> int:
    """Write the launch's instructions (relocated) and micro-ops into ``dram`` at their
    layout addresses; returns the byte address of the first instruction."""
    code = np.frombuffer(_encode_linked(launch, layout, cfg), np.uint8)
    targets = [(launch.insns, code)]
    if launch.uops is not None:
        targets.append((launch.uops, regions[launch.uops].data))
    for name, data in targets:
        addr = layout[name]
        if addr < 0 or addr + data.size > dram.size:
            raise LinkError(f"region {name!r} [{addr}, {addr + data.size}) lies outside the "
                            f"DRAM ({dram.size} bytes)")
        dram[addr:addr + data.size] = data
    return layout[launch.insns]


def functional_counters(cfg: VTAConfig, insns) -> dict[str, int]:
    """What the original functional simulator's profiler counters (reference §5.7) read after
    ``insns`` run (raw words excluded)."""
    c = dict.fromkeys(FUNCTIONAL_COUNTERS, 0)
    for insn in insns:
        if isinstance(insn, Load) and insn.x_size:
            key = {MemType.UOP: "uop", MemType.WGT: "wgt", MemType.INP: "inp", MemType.ACC: "acc",
                   MemType.ACC_8BIT: "acc"}.get(insn.memory_type)
            if key:
                # Like the original: an ACC_8BIT load counts whole accumulator elements.
                eb = (cfg.acc_elem_bytes if insn.memory_type == MemType.ACC_8BIT
                      else elem_bytes(cfg, insn.memory_type))
                c[f"{key}_load_nbytes"] += insn.x_size * insn.y_size * eb
        elif isinstance(insn, Store) and insn.x_size:
            c["out_store_nbytes"] += insn.x_size * insn.y_size * cfg.out_elem_bytes
        elif isinstance(insn, (Gemm, Alu)):
            n = insn.iter_out * insn.iter_in * max(0, insn.uop_end - insn.uop_bgn)
            if isinstance(insn, Alu):
                c["alu_counter"] += n
            elif not insn.reset:
                c["gemm_counter"] += n
    return c


def _round_up(value: int, align: int) -> int:
    return -(-value // align) * align


@dataclass(frozen=True)
class Program:
    """A relocatable program for ``config``: regions and launches. Immutable; build it with
    :class:`~isa.program.StreamBuilder`, link it with :meth:`link`."""

    config: VTAConfig
    name: str
    regions: tuple[Region, ...]
    launches: tuple[Launch, ...]

    def __post_init__(self):
        object.__setattr__(self, "regions", tuple(self.regions))
        object.__setattr__(self, "launches", tuple(self.launches))
        names = [r.name for r in self.regions]
        if len(set(names)) != len(names):
            raise ProgramError(f"program {self.name!r}: duplicate region names")
        by_name = {r.name: r for r in self.regions}
        object.__setattr__(self, "_by_name", by_name)
        align = {r.name: r.align for r in self.regions}
        for launch in self.launches:
            for i, name in launch.relocs:
                if name not in by_name:
                    raise ProgramError(f"launch {launch.index} instruction {i} addresses "
                                       f"region {name!r}, which the program does not have")
                insn = launch.instructions[i]
                if isinstance(insn, int) or insn.opcode not in (Opcode.LOAD, Opcode.STORE):
                    raise ProgramError(f"launch {launch.index} instruction {i}: only LOAD and "
                                       f"STORE instructions address regions")
                align[name] = math.lcm(align[name], elem_bytes(self.config, insn.memory_type))
            for name in (launch.insns, launch.uops):
                if name is not None and name not in by_name:
                    raise ProgramError(f"launch {launch.index} needs region {name!r}")
        object.__setattr__(self, "_align", align)

    def region(self, name: str) -> Region:
        try:
            return self._by_name[name]
        except KeyError:
            raise ProgramError(f"program {self.name!r} has no region {name!r}") from None

    @property
    def instruction_count(self) -> int:
        return sum(len(launch) for launch in self.launches)

    def counters(self) -> dict[str, int]:
        """What the functional simulator's profiler counters will read after every launch
        (bytes loaded per memory type, bytes stored, GEMM and ALU micro-op executions):
        ``gemm_counter`` x ``config.macs_per_cycle`` is the program's multiply-accumulates."""
        return functional_counters(self.config, [i for launch in self.launches
                                                 for i in launch.instructions
                                                 if not isinstance(i, int)])

    def alignment(self, name: str) -> int:
        """What a layout must honour for region ``name``: its ``align`` and the element size
        of every memory type an instruction addresses it as."""
        self.region(name)
        return self._align[name]

    # ------------------------------------------------------------------ linking
    def layout(self, fixed: Mapping[str, int] | None = None) -> tuple[dict[str, int], int]:
        """Addresses of every region (``fixed`` ones kept, the others placed in creation
        order above them, each at its :meth:`alignment`) and the DRAM size."""
        fixed = dict(fixed or {})
        unknown = set(fixed) - set(self._by_name)
        if unknown:
            raise LinkError(f"the layout names regions the program does not have: "
                            f"{', '.join(sorted(unknown))}")
        base = default_align(self.config)
        top = max([base] + [fixed[r.name] + r.nbytes for r in self.regions if r.name in fixed])
        layout = {}
        for r in self.regions:
            if r.name in fixed:
                layout[r.name] = int(fixed[r.name])
            else:
                layout[r.name] = _round_up(top, self.alignment(r.name))
                top = layout[r.name] + r.nbytes
        return layout, _round_up(top, base)

    def _check_layout(self, layout: Mapping[str, int], dram_bytes: int) -> None:
        for r in self.regions:
            addr, align = layout[r.name], self.alignment(r.name)
            if addr < 0 or addr % align:
                raise LinkError(f"region {r.name!r} at {addr} must be a non-negative multiple "
                                f"of {align}")
            if addr + r.nbytes > dram_bytes:
                raise LinkError(f"region {r.name!r} [{addr}, {addr + r.nbytes}) lies outside "
                                f"the DRAM ({dram_bytes} bytes)")
        code = {name for launch in self.launches for name in (launch.insns, launch.uops)}
        shared = [r for r in self.regions if r.name not in code and r.nbytes]
        for launch in self.launches:
            own = [self.region(n) for n in (launch.insns, launch.uops) if n is not None]
            spans = sorted((layout[r.name], layout[r.name] + r.nbytes, r.name)
                           for r in shared + [r for r in own if r.nbytes])
            for (a0, a1, an), (b0, b1, bn) in zip(spans, spans[1:]):
                if b0 < a1:
                    raise LinkError(f"regions {an!r} [{a0}, {a1}) and {bn!r} [{b0}, {b1}) "
                                    f"overlap in launch {launch.index}")

    def link(self, layout: Mapping[str, int] | None = None, *,
             inputs: Mapping[str, np.ndarray] | None = None,
             dram_bytes: int | None = None) -> "LinkedProgram":
        """Program images, one per launch, for ``layout`` (missing regions placed
        automatically). ``inputs`` fills input regions (zeros otherwise)."""
        addrs, needed = self.layout(layout)
        size = needed if dram_bytes is None else int(dram_bytes)
        self._check_layout(addrs, size)
        dram = np.zeros(size, np.uint8)
        inputs = dict(inputs or {})
        for r in self.regions:
            addr = addrs[r.name]
            if r.name in inputs:
                dram[addr:addr + r.nbytes] = self._input_bytes(r, inputs.pop(r.name))
            elif r.data is not None:
                dram[addr:addr + r.nbytes] = r.data
            elif r.fill:
                dram[addr:addr + r.nbytes] = r.fill & 0xFF
        if inputs:
            raise LinkError(f"inputs for regions that are not inputs of {self.name!r}: "
                            f"{', '.join(sorted(inputs))}")
        starts = tuple(write_launch(dram, launch, self._by_name, addrs, self.config)
                       for launch in self.launches)
        dram.setflags(write=False)
        return LinkedProgram(self, MappingProxyType(addrs), size, dram, starts)

    def _input_bytes(self, region: Region, value) -> np.ndarray:
        if region.kind != "input":
            raise LinkError(f"region {region.name!r} is a {region.kind} region, not an input")
        arr = np.ascontiguousarray(value)
        if region.shape is not None and (arr.shape != region.shape
                                         or arr.dtype != np.dtype(region.dtype)):
            raise LinkError(f"input {region.name!r} must be {region.shape} {region.dtype}, "
                            f"got {arr.shape} {arr.dtype}")
        raw = np.frombuffer(arr.astype(arr.dtype.newbyteorder("<")).tobytes(), np.uint8)
        if raw.size != region.nbytes:
            raise LinkError(f"input {region.name!r} has {raw.size} bytes, the region "
                            f"{region.nbytes}")
        return raw

    # ------------------------------------------------------------------ files and text
    def save(self, path) -> None:
        """Write the program as one ``.npz`` file (no pickle); see :func:`load_program`."""
        from .files import save_program
        save_program(path, self)

    def to_bytes(self) -> bytes:
        """The saved file as bytes (``load_program(data)`` reads them back)."""
        from .files import program_bytes
        return program_bytes(self)

    def dump(self, *, instructions: bool = True) -> str:
        """The program as text: regions, then every launch in ``vta asm`` syntax (without
        ``instructions``: only each launch's size)."""
        from .files import dump_program
        return dump_program(self, instructions=instructions)


@dataclass(frozen=True)
class LinkedProgram:
    """A program linked at ``layout``. ``dram`` (read-only) holds the parameters, inputs and
    every launch's instructions and micro-ops; :meth:`image` gives launch k's image."""

    program: Program
    layout: Mapping[str, int]       # read-only
    dram_bytes: int
    dram: np.ndarray = field(repr=False)
    starts: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.starts)

    def outputs(self) -> list[OutputRegion]:
        """The output regions with a shape, as the images list them."""
        return [OutputRegion(r.name, self.layout[r.name], r.shape, np.dtype(r.dtype).name)
                for r in self.program.regions if r.kind == "output" and r.shape is not None]

    def image(self, k: int, dram: np.ndarray | None = None) -> ProgramImage:
        """Launch ``k`` as a SPEC §5 image, on a copy of ``dram`` (default: the initial DRAM;
        launch k is meant to run on the DRAM that launch k - 1 left)."""
        launch = self.program.launches[k]
        base = self.dram if dram is None else np.asarray(dram, np.uint8)
        return ProgramImage(base.copy(), self.starts[k], len(launch), self.program.config,
                            self.outputs())

    @property
    def images(self) -> list[ProgramImage]:
        """Every launch's image on the initial DRAM (they differ in ``insn_addr`` and
        ``insn_count`` only)."""
        return [self.image(k) for k in range(len(self.starts))]

    def run(self, run_image: Callable[[ProgramImage], object]) -> np.ndarray:
        """Run every launch in order with ``run_image`` (any backend: returns an object with
        ``dram``), each on the DRAM the previous one left; the final DRAM."""
        dram = self.dram
        for k in range(len(self.starts)):
            dram = np.asarray(run_image(self.image(k, dram)).dram, np.uint8)
        return dram.copy() if dram is self.dram else dram

    def read(self, name: str, dram: np.ndarray) -> np.ndarray:
        """Region ``name`` of ``dram`` as its shape and dtype (raw bytes if it has none)."""
        region = self.program.region(name)
        raw = np.asarray(dram, np.uint8)[self.layout[name]:self.layout[name] + region.nbytes]
        if region.shape is None:
            return raw.copy()
        return raw.view(np.dtype(region.dtype).newbyteorder("<")).reshape(region.shape).copy()


def auto_layout(program: Program) -> dict[str, int]:
    """Every region of ``program`` placed in creation order (see :meth:`Program.layout`)."""
    return program.layout()[0]
