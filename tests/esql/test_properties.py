"""Property tests: compiled ESQL expressions agree with a direct reference implementation."""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from esql.compiler import compile_program
from esql.runtime import ExecutionContext
from esql.tree import Element

ARITH = compile_program(
    """
SET OutputRoot.XMLNSC.R.Sum = Environment.A + Environment.B;
SET OutputRoot.XMLNSC.R.Diff = Environment.A - Environment.B;
SET OutputRoot.XMLNSC.R.Prod = Environment.A * Environment.B;
SET OutputRoot.XMLNSC.R.Lt = Environment.A < Environment.B;
SET OutputRoot.XMLNSC.R.Eq = Environment.A = Environment.B;
""",
    "arith.esql",
)

STRINGS = compile_program(
    """
SET OutputRoot.XMLNSC.R.Cat = Environment.S || Environment.T;
SET OutputRoot.XMLNSC.R.Sub = SUBSTRING(Environment.S FROM Environment.F FOR Environment.N);
SET OutputRoot.XMLNSC.R.Up = UPPER(Environment.S);
SET OutputRoot.XMLNSC.R.Len = LENGTH(Environment.S || Environment.T);
SET OutputRoot.XMLNSC.R.Pos = POSITION(Environment.T IN Environment.S);
SET OutputRoot.XMLNSC.R.Like = Environment.S LIKE Environment.T || '%';
""",
    "strings.esql",
)


def run(program: Any, **values: Any) -> dict[str, Any]:
    env = Element("Environment")
    for name, value in values.items():
        env.add(name, value)
    ctx = ExecutionContext(environment=env)
    assert program.main_module().run(ctx) is True
    out = ctx.output_root.child("XMLNSC")
    r = out.child("R") if out is not None else None
    return {c.name: c.value for c in r.children()} if r is not None else {}


decimals = st.decimals(min_value=-(10**12), max_value=10**12, places=4, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(a=decimals, b=decimals)
def test_decimal_arithmetic_matches_python_decimal(a: Decimal, b: Decimal) -> None:
    r = run(ARITH, A=a, B=b)
    with localcontext() as exact:
        exact.prec = 100  # ESQL DECIMAL is arbitrary precision; the default 28 digits would round
        assert r["Sum"] == a + b
        assert r["Diff"] == a - b
        assert r["Prod"] == a * b
    assert r["Lt"] is (a < b)
    assert r["Eq"] is (a == b)


@settings(max_examples=150, deadline=None)
@given(a=st.integers(-(2**31), 2**31), b=st.integers(-(2**31), 2**31))
def test_integer_arithmetic_is_exact(a: int, b: int) -> None:
    r = run(ARITH, A=a, B=b)
    assert (r["Sum"], r["Diff"], r["Prod"]) == (a + b, a - b, a * b)
    assert all(type(r[k]) is int for k in ("Sum", "Diff", "Prod"))


text = st.text(alphabet="abcXYZ%_ 1", max_size=12)


@settings(max_examples=150, deadline=None)
@given(s=text, t=text, f=st.integers(1, 14), n=st.integers(0, 14))
def test_string_functions_match_reference(s: str, t: str, f: int, n: int) -> None:
    r = run(STRINGS, S=s, T=t, F=f, N=n)
    assert r["Cat"] == s + t
    assert r["Sub"] == s[f - 1 : f - 1 + n]
    assert r["Up"] == s.upper()
    assert r["Len"] == len(s + t)
    assert r["Pos"] == (s.find(t) + 1 if t else 1)
    if "%" not in t and "_" not in t:
        assert r["Like"] is s.startswith(t)


# Random expression trees over + - * and ||, printed with IBM precedence (|| tighter than + -).
def _render(node: Any, parent_prec: int) -> str:
    if isinstance(node, int):
        return str(node) if node >= 0 else f"({node})"
    op, left, right = node
    prec = {"*": 3, "+": 1, "-": 1}[op]
    text = f"{_render(left, prec)} {op} {_render(right, prec + 1)}"
    return f"({text})" if prec < parent_prec else text


def _value(node: Any) -> int:
    if isinstance(node, int):
        return node
    op, left, right = node
    a, b = _value(left), _value(right)
    return a + b if op == "+" else a - b if op == "-" else a * b


exprs = st.recursive(
    st.integers(-50, 50),
    lambda inner: st.tuples(st.sampled_from(["+", "-", "*"]), inner, inner),
    max_leaves=8,
)


@settings(max_examples=100, deadline=None)
@given(tree=exprs)
def test_precedence_and_associativity(tree: Any) -> None:
    source = f"SET OutputRoot.XMLNSC.R.V = {_render(tree, 0)};\n"
    program = compile_program(source, "prec.esql")
    ctx = ExecutionContext()
    program.main_module().run(ctx)
    assert ctx.output_root.child("XMLNSC").child("R").child("V").value == _value(tree)


@settings(max_examples=100, deadline=None)
@given(a=st.sampled_from([True, False, None]), b=st.sampled_from([True, False, None]))
def test_three_valued_logic(a: Any, b: Any) -> None:
    def lit(v: Any) -> str:
        return {True: "TRUE", False: "FALSE", None: "UNKNOWN"}[v]

    source = (
        f"SET OutputRoot.XMLNSC.R.And = ({lit(a)} AND {lit(b)}) IS TRUE;\n"
        f"SET OutputRoot.XMLNSC.R.Or = ({lit(a)} OR {lit(b)}) IS TRUE;\n"
        f"SET OutputRoot.XMLNSC.R.AndU = ({lit(a)} AND {lit(b)}) IS UNKNOWN;\n"
        f"SET OutputRoot.XMLNSC.R.OrU = ({lit(a)} OR {lit(b)}) IS UNKNOWN;\n"
    )
    ctx = ExecutionContext()
    compile_program(source, "logic.esql").main_module().run(ctx)
    r = {c.name: c.value for c in ctx.output_root.child("XMLNSC").child("R").children()}
    and_ = False if (a is False or b is False) else None if (a is None or b is None) else True
    or_ = True if (a is True or b is True) else None if (a is None or b is None) else False
    assert r == {"And": and_ is True, "Or": or_ is True, "AndU": and_ is None, "OrU": or_ is None}
