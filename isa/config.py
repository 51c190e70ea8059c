"""The one hardware configuration object from which every size is derived (SPEC §2)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

__all__ = ["VTAConfig", "ConfigError", "CONFIG_DIR", "named_configs", "load_config"]

CONFIG_DIR = Path(__file__).parent / "configs"

# Fixed ISA constants (reference/vta-hardware.md §1.2); not configurable.
INSN_BITS = 128
UOP_BITS = 32
OPCODE_BITS = 3
ALU_OPCODE_BITS = 3
MEMOP_ID_BITS = 3
SRAM_ADDR_BITS = 16
DRAM_ADDR_BITS = 32
MEMOP_SIZE_BITS = 16
MEMOP_STRIDE_BITS = 16
MEMOP_PAD_BITS = 4
LOOP_ITER_BITS = 14
ALU_IMM_BITS = 16


class ConfigError(InputError):
    """An impossible configuration; the message names the field and the limit."""


# (JSON key, attribute, default, lower bound, upper bound). Original keys first.
_FIELDS = (
    ("LOG_INP_WIDTH", "log_inp_width", 3, 3, 3),
    ("LOG_WGT_WIDTH", "log_wgt_width", 3, 3, 3),
    ("LOG_ACC_WIDTH", "log_acc_width", 5, 5, 5),
    ("LOG_BATCH", "log_batch", 0, 0, 6),
    ("LOG_BLOCK_IN", "log_block_in", 4, 0, 6),
    ("LOG_BLOCK_OUT", "log_block_out", 4, 0, 6),
    ("LOG_UOP_BUFF_SIZE", "log_uop_buff_size", 15, 2, 24),
    ("LOG_INP_BUFF_SIZE", "log_inp_buff_size", 15, 0, 26),
    ("LOG_WGT_BUFF_SIZE", "log_wgt_buff_size", 18, 0, 26),
    ("LOG_ACC_BUFF_SIZE", "log_acc_buff_size", 17, 0, 26),
    # This project's own keys.
    ("LOG_BUS_WIDTH", "log_bus_width", 6, 3, 9),
    ("MEM_LATENCY", "mem_latency", 4, 1, 1024),
    ("MAX_BURST_BEATS", "max_burst_beats", 16, 1, 256),
    # The memory system (docs/hardware.md §2): bursts in flight per direction, and the memory
    # model's bandwidth (a beat every MEM_BEAT_INTERVAL cycles, shared by reads and writes).
    ("MEM_OUTSTANDING", "mem_outstanding", 8, 1, 64),
    ("MEM_BEAT_INTERVAL", "mem_beat_interval", 1, 1, 64),
    ("CMD_QUEUE_DEPTH", "cmd_queue_depth", 512, 2, 4096),
    ("TOKEN_QUEUE_DEPTH", "token_queue_depth", 255, 1, 65535),
    ("TARGET_MHZ", "target_mhz", 100, 1, 1000),
)
_ORIGINAL_KEYS = ("LOG_INP_WIDTH", "LOG_WGT_WIDTH", "LOG_ACC_WIDTH", "LOG_BATCH", "LOG_BLOCK_IN",
                  "LOG_BLOCK_OUT", "LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE",
                  "LOG_ACC_BUFF_SIZE")
# Keys of the original JSON files that carry no hardware parameter; accepted and ignored.
_IGNORED_KEYS = frozenset({"TARGET", "HW_VER"})


def _check_ignored(data: dict) -> None:
    """The ignored keys still have the original's form: TARGET a name, HW_VER a version
    (``0.0.2``, not a string that only starts like one)."""
    import re

    target, version = data.get("TARGET", "sim"), data.get("HW_VER", "0.0.0")
    if not isinstance(target, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", target):
        raise ConfigError(f"TARGET must be a target name such as 'sim' or 'pynq', got "
                          f"{target!r:.80}")
    if not isinstance(version, str) or not re.fullmatch(r"[0-9]{1,4}(\.[0-9]{1,4}){2}",
                                                        version, re.ASCII):
        raise ConfigError(f"HW_VER must be a version such as '0.0.2', got {version!r:.80}")


@dataclass(frozen=True)
class VTAConfig:
    """A frozen VTA hardware configuration.

    Construct it with keyword arguments, :meth:`from_dict` / :meth:`from_json` (original key
    names) or :func:`load_config` (a named configuration or a path). Every derived size is a
    property; the constructor rejects configurations that cannot be encoded or built.
    """

    log_inp_width: int = 3
    log_wgt_width: int = 3
    log_acc_width: int = 5
    log_batch: int = 0
    log_block_in: int = 4
    log_block_out: int = 4
    log_uop_buff_size: int = 15
    log_inp_buff_size: int = 15
    log_wgt_buff_size: int = 18
    log_acc_buff_size: int = 17
    log_bus_width: int = 6
    mem_latency: int = 4
    max_burst_beats: int = 16
    mem_outstanding: int = 8
    mem_beat_interval: int = 1
    cmd_queue_depth: int = 512
    token_queue_depth: int = 255
    target_mhz: int = 100
    name: str = dataclasses.field(default="custom", compare=False)

    def __post_init__(self):
        for key, attr, _, lo, hi in _FIELDS:
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{key} must be an integer, got {value!r}")
            if lo == hi and value != lo:
                raise ConfigError(f"{key} = {value} is not supported: it must be {lo} (this "
                                  f"implementation has int8 inputs and weights and int32 "
                                  f"accumulators)")
            if not lo <= value <= hi:
                raise ConfigError(f"{key} = {value} is out of range: it must be in [{lo}, {hi}]")
        if self.log_out_width > self.log_acc_width:
            raise ConfigError(f"LOG_INP_WIDTH = {self.log_inp_width} (the output width) must not "
                              f"exceed LOG_ACC_WIDTH = {self.log_acc_width}")
        for mem in ("uop", "inp", "wgt", "acc"):
            if getattr(self, f"log_{mem}_depth") < 0:
                elem = getattr(self, f"{mem}_elem_bytes")
                raise ConfigError(
                    f"LOG_{mem.upper()}_BUFF_SIZE = {getattr(self, f'log_{mem}_buff_size')} is too "
                    f"small: the buffer must hold at least one {elem}-byte element")
        if self.max_burst_beats & (self.max_burst_beats - 1):
            raise ConfigError(f"MAX_BURST_BEATS = {self.max_burst_beats} must be a power of two")
        for name, bits in (("uop_bgn", self.log_uop_depth), ("uop_end", self.log_uop_depth + 1)):
            if bits > 16:
                raise ConfigError(f"{name} needs {bits} bits; LOG_UOP_BUFF_SIZE = "
                                  f"{self.log_uop_buff_size} gives more than 2^16 micro-ops")
        for mem in ("inp", "wgt", "acc"):
            if getattr(self, f"log_{mem}_depth") > SRAM_ADDR_BITS:
                raise ConfigError(
                    f"LOG_{mem.upper()}_BUFF_SIZE = {getattr(self, f'log_{mem}_buff_size')} gives "
                    f"{getattr(self, f'{mem}_depth')} elements; sram_base (16 bits) cannot address "
                    f"more than 65536")
        # Field layouts must fit: instructions in 128 bits, micro-ops in 32 bits.
        from .layout import check_layouts_fit  # local import: layout depends on this class
        check_layouts_fit(self)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, data: dict, *, name: str = "custom") -> "VTAConfig":
        """Build from a dict with the original JSON key names (``LOG_BLOCK`` or the split pair)."""
        data = dict(data)
        if "LOG_BLOCK" in data:
            block = data.pop("LOG_BLOCK")
            for key in ("LOG_BLOCK_IN", "LOG_BLOCK_OUT"):
                if key in data and data[key] != block:
                    raise ConfigError(f"LOG_BLOCK = {block} contradicts {key} = {data[key]}")
                data[key] = block
        _check_ignored(data)
        kwargs = {}
        known = {key: attr for key, attr, *_ in _FIELDS}
        for key, value in data.items():
            if key in known:
                kwargs[known[key]] = value
            elif key not in _IGNORED_KEYS:
                raise ConfigError(f"unknown configuration key {key!r}; known keys: "
                                  f"{', '.join(['LOG_BLOCK', *known])}")
        missing = [key for key in _ORIGINAL_KEYS if key not in data]
        if missing:
            raise ConfigError(f"configuration is missing {', '.join(missing)}")
        return cls(**kwargs, name=name)

    @classmethod
    def from_json(cls, text: str, *, name: str = "custom") -> "VTAConfig":
        from .safeio import parse_json

        try:
            data = parse_json(text, what="the configuration")
        except InputError as exc:
            raise ConfigError(str(exc)) from None
        if not isinstance(data, dict):
            raise ConfigError("configuration JSON must be an object of KEY: value pairs")
        return cls.from_dict(data, name=name)

    def to_dict(self) -> dict:
        """Original key names (``LOG_BLOCK`` when in == out) plus this project's keys."""
        out = {}
        for key, attr, *_ in _FIELDS:
            out[key] = getattr(self, attr)
        if self.log_block_in == self.log_block_out:
            out = {("LOG_BLOCK" if k == "LOG_BLOCK_IN" else k): v for k, v in out.items()
                   if k != "LOG_BLOCK_OUT"}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def replace(self, **changes) -> "VTAConfig":
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ scalar widths
    @property
    def log_out_width(self) -> int:
        return self.log_inp_width

    inp_width = property(lambda self: 1 << self.log_inp_width)
    wgt_width = property(lambda self: 1 << self.log_wgt_width)
    acc_width = property(lambda self: 1 << self.log_acc_width)
    out_width = property(lambda self: 1 << self.log_out_width)
    batch = property(lambda self: 1 << self.log_batch)
    block_in = property(lambda self: 1 << self.log_block_in)
    block_out = property(lambda self: 1 << self.log_block_out)
    bus_width = property(lambda self: 1 << self.log_bus_width)
    bus_bytes = property(lambda self: self.bus_width // 8)

    # ------------------------------------------------------------------ element sizes
    @property
    def inp_elem_bits(self) -> int:
        return self.inp_width * self.batch * self.block_in

    @property
    def wgt_elem_bits(self) -> int:
        return self.wgt_width * self.block_out * self.block_in

    @property
    def acc_elem_bits(self) -> int:
        return self.acc_width * self.batch * self.block_out

    @property
    def out_elem_bits(self) -> int:
        return self.out_width * self.batch * self.block_out

    uop_elem_bits = property(lambda self: UOP_BITS)
    inp_elem_bytes = property(lambda self: max(1, self.inp_elem_bits // 8))
    wgt_elem_bytes = property(lambda self: max(1, self.wgt_elem_bits // 8))
    acc_elem_bytes = property(lambda self: max(1, self.acc_elem_bits // 8))
    out_elem_bytes = property(lambda self: max(1, self.out_elem_bits // 8))
    uop_elem_bytes = property(lambda self: UOP_BITS // 8)
    insn_bytes = property(lambda self: INSN_BITS // 8)

    # ------------------------------------------------------------------ buffer depths
    @property
    def log_uop_depth(self) -> int:
        return self.log_uop_buff_size - 5 + 3

    @property
    def log_inp_depth(self) -> int:
        return self.log_inp_buff_size - self.log_batch - self.log_block_in - self.log_inp_width + 3

    @property
    def log_wgt_depth(self) -> int:
        return (self.log_wgt_buff_size - self.log_block_out - self.log_block_in
                - self.log_wgt_width + 3)

    @property
    def log_acc_depth(self) -> int:
        return self.log_acc_buff_size - self.log_batch - self.log_block_out - self.log_acc_width + 3

    uop_depth = property(lambda self: 1 << self.log_uop_depth)
    inp_depth = property(lambda self: 1 << self.log_inp_depth)
    wgt_depth = property(lambda self: 1 << self.log_wgt_depth)
    acc_depth = property(lambda self: 1 << self.log_acc_depth)
    out_depth = property(lambda self: 1 << self.log_acc_depth)

    # ------------------------------------------------------------------ misc
    @property
    def macs_per_cycle(self) -> int:
        return self.batch * self.block_in * self.block_out

    @property
    def key(self) -> str:
        """The original bitstream/config string, e.g. ``1x16_i8w8a32_15_15_18_17``."""
        block = (str(self.block_in) if self.block_in == self.block_out
                 else f"{self.block_in}x{self.block_out}")
        return (f"{self.batch}x{block}_i{self.inp_width}w{self.wgt_width}a{self.acc_width}"
                f"_{self.log_uop_buff_size}_{self.log_inp_buff_size}_{self.log_wgt_buff_size}"
                f"_{self.log_acc_buff_size}")

    def __str__(self) -> str:
        return f"{self.name} ({self.key}, {self.bus_width}-bit bus)"


def named_configs() -> list[str]:
    """Names of the configurations shipped in ``isa/configs``."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.json"))


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):     # a name too long, a NUL byte: no such file
        return False


def load_config(name_or_path: "str | Path | VTAConfig" = "default") -> VTAConfig:
    """A shipped configuration by name (``default``, ``small``, ...) or a JSON file path."""
    if isinstance(name_or_path, VTAConfig):
        return name_or_path
    path = Path(name_or_path)
    if path.suffix != ".json" and not _exists(path):
        path = CONFIG_DIR / f"{name_or_path}.json"
        if not _exists(path) or path.parent != CONFIG_DIR:
            raise ConfigError(f"no configuration named {str(name_or_path)!r}; shipped: "
                              f"{', '.join(named_configs())}, or give a path to a JSON file")
    from .safeio import read_text

    try:
        text = read_text(path, what="configuration", limit=1 << 20)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    return VTAConfig.from_json(text, name=path.stem)
