"""The Iceberg format plugin (``plugin.IcebergFormat``, entry point ``tms.formats``) and what
it reads a table's metadata, decides and plans with."""
