"""Per-submission limits, as the assignment YAML sets them (no torch import here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limits:
    load_s: float = 30.0
    """Importing the module / running the notebook's cells."""
    per_test_s: float = 10.0
    """Wall time of one test's calls into the student's code."""
    per_submission_s: float = 180.0
    memory_mb: int = 2048
    """Address space above the warm interpreter's."""
    cpu_s: int = 120
    processes: int = 256
    file_size_mb: int = 16
    output_kb: int = 256
    """Captured stdout+stderr kept for the report; the rest is cut."""

    def for_child(self) -> dict[str, Any]:
        return {"memory_mb": self.memory_mb, "cpu_s": self.cpu_s,
                "processes": self.processes, "file_size_mb": self.file_size_mb}
