"""`python -m fairway_cli`."""

import sys

from fairway_cli.main import main

sys.exit(main())
