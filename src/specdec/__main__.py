"""`python -m specdec …`: the CLI where the `specdec` script is not installed (a checkout on PYTHONPATH)."""

import sys

from specdec.cli.main import main

sys.exit(main())
