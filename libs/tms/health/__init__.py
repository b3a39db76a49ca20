"""A table's health: one score 0-100 from what an inspection measured (``score``), the
figures it is computed from (``figures``), and where it is kept over time (docs/health.md)."""
