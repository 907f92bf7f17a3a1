"""Demo scenarios in the payments-api workspace: payment callbacks, merchant webhooks,
reconciliation, Stripe signatures."""

from __future__ import annotations

from typing import Final

from worker.devtools.demo_corpus.model import (
    Delegation,
    Scenario,
    Step,
    Turn,
    bash,
    edit,
    grep,
    read,
    write,
)

PAYMENTS: Final = "/home/dev/payments-api"

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

PAY_IDEMPOTENCY = Scenario(
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
                        grep(
                            "def handle_.*_notify",
                            "app/payments",
                            "app/payments/callback.py:42:async def handle_alipay_notify("
                            "request: Request) -> Response:",
                        ),
                        read("app/payments/callback.py", 42, 10, _CALLBACK_BEFORE),
                    ),
                ),
                Step(
                    say=(
                        "问题在于检查订单状态和入账之间没有加锁：两个并发回调都会读到 "
                        "status=PENDING，然后各自调用 ledger.credit。我用数据库唯一约束作为"
                        "幂等键，保证同一笔回调只入账一次。"
                    ),
                    tools=(
                        write(
                            "migrations/0042_payment_notifications.sql",
                            "CREATE TABLE payment_notifications (\n"
                            "  channel text NOT NULL,\n  out_trade_no text NOT NULL,\n"
                            "  notify_id text NOT NULL,\n"
                            "  PRIMARY KEY (channel, out_trade_no, notify_id)\n);\n",
                            6,
                        ),
                        edit(
                            "app/payments/callback.py",
                            "    if order.status != OrderStatus.PAID:",
                            "    async with db.transaction():\n"
                            '        await PaymentNotification.create(channel="alipay", '
                            'out_trade_no=order.out_trade_no, notify_id=params["notify_id"])',
                        ),
                    ),
                ),
                Step(
                    tools=(
                        bash(
                            "pytest tests/payments/test_callback.py -q",
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
                        edit(
                            "app/payments/callback.py",
                            "    async with db.transaction():",
                            "    try:\n        async with db.transaction():",
                        ),
                        bash(
                            "pytest tests/payments -q",
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
                            grep(
                                "def handle_.*_notify",
                                "app/payments",
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
                            read(
                                "app/payments/wechat.py",
                                51,
                                12,
                                "51  async def handle_wechat_notify(request: Request)"
                                " -> Response:\n"
                                "52      body = await request.body()\n"
                                "53      data = wechatpay.decrypt(body)\n"
                                '58      await ledger.credit(data["mchid"], data["amount"], '
                                'ref=data["transaction_id"])',
                            ),
                            read(
                                "app/payments/unionpay.py",
                                66,
                                12,
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
                        write(
                            "app/payments/idempotency.py",
                            "async def ensure_idempotent(channel: str, "
                            "out_trade_no: str, notify_id: str) -> bool: ...\n",
                            24,
                        ),
                        edit(
                            "app/payments/wechat.py",
                            "    await ledger.credit(",
                            '    if not await ensure_idempotent("wechat", '
                            'data["out_trade_no"], data["transaction_id"]):\n'
                            "        return success()\n    await ledger.credit(",
                        ),
                        edit(
                            "app/payments/unionpay.py",
                            "    if not await redis.set(key, 1, nx=True, ex=60):",
                            '    if not await ensure_idempotent("unionpay", '
                            'params["orderId"], params["queryId"]):',
                        ),
                    ),
                ),
                Step(
                    tools=(
                        bash(
                            "pytest tests/payments -q",
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
                        grep(
                            "refund_notify",
                            "app",
                            "app/payments/refund.py:88:async def refund_notify(request: Request)"
                            " -> Response:",
                        ),
                        read(
                            "app/payments/refund.py",
                            88,
                            10,
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
                        edit(
                            "app/payments/refund.py",
                            "    await ledger.debit(",
                            '    if not await ensure_idempotent("refund", '
                            'refund.refund_id, params["notify_id"]):\n'
                            "        return success()\n    await ledger.debit(",
                        ),
                    ),
                ),
                Step(say="退款回调也已幂等，tests/payments 全部通过。"),
            ),
        ),
    ),
)

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
