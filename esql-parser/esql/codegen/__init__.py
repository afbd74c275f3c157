"""Code generation: ESQL syntax trees to straight-line Python source over the runtime helpers.

Every user identifier is mangled (``v_``/``f_`` prefixes plus an escape of odd characters) so it
can never name a Python built-in or a helper; helpers are ``_``-prefixed names that the compiler
puts into the restricted globals of the generated module. Names are resolved here, once: a
variable becomes a Python local, a correlation name a context attribute, a path a chain of
navigation calls. Name and arity problems are reported as diagnostics while generating.

The package is cut along the generator's sections: ``statements``, ``expressions`` and
``fieldrefs`` (field references) hold one class each, which ``generator.Generator`` combines
with the collection of modules and routines; ``model`` holds the name tables and records.
"""

from esql.codegen.generator import Generator, generate_eval
from esql.codegen.model import CORRELATION, Routine, Unit, Var, mangle

__all__ = ["CORRELATION", "Generator", "Routine", "Unit", "Var", "generate_eval", "mangle"]
