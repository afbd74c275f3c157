"""The compiled part of the ESQL runtime (the rest of the package is in pyproject.toml).

Optional: where no C compiler is present the build goes on without it, and ``esql.runtime`` keeps
its pure-Python functions (``FLOWBROKER_PURE_PYTHON=1`` forces that).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "esql._tree_native",
            ["esql/_tree_native.c"],
            optional=True,
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ]
)
