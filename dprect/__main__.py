"""``python -m dprect`` — the same as the ``dprect`` console script."""

from dprect.cli import run

run()
