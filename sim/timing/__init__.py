"""Cycle models of the hardware blocks of ``hw/``, one module each (``sim.cycle`` runs them).

Each block is a Python class with the registers of its RTL twin as attributes, a ``comb``
step that computes the block's outputs for the current cycle from those registers (and the
outputs of the blocks it listens to), and an ``update`` step that applies the clock edge.
The docstrings cite the latency and throughput contract of the hw block they model.
"""
