"""The VTA runtime driver: device memory, command streams, micro-op kernels and backends.

    dev = Device("default", backend="functional")
    buf = dev.array(host_array)
    s = dev.stream(); s.load_2d(...); s.alu(kernel); s.store_2d(...); s.synchronize()
"""

from isa.encoding import AluOp, MemType, Uop

from .backends import (BACKENDS, Backend, BackendUnavailable, DeviceError, DeviceTimeout,
                       RunResult, get_backend)
from .device import Device
from .kernel import KernelError, Loop, UopKernel, alu_kernel, gemm_kernel
from .memory import Buffer, DeviceMemory, DeviceMemoryError, OutOfDeviceMemory
from .stream import CommandStream, StreamError

__all__ = ["AluOp", "MemType", "Uop", "BACKENDS", "Backend", "BackendUnavailable",
           "DeviceError", "DeviceTimeout", "RunResult", "get_backend", "Device", "KernelError",
           "Loop", "UopKernel", "alu_kernel", "gemm_kernel", "Buffer", "DeviceMemory",
           "DeviceMemoryError", "OutOfDeviceMemory", "CommandStream", "StreamError"]
