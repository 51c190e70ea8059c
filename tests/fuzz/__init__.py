"""Issue 15's fuzzing suite: every command on mutated and random inputs (table.py, inputs.py,
harness.py), the simulators on pathological and mutated programs, and the command as a process
(devices, FIFOs, signals, memory limit). ``python -m tests.fuzz.campaign`` runs a long campaign."""
