"""FPGA bitstreams of the VTA board design, built with the open toolchain (Yosys, nextpnr,
ecppack from YoWASP) through Amaranth's build system; each with its utilisation and timing
report beside it (``bitstreams/<board>-<config>/``). The HDL is ``hw/board/``; this package is
the tool flow: boards, resource estimates, the fit check, the build, the report, the CLI."""

from .errors import BitstreamError, FitError, ToolError

__all__ = ["BitstreamError", "FitError", "ToolError"]
