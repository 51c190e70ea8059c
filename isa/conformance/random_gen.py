"""Random valid programs (placeholder, filled in below)."""


def random_program(cfg, seed):
    raise NotImplementedError
