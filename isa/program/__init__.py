"""The device-free program layer: relocatable VTA programs built, saved, inspected and linked.

* :class:`StreamBuilder` — the command-stream API of the original runtime (loads, stores,
  GEMM/ALU over micro-op kernels, dependency tokens, units) on symbolic DRAM regions; splits
  into launches when the instruction stream or the micro-op staging area runs out.
* :class:`Program` — the frozen result: :class:`Region` s and :class:`Launch` es; ``save`` /
  :func:`load_program` (npz + JSON, no pickle), ``dump`` (text), ``link`` (a memory layout ->
  one SPEC §5 :class:`~isa.image.ProgramImage` per launch).
* :mod:`.kernel` — micro-op kernels and their residency in the micro-op buffer.

It lives in ``isa`` because the conformance builder is a layer over it and ``isa`` imports
nothing of the project; ``driver.CommandStream`` is this builder plus a live device.
"""

from .builder import DEFAULT_INSN_CAPACITY, StreamBuilder, noop
from .files import ProgramFormatError, dump_program, load_program, program_bytes, save_program
from .kernel import (KernelError, KernelRegistry, Loop, UopKernel, UopResidency, alu_kernel,
                     gemm_kernel)
from .program import (REGION_KINDS, Launch, LinkedProgram, LinkError, Program, ProgramError,
                      Region, auto_layout, default_align, functional_counters, relocate,
                      write_launch)

__all__ = ["StreamBuilder", "DEFAULT_INSN_CAPACITY", "noop", "ProgramFormatError",
           "dump_program", "load_program", "program_bytes", "save_program", "KernelError",
           "KernelRegistry", "Loop", "UopKernel", "UopResidency", "alu_kernel", "gemm_kernel",
           "REGION_KINDS", "Launch", "LinkedProgram", "LinkError", "Program", "ProgramError",
           "Region", "auto_layout", "default_align", "functional_counters", "relocate",
           "write_launch"]
