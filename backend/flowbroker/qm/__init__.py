"""flowbroker.qm."""
