"""``python -m pyinformers.testing``: the in-process API server, as ``python -m pyinformers.testing.apiserver``."""

import sys

from pyinformers.testing.apiserver._cli import main

if __name__ == "__main__":
    sys.exit(main())
