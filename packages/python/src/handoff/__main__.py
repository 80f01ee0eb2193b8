"""``python3 -m handoff COMMAND``: the client commands of decisions 5.5."""

import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
