"""The compiled parts of flowbroker (the rest of the project is in pyproject.toml).

Each is optional: where no C compiler is present the build goes on without it, and the module
that would use it runs its pure-Python code instead (``FLOWBROKER_PURE_PYTHON=1`` forces that).
"""

from setuptools import Extension, setup

_FLAGS = ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"]

setup(
    ext_modules=[
        Extension(
            f"flowbroker.formats.{name}",
            [f"flowbroker/formats/{name}.c"],
            optional=True,
            extra_compile_args=_FLAGS,
        )
        for name in ("_assembly_native", "_json_native", "_xmlnsc_native", "_xmlwrite_native")
    ]
    + [
        Extension(
            "flowbroker.qm._frames_native",
            ["flowbroker/qm/_frames_native.c"],
            optional=True,
            extra_compile_args=_FLAGS,
        )
    ]
)
