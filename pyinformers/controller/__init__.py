"""pyinformers.controller (being built)."""
