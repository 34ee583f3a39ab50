"""``python -m pyinformers.testing.envtest``: run a real control plane (see ``--help``)."""

import sys

from pyinformers.testing.envtest._cli import main

if __name__ == "__main__":
    sys.exit(main())
