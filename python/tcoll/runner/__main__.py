"""``python3 -m tcoll.runner ...``: the same as ``tcollrun ...``."""

import sys

from .cli import main

sys.exit(main())
