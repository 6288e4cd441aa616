"""scripts/reproduce.py's modules (docs/REPRODUCTION.md from rows); see that script."""
