"""A labelled set of made-up secrets: every kind the rules cover, with the shape and the
entropy of the real thing (random characters of the right alphabet and length), none of
them real. ``labelled(rng, n)`` gives ``n`` of each kind, each placed in one of the
contexts secrets reach agent logs in (a prompt, ``cat .env``, a command line, JSON, the
escaped JSON of a tool call's arguments)."""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _jwt(rng: random.Random) -> str:
    head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64url(json.dumps({"sub": pick(rng, ALNUM, 12), "iat": rng.randrange(10**9)}).encode())
    return f"{head}.{body}.{_b64url(rng.randbytes(32))}"


def _pem(rng: random.Random) -> str:
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", ""])
    lines = [pick(rng, B64, 64) for _ in range(rng.randrange(4, 12))]
    return (
        f"-----BEGIN {kind}PRIVATE KEY-----\n"
        + "\n".join(lines)
        + (f"\n-----END {kind}PRIVATE KEY-----")
    )


def _assigned(rng: random.Random) -> str:
    """A value assigned by name: a random key, a session token of 400-1,000 base64
    characters, or base64 starting with a slash."""
    shape = rng.randrange(3)
    if shape == 0:
        return pick(rng, ALNUM + "!@#%^&*-_", 24)
    if shape == 1:
        return base64.b64encode(rng.randbytes(rng.randrange(300, 750))).decode()
    return "/" + pick(rng, B64, 43) + "="


WORDS = ("very", "secret", "hunter", "river", "stone", "blue", "tiger", "maple", "orbit")


def _password(rng: random.Random) -> str:
    """A password a person chose (words, a digit, a symbol) or a generated one; either
    holds a digit or a symbol (a password of letters only is not detected)."""
    if rng.random() < 0.5:
        words = [rng.choice(WORDS) for _ in range(rng.randrange(2, 4))]
        words[0] += rng.choice(string.digits)
        return rng.choice(["-", "_", "!", "#"]).join(words)
    return pick(rng, ALNUM + "!@#$%^&*", rng.randrange(10, 20)) + rng.choice(string.digits)


HEADERS = ("X-API-Key", "api-key", "X-Auth-Token", "PRIVATE-TOKEN", "X-Vault-Token")


# kind -> (make a secret, the name it is assigned to in NAME=value contexts)
MAKERS: dict[str, tuple[Callable[[random.Random], str], str]] = {
    "aws-access-key-id": (
        lambda r: "AKIA" + pick(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        "AWS_ACCESS_KEY_ID",
    ),
    "aws-secret-access-key": (lambda r: pick(r, B64, 40), "AWS_SECRET_ACCESS_KEY"),
    "gcp-api-key": (lambda r: "AIza" + pick(r, URLSAFE, 35), "GOOGLE_API_KEY"),
    "azure-storage-key": (lambda r: "AccountKey=" + pick(r, B64, 86) + "==", "AZURE_STORAGE"),
    "azure-ad-client-secret": (
        lambda r: pick(r, ALNUM, 3) + r.choice(string.digits) + "Q~" + pick(r, ALNUM + "_~.-", 34),
        "AZURE_CLIENT_SECRET",
    ),
    "github-token": (
        lambda r: r.choice(["ghp_", "gho_", "ghs_"]) + pick(r, ALNUM, 36),
        "GITHUB_TOKEN",
    ),
    "github-fine-grained-token": (
        lambda r: "github_pat_" + pick(r, ALNUM, 22) + "_" + pick(r, ALNUM, 59),
        "GH_TOKEN",
    ),
    "gitlab-token": (lambda r: "glpat-" + pick(r, URLSAFE, 20), "GITLAB_TOKEN"),
    "slack-token": (
        lambda r: (
            r.choice(["xoxb-", "xoxp-"])
            + pick(r, string.digits, 12)
            + "-"
            + pick(r, string.digits, 13)
            + "-"
            + pick(r, ALNUM, 24)
        ),
        "SLACK_BOT_TOKEN",
    ),
    "slack-webhook": (
        lambda r: (
            "https://hooks.slack.com/services/T"
            + pick(r, ALNUM, 8)
            + "/B"
            + pick(r, ALNUM, 10)
            + "/"
            + pick(r, ALNUM, 24)
        ),
        "SLACK_WEBHOOK",
    ),
    "stripe-key": (
        lambda r: r.choice(["sk_live_", "rk_live_"]) + pick(r, ALNUM, r.choice([24, 99])),
        "STRIPE_KEY",
    ),
    "stripe-test-key": (
        lambda r: "sk_test_" + pick(r, ALNUM, r.choice([24, 99])),
        "STRIPE_TEST_KEY",
    ),
    "openai-api-key": (
        lambda r: (
            r.choice(["sk-", "sk-proj-"]) + pick(r, ALNUM, 20) + "T3BlbkFJ" + pick(r, ALNUM, 20)
        ),
        "OPENAI_API_KEY",
    ),
    "openai-project-key": (lambda r: "sk-proj-" + pick(r, URLSAFE, 120), "OPENAI_API_KEY"),
    "anthropic-api-key": (
        lambda r: "sk-ant-api03-" + pick(r, URLSAFE, 93) + "AA",
        "ANTHROPIC_API_KEY",
    ),
    "deepseek-api-key": (lambda r: "sk-" + pick(r, HEX, 32), "DEEPSEEK_API_KEY"),
    "huggingface-token": (lambda r: "hf_" + pick(r, string.ascii_letters, 34), "HF_TOKEN"),
    "npm-token": (lambda r: "npm_" + pick(r, ALNUM, 36), "NPM_TOKEN"),
    "pypi-token": (lambda r: "pypi-AgEIcHlwaS5vcmc" + pick(r, URLSAFE, 120), "PYPI_TOKEN"),
    "sendgrid-api-key": (
        lambda r: "SG." + pick(r, URLSAFE, 22) + "." + pick(r, URLSAFE, 43),
        "SENDGRID_API_KEY",
    ),
    "private-key": (_pem, "PRIVATE_KEY"),
    "jwt": (_jwt, "SESSION_JWT"),
    "connection-string-password": (lambda r: pick(r, ALNUM + "!#$%^&*~", 16), "DATABASE_URL"),
    "authorization-header": (lambda r: pick(r, URLSAFE, 40), "AUTH"),
    "api-key-header": (lambda r: pick(r, ALNUM, 32), "X-API-Key"),
    "secret-assignment": (_assigned, "AWS_SESSION_TOKEN"),
    "password-assignment": (_password, "DB_PASSWORD"),
}
BY_NAME_ONLY = (
    "secret-assignment",
    "password-assignment",
    "aws-secret-access-key",
    "connection-string-password",
    "authorization-header",
    "api-key-header",
    "private-key",
)
"""Kinds found by their context (a name, a URL, a header), never bare in prose."""
KINDS = tuple(MAKERS)


@dataclass(frozen=True, slots=True)
class Labelled:
    kind: str
    secret: str  # the bytes that must not survive
    text: str  # the log text that carries it


def _assignment(kind: str, name: str, secret: str, rng: random.Random) -> str:
    if kind == "connection-string-password":
        if rng.random() < 0.5:
            return f"{name}=redis://:{secret}@cache.internal:6379/0"
        return f"{name}=postgres://app_user:{secret}@db.internal:5432/orders"
    if kind == "authorization-header":
        return f'curl -s -H "Authorization: Bearer {secret}" https://api.internal/v1/me'
    if kind == "api-key-header":
        q = rng.choice(["'", '"'])
        return f"curl -s -H {q}{rng.choice(HEADERS)}: {secret}{q} https://api.internal/v1/items"
    if kind == "private-key":
        return secret
    quote = rng.choice(["", "'", '"'])
    return f"{rng.choice(['export ', ''])}{name}={quote}{secret}{quote}"


def _contexts(kind: str, name: str, secret: str, rng: random.Random) -> str:
    line = _assignment(kind, name, secret, rng)
    shapes: list[Callable[[], str]] = [
        lambda: f"$ cat .env\nNODE_ENV=production\n{line}\nPORT=8080\n",
        lambda: f"Please use this, it should work now:\n\n{line}\n\nthanks",
        lambda: json.dumps({"command": f"cat .env && echo done\n{line}\n", "timeout": 30}),
        lambda: (
            json.dumps({"env": {name: secret}, "cwd": "/srv/app"})
            if kind not in ("connection-string-password", "authorization-header", "api-key-header")
            else json.dumps({"cmd": line})
        ),
        lambda: f"Set `{line}` in the deployment config.",
    ]
    if kind not in BY_NAME_ONLY:
        # a token is found by its shape alone, also bare in prose
        shapes.append(lambda: f"the token {secret} was revoked yesterday")
    return rng.choice(shapes)()


def labelled(rng: random.Random, per_kind: int) -> list[Labelled]:
    out: list[Labelled] = []
    for kind, (make, name) in MAKERS.items():
        for _ in range(per_kind):
            secret = make(rng)
            text = _contexts(kind, name, secret, rng)
            # A webhook's secret is its path: the host part is public text.
            out.append(Labelled(kind, secret.split("/services/")[-1], text))
    return out


def _sts_token(rng: random.Random, n: int) -> str:
    """An STS session token's shape: base64 of ``n`` random bytes (real ones are 400 to
    1,000 characters)."""
    return base64.b64encode(rng.randbytes(n)).decode()


def planted(rng: random.Random) -> list[Labelled]:
    """The shapes an attacker's pass planted and found shown and searchable: values past
    200 characters, URL passwords holding reserved characters or with no user, quoted
    values holding ``$``, base64 starting with a slash, plain passwords assigned by name,
    and API keys in command-line headers. Each is made up; its text is the line the log
    carries."""
    session = _sts_token(rng, rng.randrange(300, 750))
    sts = _sts_token(rng, 600)
    slash = "/" + pick(rng, B64, 43) + "="
    key = pick(rng, HEX + "ghijklmnopqrstuvwxyz", 32)
    sts_json = json.dumps(
        {
            "Credentials": {
                "AccessKeyId": "ASIA" + pick(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
                "SessionToken": sts,
                "Expiration": "2024-05-01T12:00:00Z",
            }
        },
        indent=4,
    )
    items = [
        ("secret-assignment", session, f"export AWS_SESSION_TOKEN={session}"),
        ("secret-assignment", sts, sts_json),
        (
            "connection-string-password",
            "p@ss!w#rd$1",
            "DATABASE_URL=postgres://admin:p@ss!w#rd$1@db.example.com:5432/app",
        ),
        (
            "connection-string-password",
            "Zq8vN3rT6yWp1sLk",
            "redis-cli -u redis://:Zq8vN3rT6yWp1sLk@cache.internal:6379/0 ping",
        ),
        ("connection-string-password", "s3cr$t!Pw#42", "mysql://root:s3cr$t!Pw#42@127.0.0.1/shop"),
        ("password-assignment", "Xk9$mQ2#vL7pR4wZ", "PASSWORD='Xk9$mQ2#vL7pR4wZ'"),
        ("secret-assignment", slash, f"SECRET_KEY={slash}"),
        ("password-assignment", "hunter2-very-secret", "DB_PASSWORD=hunter2-very-secret"),
        ("password-assignment", "P@ssw0rd!2024", 'db:\n  password: "P@ssw0rd!2024"\n'),
        ("api-key-header", key, f'curl -s -H "X-API-Key: {key}" https://api.example.com/v1/items'),
        ("api-key-header", key[::-1], f"curl -H 'api-key: {key[::-1]}' https://x.openai.azure.com"),
        (
            "api-key-header",
            key.upper(),
            f'curl --header "X-Auth-Token: {key.upper()}" https://cloud.example.com/v3/servers',
        ),
    ]
    return [Labelled(kind, secret, text) for kind, secret, text in items]
