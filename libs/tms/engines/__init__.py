"""Execution engines: run a job, report its handle, stop it on request."""
