"""pyinformers.cache (being built)."""
