"""Process entry points: configuration, wiring and the run loop. The logic lives in ``tms``."""
