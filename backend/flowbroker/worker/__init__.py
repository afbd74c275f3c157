"""The execution group: one Celery worker process running deployed flows, driven by control tasks."""
