"""``python -m perflake.cli``: the ``perflake`` command (compatibility: the module is :mod:`perflake.cli.app`)."""

import sys

from perflake.cli.app import main

sys.exit(main())
