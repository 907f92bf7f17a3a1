"""Demo scenarios in the payments-api workspace: merchant webhooks, reconciliation,
Stripe signatures."""

from __future__ import annotations

from worker.devtools.demo_corpus.model import (
    Scenario,
    Step,
    Turn,
    bash,
    edit,
    read,
    write,
)
from worker.devtools.demo_corpus.scenarios.payments import PAYMENTS

PAY_WEBHOOK = Scenario(
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
                        read(
                            "app/webhooks/dispatcher.py",
                            1,
                            30,
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
                        write(
                            "app/webhooks/backoff.py",
                            "def delay(attempt: int) -> float:\n"
                            "    return random.uniform(0, min(600, 2 * 2 ** attempt))\n",
                            14,
                        ),
                        edit(
                            "app/webhooks/dispatcher.py",
                            "    resp = await http.post(event.url, json=event.payload, timeout=10)",
                            '    headers = {"Idempotency-Key": event.id}\n'
                            "    resp = await http.post(event.url, json=event.payload, "
                            "headers=headers, timeout=10)",
                            2,
                        ),
                        bash("pytest tests/webhooks -q", ".........\n9 passed in 0.95s"),
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
                        bash(
                            "pytest tests/webhooks -q -k idempotency_key", "..\n2 passed in 0.31s"
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

PAY_RECONCILE = Scenario(
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
                        bash(
                            'psql payments -c "EXPLAIN ANALYZE SELECT * FROM '
                            "transactions WHERE merchant_id = 42 AND settled_at >= "
                            "'2026-02-01'\"",
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
                        write(
                            "migrations/0043_transactions_merchant_settled.sql",
                            "CREATE INDEX CONCURRENTLY "
                            "transactions_merchant_settled ON transactions "
                            "(merchant_id, settled_at);\n",
                            2,
                        ),
                        bash("pytest tests/reconcile -q", "..............\n14 passed in 2.02s"),
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

PAY_STRIPE = Scenario(
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
                        read(
                            "app/webhooks/stripe.py",
                            1,
                            25,
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
                        edit(
                            "app/webhooks/stripe.py", "json.dumps(event)", "await request.body()", 3
                        ),
                        bash(
                            "pytest tests/webhooks/test_stripe.py -q", "......\n6 passed in 0.44s"
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
