"""Board-level gateware: the VTA core on an FPGA board.

* :mod:`.uart` — 8N1 serial receiver and transmitter;
* :mod:`.bridge` — the host link: LiteX's UART bridge protocol (:mod:`isa.hostlink`) as a master
  on a 32-bit word bus;
* :mod:`.onchip` — on-chip memory as the core's DRAM (the bring-up variant), behind an adapter
  to the core's memory port;
* :mod:`.soc` — core + registers + memory + host link, independent of any board;
* :mod:`.ulx3s` — the ULX3S top (PLL, pins) built by :mod:`bitstreams`.
"""
