"""tms-console: the web console over the gRPC API (pages, actions, sign-in)."""
