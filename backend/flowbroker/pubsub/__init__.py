"""flowbroker.pubsub."""
