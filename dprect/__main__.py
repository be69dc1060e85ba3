"""``python -m dprect`` — the same as the ``dprect`` console script."""

import sys

from dprect.cli import main

sys.exit(main())
