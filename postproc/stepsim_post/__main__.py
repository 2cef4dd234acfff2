"""`python3 -m stepsim_post ...`, or `python3 PATH/stepsim_post/__main__.py ...` (what the
stepsim-post wrapper runs: the package's parent directory goes on sys.path)."""

import os
import sys

if not __package__:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if sys.path[1:2] == [os.path.dirname(os.path.abspath(__file__))]:
        del sys.path[1]  # the script's own directory: its modules are not top-level ones

from stepsim_post.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
