"""pyinformers.workqueue (being built)."""
