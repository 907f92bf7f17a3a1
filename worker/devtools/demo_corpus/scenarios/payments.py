"""Demo scenarios in the payments-api workspace: payment callbacks (the other payments
scenarios are in ``payments_gateway``)."""

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
