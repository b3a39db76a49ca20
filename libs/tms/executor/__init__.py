"""The executor: claims queued operations and drives an engine to run them."""
