import sys

from mor.cli import main

sys.exit(main())
