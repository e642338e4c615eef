"""``python -m shadowcode_conformance --target "<command>"``: see :mod:`shadowcode_conformance.cli`."""

from __future__ import annotations

import sys

from shadowcode_conformance.cli import main

if __name__ == "__main__":
    sys.exit(main())
