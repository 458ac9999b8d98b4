"""Mutation score of the practice checks: how many small changes to the worked solutions
each exercise's self-check notices.

A mutant is the solution's section (``exercises/chNN.py:exK-solution``) with one small
change to its syntax tree: an arithmetic or comparison operator swapped, a number moved
by one (or doubled), a sign dropped, True and False exchanged, ``and`` for ``or``, a
NumPy reduction for its twin (max/min, sum/mean, argmax/argmin), a keyword argument
dropped (axis=, keepdims=, ...), the two arms of ``np.where`` exchanged, or one
statement of a function deleted (one that is not alone in its block). A mutant is killed
when the check says ✗ (or the mutant does not run); a surviving mutant is a wrong
answer the check accepts, unless it is equivalent to the solution (listed in
EQUIVALENT with why).

Run: ``python -m tools.mutants [ch01 ch05 ...]`` prints, per chapter, mutants killed of
mutants made and the score, then every survivor; ``--quiet`` only the scores.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import importlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SWAPS = {  # operator -> what a mutant puts in its place
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div, ast.Pow: ast.Mult, ast.Mod: ast.FloorDiv,
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.And: ast.Or, ast.Or: ast.And,
    ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.USub: ast.UAdd,
}
TWINS = {"max": "min", "min": "max", "sum": "mean", "mean": "sum", "argmax": "argmin",
         "argmin": "argmax", "maximum": "minimum", "minimum": "maximum",
         "cumsum": "cumprod", "exp": "expm1", "log": "log1p"}

# (chapter, section, mutant's description) -> why the mutant is equivalent to the
# solution, so no check can kill it.
EQUIVALENT: dict[tuple[str, str, str], str] = {
    ("ch01", "ex2", "line 4: 0.0 -> 1.0"): "a row of -inf is shifted by any finite number",
    ("ch01", "ex3", "line 4: 0.0 -> 1.0"): "a row of -inf is shifted by any finite number",
    ("ch01", "ex6", "line 5: 1.0 -> 2.0"): "log of the stand-in for p = 0 is multiplied "
                                           "by p = 0 and masked",
    ("ch02", "ex1", "line 10: 0.0 -> 1.0"): "a row of -inf is shifted by any finite number",
    ("ch02", "ex1", "line 14: 1.0 -> 2.0"): "the stand-in divides a sum of 0",
    ("ch02", "ex1", "line 14: 0 -> 1"): "a sum with an allowed key is >= 1; at exactly 1 "
                                        "it divides by 1 either way",
    ("ch02", "ex6", "line 4: FloorDiv -> Div"): "np.repeat takes the whole float",
    ("ch02", "ex6", "line 9: USub -> UAdd"): "axis 2 is axis -2 of the (B, h, n, d) "
                                             "arrays the exercise states",
    ("ch02", "ex8", "line 8: 0.0 -> 1.0"): "a row of -inf is shifted by any finite number",
    ("ch02", "ex8", "line 11: 1.0 -> 2.0"): "the stand-in divides a sum of 0",
    ("ch02", "ex8", "line 11: 0 -> 1"): "a sum with an allowed key is >= 1; at exactly 1 "
                                        "it divides by 1 either way",
    ("ch03", "ex8", "line 4: FloorDiv -> Div"): "np.arange of a whole float gives the "
                                                "same numbers",
    ("ch05", "ex1", "line 4: 0.0 -> 1.0"): "the first block scales l by exp(-inf) = 0",
    ("ch06", "ex3", "line 1: 1e-06 -> 2e-06"): "a default step of 2e-6 is as accurate",
    ("ch06", "ex4", "line 9: USub -> UAdd"): "axis 1 is axis -1 of the (n, n) arrays",
    ("ch06", "ex5", "line 7: 1 -> 2"): "NumPy's reshape takes any negative size as "
                                       "'the rest'",
    ("ch06", "ex5", "line 9: 1 -> 2"): "NumPy's reshape takes any negative size as "
                                       "'the rest'",
    ("ch06", "ex6", "line 7: 0 -> 1"): "any index serves for an ignored row",
    ("ch08", "ex1", "line 20: 0.001 -> 0.002"): "a step of either width between whole "
                                                "pair indices",
    ("ch08", "ex1", "line 21: FloorDiv -> Div"): "np.arange of a whole float gives the "
                                                 "same numbers",
    ("ch09", "ex5", "line 5: USub -> UAdd"): "axis 1 is axis -1 of (tokens, n_experts)",
    ("ch09", "ex5", "line 7: USub -> UAdd"): "axis 1 is axis -1 of (tokens, n_experts)",
    ("ch02", "ex3", "line 6: USub -> UAdd"): "axis 2 is axis -2 of the (batch, heads, "
                                             "n, d) arrays the exercise states",
    ("ch04", "ex10", "line 7: USub -> UAdd"): "axis 2 is axis -2 of the (batch, heads, "
                                              "n, d) arrays the exercise states",
    ("ch04", "ex10", "line 8: USub -> UAdd"): "axis 2 is axis -2 of the (batch, heads, "
                                              "n, d) arrays the exercise states",
    ("ch05", "ex5", "line 10: 0.0 -> 1.0"): "a row of -inf is shifted by any finite "
                                              "number",
    ("ch05", "ex5", "line 13: 1.0 -> 2.0"): "the stand-in divides a sum of 0",
    ("ch05", "ex5", "line 13: 0 -> 1"): "a sum with an allowed key is >= 1; at exactly 1 "
                                        "it divides by 1 either way",
    ("ch05", "ex5", "line 14: drops divide="): "only silences a warning of log(0)",
    ("ch09", "ex5", "line 8: USub -> UAdd"): "axis 1 is axis -1 of the (tokens, "
                                             "n_experts) probabilities",
    ("ch09", "ex5", "line 10: USub -> UAdd"): "axis 1 is axis -1 of the (tokens, "
                                              "n_experts) probabilities",
    ("ch09", "ex1", "line 10: 1 -> 2"): "NumPy's reshape takes any negative size as "
                                        "'the rest'",
    ("ch07", "ex5", "line 9: 0 -> 1"): "the stand-in class of an ignored target is "
                                       "read and then dropped; any class < V will do",
    ("ch08", "ex4", "line 15: USub -> UAdd"): "axis 1 is axis -1 of the (h, n) scores",
    ("ch08", "ex4", "line 17: USub -> UAdd"): "axis 1 is axis -1 of the (h, n) weights",
    ("ch11", "ex1", "line 12: USub -> UAdd"): "axis 1 is axis -1 of (k, vocab)",
    ("ch11", "ex1", "line 14: Gt -> GtE"): "the stand-in is only used where total > 0",
    ("ch11", "ex1", "line 14: 1.0 -> 2.0"): "the stand-in is only used where total > 0",
    ("ch11", "ex2", "line 12: 1 -> 2"): "NumPy's reshape takes any negative size as "
                                        "'the rest'",
    ("ch01", "ex2", "line 4: deleted"): "only rows of all -inf differ, where the package's "
                                        "log-softmax is nan too (outside the contract)",
    ("ch01", "ex3", "line 6: drops divide="): "only a warning the check silences",
    ("ch04", "ex5", "line 4: deleted"): "a slice of the last k entries stops at the first "
                                        "entry anyway",
    ("ch04", "ex9", "line 10: drops kind="): "the check's totals have no ties: any sort "
                                             "ranks them alike",
    ("ch10", "ex1", "line 8: drops dtype="): "a float64 state is only more precise; the "
                                             "output keeps the inputs' dtype",
    ("ch04", "ex9", "line 9: 1 -> 2"): "NumPy's reshape takes any negative size as "
                                       "'the rest'",
    ("ch09", "ex6", "line 12: 1 -> 2"): "NumPy's reshape takes any negative size as "
                                        "'the rest'",
    ("ch09", "ex6", "line 14: drops minlength="): "starts is only indexed by experts "
                                                  "that were chosen",
    ("ch13", "ex4", "line 20: Lt -> LtE"): "at distance n / 2 the logarithmic bucket is "
                                         "n / 2 too (log 1 = 0)",
    ("ch13", "ex5", "line 12: 1 -> 2"): "NumPy's reshape takes any negative size as "
                                        "'the rest'",
    ("ch13", "ex5", "line 18: USub -> UAdd"): "axis 2 is axis -2 of the (B, h, n, d) "
                                              "keys",
    ("ch10", "ex4", "line 12: 2 -> 3"): "gap is (..., n, n, d_k): axes -2 and -3 are both n",
    ("ch10", "ex4", "line 13: drops dtype="): "np.where reads a mask of float ones and "
                                              "zeros as True and False",
    ("ch14", "ex1", "line 5: 1 -> 2"): "weights are (..., n, n): axes -1 and -2 are both n",
    ("ch14", "ex2", "line 4: 1 -> 2"): "weights are (..., n, n): axes -1 and -2 are both n",
}


@dataclass
class Mutant:
    chapter: str
    section: str
    where: str  # "line 4: Add -> Sub"
    killed: bool


# Functions whose axis defaults to -1: dropping axis=-1 from a call of one changes
# nothing (NumPy's sort, argsort, take_along_axis; the package's softmaxes).
LAST_AXIS_BY_DEFAULT = {"softmax", "log_softmax", "logsumexp", "sort", "argsort",
                        "take_along_axis"}


def _default(call, keyword) -> bool:
    """Whether a keyword argument repeats the callee's own default (axis=-1 of the
    functions above): dropping it would be an equivalent mutant."""
    name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
    value = keyword.value
    return (keyword.arg == "axis" and name in LAST_AXIS_BY_DEFAULT
            and isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub)
            and isinstance(value.operand, ast.Constant) and value.operand.value == 1)


def _sites(tree):
    """Every place a mutant can change, in a fixed order: (node, what it becomes). Only
    inside functions: a section's own example call (a print) is not the answer."""
    found = []
    inside = [n for f in tree.body if isinstance(f, ast.FunctionDef) for n in ast.walk(f)]
    for node in inside:
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant):
            continue  # a docstring
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.AugAssign)):
            op = node.op
            if type(op) in SWAPS:
                found.append((node, "op", SWAPS[type(op)]))
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in SWAPS:
                    found.append((node, ("cmp", i), SWAPS[type(op)]))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float) \
                and not isinstance(node.value, bool):
            found.append((node, "num", None))
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            found.append((node, "bool", None))
        elif isinstance(node, ast.Attribute) and node.attr in TWINS:
            found.append((node, "attr", TWINS[node.attr]))
        if isinstance(node, ast.Call):
            for i, keyword in enumerate(node.keywords):
                if keyword.arg is not None and not _default(node, keyword):
                    found.append((node, ("kw", i), keyword.arg))
            if (isinstance(node.func, ast.Attribute) and node.func.attr == "where"
                    and len(node.args) == 3):
                found.append((node, "where", None))
        body = getattr(node, "body", None)
        if isinstance(body, list) and len(body) > 1:
            for i, statement in enumerate(body):
                if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)) or (
                        isinstance(statement, ast.Expr)
                        and not isinstance(statement.value, ast.Constant)):
                    found.append((node, ("del", i), None))
    return found


def _apply(node, how, new):
    """Change one site in place; return a description of the change."""
    line = getattr(node, "lineno", 0)
    if how == "op":
        old = type(node.op).__name__
        node.op = new()
        return f"line {line}: {old} -> {new.__name__}"
    if isinstance(how, tuple) and how[0] == "kw":
        del node.keywords[how[1]]
        return f"line {line}: drops {new}="
    if isinstance(how, tuple) and how[0] == "del":
        gone = node.body.pop(how[1])
        return f"line {gone.lineno}: deleted"
    if isinstance(how, tuple):  # ("cmp", i)
        old = type(node.ops[how[1]]).__name__
        node.ops[how[1]] = new()
        return f"line {line}: {old} -> {new.__name__}"
    if how == "where":
        node.args[1], node.args[2] = node.args[2], node.args[1]
        return f"line {line}: np.where's arms exchanged"
    if how == "num":
        old = node.value
        node.value = old + 1 if isinstance(old, int) else (old * 2 if old else 1.0)
        return f"line {line}: {old!r} -> {node.value!r}"
    if how == "bool":
        node.value = not node.value
        return f"line {line}: {not node.value} -> {node.value}"
    old = node.attr
    node.attr = new
    return f"line {line}: .{old} -> .{new}"


def mutants(source: str):
    """(description, mutated source) for every single-site mutant of ``source``."""
    tree = ast.parse(source)
    for index in range(len(_sites(tree))):
        changed = copy.deepcopy(tree)
        node, how, new = _sites(changed)[index]
        where = _apply(node, how, new)
        yield where, ast.unparse(ast.fix_missing_locations(changed))


def _killed(check, imports: str, source: str, function: str) -> bool:
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):  # a section's own prints
        try:
            exec(imports, namespace)
            exec(source, namespace)
            answer = namespace[function]
        except Exception:  # a mutant that does not even define the function
            return True
        return not check(answer)


def score(chapters_wanted=()) -> list[Mutant]:
    """Every mutant of every worked solution (of the chapters wanted, or all)."""
    from tests.support import Exercises
    from tools.source.chapters import chapters

    found = []
    for chapter in chapters(ROOT):
        for exercise in chapter.exercises():
            if chapters_wanted and exercise.chapter not in chapters_wanted:
                continue
            module = importlib.import_module(f"attention.practice.{exercise.chapter}")
            check = getattr(module, exercise.check)
            sections = Exercises(f"{exercise.chapter}.py")
            imports = sections.section("imports")
            solution = sections.section(f"{exercise.section}-solution")
            for where, source in mutants(solution):
                if (exercise.chapter, exercise.section, where) in EQUIVALENT:
                    continue
                found.append(Mutant(exercise.chapter, exercise.section, where,
                                    _killed(check, imports, source, exercise.function)))
    return found


def report(found: list[Mutant], quiet=False) -> str:
    lines = []
    for chapter in sorted({m.chapter for m in found}):
        mine = [m for m in found if m.chapter == chapter]
        killed = sum(m.killed for m in mine)
        lines.append(f"{chapter}: {killed} of {len(mine)} mutants killed "
                     f"({100 * killed / len(mine):.1f}%)")
    killed = sum(m.killed for m in found)
    lines.append(f"all: {killed} of {len(found)} ({100 * killed / max(len(found), 1):.1f}%); "
                 f"{len(EQUIVALENT)} equivalent mutants listed, not counted")
    if not quiet:
        lines += [f"survives: {m.chapter} {m.section} {m.where}" for m in found
                  if not m.killed]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="ch01 ch05 ... (default: all)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    print(report(score(tuple(args.chapters)), args.quiet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
