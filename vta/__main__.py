import sys

from .interrupts import install

install()       # before the layers load: a Ctrl-C while they do is not lost (vta.interrupts)

from .cli import main  # noqa: E402

sys.exit(main())
