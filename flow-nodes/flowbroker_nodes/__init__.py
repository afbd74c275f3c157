"""flowbroker's message flow node types: one module per node type, each a spec + runtime class."""
