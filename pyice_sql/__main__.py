import sys

from pyice_sql.cli import main

sys.exit(main())
