"""What the API, the CLI and the workers call: flows, topology, message sets, archives, users, audit."""
