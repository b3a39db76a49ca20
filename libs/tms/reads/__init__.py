"""How tables are read and written, as the engines themselves report it.

Engines that load tables through an Iceberg catalog with TMS's reporter
(``tms-reporter.jar``, ``metrics-reporter-impl``) send every scan and commit report to the
API's report intake: :mod:`tms.reads.reports` parses them strictly, commit reports become
commit notifications (the one intake path), and scan reports are folded into each table's
decayed read statistics (:mod:`tms.reads.profile`), which ExplainTable shows.
"""
