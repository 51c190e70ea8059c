"""Design-space sweeps of VTA: GEMM shapes and buffer sizes, measured, with their Pareto frontier.

``vta sweep --space FILE --out DIR``: a space (:mod:`.space`), workloads compiled for each point
(:mod:`.workloads`) and timed on the cycle-accurate simulator, resources from Yosys and Fmax
from nextpnr (:mod:`.synth`) for what the screening model (:mod:`.model`) cannot rule out,
cached (:mod:`.cache`), run locally or on Dask (:mod:`.runners`), ranked (:mod:`.frontier`)
and reported (:mod:`.report`). docs/designspace.md explains it.
"""
