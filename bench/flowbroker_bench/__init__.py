"""The performance harness: named scenarios that measure and print figures.

Every module in this package that defines ``SCENARIOS`` (name → :class:`Scenario`) is found by
:func:`flowbroker_bench.core.scenarios`; ``flowbroker bench NAME`` runs one.
"""
