"""``python -m dprect`` — the same as the ``dprect`` console script."""

from dprect.app.cli import run

run()
