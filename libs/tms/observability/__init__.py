"""What every process reports: logs (``logs``), metrics (``metrics``) and traces
(``tracing``)."""
