#!/usr/bin/env python
"""Child CPU of `test_meta_device`'s forwards on the reference, in children forked from a
process that ran the zygote's prewarm: what the zygote's `_prewarm` saves each student.

    python benchmarks/prewarm_probe.py /tmp/before 15   # a copy of the tree before a change
    python benchmarks/prewarm_probe.py . 15             # this tree

Alternate the two a few times: this machine is noisy.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    tree, forks = Path(sys.argv[1]).resolve(), int(sys.argv[2]) if len(sys.argv) > 2 else 15
    sys.path.insert(0, str(tree))
    import torch

    from grader.sandbox.inside import zygote

    spec = importlib.util.spec_from_file_location("reference", REPO / "reference" / "attention.py")
    assert spec and spec.loader
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    zygote._prewarm()
    gc.freeze()

    def meta_test() -> None:  # what test_shape_reading.test_meta_device asks of a module
        module = reference.MultiHeadSelfAttention(32, 4).to("meta")
        x = torch.empty(2, 5, 32, device="meta")
        mask = torch.empty(2, 5, dtype=torch.bool, device="meta")
        for kwargs in ({}, {"attention_mask": mask}, {"causal": True}, {"attention_mask": mask, "causal": True}):
            module(x, **kwargs)

    cpu = []
    for _ in range(forks):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            start = time.process_time()
            meta_test()
            os.write(write, str(time.process_time() - start).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        cpu.append(float(os.read(read, 64)))
        os.close(read)
        os.close(write)
    print(f"{tree}: child CPU of the meta test, median {1000 * statistics.median(cpu):.1f} ms, "
          f"min {1000 * min(cpu):.1f} ms ({forks} forks)")


if __name__ == "__main__":
    main()
