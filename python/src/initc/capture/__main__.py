"""python -m initc.capture: the capture's command line."""

import sys

from .cli import main

sys.exit(main())
