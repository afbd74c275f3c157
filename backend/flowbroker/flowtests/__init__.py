"""Flow tests: an input message for a flow's input node and the messages expected on its outputs.

A flow's tests travel with it: in the repository they are the flow document's ``tests`` list (so
each version keeps the tests it was saved with), on disk a ``NAME.tests.json`` file beside the
flow document ``NAME.json``. ``flowbroker test`` and the designer's Tests panel run them against
a private engine (queue manager and execution group) and compare the outputs as parsed trees.
"""
