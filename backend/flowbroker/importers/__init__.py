"""Importers that turn other products' projects into flowbroker flows, queues and message sets."""
