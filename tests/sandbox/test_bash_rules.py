"""Claude Code's Bash permission rules on the ``bash`` tool: prefix, exact and wildcard patterns,
compound commands part by part, deny first, plan mode, default mode asking, remembered rules."""

from __future__ import annotations

import pytest

from agentscope_teams.sandbox import UnsafeHostSandbox
from agentscope_teams.state import PermissionContext, PermissionMode
from agentscope_teams.tools import PermissionEngine, parse_rule, remember_rule, shell_tools
from agentscope_teams.tools.command_rules import Unparsed, parse_command

BASH = shell_tools(UnsafeHostSandbox())[0]


def decide(
    command: str,
    allow: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    ask: tuple[str, ...] = (),
    mode: PermissionMode = "default",
) -> str:
    rules = [
        *(parse_rule(r, "allow") for r in allow),
        *(parse_rule(r, "deny") for r in deny),
        *(parse_rule(r, "ask") for r in ask),
    ]
    return PermissionEngine(rules, mode).decide(BASH, {"command": command})


@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ("git diff", "allow"),
        ("git diff --stat HEAD~1", "allow"),
        ("git  diff   -- a.py", "allow"),
        ('git "diff" a.py', "allow"),  # the words bash runs
        ("git diffx", "ask"),  # word boundary
        ("git status", "ask"),
        ("git diff; rm -rf x", "ask"),
        ("git diff && rm -rf x", "ask"),
        ("git diff || rm -rf x", "ask"),
        ("git diff | sh", "ask"),
        ("git diff & rm -rf x", "ask"),
        ("git diff\nrm -rf x", "ask"),
        ("git diff $(rm -rf x)", "ask"),
        ("git diff `rm -rf x`", "ask"),
        ("git diff <(rm -rf x)", "ask"),
        ('git diff "$(rm -rf x)"', "ask"),
        ("git diff > out.txt", "ask"),  # writes a file
        ("git diff >> out.txt", "ask"),
        ("git diff &> out.txt", "ask"),
        ("git diff 2>&1", "allow"),
        ("git diff 2>/dev/null", "allow"),
        ("git diff # ; rm -rf x", "allow"),  # a comment runs nothing
        ("LD_PRELOAD=/tmp/x.so git diff", "ask"),
        ("$CMD diff", "ask"),
        ("if true; then git diff; fi", "ask"),
        ("(git diff)", "ask"),
        ("git diff <<EOF\nx\nEOF", "ask"),
        ("git diff 'unterminated", "ask"),
    ],
)
def test_a_prefix_rule_allows_only_commands_made_of_allowed_parts(
    command: str, verdict: str
) -> None:
    assert decide(command, allow=("Bash(git diff:*)",)) == verdict
    assert decide(command) in ("ask", "allow")  # control: unmatched commands ask in default mode
    assert decide("git diff") == "ask"


def test_every_part_may_be_allowed_by_a_different_rule() -> None:
    rules = ("Bash(git diff:*)", "Bash(grep:*)", "Bash(git merge-base:*)")
    assert decide("git diff | grep foo", allow=rules) == "allow"
    assert decide("git diff $(git merge-base main HEAD)", allow=rules) == "allow"
    assert decide("git diff | grep foo | sh", allow=rules) == "ask"


def test_an_exact_rule_matches_that_command_only() -> None:
    assert decide("npm run test", allow=("Bash(npm run test)",)) == "allow"
    assert decide("npm run test -- --watch", allow=("Bash(npm run test)",)) == "ask"
    assert decide("npm run testx", allow=("Bash(npm run test)",)) == "ask"
    assert decide("npm run test; curl x | sh", allow=("Bash(npm run test)",)) == "ask"


def test_wildcards_follow_claude_code() -> None:
    assert decide("ls", allow=("Bash(ls *)",)) == "allow"
    assert decide("ls -la", allow=("Bash(ls *)",)) == "allow"
    assert decide("lsof", allow=("Bash(ls *)",)) == "ask"
    assert decide("lsof", allow=("Bash(ls*)",)) == "allow"
    assert decide("git checkout main", allow=("Bash(git * main)",)) == "allow"
    assert decide("git checkout dev", allow=("Bash(git * main)",)) == "ask"


def test_bare_bash_allows_every_command() -> None:
    assert decide("rm -rf x; curl y | sh", allow=("Bash",)) == "allow"
    assert decide("rm -rf x", allow=("Bash(*)",)) == "allow"


def test_deny_wins_on_any_part() -> None:
    assert decide("rm -rf x", allow=("Bash",), deny=("Bash(rm:*)",)) == "deny"
    assert decide("git diff && rm -rf x", allow=("Bash",), deny=("Bash(rm:*)",)) == "deny"
    assert decide("echo $(rm -rf x)", allow=("Bash",), deny=("Bash(rm:*)",)) == "deny"
    assert decide("rm -rf x", mode="bypass", deny=("Bash(rm:*)",)) == "deny"
    assert decide("git diff", allow=("Bash(git:*)",), deny=("Bash(git push:*)",)) == "allow"


def test_deny_and_ask_rules_see_past_variable_assignments() -> None:
    """``FOO=1 git push`` runs ``git push``: the assignments before a command name are not it."""
    for command in ["FOO=1 git push", "A=1 B='x y' git push origin", "ls && X=$(id) git push"]:
        assert decide(command, mode="bypass", deny=("Bash(git push:*)",)) == "deny", command
    assert decide("FOO=1 git push", allow=("Bash",), ask=("Bash(git push)",)) == "ask"
    assert decide("FOO=1 git push", allow=("Bash",), deny=("Bash(git * --force)",)) == "allow"
    assert decide("FOO=1 git push --force", allow=("Bash",), deny=("Bash(git *)",)) == "deny"
    # an allow rule is not widened: the assignment may change what the command does
    assert decide("GIT_SSH_COMMAND=x git diff", allow=("Bash(git diff:*)",)) == "ask"


def test_an_unparsable_command_under_a_deny_rule_asks_even_in_bypass() -> None:
    command = "if true; then rm -rf x; fi"
    assert decide(command, mode="bypass") == "allow"  # control: bypass runs it without rules
    assert decide(command, mode="bypass", deny=("Bash(rm:*)",)) == "ask"


def test_ask_rules_match_any_part() -> None:
    assert decide("ls && git push", allow=("Bash",), ask=("Bash(git push:*)",)) == "ask"


def test_plan_mode_refuses_bash_and_bypass_allows_it() -> None:
    assert decide("ls", allow=("Bash(ls:*)",), mode="plan") == "deny"
    assert decide("ls", mode="bypass") == "allow"
    assert decide("ls", mode="accept_edits") == "ask"


def test_a_remembered_command_is_allowed_again_exactly() -> None:
    command = "ls *.py && rm -f build/*"
    rule = remember_rule(BASH, {"command": command})
    assert rule.pattern == "ls \\*.py && rm -f build/\\*"
    engine = PermissionEngine()
    context = PermissionContext(rules=[rule])
    assert engine.decide(BASH, {"command": command}, context) == "allow"
    assert engine.decide(BASH, {"command": "ls x.py && rm -f build/y"}, context) == "ask"
    assert engine.decide(BASH, {"command": command + "; rm -rf ~"}, context) == "ask"


def test_the_parser_refuses_what_it_cannot_read() -> None:
    for text in ("a $((1+2))", "a ${x:-$(b)}", "a $'\\n'", "case x in a) b;; esac", "a `b"):
        with pytest.raises(Unparsed):
            parse_command(text)
    words = [p.words for p in parse_command("a 'b c' \"d $(e f)\" && g")]
    assert words == [["e", "f"], ["a", "b c", "d \x00"], ["g"]]
