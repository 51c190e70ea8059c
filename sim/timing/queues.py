"""Command queues and token queues (``hw/queues.py``)."""

from __future__ import annotations

from collections import deque

from isa.arch import HEAD_SETTLE
from isa.arch import TOKEN_QUEUES  # (name, producer, consumer), in the hardware's order
from isa.config import VTAConfig

__all__ = ["CommandQueue", "TokenQueues", "TOKEN_QUEUES"]



class CommandQueue:
    """``hw.queues.CommandQueue`` (its own FIFO, cycle for cycle Amaranth's
    ``SyncFIFOBuffered``): capacity ``cmd_queue_depth``; an entry written in *t* into an empty
    queue is at the head from *t* + 2; a read in *t* brings the next entry there in *t* + 1;
    the module sees it (:attr:`ready`) after ``HEAD_SETTLE`` cycles at the head (head register
    and range-check stages); ``level`` counts every entry written and not yet read.
    Internally: a FIFO of depth − 1 and an output register.
    """

    __slots__ = ("inner_depth", "inner", "head", "head_valid", "age")

    def __init__(self, cfg: VTAConfig):
        self.inner_depth = cfg.cmd_queue_depth - 1
        self.inner = deque()
        self.head = None          # the output register: (index, decoded instruction)
        self.head_valid = False
        self.age = 0              # cycles the head has stayed unread (saturates at HEAD_SETTLE)

    @property
    def ready(self) -> bool:
        """The module sees the head (``hw.queues.CommandQueue.r_rdy``)."""
        return self.head_valid and self.age == HEAD_SETTLE

    @property
    def w_rdy(self) -> bool:
        return len(self.inner) != self.inner_depth

    @property
    def level(self) -> int:
        return len(self.inner) + self.head_valid

    def update(self, w_en: bool, entry, r_en: bool) -> None:
        inner = self.inner
        write = w_en and len(inner) != self.inner_depth
        if inner and (not self.head_valid or r_en):
            self.head = inner.popleft()
            self.head_valid = True
            self.age = 0
        elif r_en:
            self.head_valid = False
            self.age = 0
        elif self.head_valid and self.age != HEAD_SETTLE:
            self.age += 1
        if write:
            inner.append(entry)


class TokenQueues:
    """``hw.queues.TokenQueues``: four counters 0 … ``token_queue_depth``; a push and a pop in
    the same cycle cancel; ``overflow`` (combinational) when a push would pass the depth."""

    __slots__ = ("depth", "count")

    def __init__(self, cfg: VTAConfig):
        self.depth = cfg.token_queue_depth
        self.count = [0, 0, 0, 0]

    def overflow(self, i: int, push: bool, pop: bool) -> bool:
        return push and not pop and self.count[i] == self.depth

    def update(self, push, pop) -> None:
        c = self.count
        for i in range(4):
            if push[i] and not pop[i]:
                if c[i] != self.depth:
                    c[i] += 1
            elif pop[i] and not push[i]:
                c[i] -= 1
