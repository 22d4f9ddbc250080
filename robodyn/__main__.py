import sys

from robodyn.cli import main

sys.exit(main())
