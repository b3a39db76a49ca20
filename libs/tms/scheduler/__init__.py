"""The scheduler: decides what each table needs, and when."""
