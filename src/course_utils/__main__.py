"""``python -m course_utils doctor|grade``: the command line lives in ``course_tools.cli``."""

from __future__ import annotations

import sys

from course_tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
