"""PyInstaller's entry point for the one-file executable: the `tornchat` command."""

import sys

from tornchat.cli import main

if __name__ == "__main__":
    sys.exit(main())
