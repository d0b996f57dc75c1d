"""``python -m privspec``."""
from .cli import main

raise SystemExit(main())
