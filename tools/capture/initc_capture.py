#!/usr/bin/python3
"""`initc-capture` run from a checkout, without installing the package (as with Debian's torch):
puts python/src on the path and runs initc.capture's command line (ir-spec/capture.md)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))

from initc.capture.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
