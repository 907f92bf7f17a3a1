"""The demo scenarios, one module per workspace, in the order the corpus cycles through
them, and the follow-up wording of the later rounds."""

from __future__ import annotations

from typing import Final

from worker.devtools.demo_corpus.model import Scenario
from worker.devtools.demo_corpus.scenarios.ml_pipeline import (
    ML_AIRFLOW,
    ML_DATALOADER,
    ML_POLARS,
    ML_PYDANTIC,
)
from worker.devtools.demo_corpus.scenarios.no_cwd import NOCWD_GIT, NOCWD_REGEX
from worker.devtools.demo_corpus.scenarios.payments import PAY_IDEMPOTENCY
from worker.devtools.demo_corpus.scenarios.payments_gateway import (
    PAY_RECONCILE,
    PAY_STRIPE,
    PAY_WEBHOOK,
)
from worker.devtools.demo_corpus.scenarios.web_shop import (
    SHOP_CART,
    SHOP_FLAKY_PARSER,
    SHOP_ROUTER,
    SHOP_SEARCH,
)

__all__ = ["FOLLOW_UP", "SCENARIOS"]

SCENARIOS: Final[tuple[Scenario, ...]] = (
    PAY_IDEMPOTENCY,
    SHOP_FLAKY_PARSER,
    ML_PYDANTIC,
    PAY_WEBHOOK,
    SHOP_CART,
    NOCWD_GIT,
    ML_DATALOADER,
    PAY_RECONCILE,
    SHOP_SEARCH,
    ML_AIRFLOW,
    PAY_STRIPE,
    SHOP_ROUTER,
    ML_POLARS,
    NOCWD_REGEX,
)

FOLLOW_UP: Final = {
    "en": ("Follow-up: ", "Picking this up again — ", "Regression check after the last deploy: "),
    "zh": ("接着上次的工作：", "回归测试又报了同样的问题：", "继续："),
}
