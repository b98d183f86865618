"""Claude Code's Bash permission rules, matched against the simple commands a command runs
(:mod:`.shell_parse`).

A rule's pattern is one of:

* ``git diff:*`` — a prefix: the command's first words are ``git diff`` (word boundary: ``git
  diffx`` does not match);
* ``npm run test`` — exact: those words and nothing more;
* a pattern with ``*`` elsewhere (``git * main``, ``ls *``) — a wildcard over the command's words
  joined by spaces; a trailing `` *`` also matches the bare command (``ls *`` matches ``ls``).
  ``\\*`` is a literal star (remembered rules escape the stars of the command they allow).

Rules match a simple command by its words; a word that is an expansion has no known value and
matches only a ``*``. An output redirection into a file is a write, so no pattern rule allows it.
A command that cannot be parsed is allowed by no pattern rule (see
:mod:`~agentscope_teams.tools.permissions` for what deny rules do then).

Deny and ask rules also see the command a wrapper runs (:func:`commands_run`): past ``env``,
``sudo``, ``timeout 5``, ``nice -n 5``... (:data:`WRAPPERS`, options and all), into the string of
``bash -c`` / ``sh -lc``, the words of ``eval``, the text of ``trap TEXT SIGNAL``, the ``-c TEXT``
of ``su``, ``runuser``, ``script`` and ``flock``, and into ``find -exec ... ;``; a program named
by its path (``/usr/bin/git``) is seen by its name. Words known only when the shell runs (``git
$X``, ``xargs git``) leave a rule that :func:`might_match`; ``alias NAME=...`` and ``hash -p`` (a
later name running another program) cannot be determined, nor quoted ``$(...)`` text bash may
evaluate as an array subscript (``let 'a[$(cmd)]'``, ``x='a[$(cmd)]'``); ``mapfile -C TEXT`` runs
its text. Allow rules do not: a wrapper can change what the command does (its environment, user,
or the text that runs), so ``Bash(git diff:*)`` does not allow ``timeout 5 git diff``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from .shell_parse import UNKNOWN, Part, Unparsed, command_start, parse_command

__all__ = [
    "Part",
    "Unparsed",
    "allowed_by_rules",
    "command_rule_matches",
    "commands_run",
    "escape_command",
    "might_match",
    "parse_command",
    "parses",
]


def escape_command(command: str) -> str:
    """An exact rule pattern for ``command``: its stars escaped."""
    return command.strip().replace("*", "\\*")


def _has_wildcard(pattern: str) -> bool:
    return re.search(r"(?<!\\)\*", pattern) is not None


def _wildcard_regex(pattern: str) -> re.Pattern[str]:
    """``*`` spans any text; a trailing `` *`` may also match nothing (``ls *`` matches ``ls``)."""
    optional_tail = pattern.endswith(" *") and not pattern.endswith("\\ *")
    body = pattern[:-2] if optional_tail else pattern
    pieces = [re.escape(p.replace("\\*", "*")) for p in re.split(r"(?<!\\)\*", body)]
    return re.compile(".*".join(pieces) + ("(?: .*)?" if optional_tail else ""), re.DOTALL)


def _rule_words(pattern: str) -> list[str] | None:
    try:
        parts = parse_command(pattern.replace("\\*", "*"))
    except Unparsed:
        return None
    if len(parts) != 1 or not all(parts[0].literal) or parts[0].writes_file:
        return None
    return parts[0].words


def part_matches(pattern: str, part: Part) -> bool:
    """Whether one simple command matches a rule pattern (module docstring)."""
    if pattern.endswith(":*"):
        words = _rule_words(pattern[:-2])
        n = len(words) if words else 0
        return bool(words) and part.words[:n] == words and all(part.literal[:n])
    if not _has_wildcard(pattern):
        words = _rule_words(pattern)
        return words is not None and part.words == words and all(part.literal)
    joined = " ".join(
        w if lit else UNKNOWN for w, lit in zip(part.words, part.literal, strict=True)
    )
    return _wildcard_regex(pattern).fullmatch(joined) is not None


def _past_assignments(part: Part) -> Part:
    """``part`` without the variable assignments before its command name (``FOO=1 git push``
    runs ``git push``)."""
    n = command_start(part.words)
    return Part(part.words[n:], part.literal[n:], part.writes_file) if n else part


@dataclass(frozen=True)
class Wrapper:
    """How a command that runs another one reads its own words before that command."""

    flags: frozenset[str] = frozenset()  # options without a value (``-E``, ``--foreground``)
    valued: frozenset[str] = frozenset()  # with a value: ``-n 5``, ``-n5``, ``--signal=KILL``
    operands: int = 0  # words before the command (timeout's DURATION)
    assignments: bool = False  # words holding = before the command (``env FOO=1 git``)
    joined: bool = False  # the rest is joined and run as shell text (``eval``, ``watch``)
    appends: bool = False  # words read from stdin are added to the command (``xargs``)


def _wrapper(
    flags: str = "",
    valued: str = "",
    operands: int = 0,
    *,
    assignments: bool = False,
    joined: bool = False,
    appends: bool = False,
) -> Wrapper:
    return Wrapper(
        frozenset(flags.split()), frozenset(valued.split()), operands, assignments, joined, appends
    )


WRAPPERS: Mapping[str, Wrapper] = {
    "env": _wrapper(
        "- -i --ignore-environment -0 --null -v --debug", "-u --unset -C --chdir", assignments=True
    ),
    "command": _wrapper("-p -v -V"),
    "builtin": _wrapper(),
    "chroot": _wrapper("--skip-chdir", "--userspec --groups", operands=1),
    "exec": _wrapper("-c -l", "-a"),
    "nohup": _wrapper(),
    "setsid": _wrapper("-f -w -c --fork --wait --ctty"),
    "timeout": _wrapper(
        "--preserve-status --foreground -v --verbose", "-s --signal -k --kill-after", operands=1
    ),
    "nice": _wrapper("", "-n --adjustment"),
    "ionice": _wrapper("-t --ignore", "-c --class -n --classdata"),
    "stdbuf": _wrapper("", "-i -o -e --input --output --error"),
    "sudo": _wrapper(
        "-A -B -b -E -H -i -k -n -P -S -s --askpass --background --bell --login --non-interactive"
        " --preserve-env --preserve-groups --reset-timestamp --set-home --shell --stdin",
        "-C -D -g -p -R -r -T -t -U -u --chdir --chroot --close-from --command-timeout --group"
        " --other-user --prompt --role --type --user",
        assignments=True,
    ),
    "doas": _wrapper("-n -s", "-u"),
    "xargs": _wrapper(
        "-0 -o -p -r -t -x --exit --interactive --no-run-if-empty --null --open-tty --verbose",
        "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-chars --max-procs",
        appends=True,
    ),
    "eval": _wrapper(joined=True),
    "busybox": _wrapper(),
    "unbuffer": _wrapper("-p"),
    "flock": _wrapper(
        "-s -x -n -o -u -F --shared --exclusive --nonblock --nb --close --unlock --no-fork"
        " --verbose",
        "-w -E -c --wait --timeout --conflict-exit-code --command",
        operands=1,
    ),
    "runuser": _wrapper(
        "-l -m -p --login --preserve-environment",
        "-u -g -G -s -c --user --group --supp-group --shell --command",
    ),
    "time": _wrapper(
        "-p -v -a -q --portability --verbose --append --quiet", "-f -o --format --output"
    ),
    "watch": _wrapper(
        "-b -c -d -e -g -p -r -t -w -x --beep --chgexit --color --differences --errexit --exec"
        " --no-rerun --no-title --no-wrap --precise",
        "-n -q --interval --equexit",
        joined=True,
    ),
}
"""The wrappers deny and ask rules see through: each runs the command after its own options.
An option not listed here makes the wrapped command unknown (it might take a value)."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"})
"""Shells whose ``-c STRING`` is parsed as a command; one reading stdin cannot be checked."""

_GLOB_WORD = re.compile(r"[*?]|\[.*\]")

_COMMAND_TEXT = frozenset({"su", "runuser", "script", "flock"})
"""Programs that run the text of their ``-c`` option in a shell (:func:`_command_option`)."""

_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_MAX_DEPTH = 8


def _is_option(word: str, w: Wrapper) -> tuple[bool, bool]:
    """(is an option of ``w``, takes the next word as its value); raises for an unknown option."""
    if word in w.flags or re.fullmatch(r"-[0-9]+", word):
        return True, False
    if word in w.valued:
        return True, True
    if word.startswith("--") and word.split("=", 1)[0] in w.valued and "=" in word:
        return True, False
    if not word.startswith("--") and word[:2] in w.valued:
        return True, False  # a short option with its value attached: -oL, -n5
    if re.fullmatch(r"-[A-Za-z0-9]{2,}", word) and all(f"-{c}" in w.flags for c in word[1:]):
        return True, False  # a cluster of short flags: -rt
    if word.startswith("-") and word != "-":
        raise Unparsed(f"an option {word!r} of a wrapper")
    return False, False


def _wrapped(part: Part, w: Wrapper) -> list[Part]:
    """The command ``w`` (a wrapper, the first word of ``part``) runs."""
    words, literal, i = part.words, part.literal, 1
    while i < len(words):
        if not literal[i]:
            raise Unparsed("a wrapper's option or command is an expansion")
        if words[i] == "--":
            i += 1
            break
        option, valued = _is_option(words[i], w)
        if not option:
            break
        i += 2 if valued else 1
    i += w.operands
    while w.assignments and i < len(words) and "=" in words[i]:
        i += 1  # env and sudo take every word holding = as a variable (``env x-y=1 git``)
    if w.joined:
        if not all(literal[i:]):
            raise Unparsed("text run by eval holds an expansion")
        return parse_command(" ".join(words[i:])) if i < len(words) else []
    if i >= len(words):
        return []
    if w.appends:  # xargs git: the words it reads are known only when it runs
        return [_xargs_command(part, i)]
    return [Part(words[i:], literal[i:], part.writes_file)]


def _xargs_command(part: Part, start: int) -> Part:
    """The command ``xargs`` runs from ``part.words[start]``: the words it reads are added at its
    end, or with ``-I R`` put where ``R`` is (those words are unknown)."""
    words, literal = part.words, list(part.literal)
    options = words[1:start]
    spot = next((j for j, o in enumerate(options) if o.startswith("-I")), None)
    if spot is None:
        return Part([*words[start:], UNKNOWN], [*literal[start:], False], part.writes_file)
    replace = options[spot][2:] or (options[spot + 1] if spot + 1 < len(options) else "")
    known = [
        lit and (not replace or replace not in w) for w, lit in zip(words, literal, strict=True)
    ]
    return Part(words[start:], known[start:], part.writes_file)


_COMMAND_OPTION = re.compile(r"-[A-Za-z]*c|--command")


def _command_option(part: Part) -> list[Part]:
    """The commands of each shell text given with ``-c TEXT`` / ``--command=TEXT`` (``su``,
    ``runuser``, ``script``, ``flock``), wherever it stands (``su`` passes the words after its user,
    ``--`` and all, to the shell)."""
    words, literal, found = part.words, part.literal, []
    for i in range(1, len(words)):
        text, at = None, i
        if words[i].startswith("--command="):
            text = words[i].split("=", 1)[1]
        elif _COMMAND_OPTION.fullmatch(words[i]) and i + 1 < len(words):
            at, text = i + 1, words[i + 1]
        if text is not None:
            if not (literal[i] and literal[at]):
                raise Unparsed(f"the command text of {words[0]} is an expansion")
            found += parse_command(text)
    return found


def _trap(part: Part) -> list[Part]:
    """The commands of ``trap [--] TEXT SIGNAL...`` (run when the signal comes)."""
    words, i = part.words, 1
    if i < len(words) and words[i] == "--":
        i += 1
    if len(words) - i < 2 or words[i] == "-" or (words[i].startswith("-") and i == 1):
        return []  # trap -p, trap SIGNAL, trap - SIGNAL: nothing is set to run
    if not part.literal[i]:
        raise Unparsed("a trap's command text is an expansion")
    return parse_command(words[i])


def _shell_string(part: Part) -> list[Part] | None:
    """The commands of ``sh -c STRING``; None for ``sh script``; raises for a shell reading stdin
    or a string that is an expansion."""
    words, literal, i, command = part.words, part.literal, 1, False
    while i < len(words) and words[i][:1] in "-+" and words[i] not in ("-", "--"):
        if not literal[i]:
            raise Unparsed("a shell option is an expansion")
        word = words[i]
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 1
        elif not word.startswith("--") and word.startswith("-") and "c" in word:
            command = True
        elif not word.startswith("--") and "s" in word:
            raise Unparsed("a shell reading its commands from stdin")
        i += 1
    if i < len(words) and words[i] == "--":
        i += 1
    if i >= len(words):
        if command:
            return []  # `sh -c` without a string: an error, runs nothing
        raise Unparsed("a shell reading its commands from stdin")
    if not command:
        _script_file(words[i], literal[i])
        return None  # a script file, as ./script would run
    if not literal[i]:
        raise Unparsed("a shell's command string is an expansion")
    return parse_command(words[i])


_STDIN = re.compile(r"-|/dev/stdin|/dev/fd/[0-9]+|/proc/(self|[0-9]+)/fd/[0-9]+")


def _script_file(word: str, literal: bool) -> None:
    """Raises :class:`Unparsed` for a script that is stdin (``bash /dev/stdin``) or only known when
    the shell runs (``bash <(...)``, ``bash "$F"``); a script file is not seen through."""
    if not literal or _STDIN.fullmatch(word):
        raise Unparsed("a shell reading its commands from stdin or a script known only at run time")


def _find_exec(part: Part) -> list[Part]:
    """The commands of ``find ... -exec CMD ... ;`` (or ``+``)."""
    inner, i, words = [], 1, part.words
    while i < len(words):
        if words[i] in _FIND_EXEC and part.literal[i]:
            end = next((j for j in range(i + 1, len(words)) if words[j] in (";", "+")), None)
            if end is None:
                raise Unparsed("find -exec without its ';' or '+'")
            inner.append(Part(words[i + 1 : end], part.literal[i + 1 : end]))
            i = end
        i += 1
    return inner


_EVALUATES = frozenset(
    {"let", "declare", "typeset", "local", "export", "readonly", "unset", "read", "test", "["}
    | {"shift", "return", "exit"}
)
"""Builtins that evaluate their arguments as variable names or arithmetic, where bash runs the
``$(...)`` of an array subscript even when it was quoted (``let 'a[$(cmd)]'``)."""


def _holds_code(words: Sequence[str]) -> bool:
    """Whether a (quoted) word holds ``$(`` or a backtick that bash may still run."""
    return any("$(" in w or "`" in w for w in words)


def _evaluated(part: Part) -> None:
    """Raises :class:`Unparsed` when ``part`` hands quoted ``$(...)`` text to arithmetic: as an
    evaluating builtin's argument (or ``printf -v``'s) or a variable's value (``x='a[$(c)]'``)."""
    n = command_start(part.words)
    name = part.words[n] if n < len(part.words) else ""
    args = part.words[n + 1 :]
    if (
        _holds_code(part.words[:n])
        or (name in _EVALUATES and _holds_code(args))
        or (name == "printf" and "-v" in args and _holds_code(args))
    ):
        raise Unparsed("quoted $(...) text that bash may evaluate as an array subscript")


def _option_text(part: Part, option: str) -> list[Part]:
    """The commands of the shell text given as ``option``'s value (``mapfile -C TEXT``)."""
    words, literal = part.words, part.literal
    for i, word in enumerate(words[1:], 1):
        if not word.startswith(option):
            continue
        at = i + 1 if word == option else i
        if at >= len(words):
            return []
        if not (literal[i] and literal[at]):
            raise Unparsed(f"the {option} text of {words[0]} is an expansion")
        return parse_command(words[at] if at > i else word[len(option) :])
    return []


def _inner(part: Part) -> list[Part] | None:
    """The commands ``part`` runs in its stead (it being a wrapper, shell or ``find -exec``), or
    None; raises :class:`Unparsed` when they cannot be determined."""
    if not part.words:
        return None
    if not part.literal[0]:
        raise Unparsed("the command name is an expansion")
    name = posixpath.basename(part.words[0])
    if name in _COMMAND_TEXT:  # flock FILE CMD and runuser -u U CMD run a command as well
        wrapped = _wrapped(part, WRAPPERS[name]) if name in WRAPPERS else []
        return _command_option(part) + wrapped
    if name in WRAPPERS:
        return _wrapped(part, WRAPPERS[name])
    if name in SHELLS:
        return _shell_string(part)
    if name == "find":
        return _find_exec(part)
    if name == "trap":
        return _trap(part)
    if name in ("mapfile", "readarray"):
        return _option_text(part, "-C")
    if name in ("source", ".") and len(part.words) > 1:
        _script_file(part.words[1], part.literal[1])
    if (name == "alias" and any("=" in w for w in part.words[1:])) or (
        name == "hash" and any(w.startswith("-") and "p" in w for w in part.words[1:])
    ):
        raise Unparsed(f"{name} makes a later name run another command")
    return None


def _seen_through(parts: Sequence[Part], depth: int) -> Iterator[Part | None]:
    """Each part, itself and past its assignments, then the commands it wraps, recursively; a None
    for each wrapped command that cannot be determined."""
    for part in parts:
        yield part
        bare = _past_assignments(part)
        yield bare
        if bare.words and bare.literal[0] and "/" in bare.words[0]:  # /usr/bin/git: git
            yield Part([posixpath.basename(bare.words[0]), *bare.words[1:]], bare.literal)
        try:
            if depth >= _MAX_DEPTH:
                raise Unparsed("wrappers nested too deeply")
            _evaluated(part)
            inner = _inner(bare)
        except Unparsed:
            yield None
            continue
        if inner:
            yield from _seen_through(inner, depth + 1)


def commands_run(command: str) -> tuple[list[Part], bool]:
    """The simple commands ``command`` runs, wrappers seen through (module docstring), and whether
    every one of them could be determined; raises :class:`Unparsed` if ``command`` cannot be
    parsed."""
    seen = list(_seen_through(parse_command(command), 0))
    return [p for p in seen if p is not None], None not in seen


def _raw_matches(pattern: str, command: str) -> bool:
    """The pattern against the command's whole text (for rules judged without parsing)."""
    text = " ".join(command.split())
    if pattern.endswith(":*"):
        prefix = " ".join(pattern[:-2].split())
        return text == prefix or text.startswith(prefix + " ")
    if not _has_wildcard(pattern):
        return text == " ".join(pattern.replace("\\*", "*").split())
    return _wildcard_regex(pattern).fullmatch(text) is not None


def _pattern_head(pattern: str) -> tuple[list[str], bool] | None:
    """The words a command must start with to match ``pattern``, as far as the pattern fixes them,
    and whether no other word may follow them (an exact pattern); None for a pattern no command
    matches."""
    if pattern.endswith(":*") or not _has_wildcard(pattern):
        exact = not pattern.endswith(":*")
        words = _rule_words(pattern if exact else pattern[:-2])
        return (words, exact) if words else None
    head = re.split(r"(?<!\\)\*", pattern, maxsplit=1)[0]
    words = head.replace("\\*", "*").split()
    return (words if head[-1:].isspace() else words[:-1]), False  # a word cut by the star: unknown


def might_match(pattern: str, command: str) -> bool:
    """Whether a deny or ask rule might apply to ``command`` once the words only known when the
    shell runs are (``git $X``, ``git {push,x}``, ``echo push | xargs git``, and a glob that may
    name a file: ``git pu?h``): a simple command (wrappers seen through) with such a word whose
    known words before it agree with the pattern's fixed words."""
    head = _pattern_head(pattern)
    try:
        parts = commands_run(command)[0] if head is not None else []
    except Unparsed:
        return False
    loose = "nullglob" in command or "nocaseglob" in command  # a glob may vanish or fold case
    for part in map(_past_assignments, parts):
        if head is not None and _might_start(part, *head, loose=loose):
            return True
    return False


def _might_start(part: Part, fixed: list[str], exact: bool, *, loose: bool) -> bool:
    """Whether ``part`` holds a word only known when it runs (or a glob), all known words before
    it agreeing with ``fixed`` (and none past it, for an ``exact`` pattern)."""
    for j, (word, literal) in enumerate(zip(part.words, part.literal, strict=True)):
        past = j >= len(fixed)  # the pattern's fixed words are behind (a wildcard's tail is not)
        glob = literal and _GLOB_WORD.search(word) is not None
        if not literal or (glob and (loose or past or fnmatchcase(fixed[j], word))):
            return not (exact and j > len(fixed))
        if past and exact:
            return False
        if not past and word != fixed[j]:
            return False
    return False


def command_rule_matches(pattern: str, command: str, *, every_part: bool) -> bool:
    """Whether a rule pattern applies to ``command``.

    ``every_part=False`` (deny and ask rules): the whole text or any of its simple commands
    matches, also with the variable assignments before its command name left out, and any
    command a wrapper among them runs (:func:`commands_run`).
    ``every_part=True`` (an allow rule on its own): an exact rule equal to the whole command, or
    every simple command matching with no output redirected into a file.
    """
    if not every_part:
        if _raw_matches(pattern, command):
            return True
        try:
            parts, _ = commands_run(command)
        except Unparsed:
            return False
        return any(part_matches(pattern, p) for p in parts)
    exact = not _has_wildcard(pattern) and not pattern.endswith(":*")
    if exact and pattern.replace("\\*", "*").strip() == command.strip():
        return True  # the very text a user allowed (a remembered command, compound or not)
    try:
        parts = parse_command(command)
    except Unparsed:
        return False
    return bool(parts) and all(not p.writes_file and part_matches(pattern, p) for p in parts)


def allowed_by_rules(patterns: Sequence[str], command: str) -> bool:
    """Whether every simple command of ``command`` is matched by one of ``patterns`` (not
    necessarily the same one) and none redirects output into a file."""
    try:
        parts = parse_command(command)
    except Unparsed:
        return False
    return bool(parts) and all(
        not p.writes_file and any(part_matches(pat, p) for pat in patterns) for p in parts
    )


def parses(command: str) -> bool:
    """Whether every command ``command`` runs is known with certainty: it parses, and the command
    each wrapper in it runs is determined (:func:`commands_run`)."""
    try:
        return commands_run(command)[1]
    except Unparsed:
        return False
