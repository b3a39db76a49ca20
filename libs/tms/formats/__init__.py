"""Table-format plugins: what each format can do, how to inspect it cheaply, when to act."""
