"""Arithmetic found in a message, evaluated safely (no eval) with its steps for the reasoning."""

import ast
import operator
import re

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_EXPR = re.compile(r"[-+(]*\s*\d[\d.,]*(?:\s*(?:\*\*|[-+*/%^×÷x])\s*[-+(]*\s*\d[\d.]*\s*\)*)+")


class ArithmeticError_(ValueError):
    pass


def evaluate(expression: str, steps: list[str] | None = None) -> float | int:
    """Evaluate + - * / // % ** on numbers only, without eval(); record each operation in `steps`."""
    tree = ast.parse(expression, mode="eval")

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 10**6):
                raise ArithmeticError_("exponent too large")
            try:
                value = _OPS[type(node.op)](left, right)
            except ZeroDivisionError as exc:
                raise ArithmeticError_("division by zero") from exc
            if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
                value = int(value)
            if steps is not None:
                symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "×", ast.Div: "÷", ast.FloorDiv: "//"}.get(
                    type(node.op), {ast.Mod: "mod", ast.Pow: "^"}.get(type(node.op), "?")
                )
                steps.append(f"{fmt(left)} {symbol} {fmt(right)} = {fmt(value)}")
            return value
        raise ArithmeticError_("unsupported expression")

    return walk(tree)


def fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e15 else f"{value:.6e}"
    return str(value)


def find_expression(text: str) -> str | None:
    low = text.lower()
    for word, symbol in (
        ("multiplied by", "*"),
        ("divided by", "/"),
        ("times", "*"),
        ("plus", "+"),
        ("minus", "-"),
        ("to the power of", "**"),
    ):
        low = low.replace(word, symbol)
    for match in _EXPR.finditer(low):
        expr = match.group(0).strip().replace("×", "*").replace("÷", "/").replace("^", "**").replace(",", "")
        expr = re.sub(r"(?<=\d)\s*x\s*(?=[\d(])", "*", expr)
        if re.search(r"\d\s*(\*\*|[-+*/%])\s*[-+(]*\d", expr):
            return expr.strip()
    return None
