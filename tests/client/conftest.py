"""The client tests reuse the integration tier's real API server on a fresh database."""

from __future__ import annotations

from tests.integration.conftest import Api, api, make_api

__all__ = ["Api", "api", "make_api"]
