"""``python -m driver run IMAGE.npz ...``"""

import sys

from .cli import main

sys.exit(main())
