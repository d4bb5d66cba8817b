"""python -m p4cc_control ..."""
import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
