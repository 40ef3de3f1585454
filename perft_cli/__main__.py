"""``python -m perft_cli``: the ``perft`` command."""
import sys

from perft_cli import main

sys.exit(main())
