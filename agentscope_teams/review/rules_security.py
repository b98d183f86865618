"""Security rules: code execution, shell injection, unsafe deserialization, TLS, weak password hashes.

SQL injection lives in :mod:`.rules_sql` and hard-coded secrets in :mod:`.rules_secrets`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from . import rules_secrets, rules_sql
from ._astutil import ModuleContext, is_constant_expr, keyword, name_words, str_constant
from .findings import Finding, Severity

SUBPROCESS = {f"subprocess.{n}" for n in ("run", "call", "check_call", "check_output", "Popen")}
ALWAYS_SHELL = {
    "os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
    "asyncio.create_subprocess_shell",
}  # fmt: skip
DESERIALIZERS = {
    f"{mod}.{fn}"
    for mod in ("pickle", "_pickle", "cPickle", "dill", "marshal")
    for fn in ("load", "loads", "Unpickler")
}
UNSAFE_YAML_LOADERS = {
    f"yaml.{n}"
    for n in ("Loader", "UnsafeLoader", "FullLoader", "CLoader", "CFullLoader", "CUnsafeLoader")
}
HTTP_METHODS = {"get", "post", "put", "patch", "delete", "head", "options", "request", "stream"}
PASSWORD_WORDS = {"password", "passwd", "pwd", "passphrase"}


def check(ctx: ModuleContext) -> Iterator[Finding]:
    """All security findings of a module."""
    module_names = set(ctx.bindings(ctx.tree))
    for node in ctx.nodes:
        if isinstance(node, ast.Call):
            yield from _check_call(ctx, node, module_names)
    yield from rules_sql.check(ctx)
    yield from rules_secrets.check(ctx)


def _sec(ctx: ModuleContext, node: ast.AST, rule: str, sev: Severity, msg: str) -> Finding:
    return ctx.finding(node, "security", rule, sev, msg)


def _check_call(ctx: ModuleContext, node: ast.Call, module_names: set[str]) -> Iterator[Finding]:
    name = ctx.qualname(node.func)
    first = node.args[0] if node.args else None
    if isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec"):
        if node.func.id not in module_names and first is not None and str_constant(first) is None:
            yield _code_execution(ctx, node, node.func.id)
    elif name in SUBPROCESS:
        shell = keyword(node, "shell")
        cmd = first if first is not None else keyword(node, "args")
        shell_on = isinstance(shell, ast.Constant) and shell.value is True
        if shell_on and cmd is not None and not is_constant_expr(cmd):
            yield _shell(ctx, node, f"{name}(..., shell=True)")
    elif name in ALWAYS_SHELL:
        if first is not None and not is_constant_expr(first):
            yield _shell(ctx, node, f"{name}()")
    elif name in ("yaml.load", "yaml.load_all"):
        loader = keyword(node, "Loader") or (node.args[1] if len(node.args) > 1 else None)
        if loader is None or ctx.qualname(loader) in UNSAFE_YAML_LOADERS:
            yield _yaml(ctx, node, name)
    elif name in ("yaml.unsafe_load", "yaml.unsafe_load_all"):
        yield _yaml(ctx, node, name)
    elif name in DESERIALIZERS:
        yield _sec(
            ctx, node, "unsafe-deserialization", Severity.HIGH,
            f"{name}() can run arbitrary code while decoding its input; an attacker who controls "
            "the bytes owns the process. Use json (or another data-only format) with validation, or "
            "sign the payload with hmac and verify the signature before loading.",
        )  # fmt: skip
    elif name in ("hashlib.md5", "hashlib.sha1", "hashlib.new"):
        yield from _weak_hash(ctx, node, name)
    yield from _tls(ctx, node, name)


def _code_execution(ctx: ModuleContext, node: ast.Call, fn: str) -> Finding:
    fix = (
        "parse the input instead (ast.literal_eval for literals, json.loads for data, or a small "
        "table of allowed operations)"
        if fn == "eval"
        else "call explicit functions from an allow-list (a dict of name -> function) instead"
    )
    return _sec(
        ctx, node, f"{fn}-call", Severity.CRITICAL,
        f"{fn}() runs its argument as Python code: anyone who controls that value can run "
        f"arbitrary code in this process; {fix}.",
    )  # fmt: skip


def _shell(ctx: ModuleContext, node: ast.Call, what: str) -> Finding:
    return _sec(
        ctx, node, "shell-injection", Severity.HIGH,
        f"{what} passes a command built at runtime to the shell: metacharacters in it (; | $()) "
        "run extra commands. Call subprocess.run([...]) with an argument list and no shell=True.",
    )  # fmt: skip


def _yaml(ctx: ModuleContext, node: ast.Call, name: str) -> Finding:
    return _sec(
        ctx, node, "yaml-unsafe-load", Severity.HIGH,
        f"{name}() without a safe Loader can construct arbitrary Python objects from the document "
        "(code execution on untrusted YAML). Use yaml.safe_load() or Loader=yaml.SafeLoader.",
    )  # fmt: skip


def _weak_hash(ctx: ModuleContext, node: ast.Call, name: str) -> Iterator[Finding]:
    data: list[ast.expr] = node.args[:1]
    algo = name.rsplit(".", 1)[1]
    if name == "hashlib.new":
        algo = (str_constant(node.args[0]) or "").lower() if node.args else ""
        data = node.args[1:2]
    data += [k.value for k in node.keywords if k.arg in ("data", "string")]
    opt_out = keyword(node, "usedforsecurity")
    if algo not in ("md5", "sha1") or (
        isinstance(opt_out, ast.Constant) and opt_out.value is False
    ):
        return
    if any(_mentions_password(d) for d in data):
        yield _sec(
            ctx, node, "weak-password-hash", Severity.MEDIUM,
            f"{algo.upper()} is a fast, unsalted hash: stored password hashes are cracked offline "
            "in seconds. Use a slow salted KDF (hashlib.scrypt, hashlib.pbkdf2_hmac, bcrypt, argon2).",
        )  # fmt: skip


def _mentions_password(node: ast.expr) -> bool:
    for n in ast.walk(node):
        ident = (
            n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        )
        if ident and PASSWORD_WORDS & set(name_words(ident)):
            return True
    return False


def _tls(ctx: ModuleContext, node: ast.Call, name: str | None) -> Iterator[Finding]:
    verify = keyword(node, "verify")
    if not (isinstance(verify, ast.Constant) and verify.value is False):
        return
    http_lib = name is not None and name.split(".")[0] in ("requests", "httpx")
    method = isinstance(node.func, ast.Attribute) and node.func.attr in HTTP_METHODS
    if http_lib or method:
        yield _sec(
            ctx, verify, "tls-verify-disabled", Severity.MEDIUM,
            "verify=False turns off TLS certificate checks: anyone on the network path can read and "
            "change this traffic. Remove it, or pass verify='/path/to/ca-bundle.pem'.",
        )  # fmt: skip
