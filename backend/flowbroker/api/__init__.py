"""The configuration manager's REST API: an app factory and thin routes over flowbroker.services."""
