"""One seed for every random generator a test can touch, in the grader and in the child.

`torch.manual_seed` also queues a seeding of every accelerator backend that is not
started yet, formatting the caller's stack each time; with one seed per test, in two
processes, that was a measurable share of a submission's grading. Here only the
generators that exist are seeded; CUDA's call still waits for CUDA to start, as before.
"""

from __future__ import annotations

import random

import torch


def seed_all(seed: int) -> None:
    random.seed(seed)
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    if torch.backends.mps.is_available():
        torch.mps.manual_seed(seed)
