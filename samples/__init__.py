"""Sample controllers built on pyinformers."""
