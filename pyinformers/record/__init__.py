"""pyinformers.record (being built)."""
