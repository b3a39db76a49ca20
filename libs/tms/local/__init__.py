"""Local, loopback-only PostgreSQL and ZooKeeper servers for the demo and the test suite.

They run the real Debian binaries in a directory the caller owns, so tests exercise the same
servers production uses, without any system service being touched.
"""
