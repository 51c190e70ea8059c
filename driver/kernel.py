"""Micro-op kernels, as the driver exports them: the program layer's classes
(:mod:`isa.program.kernel`), one implementation for the driver, the compiler and the
conformance builder."""

from isa.program.kernel import (MAX_LOOPS, KernelError, KernelRegistry, Loop, UopKernel,
                                UopResidency, alu_kernel, gemm_kernel)

__all__ = ["Loop", "UopKernel", "KernelError", "gemm_kernel", "alu_kernel", "KernelRegistry",
           "UopResidency", "MAX_LOOPS"]
