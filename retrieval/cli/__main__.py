"""``python -m retrieval.cli``: the same as the ``dsr`` console script."""

import sys

from retrieval.cli import main

sys.exit(main())
