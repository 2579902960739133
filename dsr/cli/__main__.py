"""``python -m dsr.cli``: the same as the ``dsr`` console script."""

import sys

from dsr.cli import main

sys.exit(main())
