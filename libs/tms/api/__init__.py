"""The gRPC API: validation, conversion, pagination and the servicer."""
