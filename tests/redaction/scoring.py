"""How a redaction is scored against a scanner's samples, and which of gitleaks' rules are
sessionq's to catch.

A true-positive sample counts as caught when no 8-character run of its secret is left
outside what was redacted, at every place the secret stands in the text (a name that
shares the secret's prefix, ``rubygemsToken=rubygems_...``, is no leak); a sample whose
secret the scanner does not name counts when anything in it is redacted. A
false-positive sample counts when anything in it is redacted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from tests.redaction.gitleaks import Sample

RUN = 8

SCOPE: dict[str, tuple[str, ...]] = {
    "cloud": (
        "aws-access-token",
        "gcp-api-key",
        "azure-ad-client-secret",
        "digitalocean-access-token",
        "digitalocean-pat",
        "digitalocean-refresh-token",
        "heroku-api-key-v2",
        "vault-service-token",
        "vault-batch-token",
    ),
    "vcs": (
        "github-pat",
        "github-oauth",
        "github-app-token",
        "github-refresh-token",
        "github-fine-grained-pat",
        "gitlab-cicd-job-token",
        "gitlab-deploy-token",
        "gitlab-feature-flag-client-token",
        "gitlab-feed-token",
        "gitlab-incoming-mail-token",
        "gitlab-kubernetes-agent-token",
        "gitlab-oauth-app-secret",
        "gitlab-pat",
        "gitlab-pat-routable",
        "gitlab-ptt",
        "gitlab-rrt",
        "gitlab-runner-authentication-token",
        "gitlab-runner-authentication-token-routable",
        "gitlab-scim-token",
    ),
    "chat": (
        "slack-app-token",
        "slack-bot-token",
        "slack-config-access-token",
        "slack-config-refresh-token",
        "slack-legacy-bot-token",
        "slack-legacy-token",
        "slack-legacy-workspace-token",
        "slack-user-token",
        "slack-webhook-url",
        "microsoft-teams-webhook",
        "telegram-bot-api-token",
        "discord-api-token",
    ),
    "payments": ("stripe-access-token",),
    "model-providers": (
        "openai-api-key",
        "anthropic-api-key",
        "anthropic-admin-api-key",
        "huggingface-access-token",
        "huggingface-organization-api-token",
        "perplexity-api-key",
        "cohere-api-token",
    ),
    "packages": ("npm-access-token", "pypi-upload-token", "rubygems-api-token"),
    "keys": ("private-key", "age-secret-key", "sendgrid-api-token"),
    "jwt": ("jwt",),
    "generic": ("generic-api-key", "curl-auth-header", "curl-auth-user"),
}
"""gitleaks rules sessionq covers, by kind: cloud keys, source-host tokens, chat and
webhook tokens, payment and model-provider keys, package tokens, private keys, JWTs and
generic assignments. Its other ~170 vendor rules are measured and reported as
``other``, not required."""

KIND_OF = {rule: kind for kind, rules in SCOPE.items() for rule in rules}


def kind_of(rule: str) -> str:
    return KIND_OF.get(rule, "other")


def exposed(text: str, secret: str, spans: Iterable[tuple[int, int]]) -> bool:
    """Whether a run of ``RUN`` characters of ``secret`` is left unredacted at one of the
    places it stands in ``text`` (``spans``: the redacted (start, end) offsets)."""
    covered = sorted(spans)
    at = text.find(secret)
    if at < 0:
        return True
    while at >= 0:
        end = at + len(secret)
        free, run = 0, 0
        for i in range(at, end):
            if any(s <= i < e for s, e in covered):
                run = 0
            else:
                run += 1
                free = max(free, run)
        if free >= min(RUN, len(secret)):
            return True
        at = text.find(secret, at + 1)
    return False


def caught(sample: Sample, spans: list[tuple[int, int]]) -> bool:
    """A true positive: its secret is redacted everywhere (or, unnamed, something is). A
    false positive: something in it is redacted."""
    if not sample.positive or sample.secret is None or sample.secret not in sample.text:
        return bool(spans)
    return not exposed(sample.text, sample.secret, spans)


@dataclass
class Tally:
    hit: int = 0
    total: int = 0

    @property
    def rate(self) -> float:
        return self.hit / self.total if self.total else 1.0

    def __str__(self) -> str:
        return f"{self.hit}/{self.total} ({100 * self.rate:.1f} %)"


@dataclass
class Score:
    """Recall by kind and by rule over the true positives; hits over the false positives."""

    recall: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_rule: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    false_positives: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))

    def add(self, sample: Sample, spans: list[tuple[int, int]]) -> None:
        hit = caught(sample, spans)
        if sample.positive:
            for tally in (self.recall[kind_of(sample.rule)], self.by_rule[sample.rule]):
                tally.total += 1
                tally.hit += hit
        else:
            tally = self.false_positives[kind_of(sample.rule)]
            tally.total += 1
            tally.hit += hit

    def in_scope(self) -> Tally:
        out = Tally()
        for kind, tally in self.recall.items():
            if kind != "other":
                out.hit += tally.hit
                out.total += tally.total
        return out

    def fp_total(self) -> Tally:
        return Tally(
            sum(t.hit for t in self.false_positives.values()),
            sum(t.total for t in self.false_positives.values()),
        )

    def missed_rules(self) -> dict[str, str]:
        return {r: str(t) for r, t in sorted(self.by_rule.items()) if t.hit < t.total}
