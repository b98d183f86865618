"""Which engine rules the review runs, and what each finding of them says: area, severity, advice.

ruff runs the quality (pyflakes ``F``, bugbear ``B``, ``E722``, pylint design limits), performance
(``PERF``) and security (``S``, ruff's port of bandit) rules selected here; bandit runs its own
checks. A security check both find is one finding under ruff's ``S`` code (bandit's ``B608`` is
ruff's ``S608``), with bandit's confidence when bandit saw it too.

Design limits count what a caller suffers: more than 7 *positional* parameters (``PLR0917``;
keyword-only options are a deliberate API style, so ``PLR0913`` is not used), more than 100
statements (``PLR0915``), more than 5 nested blocks (``PLR1702``); lower limits flagged mostly
deliberate code in the packages measured in ``docs/review.md``.

Left out on purpose, because on real code they are mostly noise: imports of "risky" modules
(``S4xx``), ``assert`` (``S101``), ``random`` (``S311``), every subprocess call without a shell
(``S603``/``S607``), re-exports flagged as unused imports (``F401`` in ``__init__.py``), and
style-level idioms (``PERF203``, ``PERF401``, ``B008``, ``B028``, ``B904``, ``B905``).

Severity starts at :attr:`Rule.severity` (never above medium) and is raised only by
:mod:`.evidence` (outside input reaches the flagged call).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .findings import Category, Confidence, Severity

H, M, L = Confidence.HIGH, Confidence.MEDIUM, Confidence.LOW


@dataclass(frozen=True)
class Rule:
    """What a rule's findings are: the area, base severity, confidence, one line of advice, and
    for a dangerous call (``sink``) the severity it gets with evidence of outside input."""

    category: Category
    severity: Severity
    confidence: Confidence
    advice: str
    sink: Severity | None = None


def _q(sev: Severity, conf: Confidence, advice: str) -> Rule:
    return Rule("quality", sev, conf, advice)


def _p(advice: str, conf: Confidence = H) -> Rule:
    return Rule("performance", Severity.LOW, conf, advice)


def _s(sev: Severity, conf: Confidence, advice: str, sink: Severity | None = None) -> Rule:
    return Rule("security", sev, conf, advice, sink)


MED, LOW, HIGH, CRIT = Severity.MEDIUM, Severity.LOW, Severity.HIGH, Severity.CRITICAL
RUFF_SELECT = ("F", "E722", "B", "PLR0917", "PLR0915", "PLR1702", "PERF", "S")
RUFF_IGNORE = (
    "F403", "F405", "B008", "B028", "B904", "B905", "B009", "B010", "B027", "PERF203", "PERF401",
    "S101", "S311", "S603", "S607", "S404", "S403", "S112",
)  # fmt: skip
RUFF_CONFIG = (
    "lint.pylint.max-positional-args=7",
    "lint.pylint.max-statements=100",
    "lint.pylint.max-nested-blocks=5",
    'lint.per-file-ignores={"__init__.py" = ["F401"]}',
)
#: bandit tests whose findings ruff's S rules report already (same number) or that are noise.
BANDIT_SKIP = ("B101", "B311", "B403", "B404", "B603", "B607")

RULES: dict[str, Rule] = {
    # quality: ruff (pyflakes, bugbear, pylint design limits)
    "F821": _q(MED, H, "Define or import the name; the line raises NameError when it runs."),
    "F811": _q(MED, H, "Remove or rename one of the two definitions; the first is dead."),
    "F841": _q(LOW, H, "Delete the assignment or use the value."),
    "F401": _q(LOW, H, "Remove the import, or list it in __all__ if it is re-exported."),
    "F601": _q(MED, H, "Remove the repeated key; the later value silently wins."),
    "F632": _q(MED, H, "Compare values with == (is compares identity)."),
    "F541": _q(LOW, H, "Remove the f prefix: the string has no placeholders."),
    "B004": _q(LOW, M, "Use callable(x) to test whether x can be called."),
    "B024": _q(LOW, M, "Mark the abstract methods with @abstractmethod, or drop the ABC base."),
    "B903": _q(LOW, M, "Use a dataclass or NamedTuple for a class that only stores fields."),
    "E722": _q(MED, H, "Catch the exceptions you expect (except OSError:), not everything."),
    "B006": _q(MED, H, "Default to None and create the list/dict inside the function."),
    "B007": _q(LOW, H, "Rename the unused loop variable to _ (or use it)."),
    "B011": _q(MED, H, "Raise AssertionError(...) instead of assert False (asserts can be off)."),
    "B012": _q(MED, H, "Do not return/break in finally: it swallows the exception in flight."),
    "B015": _q(MED, M, "The comparison's result is unused: assert it or remove it."),
    "B017": _q(LOW, H, "Assert a specific exception type, not Exception."),
    "B018": _q(LOW, M, "The expression does nothing: remove it or use its value."),
    "B020": _q(MED, H, "Use another loop variable name; this one shadows the iterable."),
    "B023": _q(MED, L, "Bind the loop variable as a default argument (x=x) of the function."),
    "B026": _q(LOW, M, "Pass keyword arguments after *args."),
    "B019": _q(MED, M, "Use cache on a function, not a method: it keeps self alive forever."),
    "PLR0917": _q(LOW, H, "Make the optional parameters keyword-only (after *), or group them."),
    "PLR0915": _q(LOW, H, "Split the function into smaller ones with one job each."),
    "PLR1702": _q(LOW, H, "Return early or move the inner blocks into a helper function."),
    "S110": _q(MED, H, "Log or handle the exception instead of passing silently."),
    "syntax-error": _q(MED, H, "Fix the syntax error; nothing else in the file can be checked."),
    # performance: ruff PERF and this project's loop rules (see ownrules)
    "PERF101": _p("Iterate over the iterable directly, without list()."),
    "PERF102": _p("Iterate over .keys() or .values() when only one of them is used."),
    "PERF402": _p("Use list(x) or list.extend(x) instead of appending in a loop."),
    "PERF403": _p("Build the dict with a comprehension."),
    "list-membership-in-loop": _p("Build a set once before the loop and test against it.", M),
    "str-concat-in-loop": _p("Collect the parts in a list and ''.join() them after the loop.", M),
    "nested-loop-same-sequence": _p("Index the items once in a dict keyed by what you compare.", M),
    # security: ruff S (bandit's checks, bandit's confidence when it agrees) and hard-coded keys
    "S102": _s(MED, H, "Dispatch through a dict of allowed operations instead of exec.", CRIT),
    "S307": _s(MED, H, "Parse the data with ast.literal_eval or json.loads, not eval.", CRIT),
    "S301": _s(MED, H, "Use a data-only format (JSON) or sign the bytes and verify first.", CRIT),
    "S302": _s(
        MED, H, "Use a data-only format (JSON) for data that crosses a trust boundary.", CRIT
    ),
    "S506": _s(MED, H, "Use yaml.safe_load (or Loader=yaml.SafeLoader).", CRIT),
    "S602": _s(MED, H, "Pass an argument list without shell=True.", CRIT),
    "S605": _s(MED, H, "Use subprocess.run([...]) with an argument list, not a shell.", CRIT),
    "S604": _s(MED, M, "Pass an argument list without shell=True.", CRIT),
    "S608": _s(MED, M, "Use query parameters (cursor.execute(sql, params)).", HIGH),
    "S324": _s(MED, H, "Use hashlib.sha256 (passwords: hashlib.scrypt or argon2)."),
    "S501": _s(MED, H, "Keep certificate checks on (verify=True), or pass a CA bundle."),
    "S105": _s(MED, M, "Read the secret from the environment or a secret store, not source."),
    "S106": _s(MED, M, "Read the secret from the environment or a secret store, not source."),
    "S107": _s(MED, M, "Read the secret from the environment or a secret store, not source."),
    "S104": _s(LOW, M, "Bind to 127.0.0.1 unless the service must be reachable from outside."),
    "S108": _s(LOW, M, "Use tempfile.mkstemp / TemporaryDirectory instead of a fixed /tmp path."),
    "S113": _s(LOW, H, "Pass timeout= to the request so it cannot hang forever."),
    "S202": _s(MED, H, "Check member paths before extracting (tarfile filter='data').", HIGH),
    "S310": _s(LOW, M, "Check the URL scheme (http/https) before opening it.", HIGH),
    "S314": _s(LOW, M, "Parse untrusted XML with defusedxml.", HIGH),
    "S701": _s(MED, H, "Create the jinja2 Environment with autoescape=True."),
    "hardcoded-secret": _s(MED, H, "Revoke the key, then read it from the environment."),
}
DEFAULT_RULE = {
    "quality": _q(LOW, M, "See the rule's documentation (`ruff rule CODE`) for the fix."),
    "performance": _p("See the rule's documentation (`ruff rule CODE`) for the fix.", M),
    "security": _s(LOW, M, "See the rule's documentation (`ruff rule CODE`) for the fix."),
}


def known_category(code: str) -> Category | None:
    """The area of a rule this engine reports (listed, or an engine code like ``B024``), else None
    (a name a model made up says nothing about the area)."""
    if code in RULES or re.fullmatch(r"[A-Z]{1,4}\d{3,4}", code):
        return rule_for(code).category
    return None


def rule_for(code: str) -> Rule:
    """The :class:`Rule` of ``code``; an unlisted code gets its area's defaults."""
    if code in RULES:
        return RULES[code]
    if code.startswith("S"):
        return DEFAULT_RULE["security"]
    if code.startswith("PERF"):
        return DEFAULT_RULE["performance"]
    return DEFAULT_RULE["quality"]
