"""ESQL for flowbroker: the grammar, compiler, message tree and built-in functions."""
