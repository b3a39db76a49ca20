"""The policy schema (``schema``), the keys every table takes (``common``) and its Spark keys
(``spark``), and docs/policy.md generated from them (``docs``)."""
