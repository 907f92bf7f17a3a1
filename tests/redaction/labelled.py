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
    "connection-string-password": (lambda r: pick(r, ALNUM, 16), "DATABASE_URL"),
    "authorization-header": (lambda r: pick(r, URLSAFE, 40), "AUTH"),
    "secret-assignment": (lambda r: pick(r, ALNUM + "!@#%^&*-_", 24), "DB_PASSWORD"),
}
KINDS = tuple(MAKERS)


@dataclass(frozen=True, slots=True)
class Labelled:
    kind: str
    secret: str  # the bytes that must not survive
    text: str  # the log text that carries it


def _assignment(kind: str, name: str, secret: str, rng: random.Random) -> str:
    if kind == "connection-string-password":
        return f"{name}=postgres://app_user:{secret}@db.internal:5432/orders"
    if kind == "authorization-header":
        return f'curl -s -H "Authorization: Bearer {secret}" https://api.internal/v1/me'
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
            if kind not in ("connection-string-password", "authorization-header")
            else json.dumps({"cmd": line})
        ),
        lambda: f"Set `{line}` in the deployment config.",
    ]
    if kind not in (
        "secret-assignment",
        "aws-secret-access-key",
        "connection-string-password",
        "authorization-header",
        "private-key",
    ):
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
