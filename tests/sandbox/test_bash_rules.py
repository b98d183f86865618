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


WRAPPED_PUSHES = [
    "env git push",
    "env FOO=1 git push",
    "env -i -u HOME FOO=1 git push origin",
    "/usr/bin/env git push",
    "command git push",
    "exec git push",
    "nohup git push &",
    "timeout 5 git push",
    "timeout -s KILL --kill-after=2 5 git push",
    "nice git push",
    "nice -n 5 git push",
    "stdbuf -oL git push",
    "stdbuf -o L -eL git push",
    "sudo git push",
    "sudo -u bob -E git push",
    "sudo FOO=1 git push",
    "setsid git push",
    "ionice -c 3 git push",
    "xargs git push",
    "ls | xargs -0 -n 1 git push",
    "find . -name x -exec git push {} \\;",
    "bash -c 'git push'",
    'sh -c "git push"',
    "bash -lc 'git push origin'",
    "zsh -ec 'ls && git push'",
    "dash -c 'git push' x",
    "eval 'git push'",
    "eval git push",
    "watch -n 5 git push",
    "sudo env FOO=1 timeout 5 nice bash -c \"eval 'git push'\"",
    "ls; bash -c 'echo $(git push)'",
]


@pytest.mark.parametrize("command", WRAPPED_PUSHES)
def test_deny_and_ask_rules_see_through_wrappers(command: str) -> None:
    """A wrapper (``timeout 5``, ``sudo``, ``bash -c``, ``eval``...) runs the command it wraps:
    deny and ask rules check that command too, in bypass mode as well."""
    assert decide(command, mode="bypass") == "allow"  # control: nothing else refuses it
    assert decide(command, mode="bypass", deny=("Bash(git push:*)",)) == "deny"
    assert decide(command, allow=("Bash",), ask=("Bash(git push:*)",)) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "echo 'git push' | sh",  # a shell reading its commands from stdin
        "bash -s < x",
        'bash -c "$CMD"',  # the command string is only known when it runs
        "eval $CMD",
        "env -S 'git push'",  # an option the wrapper table does not know
        "timeout --unknown 5 git push",
        "xargs -i git push",
        "sudo $WHO git push",
        "find . -exec git push",  # no terminator
        "bash -c 'if true; then git push; fi'",  # the inner command cannot be parsed
    ],
)
def test_a_wrapped_command_that_cannot_be_determined_asks_under_a_deny_rule(command: str) -> None:
    assert decide(command, mode="bypass") == "allow"
    assert decide(command, mode="bypass", deny=("Bash(git push:*)",)) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "timeout 5 git status",
        "bash -c 'git status'",
        "eval git status",
        "sudo -u git push",  # runs `push` as user git
        "echo git push",  # echo is not a wrapper
        "bash script.sh git push",  # a script runs as ./script.sh would: not seen through
        "command -v git",
        "env",
    ],
)
def test_wrappers_do_not_make_deny_rules_overreach(command: str) -> None:
    assert decide(command, mode="bypass", deny=("Bash(git push:*)",)) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "timeout 5 git diff",
        "env git diff",
        "env GIT_EXTERNAL_DIFF=x git diff",
        "nice git diff",
        "sudo git diff",
        "xargs git diff",
        "bash -c 'git diff'",
        "eval 'git diff'",
    ],
)
def test_allow_rules_do_not_see_through_wrappers(command: str) -> None:
    """A wrapper can change what the command does (its environment, its user): an allow rule for
    ``git diff`` does not allow it."""
    assert decide(command, allow=("Bash(git diff:*)",)) == "ask"
