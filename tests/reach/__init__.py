"""The reach tier: catalog type x storage x side, each cell an end-to-end run on real servers
(tests/servers) through the real TMS processes."""
