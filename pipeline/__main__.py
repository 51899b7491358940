"""``python -m perflake``: the ``perflake`` command (:func:`perflake.cli.app.main`), for when the console script
is not on PATH (a venv not activated, ``pip install --user``).  Importing this module runs nothing."""

import sys

from perflake.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
