"""A realistic, deterministic demo corpus of dsh session logs (``sessionq demo-corpus``).

``write_demo_corpus(out, sessions, seed)`` lays the logs out as a dsh persistence root,
``<out>/--<project key>--/<encoded session id>/session.jsonl`` (``_no-cwd`` for sessions
without a workspace), so ``discover`` and ``implied_session_id`` accept them exactly as
they accept a real ``$DSH_HOME/sessions``. The content is coding work in three
workspaces plus one session without a cwd, in English and Chinese: turns and steps,
streamed ``assistant/chunk`` events (some packed into ``text-chunks`` rows, as dsh
writes them), ``tool/call`` + ``tool/result`` pairs, ``todo/write``, ``session/title``
events, subagent children (``parentSession``, ``origin: "subagent"``,
``delegationDepth: 1``) and one compaction (an ``assistant/message`` whose
``{"op": "replace"}`` surfaceOp shadows the earlier conversation and cites every
shadowed node in ``sourceEventSeqs``).

Everything random (ids, times, how deltas are split and packed, follow-up wording) comes
from one ``random.Random(seed)``: the same ``(sessions, seed)`` writes byte-identical
files. A ``.sessionq-demo.json`` summary beside the project folders marks the directory
as a demo root (a later run may rewrite it; a non-empty directory without it is
refused) and lets ``example_calls`` build ready-to-paste calls with real session ids.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shlex
import shutil
import sys
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

__all__ = [
    "MIN_SESSIONS",
    "DemoSession",
    "DemoSummary",
    "ExampleCall",
    "cli_main",
    "encode_segment",
    "example_calls",
    "example_curls",
    "load_summary",
    "main",
    "print_examples",
    "project_key",
    "write_demo_corpus",
]

MIN_SESSIONS: Final = 8
SUMMARY_FILE: Final = ".sessionq-demo.json"
NO_CWD_DIR: Final = "_no-cwd"
PROVIDER: Final = "deepseek-official"
MODEL: Final = "deepseek-v4-flash"
BASE_TIME_MS: Final = int(datetime(2026, 3, 2, 1, 30, tzinfo=UTC).timestamp() * 1000)

PAYMENTS: Final = "/home/dev/payments-api"
WEB_SHOP: Final = "/home/dev/web-shop"
ML: Final = "/home/dev/ml-pipeline"

_SEGMENT_SAFE: Final = re.compile(r"[A-Za-z0-9._-]")
_CJK: Final = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_TITLE_TOKEN: Final = re.compile(r"[A-Za-z0-9_./-]+|\s+|.")


# ---- on-disk names ------------------------------------------------------------------------------
def _escape_units(char: str) -> str:
    units = char.encode("utf-16-le", errors="surrogatepass")
    return "".join(
        f"~{int.from_bytes(units[i : i + 2], 'little'):04X}" for i in range(0, len(units), 2)
    )


def encode_segment(value: str) -> str:
    """dsh's ``encodeSegment``, the inverse of ``indexer.logs.roots.decode_segment``.

    ``[A-Za-z0-9._-]`` stay literal, every other UTF-16 code unit becomes ``~XXXX``
    (upper-case hex); ``.`` and ``..`` are escaped whole so they never name a directory
    link.
    """
    if value in (".", ".."):
        return "".join(_escape_units(c) for c in value)
    return "".join(c if _SEGMENT_SAFE.fullmatch(c) else _escape_units(c) for c in value)


def project_key(cwd: str | None) -> str:
    """dsh's (lossy, human-readable) project folder name for ``cwd``.

    Separator runs (``/``, ``\\``, ``:``) become one ``-``, ``[A-Za-z0-9._-]`` stay, other
    characters are ``~XXXX`` escaped; leading dashes are dropped and the result is
    wrapped in ``--…--``. Sessions without a cwd live in ``_no-cwd``.
    """
    if cwd is None:
        return NO_CWD_DIR
    out: list[str] = []
    in_separator = False
    for char in cwd:
        if char in "/\\:":
            if not in_separator:
                out.append("-")
            in_separator = True
            continue
        in_separator = False
        out.append(char if _SEGMENT_SAFE.fullmatch(char) else _escape_units(char))
    body = "".join(out).lstrip("-") or "root"
    return f"--{body[:251]}--"


# ---- scenario content ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolUse:
    name: str
    arguments: dict[str, Any]
    result: str
    error: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class Step:
    say: str = ""
    tools: tuple[ToolUse, ...] = ()
    think: str = ""


@dataclass(frozen=True, slots=True)
class Delegation:
    description: str
    prompt: str
    steps: tuple[Step, ...]
    report: str
    announce: str


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    steps: tuple[Step, ...]
    todos: tuple[tuple[str, str], ...] = ()
    delegate: Delegation | None = None
    compact: str | None = None


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    cwd: str | None
    lang: str
    title: str
    turns: tuple[Turn, ...]


def _t(
    name: str, arguments: dict[str, Any], result: str, error: tuple[str, str] | None = None
) -> ToolUse:
    return ToolUse(name, arguments, result, error)


_CALLBACK_BEFORE = """\
42  async def handle_alipay_notify(request: Request) -> Response:
43      params = dict(await request.form())
44      if not alipay.verify(params):
45          return PlainTextResponse("fail")
46      order = await Order.get(out_trade_no=params["out_trade_no"])
47      if order.status != OrderStatus.PAID:
48          order.status = OrderStatus.PAID
49          await order.save()
50          await ledger.credit(order.merchant_id, order.amount, ref=order.out_trade_no)
51      return PlainTextResponse("success")"""

_PAY_IDEMPOTENCY = Scenario(
    key="pay-idempotency",
    cwd=PAYMENTS,
    lang="zh",
    title="修复支付回调的幂等性问题",
    turns=(
        Turn(
            user=(
                "线上发现支付宝异步回调偶尔会重复入账，同一个 out_trade_no 被记了两次。"
                "帮我修复支付回调的幂等性问题，先看看 app/payments/callback.py。"
            ),
            todos=(
                ("定位重复入账的原因", "in_progress"),
                ("给支付回调加幂等键", "pending"),
                ("补充并发回调的测试", "pending"),
            ),
            steps=(
                Step(
                    think="Two notifications for the same trade may race between the status "
                    "check and ledger.credit; read the handler first.",
                    say="先看一下回调处理的代码。",
                    tools=(
                        _t(
                            "grep",
                            {"pattern": "def handle_.*_notify", "path": "app/payments"},
                            "app/payments/callback.py:42:async def handle_alipay_notify("
                            "request: Request) -> Response:",
                        ),
                        _t(
                            "read",
                            {"path": "app/payments/callback.py", "offset": 42, "limit": 10},
                            _CALLBACK_BEFORE,
                        ),
                    ),
                ),
                Step(
                    say=(
                        "问题在于检查订单状态和入账之间没有加锁：两个并发回调都会读到 "
                        "status=PENDING，然后各自调用 ledger.credit。我用数据库唯一约束作为"
                        "幂等键，保证同一笔回调只入账一次。"
                    ),
                    tools=(
                        _t(
                            "write",
                            {
                                "path": "migrations/0042_payment_notifications.sql",
                                "content": "CREATE TABLE payment_notifications (\n"
                                "  channel text NOT NULL,\n  out_trade_no text NOT NULL,\n"
                                "  notify_id text NOT NULL,\n"
                                "  PRIMARY KEY (channel, out_trade_no, notify_id)\n);\n",
                            },
                            "Wrote 6 lines to migrations/0042_payment_notifications.sql",
                        ),
                        _t(
                            "edit",
                            {
                                "path": "app/payments/callback.py",
                                "old": "    if order.status != OrderStatus.PAID:",
                                "new": "    async with db.transaction():\n"
                                '        await PaymentNotification.create(channel="alipay", '
                                'out_trade_no=order.out_trade_no, notify_id=params["notify_id"])',
                            },
                            "Applied 1 edit to app/payments/callback.py",
                        ),
                    ),
                ),
                Step(
                    tools=(
                        _t(
                            "bash",
                            {"command": "pytest tests/payments/test_callback.py -q"},
                            "........F..\nFAILED tests/payments/test_callback.py::"
                            "test_duplicate_notify_is_ignored - asyncpg.exceptions."
                            "UniqueViolationError: duplicate key value violates unique "
                            'constraint "payment_notifications_pkey"\n'
                            "1 failed, 10 passed in 1.92s",
                        ),
                    ),
                ),
                Step(
                    say="重复回调时唯一约束冲突被当成异常抛了出去。改成捕获 UniqueViolationError "
                    "后直接返回 success。",
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "app/payments/callback.py",
                                "old": "    async with db.transaction():",
                                "new": "    try:\n        async with db.transaction():",
                            },
                            "Applied 1 edit to app/payments/callback.py",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest tests/payments -q"},
                            "...........................\n27 passed in 3.10s",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "已修复支付回调的幂等性问题：\n"
                        "- 新增 payment_notifications 表，(channel, out_trade_no, notify_id) "
                        "主键作为幂等键；\n"
                        "- handle_alipay_notify 在同一事务里先写幂等记录再入账，重复回调捕获 "
                        "UniqueViolationError 后直接返回 success；\n"
                        "- 新增并发回调测试 test_duplicate_notify_is_ignored。\n\n"
                        "`pytest tests/payments` 全部通过（27 passed）。"
                    )
                ),
            ),
        ),
        Turn(
            user="另外微信支付和银联的回调是不是也有同样的问题？帮我全部检查一遍。",
            delegate=Delegation(
                description="检查所有支付渠道回调的幂等性",
                prompt=(
                    "检查 app/payments/ 下所有支付渠道（alipay、wechat、unionpay）的回调处理函数"
                    "是否都做了幂等校验。只读代码，不要修改。最后用 report 工具汇报每个渠道的结论和"
                    "文件位置。"
                ),
                announce="我让一个子代理并行检查所有渠道的回调。",
                steps=(
                    Step(
                        say="先找出所有渠道的回调入口。",
                        tools=(
                            _t(
                                "grep",
                                {"pattern": "def handle_.*_notify", "path": "app/payments"},
                                "app/payments/callback.py:42:async def handle_alipay_notify("
                                "request: Request) -> Response:\n"
                                "app/payments/wechat.py:51:async def handle_wechat_notify("
                                "request: Request) -> Response:\n"
                                "app/payments/unionpay.py:66:async def handle_unionpay_notify("
                                "request: Request) -> Response:",
                            ),
                        ),
                    ),
                    Step(
                        tools=(
                            _t(
                                "read",
                                {"path": "app/payments/wechat.py", "offset": 51, "limit": 12},
                                "51  async def handle_wechat_notify(request: Request)"
                                " -> Response:\n"
                                "52      body = await request.body()\n"
                                "53      data = wechatpay.decrypt(body)\n"
                                '58      await ledger.credit(data["mchid"], data["amount"], '
                                'ref=data["transaction_id"])',
                            ),
                            _t(
                                "read",
                                {"path": "app/payments/unionpay.py", "offset": 66, "limit": 12},
                                "70      key = f\"unionpay:notify:{params['queryId']}\"\n"
                                "73      if not await redis.set(key, 1, nx=True, ex=60):\n"
                                '74          return PlainTextResponse("ok")',
                            ),
                        ),
                    ),
                ),
                report=(
                    "alipay：已有幂等键（callback.py:42）。\n"
                    "wechat：缺少幂等校验，transaction_id 重复时会再次入账（wechat.py:58）。\n"
                    "unionpay：用 Redis SETNX 去重，但过期时间只有 60 秒，银联最长会重试 24 小时"
                    "（unionpay.py:73）。"
                ),
            ),
            steps=(
                Step(
                    say=(
                        "子代理的结论：微信回调缺少幂等校验，银联的去重 TTL 太短。我把幂等键逻辑"
                        "抽成 ensure_idempotent() 并应用到三个渠道。"
                    ),
                    tools=(
                        _t(
                            "write",
                            {
                                "path": "app/payments/idempotency.py",
                                "content": "async def ensure_idempotent(channel: str, "
                                "out_trade_no: str, notify_id: str) -> bool: ...\n",
                            },
                            "Wrote 24 lines to app/payments/idempotency.py",
                        ),
                        _t(
                            "edit",
                            {
                                "path": "app/payments/wechat.py",
                                "old": "    await ledger.credit(",
                                "new": '    if not await ensure_idempotent("wechat", '
                                'data["out_trade_no"], data["transaction_id"]):\n'
                                "        return success()\n    await ledger.credit(",
                            },
                            "Applied 1 edit to app/payments/wechat.py",
                        ),
                        _t(
                            "edit",
                            {
                                "path": "app/payments/unionpay.py",
                                "old": "    if not await redis.set(key, 1, nx=True, ex=60):",
                                "new": '    if not await ensure_idempotent("unionpay", '
                                'params["orderId"], params["queryId"]):',
                            },
                            "Applied 1 edit to app/payments/unionpay.py",
                        ),
                    ),
                ),
                Step(
                    tools=(
                        _t(
                            "bash",
                            {"command": "pytest tests/payments -q"},
                            "...................................\n35 passed in 3.48s",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "三个渠道的回调现在都走 ensure_idempotent(channel, out_trade_no, "
                        "notify_id)，银联不再依赖 60 秒的 Redis TTL。新增 8 个测试，"
                        "tests/payments 共 35 个全部通过。"
                    )
                ),
            ),
        ),
        Turn(
            user="上线前再确认一下：退款回调 refund_notify 是否也需要同样的幂等处理？",
            compact=(
                "[对话摘要] 已修复支付回调的幂等性问题：payment_notifications 表以 "
                "(channel, out_trade_no, notify_id) 为幂等键，alipay/wechat/unionpay 回调统一调用 "
                "ensure_idempotent()；子代理确认了微信缺少校验、银联 TTL 过短，均已修复；"
                "pytest tests/payments 35 个测试全部通过。"
            ),
            steps=(
                Step(
                    tools=(
                        _t(
                            "grep",
                            {"pattern": "refund_notify", "path": "app"},
                            "app/payments/refund.py:88:async def refund_notify(request: Request)"
                            " -> Response:",
                        ),
                        _t(
                            "read",
                            {"path": "app/payments/refund.py", "offset": 88, "limit": 10},
                            "95      await ledger.debit(refund.merchant_id, refund.amount, "
                            "ref=refund.refund_id)",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "需要。refund_notify 按 refund_id 更新状态，但每次回调都会调用 "
                        "ledger.debit，重复通知会重复扣款。已接入 "
                        'ensure_idempotent("refund", refund_id, notify_id) '
                        "并补了 test_refund_notify_idempotent。上线顺序：先执行 migration 0042，"
                        "再发布应用。"
                    ),
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "app/payments/refund.py",
                                "old": "    await ledger.debit(",
                                "new": '    if not await ensure_idempotent("refund", '
                                'refund.refund_id, params["notify_id"]):\n'
                                "        return success()\n    await ledger.debit(",
                            },
                            "Applied 1 edit to app/payments/refund.py",
                        ),
                    ),
                ),
                Step(say="退款回调也已幂等，tests/payments 全部通过。"),
            ),
        ),
    ),
)

_SHOP_FLAKY_PARSER = Scenario(
    key="shop-flaky-parser",
    cwd=WEB_SHOP,
    lang="en",
    title="Fix flaky parser test in price parsing",
    turns=(
        Turn(
            user=(
                "test_parse_price_locale in tests/test_price_parser.py fails maybe 1 in 5 runs "
                "on CI. Can you find out why this flaky parser test is flaky and fix it?"
            ),
            steps=(
                Step(
                    say="Let me reproduce it by running the test many times.",
                    tools=(
                        _t(
                            "bash",
                            {"command": "pytest tests/ -q -p randomly --count=50 -k price"},
                            "....F.........F...................................\nFAILED "
                            "tests/test_price_parser.py::test_parse_price_locale - "
                            "AssertionError: assert Decimal('1234.5') == Decimal('1.2345')\n"
                            "2 failed, 48 passed in 0.88s",
                        ),
                    ),
                ),
                Step(
                    think="Looks locale dependent: something changes LC_NUMERIC between tests.",
                    tools=(
                        _t(
                            "grep",
                            {"pattern": "setlocale", "path": "."},
                            "src/shop/pricing/parser.py:17:    locale.setlocale("
                            "locale.LC_NUMERIC, lang)\n"
                            "tests/test_currency_format.py:9:    locale.setlocale("
                            'locale.LC_ALL, "de_DE.UTF-8")',
                        ),
                        _t(
                            "read",
                            {"path": "src/shop/pricing/parser.py", "offset": 10, "limit": 12},
                            "12  def parse_price(text: str, lang: str | None = None) -> Decimal:\n"
                            "13      if lang:\n"
                            "17          locale.setlocale(locale.LC_NUMERIC, lang)\n"
                            "18      return Decimal(str(locale.atof(text)))",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "Found it: parse_price() calls locale.setlocale(), which mutates "
                        "process-global state, and tests/test_currency_format.py switches to "
                        "de_DE without restoring it. Depending on test order the parser sees ',' "
                        "as the decimal separator. I'll make the parser locale-independent with "
                        "babel.numbers.parse_decimal and restore the locale in the other test."
                    ),
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "src/shop/pricing/parser.py",
                                "old": "    return Decimal(str(locale.atof(text)))",
                                "new": '    return parse_decimal(text, locale=lang or "en_US")',
                            },
                            "Applied 1 edit to src/shop/pricing/parser.py",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest tests/ -q -p randomly --count=200 -k price"},
                            "200 passed in 2.41s",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "The flaky parser test is fixed. Root cause: global locale state leaking "
                        "between tests (parse_price used locale.atof after another test set "
                        "de_DE). parse_price now uses babel's parse_decimal with an explicit "
                        "locale, and the currency test restores LC_ALL in a fixture. 200 "
                        "randomized runs pass."
                    )
                ),
            ),
        ),
        Turn(
            user="Nice. Add a regression test that parses prices under de_DE and en_US in the "
            "same process.",
            steps=(
                Step(
                    tools=(
                        _t(
                            "write",
                            {
                                "path": "tests/test_price_parser_locales.py",
                                "content": '@pytest.mark.parametrize("lang,text,expected", [\n'
                                '    ("de_DE", "1.234,50", Decimal("1234.50")),\n'
                                '    ("en_US", "1,234.50", Decimal("1234.50")),\n])\n',
                            },
                            "Wrote 18 lines to tests/test_price_parser_locales.py",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest tests/test_price_parser_locales.py -q"},
                            "....\n4 passed in 0.21s",
                        ),
                    ),
                ),
                Step(
                    say="Added tests/test_price_parser_locales.py: it alternates de_DE and en_US "
                    "parsing in one process, so a leak of global locale state fails it."
                ),
            ),
        ),
    ),
)

_ML_PYDANTIC = Scenario(
    key="ml-pydantic-v2",
    cwd=ML,
    lang="en",
    title="Migrate config models to pydantic v2",
    turns=(
        Turn(
            user=(
                "We need to migrate to pydantic v2. Start with pipeline/config.py — it uses "
                "@validator, inner Config classes and parse_obj everywhere."
            ),
            todos=(
                ("Upgrade pydantic to >=2.7", "in_progress"),
                ("Migrate pipeline/config.py", "pending"),
                ("Find remaining v1 APIs", "pending"),
            ),
            steps=(
                Step(
                    tools=(
                        _t(
                            "bash",
                            {"command": "pip install -U 'pydantic>=2.7' && pytest tests/config -q"},
                            "E   pydantic.errors.PydanticUserError: If you use `@root_validator`"
                            " with pre=False (the default) you MUST specify "
                            "`skip_on_failure=True`.\n3 errors in 0.61s",
                        ),
                    ),
                ),
                Step(
                    say="As expected, the v1 validators break at import time. Reading the models.",
                    tools=(
                        _t(
                            "read",
                            {"path": "pipeline/config.py", "offset": 1, "limit": 40},
                            "class TrainConfig(BaseModel):\n    lr: float = 3e-4\n"
                            "    batch_size: int = 256\n\n    class Config:\n"
                            '        allow_mutation = False\n\n    @validator("lr")\n'
                            "    def positive(cls, v): ...\n\n    @root_validator\n"
                            "    def check_schedule(cls, values): ...",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "Migrating: @validator → @field_validator, @root_validator → "
                        '@model_validator(mode="after"), class Config → model_config = '
                        "ConfigDict(frozen=True), parse_obj → model_validate, .dict() → "
                        ".model_dump()."
                    ),
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "pipeline/config.py",
                                "old": "    class Config:\n        allow_mutation = False",
                                "new": "    model_config = ConfigDict(frozen=True)",
                            },
                            "Applied 6 edits to pipeline/config.py",
                        ),
                        _t(
                            "bash",
                            {"command": "ruff check pipeline && pytest tests/config -q"},
                            "All checks passed!\n..................\n18 passed in 0.74s",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "pipeline/config.py is on pydantic v2 and tests/config passes (18 "
                        "passed). Next I'd look for other v1 APIs across the repo."
                    )
                ),
            ),
        ),
        Turn(
            user="Yes, find every remaining pydantic v1 API in the repo so we can finish the "
            "migrate to pydantic v2 work.",
            delegate=Delegation(
                description="Find remaining pydantic v1 APIs",
                prompt=(
                    "Search the repository for pydantic v1 APIs (parse_obj, parse_raw, .dict(, "
                    ".json(, @validator, @root_validator, class Config) outside "
                    "pipeline/config.py. Do not edit anything. Report file:line for each hit."
                ),
                announce="I'll have a subagent scan the repo while I check the settings class.",
                steps=(
                    Step(
                        tools=(
                            _t(
                                "grep",
                                {
                                    "pattern": "parse_obj|parse_raw|@validator|@root_validator",
                                    "path": ".",
                                },
                                "pipeline/features/schema.py:33:        return "
                                "FeatureSpec.parse_raw(payload)\n"
                                "scripts/export.py:71:    out.write(report.json(indent=2))\n"
                                "pipeline/settings.py:5:from pydantic import BaseSettings",
                            ),
                        ),
                    ),
                ),
                report=(
                    "3 remaining pydantic v1 usages:\n"
                    "- pipeline/features/schema.py:33 FeatureSpec.parse_raw → "
                    "model_validate_json\n"
                    "- scripts/export.py:71 report.json(indent=2) → model_dump_json(indent=2)\n"
                    "- pipeline/settings.py:5 BaseSettings moved to the pydantic-settings package"
                ),
            ),
            steps=(
                Step(
                    say="Fixing the three usages the subagent found.",
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "pipeline/settings.py",
                                "old": "from pydantic import BaseSettings",
                                "new": "from pydantic_settings import BaseSettings, "
                                "SettingsConfigDict",
                            },
                            "Applied 3 edits to pipeline/settings.py",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest -q"},
                            "........................................\n142 passed in 9.87s",
                        ),
                    ),
                ),
                Step(
                    say="The migration to pydantic v2 is complete: no v1 API left, pydantic-"
                    "settings added to pyproject.toml, and the full suite passes (142 passed)."
                ),
            ),
        ),
    ),
)

_PAY_WEBHOOK = Scenario(
    key="pay-webhook-retry",
    cwd=PAYMENTS,
    lang="en",
    title="Retry merchant webhooks with exponential backoff",
    turns=(
        Turn(
            user=(
                "Merchant webhooks are sent once and dropped if the merchant returns 5xx. Add "
                "retries with exponential backoff and jitter (max 8 attempts), and make sure "
                "every delivery carries an Idempotency-Key header."
            ),
            steps=(
                Step(
                    tools=(
                        _t(
                            "read",
                            {"path": "app/webhooks/dispatcher.py", "offset": 1, "limit": 30},
                            "async def deliver_webhook(event: WebhookEvent) -> None:\n"
                            "    resp = await http.post(event.url, json=event.payload, "
                            "timeout=10)\n    if resp.status_code >= 500:\n"
                            '        log.warning("webhook dropped", event_id=event.id)',
                        ),
                    ),
                ),
                Step(
                    say="I'll move delivery onto the task queue with a retry policy: base 2 s, "
                    "factor 2, cap 10 min, full jitter, 8 attempts.",
                    tools=(
                        _t(
                            "write",
                            {
                                "path": "app/webhooks/backoff.py",
                                "content": "def delay(attempt: int) -> float:\n"
                                "    return random.uniform(0, min(600, 2 * 2 ** attempt))\n",
                            },
                            "Wrote 14 lines to app/webhooks/backoff.py",
                        ),
                        _t(
                            "edit",
                            {
                                "path": "app/webhooks/dispatcher.py",
                                "old": "    resp = await http.post(event.url, json=event.payload"
                                ", timeout=10)",
                                "new": '    headers = {"Idempotency-Key": event.id}\n'
                                "    resp = await http.post(event.url, json=event.payload, "
                                "headers=headers, timeout=10)",
                            },
                            "Applied 2 edits to app/webhooks/dispatcher.py",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest tests/webhooks -q"},
                            ".........\n9 passed in 0.95s",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "Webhook deliveries now retry on 5xx and timeouts with exponential backoff "
                        "and full jitter, up to 8 attempts; after the last one the event goes to "
                        "the webhook_dead_letters table. Every attempt sends Idempotency-Key = "
                        "event.id so merchants can deduplicate."
                    )
                ),
            ),
        ),
        Turn(
            user=(
                "商户反馈重试后收到了重复的退款通知，"
                "能确认一下 Idempotency-Key 在重试时保持不变吗？"
            ),
            steps=(
                Step(
                    tools=(
                        _t(
                            "bash",
                            {"command": "pytest tests/webhooks -q -k idempotency_key"},
                            "..\n2 passed in 0.31s",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "确认过了：Idempotency-Key 取自 event.id，在所有重试中保持不变，测试 "
                        "test_retry_keeps_idempotency_key 也覆盖了这一点。商户收到的重复退款通知是"
                        "因为他们没有按这个 key 去重，建议在对接文档里强调。"
                    )
                ),
            ),
        ),
    ),
)

_SHOP_CART = Scenario(
    key="shop-cart-rounding",
    cwd=WEB_SHOP,
    lang="en",
    title="Cart total off by one cent with percentage discounts",
    turns=(
        Turn(
            user=(
                "Customers report the cart total is off by one cent when a 15% discount applies "
                "to multiple items. Repro: 3 × €19.99 with code SPRING15."
            ),
            steps=(
                Step(
                    tools=(
                        _t(
                            "bash",
                            {
                                "command": 'python -c "from shop.cart import demo; '
                                "print(demo('SPRING15', [1999] * 3))\""
                            },
                            "total=5097 expected=5098",
                        ),
                        _t(
                            "read",
                            {"path": "src/shop/cart/totals.py", "offset": 20, "limit": 15},
                            "24      for line in cart.lines:\n"
                            "25          line.total = round(line.price * (1 - discount.rate))\n"
                            "26      return sum(line.total for line in cart.lines)",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "The discount is rounded per line with float math, so three half-cent "
                        "roundings lose a cent. I'll compute in Decimal on the cart subtotal and "
                        "round once with ROUND_HALF_EVEN, then distribute the remainder."
                    ),
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "src/shop/cart/totals.py",
                                "old": "        line.total = round(line.price * (1 - "
                                "discount.rate))",
                                "new": "        line.total = allocate(subtotal, discount, line)",
                            },
                            "Applied 1 edit to src/shop/cart/totals.py",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest tests/cart -q"},
                            "...............................\n31 passed in 1.12s",
                        ),
                    ),
                ),
                Step(
                    say="Fixed: the cart total for 3 × €19.99 with SPRING15 is now €50.98. "
                    "Discounts are applied to the subtotal in Decimal and rounded once."
                ),
            ),
        ),
    ),
)

_NOCWD_GIT = Scenario(
    key="nocwd-git-rebase",
    cwd=None,
    lang="zh",
    title="解释 git rebase 和 merge 的区别",
    turns=(
        Turn(
            user="解释一下 git rebase 和 git merge 的区别，什么时候应该用 rebase？",
            steps=(
                Step(
                    say=(
                        "merge 会生成一个合并提交，保留两条分支的真实历史；rebase 把你的提交在目标"
                        "分支的最新提交之上逐个重放，得到一条线性的历史。\n\n"
                        "建议：本地、还没推送的功能分支用 rebase 同步主干；已经共享的分支用 merge，"
                        "避免改写别人依赖的历史。"
                    )
                ),
            ),
        ),
        Turn(
            user="如果已经 push 了的分支要 rebase 怎么办？",
            steps=(
                Step(
                    say=(
                        "rebase 之后用 `git push --force-with-lease` 推送：只有远端分支仍然是你上次"
                        "看到的位置时才会覆盖，能避免误删同事的新提交。推送前先通知协作者，"
                        "让他们用 `git pull --rebase` 同步。"
                    )
                ),
            ),
        ),
    ),
)

_ML_DATALOADER = Scenario(
    key="ml-dataloader-leak",
    cwd=ML,
    lang="zh",
    title="训练数据加载器内存泄漏",
    turns=(
        Turn(
            user=(
                "训练跑到第 3 个 epoch 就 OOM 了，怀疑 DataLoader 有内存泄漏。num_workers=8，"
                "数据集在 pipeline/data/parquet_dataset.py。"
            ),
            steps=(
                Step(
                    tools=(
                        _t(
                            "read",
                            {"path": "pipeline/data/parquet_dataset.py", "offset": 40, "limit": 15},
                            "46      def __getitem__(self, idx: int) -> dict[str, Any]:\n"
                            "47          if idx not in self._cache:\n"
                            "48              self._cache[idx] = self.table.slice(idx, 1)"
                            ".to_pylist()[0]\n"
                            "49          return self._cache[idx]",
                        ),
                        _t(
                            "bash",
                            {"command": "python scripts/profile_loader.py --epochs 3"},
                            "epoch 1 rss=5.8 GiB\nepoch 2 rss=9.4 GiB\nepoch 3 rss=13.1 GiB\n"
                            "top: parquet_dataset.py:48 size=3.1 GiB count=4812331",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "原因：__getitem__ 把每一行缓存成 Python dict 放进 self._cache。DataLoader "
                        "的 8 个 worker 是 fork 出来的，访问 Python 对象会触发引用计数写入，"
                        "copy-on-write 让每个 worker 都复制一份，内存随 epoch 增长。改成用 "
                        "pyarrow 内存映射 + numpy 数组，去掉逐行缓存。"
                    ),
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "pipeline/data/parquet_dataset.py",
                                "old": "        if idx not in self._cache:",
                                "new": "        row = {k: col[idx] for k, col in "
                                "self._columns.items()}",
                            },
                            "Applied 2 edits to pipeline/data/parquet_dataset.py",
                        ),
                        _t(
                            "bash",
                            {"command": "python scripts/profile_loader.py --epochs 5"},
                            "epoch 1 rss=2.2 GiB\nepoch 5 rss=2.3 GiB (stable)",
                        ),
                    ),
                ),
                Step(say="内存泄漏已修复：5 个 epoch 后 RSS 稳定在 2.3 GiB，训练速度没有变化。"),
            ),
        ),
    ),
)

_PAY_RECONCILE = Scenario(
    key="pay-reconcile-timeout",
    cwd=PAYMENTS,
    lang="zh",
    title="月底对账任务超时",
    turns=(
        Turn(
            user="每个月底的对账任务 reconcile_daily 都会超时（超过 2 小时），能帮忙优化一下吗？",
            steps=(
                Step(
                    tools=(
                        _t(
                            "bash",
                            {
                                "command": 'psql payments -c "EXPLAIN ANALYZE SELECT * FROM '
                                "transactions WHERE merchant_id = 42 AND settled_at >= "
                                "'2026-02-01'\""
                            },
                            "Seq Scan on transactions  (cost=0.00..1893321.44 rows=48213 "
                            "width=96) (actual time=0.031..18234.112 rows=47980 loops=1)\n"
                            "Execution Time: 18240.577 ms",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "transactions 上缺少 (merchant_id, settled_at) 复合索引，而且对账是逐笔查询"
                        "再比对。加索引，并改成按商户分批（每批 5000 条）用服务端游标流式比对。"
                    ),
                    tools=(
                        _t(
                            "write",
                            {
                                "path": "migrations/0043_transactions_merchant_settled.sql",
                                "content": "CREATE INDEX CONCURRENTLY "
                                "transactions_merchant_settled ON transactions "
                                "(merchant_id, settled_at);\n",
                            },
                            "Wrote 2 lines to migrations/0043_transactions_merchant_settled.sql",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest tests/reconcile -q"},
                            "..............\n14 passed in 2.02s",
                        ),
                    ),
                ),
                Step(
                    say="用 4800 万行的快照测试：reconcile_daily 从 2h13m 降到 11m。"
                    "注意索引要用 CONCURRENTLY 创建，避免锁表。"
                ),
            ),
        ),
    ),
)

_SHOP_SEARCH = Scenario(
    key="shop-search-pagination",
    cwd=WEB_SHOP,
    lang="zh",
    title="商品搜索分页在移动端重复加载",
    turns=(
        Turn(
            user="移动端商品搜索下拉加载更多时会出现重复商品，第二页和第一页有重叠。",
            steps=(
                Step(
                    tools=(
                        _t(
                            "read",
                            {"path": "src/shop/search/api.py", "offset": 60, "limit": 20},
                            '66      hits = index.search(q, sort=["-score"], offset=page * 20,'
                            " limit=20)",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "排序只按 score，score 相同的商品顺序不稳定，offset 分页就会重复或漏掉。"
                        "改成按 (score, id) 排序，并用 search_after 游标代替 offset。"
                    ),
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "src/shop/search/api.py",
                                "old": 'sort=["-score"], offset=page * 20',
                                "new": 'sort=["-score", "id"], search_after=cursor',
                            },
                            "Applied 1 edit to src/shop/search/api.py",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest tests/search -q"},
                            "......................\n22 passed in 1.40s",
                        ),
                    ),
                ),
                Step(say="已修复：分页改用稳定排序 + search_after 游标，移动端不再出现重复商品。"),
            ),
        ),
    ),
)

_ML_AIRFLOW = Scenario(
    key="ml-airflow-backfill",
    cwd=ML,
    lang="en",
    title="Airflow DAG fails on backfill",
    turns=(
        Turn(
            user="The feature_build DAG fails when I backfill last month: KeyError: 'ds_nodash' "
            "in the extract task.",
            steps=(
                Step(
                    tools=(
                        _t(
                            "read",
                            {"path": "dags/feature_build.py", "offset": 1, "limit": 30},
                            'def extract(**kwargs):\n    day = kwargs["ds_nodash"]\n\n'
                            'extract_task = PythonOperator(task_id="extract", '
                            "python_callable=extract, provide_context=True)",
                        ),
                    ),
                ),
                Step(
                    say="provide_context was removed in Airflow 2; the callable only receives "
                    "the context keys it names. Switching to get_current_context().",
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "dags/feature_build.py",
                                "old": '    day = kwargs["ds_nodash"]',
                                "new": '    day = get_current_context()["ds_nodash"]',
                            },
                            "Applied 2 edits to dags/feature_build.py",
                        ),
                        _t(
                            "bash",
                            {"command": "airflow dags test feature_build 2026-02-01"},
                            "[2026-03-02 11:02:13] INFO - DagRun Finished: dag_id=feature_build,"
                            " state=success",
                        ),
                    ),
                ),
                Step(
                    say="Backfill works again: `airflow dags test feature_build 2026-02-01` "
                    "succeeds."
                ),
            ),
        ),
    ),
)

_PAY_STRIPE = Scenario(
    key="pay-stripe-signature",
    cwd=PAYMENTS,
    lang="en",
    title="Stripe webhook signature verification fails after secret rotation",
    turns=(
        Turn(
            user=(
                "After rotating the Stripe webhook secret every event fails with "
                "SignatureVerificationError: No signatures found matching the expected "
                "signature for payload."
            ),
            steps=(
                Step(
                    tools=(
                        _t(
                            "read",
                            {"path": "app/webhooks/stripe.py", "offset": 1, "limit": 25},
                            "async def stripe_webhook(event: dict = Body(...), "
                            "stripe_signature: str = Header(...)):\n"
                            "    stripe.Webhook.construct_event(json.dumps(event), "
                            "stripe_signature, settings.stripe_secret)",
                        ),
                    ),
                ),
                Step(
                    say=(
                        "Two problems: the handler verifies json.dumps() of the parsed body "
                        "instead of the raw bytes Stripe signed, and during rotation Stripe "
                        "signs with both secrets but we only try the new one. Verify the raw "
                        "body against every configured secret."
                    ),
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "app/webhooks/stripe.py",
                                "old": "json.dumps(event)",
                                "new": "await request.body()",
                            },
                            "Applied 3 edits to app/webhooks/stripe.py",
                        ),
                        _t(
                            "bash",
                            {"command": "pytest tests/webhooks/test_stripe.py -q"},
                            "......\n6 passed in 0.44s",
                        ),
                    ),
                ),
                Step(
                    say="Signature verification passes again; settings.stripe_secrets accepts "
                    "the old and new secret during the rotation window."
                ),
            ),
        ),
    ),
)

_SHOP_ROUTER = Scenario(
    key="shop-react-router",
    cwd=WEB_SHOP,
    lang="en",
    title="Upgrade checkout to React Router v6",
    turns=(
        Turn(
            user="Upgrade the checkout app from react-router-dom v5 to v6: Switch → Routes, "
            "useHistory → useNavigate.",
            steps=(
                Step(
                    tools=(
                        _t(
                            "read",
                            {"path": "src/checkout/routes.js"},
                            "ENOENT: no such file or directory, open 'src/checkout/routes.js'",
                            ("FileNotFoundError", "ENOENT"),
                        ),
                    ),
                ),
                Step(
                    say="The routes live elsewhere; searching.",
                    tools=(
                        _t(
                            "glob",
                            {"pattern": "src/checkout/**/*.tsx"},
                            "src/checkout/App.tsx\nsrc/checkout/routes.tsx\n"
                            "src/checkout/steps/Payment.tsx",
                        ),
                        _t(
                            "bash",
                            {"command": "npm install react-router-dom@6 && npm test -- checkout"},
                            "Tests:       41 passed, 41 total\nTime:        6.318 s",
                        ),
                    ),
                ),
                Step(
                    say="Checkout runs on React Router v6: <Switch> became <Routes>, "
                    "useHistory() became useNavigate(); all 41 checkout tests pass."
                ),
            ),
        ),
    ),
)

_ML_POLARS = Scenario(
    key="ml-polars-features",
    cwd=ML,
    lang="en",
    title="Speed up feature extraction with polars",
    turns=(
        Turn(
            user="features/extract.py takes 40 minutes on the full dataset. Can we port the "
            "pandas groupby/rolling code to polars?",
            steps=(
                Step(
                    say="Porting the rolling aggregations to polars lazy frames.",
                    tools=(
                        _t(
                            "edit",
                            {
                                "path": "features/extract.py",
                                "old": 'df.groupby("user_id").rolling("7D", on="ts")',
                                "new": 'lf.rolling(index_column="ts", period="7d", '
                                'group_by="user_id")',
                            },
                            "Applied 9 edits to features/extract.py",
                        ),
                        _t(
                            "bash",
                            {"command": "python bench/extract_bench.py --full"},
                            "pandas: 2412.6s\npolars: 188.3s\noutputs identical: True",
                        ),
                    ),
                ),
                Step(
                    say="Feature extraction with polars takes 3 minutes instead of 40, with "
                    "identical outputs."
                ),
            ),
        ),
    ),
)

_NOCWD_REGEX = Scenario(
    key="nocwd-semver-regex",
    cwd=None,
    lang="en",
    title="Regex to validate semantic version strings",
    turns=(
        Turn(
            user="Give me a regex that validates semantic version strings including "
            "pre-release and build metadata.",
            steps=(
                Step(
                    say=(
                        "The official SemVer 2.0.0 pattern:\n\n"
                        "^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)"
                        "(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)"
                        "(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                        "(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$\n\n"
                        "It rejects leading zeros such as 01.2.3."
                    )
                ),
            ),
        ),
    ),
)

SCENARIOS: Final[tuple[Scenario, ...]] = (
    _PAY_IDEMPOTENCY,
    _SHOP_FLAKY_PARSER,
    _ML_PYDANTIC,
    _PAY_WEBHOOK,
    _SHOP_CART,
    _NOCWD_GIT,
    _ML_DATALOADER,
    _PAY_RECONCILE,
    _SHOP_SEARCH,
    _ML_AIRFLOW,
    _PAY_STRIPE,
    _SHOP_ROUTER,
    _ML_POLARS,
    _NOCWD_REGEX,
)

_FOLLOW_UP: Final = {
    "en": ("Follow-up: ", "Picking this up again — ", "Regression check after the last deploy: "),
    "zh": ("接着上次的工作：", "回归测试又报了同样的问题：", "继续："),
}


# ---- summary ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DemoSession:
    """One written log: who it is, where it is and what it is for."""

    id: str
    cwd: str | None
    parent: str | None
    title: str
    path: str  # relative to the root, POSIX separators
    events: int
    created_at: int
    scenario: str
    variant: int
    subagent: bool
    compaction_seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cwd": self.cwd,
            "parent": self.parent,
            "title": self.title,
            "path": self.path,
            "events": self.events,
            "created_at": self.created_at,
            "scenario": self.scenario,
            "variant": self.variant,
            "subagent": self.subagent,
            "compaction_seq": self.compaction_seq,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> DemoSession:
        return cls(
            id=str(obj["id"]),
            cwd=obj["cwd"],
            parent=obj["parent"],
            title=str(obj["title"]),
            path=str(obj["path"]),
            events=int(obj["events"]),
            created_at=int(obj["created_at"]),
            scenario=str(obj["scenario"]),
            variant=int(obj["variant"]),
            subagent=bool(obj["subagent"]),
            compaction_seq=obj.get("compaction_seq"),
        )


@dataclass(frozen=True, slots=True)
class DemoSummary:
    root: Path
    seed: int
    sessions: tuple[DemoSession, ...]

    @property
    def workspaces(self) -> list[str]:
        return sorted({s.cwd for s in self.sessions if s.cwd is not None})

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sessions)

    @property
    def subagents(self) -> list[DemoSession]:
        return [s for s in self.sessions if s.subagent]

    @property
    def compactions(self) -> list[DemoSession]:
        return [s for s in self.sessions if s.compaction_seq is not None]

    def paths(self) -> list[Path]:
        return [self.root / s.path for s in self.sessions]

    def find(self, scenario: str, *, subagent: bool = False) -> DemoSession:
        """The original (variant 0) session of ``scenario`` (or its subagent child)."""
        for s in self.sessions:
            if s.scenario == scenario and s.variant == 0 and s.subagent == subagent:
                return s
        raise KeyError(f"no {'subagent of ' if subagent else ''}{scenario} session in the corpus")

    def line(self) -> str:
        no_cwd = sum(1 for s in self.sessions if s.cwd is None)
        return (
            f"wrote {len(self.sessions)} demo sessions ({len(self.workspaces)} workspaces"
            f" + {no_cwd} without cwd, {len(self.subagents)} subagent children,"
            f" {len(self.compactions)} compaction, {self.events} events) to {self.root}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "v": 1,
            "seed": self.seed,
            "sessions": [s.to_json() for s in self.sessions],
        }


def load_summary(root: Path) -> DemoSummary:
    """The summary a previous ``write_demo_corpus(root, …)`` left; FileNotFoundError if none."""
    obj = json.loads((root / SUMMARY_FILE).read_text(encoding="utf-8"))
    return DemoSummary(
        root=root,
        seed=int(obj["seed"]),
        sessions=tuple(DemoSession.from_json(s) for s in obj["sessions"]),
    )


# ---- log writing --------------------------------------------------------------------------------
def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _fallback_title(text: str) -> str:
    """dsh's fallback title: the first words (Latin) or about 12 characters (CJK) of the
    first user message, never cutting a Latin word in half."""
    if _CJK.search(text[:8]):
        title = ""
        for token in _TITLE_TOKEN.findall(text):
            if len(title) >= 12:
                break
            title += token
        return title.strip().rstrip("，。：；、,.:;")
    return " ".join(text.split()[:5]).rstrip(",.:;")


@dataclass(slots=True)
class _Log:
    """One session log being written, with the surface fold simulated alongside."""

    header: dict[str, Any]
    rng: random.Random
    now: int
    lines: list[str] = field(default_factory=list)
    seq: int = 0
    nodes: list[int] = field(default_factory=list)
    turn: int = 0
    step: int = 0
    titled: bool = False
    compaction_seq: int | None = None

    def __post_init__(self) -> None:
        self.lines.append(_dumps({"type": "session", **self.header}))

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def tick(self, lo: int, hi: int) -> int:
        self.now += self.rng.randint(lo, hi)
        return self.now

    def emit(
        self,
        kind: str,
        data: Any,
        *,
        surface: str | dict[str, Any] | None = None,
        sources: list[int] | None = None,
        gap: tuple[int, int] = (2, 30),
    ) -> int:
        seq = self.seq
        event: dict[str, Any] = {"type": kind, "seq": seq, "time": self.tick(*gap), "data": data}
        if sources is not None:
            event["sourceEventSeqs"] = sources
        if surface is not None:
            event["surfaceOp"] = surface
        if surface == "append":
            self.nodes.append(seq)
        elif isinstance(surface, dict):
            start, end = self.nodes.index(surface["start"]), self.nodes.index(surface["end"])
            shadowed = self.nodes[start : end + 1]
            missing = [s for s in shadowed if s not in (sources or [])]
            if missing:  # a generator bug: the log would fail the fold
                raise AssertionError(f"replace at seq {seq} does not cite {missing}")
            self.nodes[start : end + 1] = [seq]
        self.lines.append(_dumps(event))
        self.seq += 1
        return seq

    # ---- structure ----
    def turn_start(self, gap: tuple[int, int] = (20_000, 600_000)) -> None:
        self.turn += 1
        self.step = 0
        self.emit("turn/start", {"turn": self.turn}, gap=gap)

    def turn_end(self) -> None:
        self.emit("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})

    def step_start(self) -> None:
        self.step += 1
        self.emit("step/start", {"turn": self.turn, "step": self.step}, gap=(5, 40))

    def step_end(self) -> None:
        self.emit("step/end", {"turn": self.turn, "step": self.step}, gap=(1, 5))

    def user(self, text: str) -> int:
        seq = self.emit(
            "user/message",
            {
                "content": [{"type": "text", "text": text}],
                "source": {"kind": "user"},
                "role": "user",
                "id": self.uid(),
            },
            surface="append",
        )
        if not self.titled:
            self.titled = True
            self.emit(
                "session/title",
                {
                    "title": _fallback_title(text),
                    "messageSeqs": [seq],
                    "source": {"kind": "fallback"},
                },
                gap=(0, 2),
            )
        return seq

    def provider_title(self, title: str, seqs: list[int]) -> None:
        self.emit(
            "session/title",
            {
                "title": title,
                "messageSeqs": seqs,
                "source": {
                    "kind": "provider",
                    "provider": PROVIDER,
                    "model": {"provider": PROVIDER, "model": MODEL},
                },
            },
            gap=(400, 2500),
        )

    def request_header(self) -> None:
        self.emit(
            "request/header",
            {
                "header": {
                    "config": {"provider": PROVIDER, "model": MODEL},
                    "system": "You are dsh, a coding agent working in the user's repository.",
                    "tools": [
                        {"name": n}
                        for n in ("bash", "read", "edit", "write", "grep", "glob", "subagent")
                    ],
                },
                "reason": "initial",
            },
        )
        self.emit(
            "request/context", {"provider": PROVIDER, "model": MODEL, "contextWindow": 131072}
        )

    def todos(self, todos: Sequence[tuple[str, str]]) -> None:
        self.emit("todo/write", {"todos": [{"content": c, "status": s} for c, s in todos]})

    # ---- streaming ----
    def _split(self, text: str) -> list[str]:
        cjk = bool(_CJK.search(text))
        lo, hi = (3, 9) if cjk else (6, 24)
        parts: list[str] = []
        i = 0
        while i < len(text):
            n = self.rng.randint(lo, hi)
            parts.append(text[i : i + n])
            i += n
        return parts or [text]

    def _chunk(self, chunk: dict[str, Any], gap: tuple[int, int] = (8, 70)) -> int:
        return self.emit(
            "assistant/chunk", {"turn": self.turn, "step": self.step, "chunk": chunk}, gap=gap
        )

    def _deltas(self, kind: str, index: int, text: str) -> list[int]:
        parts = self._split(text)
        delta = "text-delta" if kind == "text" else "reasoning-delta"
        if len(parts) >= 3 and self.rng.random() < 0.5:
            # dsh packs a run of deltas of one block into a single storage row.
            seq0, time0 = self.seq, self.tick(8, 70)
            dt = [self.rng.randint(8, 70) for _ in parts[1:]]
            row = {
                "type": f"{kind}-chunks",
                "seq0": seq0,
                "time0": time0,
                "data": {
                    "turn": self.turn,
                    "step": self.step,
                    "index": index,
                    "dt": dt,
                    "texts": parts,
                },
            }
            self.lines.append(_dumps(row))
            self.seq += len(parts)
            self.now = time0 + sum(dt)
            return list(range(seq0, seq0 + len(parts)))
        return [self._chunk({"type": delta, "index": index, "text": p}) for p in parts]

    def assistant(self, step: Step) -> tuple[int, list[tuple[str, ToolUse]]]:
        """Stream one model response (chunks) and log its ``assistant/message``."""
        seqs: list[int] = []
        content: list[dict[str, Any]] = []
        calls: list[tuple[str, ToolUse]] = []
        blocks: list[tuple[str, str | ToolUse]] = []
        if step.think:
            blocks.append(("reasoning", step.think))
        if step.say:
            blocks.append(("text", step.say))
        for tool in step.tools:
            blocks.append(("tool-call", tool))
        first = True
        for index, (kind, payload) in enumerate(blocks):
            gap = (300, 4000) if first else (8, 70)
            first = False
            start = {"type": "block-start", "index": index, "blockType": kind}
            seqs.append(self._chunk(start, gap))
            if isinstance(payload, str):
                seqs += self._deltas(kind, index, payload)
                block: dict[str, Any] = {"type": kind, "text": payload}
            else:
                tool = payload
                call_id = f"call_{self.rng.getrandbits(96):024x}"
                args = _dumps(tool.arguments)
                cut = sorted(self.rng.sample(range(1, len(args)), min(2, len(args) - 1)))
                for k, (a, b) in enumerate(zip([0, *cut], [*cut, len(args)], strict=True)):
                    delta: dict[str, Any] = {
                        "type": "tool-call-delta",
                        "index": index,
                        "id": call_id,
                    }
                    if k == 0:
                        delta["name"] = tool.name
                    delta["argumentsDelta"] = args[a:b]
                    seqs.append(self._chunk(delta))
                block = {"type": "tool-call", "id": call_id, "name": tool.name, "arguments": args}
                calls.append((call_id, tool))
            seqs.append(self._chunk({"type": "block-end", "index": index, "block": block}, (1, 3)))
            content.append(block)
        usage = {
            "inputTokens": self.rng.randint(1800, 42000),
            "outputTokens": self.rng.randint(40, 900),
        }
        seqs.append(self._chunk({"type": "usage", "usage": usage}, (1, 3)))
        finish = "tool-calls" if calls else "stop"
        seqs.append(self._chunk({"type": "finish", "reason": {"kind": finish}}, (1, 3)))
        seq = self.emit(
            "assistant/message",
            {
                "turn": self.turn,
                "step": self.step,
                "message": {
                    "role": "assistant",
                    "content": content,
                    "source": {"kind": "model", "provider": PROVIDER, "model": MODEL},
                    "id": self.uid(),
                },
                "usage": usage,
            },
            surface="append",
            sources=seqs,
            gap=(1, 5),
        )
        return seq, calls

    def tool_call(self, call_id: str, tool: ToolUse) -> int:
        return self.emit(
            "tool/call",
            {
                "turn": self.turn,
                "step": self.step,
                "callId": call_id,
                "name": tool.name,
                "arguments": _dumps(tool.arguments),
            },
            gap=(0, 2),
        )

    def tool_result(self, call_id: str, call_seq: int, tool: ToolUse, result: str) -> int:
        data: dict[str, Any] = {
            "turn": self.turn,
            "step": self.step,
            "message": {
                "source": {"kind": "tool", "callId": call_id},
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": call_id,
                        "content": [{"type": "text", "text": result}],
                        "isError": tool.error is not None,
                    }
                ],
                "role": "user",
                "id": self.uid(),
            },
        }
        if tool.error is not None:
            data["error"] = {"name": tool.error[0], "code": tool.error[1]}
        return self.emit("tool/result", data, surface="append", sources=[call_seq], gap=(150, 6000))

    def run_step(self, step: Step) -> int:
        """One step: model response, tool calls, their results. Returns the message seq."""
        seq, calls = self.assistant(step)
        call_seqs = [self.tool_call(call_id, tool) for call_id, tool in calls]
        for (call_id, tool), call_seq in zip(calls, call_seqs, strict=True):
            self.tool_result(call_id, call_seq, tool, tool.result)
        return seq

    def compact(self, summary: str) -> None:
        """Replace every surface node before the current user message with a summary."""
        compaction_id = self.uid()
        start_seq = self.emit(
            "compaction/start", {"compactionId": compaction_id, "turn": self.turn}, gap=(5, 30)
        )
        shadowed = self.nodes[:-1]
        summary_seq = self.emit(
            "compaction/summary",
            {
                "compactionId": compaction_id,
                "summary": [{"type": "text", "text": summary}],
                "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
                "shadowedSeqs": shadowed,
                "provider": PROVIDER,
                "model": MODEL,
                "usage": {"inputTokens": self.rng.randint(20000, 60000), "outputTokens": 180},
            },
            gap=(2000, 9000),
        )
        self.compaction_seq = self.emit(
            "assistant/message",
            {
                "turn": self.turn,
                "step": self.step,
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": summary}],
                    "source": {"kind": "model", "provider": PROVIDER, "model": MODEL},
                    "id": self.uid(),
                },
            },
            surface={"op": "replace", "start": shadowed[0], "end": shadowed[-1]},
            sources=[start_seq, summary_seq, *shadowed],
            gap=(1, 5),
        )
        self.emit("compaction/end", {"compactionId": compaction_id, "turn": self.turn})

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass(frozen=True, slots=True)
class _Written:
    log: _Log
    session: DemoSession


def _vary(text: str, scenario: Scenario, variant: int, rng: random.Random) -> str:
    if variant == 0:
        return text
    prefix = rng.choice(_FOLLOW_UP[scenario.lang])
    return f"{prefix}{text}"


def _session_path(cwd: str | None, session_id: str) -> str:
    return f"{project_key(cwd)}/{encode_segment(session_id)}/session.jsonl"


def _write_child(
    parent: _Log, scenario: Scenario, parent_id: str, child_id: str, task: Delegation
) -> _Written:
    cwd = scenario.cwd
    rng = parent.rng
    header: dict[str, Any] = {"version": 0, "id": child_id, "createdAt": parent.now + 40}
    if cwd is not None:
        header["cwd"] = cwd
    header.update({"parentSession": parent_id, "origin": "subagent", "delegationDepth": 1})
    log = _Log(header=header, rng=rng, now=parent.now + 40)
    log.emit(
        "subagent/descriptor",
        {
            "version": 2,
            "mode": "continuable",
            "provider": "spawn",
            "label": task.description,
            "agentProvider": PROVIDER,
            "agentModel": MODEL,
        },
    )
    log.emit("session/end-seed", {})
    log.emit("approval/policy", {"policy": "never", "source": "delegation"})
    log.turn_start(gap=(5, 60))
    log.step_start()
    log.user(task.prompt)
    log.request_header()
    for i, step in enumerate(task.steps):
        if i:
            log.step_start()
        log.run_step(step)
        log.step_end()
    log.step_start()
    report = ToolUse(
        "report",
        {"output": task.report},
        f"report accepted by the agent that started you as message {log.uid()}",
    )
    log.run_step(Step(tools=(report,)))
    log.step_end()
    log.step_start()
    log.run_step(Step(say="Reported." if not _CJK.search(task.report) else "已汇报。"))
    log.step_end()
    log.turn_end()
    session = DemoSession(
        id=child_id,
        cwd=cwd,
        parent=parent_id,
        title=_fallback_title(task.prompt),
        path=_session_path(cwd, child_id),
        events=log.seq,
        created_at=header["createdAt"],
        scenario=scenario.key,
        variant=0,
        subagent=True,
    )
    return _Written(log, session)


def _write_scenario(
    scenario: Scenario, variant: int, created_at: int, rng: random.Random, children: bool
) -> list[_Written]:
    """The logs of one session of ``scenario`` (plus its subagent children)."""
    session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    header: dict[str, Any] = {"version": 0, "id": session_id, "createdAt": created_at}
    if scenario.cwd is not None:
        header["cwd"] = scenario.cwd
    header["delegationDepth"] = 0
    log = _Log(header=header, rng=rng, now=created_at)
    out: list[_Written] = []
    first_user: int | None = None
    title = (
        scenario.title
        if variant == 0
        else (
            f"{scenario.title}（续）" if scenario.lang == "zh" else f"{scenario.title} (follow-up)"
        )
    )
    for t, turn in enumerate(scenario.turns):
        log.turn_start()
        log.step_start()
        user_seq = log.user(_vary(turn.user, scenario, variant if t == 0 else 0, rng))
        if first_user is None:
            first_user = user_seq
            log.request_header()
        if turn.compact is not None and variant == 0:
            log.compact(turn.compact)
        if turn.todos:
            log.todos(turn.todos)
        steps = list(turn.steps)
        if turn.delegate is not None and children:
            task = turn.delegate
            child_id = log.uid()
            tool = ToolUse("subagent", {"description": task.description, "prompt": task.prompt}, "")
            _, calls = log.assistant(Step(say=task.announce, tools=(tool,)))
            call_id = calls[0][0]
            call_seq = log.tool_call(call_id, tool)
            child = _write_child(log, scenario, session_id, child_id, task)
            log.now = max(log.now, child.log.now)
            log.tool_result(
                call_id,
                call_seq,
                tool,
                f"Subagent {child_id} finished.\n\nReport:\n{task.report}\n\n"
                f"Closing message:\n{'已汇报。' if scenario.lang == 'zh' else 'Reported.'}",
            )
            log.step_end()
            log.step_start()
            out.append(child)
        for i, step in enumerate(steps):
            if i:
                log.step_start()
            seq = log.run_step(step)
            log.step_end()
            if t == 0 and i == len(steps) - 1 and first_user is not None:
                log.provider_title(title, [first_user, seq])
        log.turn_end()
    session = DemoSession(
        id=session_id,
        cwd=scenario.cwd,
        parent=None,
        title=title,
        path=_session_path(scenario.cwd, session_id),
        events=log.seq,
        created_at=created_at,
        scenario=scenario.key,
        variant=variant,
        subagent=False,
        compaction_seq=log.compaction_seq,
    )
    return [_Written(log, session), *out]


def _plan(sessions: int, seed: int) -> list[_Written]:
    if sessions < MIN_SESSIONS:
        raise ValueError(f"a demo corpus needs at least {MIN_SESSIONS} sessions, got {sessions}")
    rng = random.Random(seed)
    written: list[_Written] = []
    created = BASE_TIME_MS
    rounds = 0
    while len(written) < sessions:
        for scenario in SCENARIOS:
            left = sessions - len(written)
            if left <= 0:
                break
            has_child = any(t.delegate is not None for t in scenario.turns)
            children = rounds == 0 and has_child and left >= 2
            created += rng.randint(40, 26 * 60) * 60_000
            written += _write_scenario(scenario, rounds, created, rng, children)
        rounds += 1
    return written


def _previous_summary(out: Path) -> DemoSummary | None:
    """The summary of an earlier demo in ``out``; refuses a directory that is not one."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise NotADirectoryError(f"demo corpus output {out} is not a directory")
    if not (out / SUMMARY_FILE).is_file():
        if any(out.iterdir()):
            raise FileExistsError(
                f"refusing to write a demo corpus into non-empty {out} (no {SUMMARY_FILE})"
            )
        return None
    try:
        return load_summary(out)
    except (ValueError, KeyError, TypeError):
        return None


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def write_demo_corpus(out: Path, sessions: int, seed: int = 7) -> DemoSummary:
    """Write ``sessions`` demo session logs as a dsh persistence root under ``out``.

    Deterministic for ``(sessions, seed)``. Rewriting a demo root removes the sessions
    of the earlier demo that the new one lacks and leaves unchanged files untouched (a
    watcher sees no change). Raises ``ValueError`` for fewer than ``MIN_SESSIONS``
    sessions and ``FileExistsError`` for a non-empty directory that is not a demo root.
    """
    out = Path(out)
    plan = _plan(sessions, seed)
    previous = _previous_summary(out)
    wanted = {w.session.path for w in plan}
    if previous is not None:
        root = out.resolve()
        for old in previous.sessions:
            session_dir = (out / old.path).parent
            if (
                old.path not in wanted
                and session_dir.is_dir()
                and session_dir.resolve().is_relative_to(root)
                and session_dir.resolve() != root
            ):
                shutil.rmtree(session_dir)
    for w in plan:
        _write_if_changed(out / w.session.path, w.log.text().encode("utf-8"))
    summary = DemoSummary(root=out, seed=seed, sessions=tuple(w.session for w in plan))
    text = json.dumps(summary.to_json(), ensure_ascii=False, indent=1) + "\n"
    _write_if_changed(out / SUMMARY_FILE, text.encode("utf-8"))
    return summary


# ---- example calls ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExampleCall:
    """One ready-to-send ``POST /v1/call`` body and what its reply text contains."""

    label: str
    body: dict[str, Any]
    expect: str

    def curl(self, base_url: str) -> str:
        payload = json.dumps(self.body, ensure_ascii=False, separators=(",", ":"))
        return (
            f"curl -sS {base_url.rstrip('/')}/v1/call"
            f" -H 'content-type: application/json' -d {shlex.quote(payload)}"
        )


def _call(tool: str, arguments: dict[str, Any], caller: str) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments, "caller": {"session_id": caller}}


def example_calls(summary: DemoSummary) -> list[ExampleCall]:
    """Four calls that show the corpus off, each with real ids and a non-empty answer:
    a Chinese and an English ``session_search`` with hits, ``session_trace`` on a
    subagent child and ``session_event_read`` on the compaction."""
    idem = summary.find("pay-idempotency")
    child = next(s for s in summary.subagents if s.parent == idem.id)
    payments_caller = summary.find("pay-webhook-retry")
    flaky = summary.find("shop-flaky-parser")
    shop_caller = summary.find("shop-cart-rounding")
    read_seq = idem.compaction_seq if idem.compaction_seq is not None else 0
    return [
        ExampleCall(
            "session_search in Chinese, from a payments-api session",
            _call("session_search", {"query": "幂等性"}, payments_caller.id),
            idem.id,
        ),
        ExampleCall(
            "session_search in English, from a web-shop session",
            _call("session_search", {"query": "flaky parser test"}, shop_caller.id),
            flaky.id,
        ),
        ExampleCall(
            "session_trace on a subagent child (its parent shows as ancestor)",
            _call("session_trace", {"session_id": child.id}, payments_caller.id),
            idem.id,
        ),
        ExampleCall(
            "session_event_read on the compaction that replaced earlier turns",
            _call(
                "session_event_read",
                {"session_id": idem.id, "seq": read_seq, "before": 1, "after": 1},
                payments_caller.id,
            ),
            f"Target event seq {read_seq}:",
        ),
    ]


def example_curls(summary: DemoSummary, base_url: str) -> list[str]:
    """``# label`` + ``curl …`` text blocks for :func:`example_calls`."""
    return [f"# {c.label}\n{c.curl(base_url)}" for c in example_calls(summary)]


def _generic_examples(base_url: str) -> list[ExampleCall]:
    """Calls for a real root, built from ``GET /v1/sessions`` (best effort)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{base_url.rstrip('/')}/v1/sessions", timeout=10) as resp:
        sessions: list[dict[str, Any]] = json.loads(resp.read())
    with_cwd = [s for s in sessions if s.get("cwd")]
    if not with_cwd:
        return []
    newest = max(with_cwd, key=lambda s: int(s.get("created_at") or 0))
    calls = [
        ExampleCall(
            "session_trace on the newest session",
            _call("session_trace", {}, newest["id"]),
            newest["id"],
        ),
        ExampleCall(
            "session_event_read: its first events",
            _call("session_event_read", {"seq": 0, "after": 3}, newest["id"]),
            "Target event seq 0:",
        ),
    ]
    for other in with_cwd:
        words = re.findall(r"[A-Za-z]{4,}", str(other.get("title") or ""))
        if other["id"] != newest["id"] and other["cwd"] == newest["cwd"] and words:
            calls.insert(
                0,
                ExampleCall(
                    "session_search from the newest session",
                    _call("session_search", {"query": words[0]}, newest["id"]),
                    "",
                ),
            )
            break
    return calls


def print_examples(base_url: str, paths: Sequence[str | Path] = ()) -> None:
    """Print the console URL and example curl calls for the served ``paths``."""
    base_url = base_url.rstrip("/")
    print(f"sessionq console: {base_url}/")
    calls: list[ExampleCall] = []
    if len(paths) == 1 and (Path(paths[0]) / SUMMARY_FILE).is_file():
        calls = example_calls(load_summary(Path(paths[0])))
    else:
        try:
            calls = _generic_examples(base_url)
        except (OSError, ValueError) as exc:
            print(f"(no example calls: {exc})")
    if calls:
        print("Example calls (paste into another terminal):")
        for c in calls:
            print(f"# {c.label}\n{c.curl(base_url)}")
    print("(Ctrl-C stops the server)", flush=True)


# ---- command line -------------------------------------------------------------------------------
def cli_main(out: Path, sessions: int, seed: int) -> int:
    """``sessionq demo-corpus``: write the corpus and print a one-line summary."""
    try:
        summary = write_demo_corpus(Path(out), sessions, seed)
    except (ValueError, OSError) as exc:
        print(f"sessionq demo-corpus: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ValueError) else 1
    print(summary.line(), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worker.demo_corpus", description="write a demo dsh session root"
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument("--sessions", type=int, default=24, help="number of sessions")
    parser.add_argument("--seed", type=int, default=7, help="random seed")
    args = parser.parse_args(argv)
    return cli_main(args.out, args.sessions, args.seed)


if __name__ == "__main__":
    sys.exit(main())
