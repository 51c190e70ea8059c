"""``python -m relay``: the ``vta relay`` commands without the ``vta`` wrapper."""
import sys

from .cli import main

sys.exit(main())
