import sys

from vitbook.engine.cli import main

sys.exit(main())
