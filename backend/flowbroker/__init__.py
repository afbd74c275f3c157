"""flowbroker: a message broker and integration engine in the line of MQSeries Integrator."""

__version__ = "0.1.0"
