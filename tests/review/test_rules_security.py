"""Security rules: positive and negative cases for each."""

from __future__ import annotations

import pytest

from agentscope_teams.review import Severity

from .helpers import analyze, hits


def test_eval_and_exec_on_runtime_values_are_critical() -> None:
    src = """
    def calc(expr, code, ns):
        value = eval(expr)
        exec(code, ns)
        return value
    """
    found = [(f.line, f.rule, f.severity) for f in analyze(src)]
    assert found == [(3, "eval-call", Severity.CRITICAL), (4, "exec-call", Severity.CRITICAL)]


def test_eval_lookalikes_are_fine() -> None:
    src = """
    import ast
    def f(model, text):
        model.eval()
        eval("1 + 2")
        return ast.literal_eval(text)
    """
    assert analyze(src) == []
    shadowed = """
    def eval(x):
        return x
    eval(user_input)
    """
    assert hits(shadowed, "eval-call") == []


@pytest.mark.parametrize(
    "call",
    [
        "subprocess.run(cmd, shell=True)",
        "subprocess.check_output(f'ls {path}', shell=True)",
        "sp.call('rm ' + path, shell=True)",
        "Popen(args=cmd, shell=True)",
        "os.system('rm -rf ' + path)",
        "os.popen(f'du -sh {path}')",
    ],
)
def test_shell_commands_built_at_runtime(call: str) -> None:
    src = f"""
    import os, subprocess
    import subprocess as sp
    from subprocess import Popen
    def f(cmd, path):
        {call}
    """
    assert hits(src, "shell-injection") == [6]


@pytest.mark.parametrize(
    "call",
    [
        "subprocess.run(['ls', '-l', path])",
        "subprocess.run(cmd)",
        "subprocess.run('ls -l', shell=True)",
        "subprocess.run(cmd, shell=False)",
        "os.system('clear')",
    ],
)
def test_shell_commands_that_are_fine(call: str) -> None:
    src = f"""
    import os, subprocess
    def f(cmd, path):
        {call}
    """
    assert analyze(src) == []


@pytest.mark.parametrize(
    ("call", "bad"),
    [
        ("yaml.load(fh)", True),
        ("yaml.load(fh, Loader=yaml.Loader)", True),
        ("yaml.load(fh, Loader=yaml.FullLoader)", True),
        ("yaml.unsafe_load(fh)", True),
        ("yaml.load_all(fh, Loader=Loader)", True),
        ("yaml.load(fh, Loader=yaml.SafeLoader)", False),
        ("yaml.load(fh, yaml.CSafeLoader)", False),
        ("yaml.load(fh, Loader=SafeLoader)", False),
        ("yaml.safe_load(fh)", False),
        ("yaml.load(fh, Loader=loader)", False),
    ],
)
def test_yaml_load(call: str, bad: bool) -> None:
    src = f"""
    import yaml
    from yaml import Loader, SafeLoader
    def f(fh, loader):
        return {call}
    """
    assert hits(src, "yaml-unsafe-load") == ([5] if bad else [])


def test_unsafe_deserialization() -> None:
    src = """
    import json, marshal, pickle
    from pickle import load as unpickle
    def f(blob, fh):
        a = pickle.loads(blob)
        b = unpickle(fh)
        c = marshal.loads(blob)
        d = json.loads(blob)
        return pickle.dumps((a, b, c, d))
    """
    assert hits(src, "unsafe-deserialization") == [5, 6, 7]


@pytest.mark.parametrize(
    ("line", "severity"),
    [
        ("password = 'hunter2'", Severity.MEDIUM),
        ("DB_PASSWORD: str = 's3cr3t-pw'", Severity.MEDIUM),
        ("self.api_key = 'a8f5f167f44f4964e6c998dee827110c'", Severity.MEDIUM),
        ("client = connect(user='app', password='hunter2')", Severity.MEDIUM),
        ("cfg = {'secret_key': 'f00dfeedbeef'}", Severity.MEDIUM),
        ("ok = password == 'letmein'", Severity.MEDIUM),
        ("OPENAI_KEY = 'sk-proj-4fR9kQ2mXz7LpW1sT8vB3nY6'", Severity.HIGH),
        ("bucket = 'AKIA4HXQ7KZL2MWP9RTB'", Severity.HIGH),
        ("auth = 'token ghp_R7mK2xQ9vL4nT8pW1sZ6yB3cD5fH0jA2gE7u'", Severity.HIGH),
    ],
)
def test_hardcoded_secrets(line: str, severity: Severity) -> None:
    (f,) = analyze(f"def f(self, password):\n    {line}\n")
    assert (f.line, f.rule, f.severity) == (2, "hardcoded-secret", severity)


def test_secret_default_argument() -> None:
    assert hits("def login(user, password='admin123'):\n    pass\n", "hardcoded-secret") == [1]


@pytest.mark.parametrize(
    "line",
    [
        "password = os.environ['DB_PASSWORD']",
        "password = os.getenv('DB_PASSWORD', '')",
        "password = ''",
        "token = '<paste your token>'",
        "SECRET_KEY = 'changeme'",
        "api_key = '${API_KEY}'",
        "password = 'DB_PASSWORD'",
        "API_KEY = 'api_key'",
        "token_url = 'https://auth.example.org/token'",
        "password_field = 'passwd'",
        "max_tokens = '512'",
        "aws = 'AKIAIOSFODNN7EXAMPLE'",
        "token = '********'",
        "password = ':****'",
        "client = connect(user='app', password='test')",
        "_DEFAULT_TOKEN = '_sa_default'",
        "word_token = r'[^\\W\\d]\\w*'",
        "ok = token == 'async'",
        "PASSWORD_PROMPT = 'Password: '",
    ],
)
def test_not_secrets(line: str) -> None:
    assert analyze(f"import os\n{line}\n") == []


def test_key_in_docstring_is_not_reported() -> None:
    src = '"""Set the key, e.g. AKIA4HXQ7KZL2MWP9RTB, in the environment."""\n'
    assert analyze(src) == []


@pytest.mark.parametrize(
    "call",
    [
        'cur.execute("SELECT * FROM t WHERE name LIKE \'%" + name + "%\'")',
        "cur.execute(f'SELECT * FROM t WHERE id IN ({name})')",
        "cur.execute('SELECT * FROM t LIMIT ' + name)",
        "cur.execute('SELECT * FROM t WHERE a = %(a)s' % {'a': name})",
        "cur.execute('UPDATE t SET qty = {} WHERE id = 1'.format(name))",
        "cur.execute(f'INSERT INTO t (a, b) VALUES (1, {name})')",
    ],
)
def test_sql_value_positions(call: str) -> None:
    assert hits(f"def f(cur, name):\n    {call}\n", "sql-injection") == [2]


def test_sql_injection_inline_and_via_variables() -> None:
    src = """
    def f(cur, uid, name, category):
        cur.execute(f"SELECT * FROM users WHERE id = {uid}")
        q = "SELECT * FROM users WHERE name = '%s'" % name
        cur.execute(q)
        query = "DELETE FROM items WHERE name = '" + name + "'"
        sql = "SELECT * FROM items WHERE 1 = 1"
        sql += " AND category = '{}'".format(category)
        cur.executemany("INSERT INTO t VALUES ({})".format(name), [])
        return query, sql
    """
    assert hits(src, "sql-injection") == [3, 4, 6, 8, 9]


@pytest.mark.parametrize(
    "body",
    [
        "cur.execute('SELECT * FROM users WHERE id = %s', (uid,))",
        "cur.execute('SELECT * FROM users WHERE id = ?', [uid])",
        "cur.execute(f'SELECT * FROM users LIMIT {int(uid)}')",
        "cur.execute('SELECT * FROM ' + TABLE + ' WHERE id = ?', (uid,))",
        'cur.execute(f\'SELECT * FROM t WHERE id IN ({", ".join("?" * len(ids))})\', ids)',
        "marks = ','.join('?' for _ in ids)\n    cur.execute(f'DELETE FROM t WHERE id IN ({marks})', ids)",
        "message = f'Please select {uid} items from the list'",
        "query = f'?page={uid}'\n    query += f'&size={uid}'",
        "sql = 'SELECT * FROM t'\n    sql += ' ORDER BY id'\n    cur.execute(sql)",
        "cur.execute(f'SELECT {column} FROM t WHERE id = ?', (uid,))",
        "cur.execute(f'PRAGMA table_info({uid})')",
        "query = 'SAVEPOINT {};'.format(uid)\n    cur.execute(query)",
        "sql = 'CREATE VIEW %s AS SELECT * FROM %s' % (uid, ids)",
        "cur.execute('DELETE FROM audit WHERE age > %d' % int(uid))",
    ],
)
def test_sql_that_is_fine(body: str) -> None:
    assert analyze(f"def f(cur, uid, ids):\n    {body}\n") == []


@pytest.mark.parametrize(
    ("call", "bad"),
    [
        ("requests.get(url, verify=False)", True),
        ("session.post(url, json={}, verify=False)", True),
        ("httpx.Client(verify=False)", True),
        ("requests.get(url, verify=True)", False),
        ("requests.get(url)", False),
        ("checker.configure(verify=False)", False),
    ],
)
def test_tls_verification_disabled(call: str, bad: bool) -> None:
    src = f"import httpx, requests\ndef f(session, checker, url):\n    return {call}\n"
    assert hits(src, "tls-verify-disabled") == ([3] if bad else [])


def test_tls_finding_points_at_the_verify_argument() -> None:
    src = "def f(s, url):\n    return s.get(\n        url,\n        verify=False,\n    )\n"
    assert hits(src, "tls-verify-disabled") == [4]


@pytest.mark.parametrize(
    ("call", "bad"),
    [
        ("hashlib.md5(password.encode()).hexdigest()", True),
        ("hashlib.sha1((salt + user.password).encode()).hexdigest()", True),
        ("hashlib.new('MD5', pwd.encode()).hexdigest()", True),
        ("hashlib.md5(data).hexdigest()", False),
        ("hashlib.sha256(password.encode()).hexdigest()", False),
        ("hashlib.md5(password.encode(), usedforsecurity=False).hexdigest()", False),
    ],
)
def test_weak_password_hash(call: str, bad: bool) -> None:
    src = f"import hashlib\ndef f(password, pwd, salt, user, data):\n    return {call}\n"
    assert hits(src, "weak-password-hash") == ([3] if bad else [])
