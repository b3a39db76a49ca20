"""Load, invariants and reports shared by the soak benchmark (bench/soak.py) and the fault
suite (tests/faults): writers with a ledger of acknowledged commits, the checks that nothing
acknowledged was lost and no operation ran twice, and the JSON / Markdown report. They live in
bench because tests may import bench, never the reverse."""
