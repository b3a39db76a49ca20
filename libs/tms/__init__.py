"""TMS, the Table Management Service: shared library used by the api, scheduler and executor."""

__version__ = "0.1.0"
