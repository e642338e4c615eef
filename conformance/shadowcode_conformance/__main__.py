"""``python -m conformance --target "<command>"``: see :mod:`conformance.cli`."""

from __future__ import annotations

import sys

from conformance.cli import main

if __name__ == "__main__":
    sys.exit(main())
