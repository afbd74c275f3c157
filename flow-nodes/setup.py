"""The compiled part of the node types (the rest of the package is in pyproject.toml).

Optional: where no C compiler is present the build goes on without it, and the MQTT nodes read
with their pure-Python loop (``FLOWBROKER_PURE_PYTHON=1`` forces that).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "flowbroker_nodes._mqtt_native",
            ["flowbroker_nodes/_mqtt_native.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ]
)
