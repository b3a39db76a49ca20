"""Storage: the one interface TMS keeps its state behind, and its PostgreSQL implementation."""
