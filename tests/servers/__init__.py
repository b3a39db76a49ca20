"""Real servers for the reach tests, started on 127.0.0.1 by fixtures: an S3 and Glue endpoint
(moto in server mode), a Hive Metastore, an Iceberg REST catalog and a standalone Spark cluster.
Each module holds one server as a context manager; ``tests/servers/conftest.py``-style fixtures
live next to the tests that use them."""
