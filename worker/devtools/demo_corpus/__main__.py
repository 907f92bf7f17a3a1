"""``python -m worker.devtools.demo_corpus --out DIR [--sessions N] [--seed S]``."""

import sys

from worker.devtools.demo_corpus import main

sys.exit(main())
