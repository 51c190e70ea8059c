"""The ``vta`` command: one entry point for every layer of the stack."""
