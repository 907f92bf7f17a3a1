"""``python -m worker.devtools.protocol_docs [--out docs] [--check]``."""

import sys

from worker.devtools.protocol_docs.files import main

sys.exit(main())
