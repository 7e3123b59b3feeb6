"""``python -m gpuplan ...`` (also ``torchrun -m gpuplan profile ...``): the CLI."""

import sys

from gpuplan.cli import main

sys.exit(main())
