import sys

from sspgm.cli import main

sys.exit(main())
