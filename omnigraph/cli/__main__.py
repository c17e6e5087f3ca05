import sys

from omnigraph.cli import main

sys.exit(main())
