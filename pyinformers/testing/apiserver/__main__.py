"""``python -m pyinformers.testing.apiserver``: run the in-process API server (see ``--help``)."""

import sys

from pyinformers.testing.apiserver._cli import main

if __name__ == "__main__":
    sys.exit(main())
