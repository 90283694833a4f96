import sys

from flashviz.cli.main import main

sys.exit(main())
