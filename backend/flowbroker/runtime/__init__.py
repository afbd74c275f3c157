"""flowbroker.runtime."""
