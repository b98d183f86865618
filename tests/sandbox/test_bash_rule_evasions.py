"""Forms of a denied command that bash runs but a word-by-word reading misses: a path to the
program, ``$"..."`` quoting, ``builtin``/``trap``/``chroot`` running it, brace expansion and globs
in its name, and words only known when the shell runs (``git $X``, ``xargs git``)."""

from __future__ import annotations

import pytest

from agentscope_teams.sandbox import UnsafeHostSandbox
from agentscope_teams.tools import PermissionEngine, parse_rule, shell_tools

BASH = shell_tools(UnsafeHostSandbox())[0]
DENY = ("Bash(git push:*)",)


def decide(command: str, deny: tuple[str, ...] = ()) -> str:
    rules = [parse_rule(r, "deny") for r in deny]
    return PermissionEngine(rules, "bypass").decide(BASH, {"command": command})


@pytest.mark.parametrize(
    "command",
    [
        "/usr/bin/git push origin main",  # the same program by its path
        "~/bin/git push",
        "./git push",
        '$"git" push',  # a locale-translated string is a double-quoted one
        '$"git push" x; $"git" "push"',
        "builtin eval 'git push'",
        "command builtin eval 'git push'",
        "trap 'git push' EXIT",  # the trap's text runs when the shell exits
        "trap -- 'git push' EXIT",
        "chroot / git push",
        "chroot --userspec=1:1 / /usr/bin/git push",
        "time git push",  # a pipeline prefix, as Claude Code strips it
        "time -p git push | cat",
        "! git push",
        "/usr/bin/time -v git push",
        "su -c 'git push' alice",  # the -c text runs in the user's shell
        "su - alice -c 'git push'",
        "runuser -u alice -- git push",
        "script -qc 'git push' /dev/null",
        "flock /tmp/lock git push",
        "flock -w 5 /tmp/lock -c 'git push'",
        "busybox env git push",
        "unbuffer git push",
        "fish -c 'git push'",
        "X+=1 git push",  # an appending assignment before the command
        "a[0]=1 git push",  # bash reports the array element, then runs the command
        "env 'x-y=1' git push",  # env takes every word holding = as a variable
        "env =x git push",
        "echo x | mapfile -C 'git push' -c 1",  # the callback is shell text
        "echo x | readarray -t -C'git push' -c1 lines",
    ],
)
def test_a_denied_command_run_in_another_form_is_denied(command: str) -> None:
    assert decide(command) == "allow"  # control: nothing else refuses it
    assert decide(command, DENY) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "{git,push}",  # brace expansion: bash runs `git push`
        "git{,} push",
        "/usr/bin/gi? push",  # a glob naming the program
        "/usr/bin/gi[t] push",
        "git {push,status}",  # runs `git push status`
        "X=push; git $X",  # the words are only known when the shell runs
        'git "$X" --force',
        "git ${X}",
        "git $(echo push)",
        "echo push | xargs git",  # xargs adds words read from its input
        "echo push | xargs -I{} git {}",  # ... or puts them in place of {}
        "echo git | xargs -I % % push",
        "timeout 5 git $X",
        "shopt -s expand_aliases\nalias g='git push'\ng",  # a later `g` runs git push
        "hash -p /usr/bin/git g\ng push",
        "time ! if true; then git push; fi",
        "echo 'git push' | bash /dev/stdin",  # a shell reading its commands from stdin
        "echo 'git push' | bash -",
        "echo 'git push' | sh /proc/self/fd/0",
        "echo 'git push' | bash -- /dev/fd/0",
        "bash <(echo 'git push')",  # ... or from a script only known when it runs
        'bash "$SCRIPT"',
        "source <(echo 'git push')",
        "echo 'git push' | . /dev/stdin",
        # bash runs a $(...) in an array subscript it evaluates, quoted or not
        "let 'x[$(git push)]=1'",
        "unset 'a[$(git push)]'",
        "[ -v 'a[$(git push)]' ]",
        "printf -v 'a[`git push`]' x",
        "declare 'c[$(git push)]=1'",
        "x='a[$(git push)]'; let y=x",  # ... also from a variable's text
        "touch push; git pu?h",  # a glob that may name a file called push
        "touch push; timeout 5 git pu*",
        "shopt -s nullglob; git zz* push",  # under nullglob a glob matching nothing vanishes
    ],
)
def test_a_command_that_might_be_denied_asks(command: str) -> None:
    assert decide(command) == "allow"
    assert decide(command, DENY) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "git status $X",
        "echo $HOME",
        "ls *.py",
        "echo {a,b}",
        "find . -name '*.py' -exec cat {} \\;",
        "xargs git status",
        "/usr/bin/git status",
        "trap 'rm -f x' EXIT",
        "echo '{git,push}'",
        "time git status",
        "alias",
        "hash -r",
        "su -c 'git status'",
        "flock /tmp/lock git status",
        "script -q /dev/null",
        "su -c",  # a -c without its text runs nothing
        "flock /tmp/lock -c",
        "bash ./build.sh",  # a script file runs as ./build.sh would: not seen through
        "source ./env.sh",
        "git commit -m 'fix `parse`, use $(nproc)'",  # quoted text that only ends up in a message
        "echo '$(not run)'",
        "[ -f x ] && git status",
        "git add *.py",
        "git zz* push",  # without nullglob an unmatched glob stays as it is
        "printf '%s $(x)\\n' a",
    ],
)
def test_unknown_words_elsewhere_do_not_make_deny_rules_overreach(command: str) -> None:
    assert decide(command, DENY) == "allow"


def test_allow_rules_do_not_allow_a_program_by_another_path() -> None:
    rules = [parse_rule("Bash(git status:*)", "allow")]
    engine = PermissionEngine(rules, "default")
    assert engine.decide(BASH, {"command": "git status"}) == "allow"
    assert engine.decide(BASH, {"command": "./git status"}) == "ask"
    assert engine.decide(BASH, {"command": "{git,status}"}) == "ask"


@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ("git push $X", "ask"),  # X may be main
        ("git push ma?n", "ask"),
        ("git push dev", "allow"),
        ("git status $X", "ask"),  # a wildcard spans words: X may be `x main`
        ("git $X", "ask"),
        ("ls $X", "allow"),
    ],
)
def test_a_wildcard_deny_rule_asks_when_an_unknown_word_may_complete_it(
    command: str, verdict: str
) -> None:
    assert decide(command, ("Bash(git * main)",)) == verdict
