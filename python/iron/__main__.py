"""`python -m iron ARGS...` runs the `iron` CLI (iron.cli_path()) with ARGS, as the package's
own copy of the executable: `python -m iron test --backend interp -f iron_add`."""

import os
import sys

from ._cli import cli_path


def main():
    cli = str(cli_path())
    os.environ.setdefault("IRON_NO_REBUILD", "1")
    os.execv(cli, [cli] + sys.argv[1:])


if __name__ == "__main__":
    main()
