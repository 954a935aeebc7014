"""``python -m hpcjobs.sim`` / ``hpcjobs-sim``: run the Batsim-compatible simulator."""

from __future__ import annotations

import sys

from .cli import run


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point."""
    return run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
