"""The ``ExecutorTestParams`` psij-python's tests import: which executor and launcher a
parametrised test runs on (hpcjobs's own stand-in for the module psij-python keeps out
of its sdist; see psij_suite_plugin.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class ExecutorTestParams:
    executor: str
    launcher: str
    url: Optional[str] = None

    @classmethod
    def parse(cls, text: str) -> "ExecutorTestParams":
        """``EXECUTOR:LAUNCHER`` (the launcher defaults to ``single``)."""
        executor, _, launcher = text.partition(":")
        return cls(executor, launcher or "single")

    def __str__(self) -> str:
        return f"{self.executor}:{self.launcher}"
