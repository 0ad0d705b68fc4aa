"""``python -m taskgym`` runs the command line."""

import sys

from taskgym.cli import main

sys.exit(main())
