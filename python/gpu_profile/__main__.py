"""`python -m gpu_profile`: the original package's command entry (cli.py)."""

from .cli import main

raise SystemExit(main())
