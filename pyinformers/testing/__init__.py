"""pyinformers.testing (being built)."""
