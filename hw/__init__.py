"""The VTA core in Amaranth HDL: one module per hardware block.

* ``core`` (``VTACore``): fetch, load, compute and store with their command queues, the token
  queues, the shared buffers, the memory arbiter, errors and counters;
* ``fetch``, ``load``, ``compute`` (with ``gemm``, ``alu``, ``uop_loop``), ``store``: the modules;
* ``memport`` (port protocol, arbiter), ``dma`` (burst reader/writer, 2-D tensor loader),
  ``queues``; ``axi`` (AXI4 master), ``csr`` (AXI4-Lite registers), ``shell`` (FPGA top);
* ``verilog``, ``lint``, ``cli`` (``vta verilog``); ``rtlsim`` (run images on Verilator through
  cocotb), ``memmodel`` (the memory model behind the port), ``amsim`` (Amaranth simulator).

docs/hardware.md is the timing contract of every block.
"""
