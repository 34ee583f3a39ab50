"""pyinformers.api (being built)."""
