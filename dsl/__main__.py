"""``python -m privspec``."""
from privspec.cli import main

raise SystemExit(main())
