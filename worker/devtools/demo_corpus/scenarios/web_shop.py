"""Demo scenarios in the web-shop workspace: a flaky test, cart rounding, search paging,
React Router."""

from __future__ import annotations

from typing import Final

from worker.devtools.demo_corpus.model import (
    Scenario,
    Step,
    Turn,
    bash,
    edit,
    glob,
    grep,
    read,
    tool,
    write,
)

WEB_SHOP: Final = "/home/dev/web-shop"

SHOP_FLAKY_PARSER = Scenario(
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
                        bash(
                            "pytest tests/ -q -p randomly --count=50 -k price",
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
                        grep(
                            "setlocale",
                            ".",
                            "src/shop/pricing/parser.py:17:    locale.setlocale("
                            "locale.LC_NUMERIC, lang)\n"
                            "tests/test_currency_format.py:9:    locale.setlocale("
                            'locale.LC_ALL, "de_DE.UTF-8")',
                        ),
                        read(
                            "src/shop/pricing/parser.py",
                            10,
                            12,
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
                        edit(
                            "src/shop/pricing/parser.py",
                            "    return Decimal(str(locale.atof(text)))",
                            '    return parse_decimal(text, locale=lang or "en_US")',
                        ),
                        bash(
                            "pytest tests/ -q -p randomly --count=200 -k price",
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
                        write(
                            "tests/test_price_parser_locales.py",
                            '@pytest.mark.parametrize("lang,text,expected", [\n'
                            '    ("de_DE", "1.234,50", Decimal("1234.50")),\n'
                            '    ("en_US", "1,234.50", Decimal("1234.50")),\n])\n',
                            18,
                        ),
                        bash(
                            "pytest tests/test_price_parser_locales.py -q",
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

SHOP_CART = Scenario(
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
                        bash(
                            'python -c "from shop.cart import demo; '
                            "print(demo('SPRING15', [1999] * 3))\"",
                            "total=5097 expected=5098",
                        ),
                        read(
                            "src/shop/cart/totals.py",
                            20,
                            15,
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
                        edit(
                            "src/shop/cart/totals.py",
                            "        line.total = round(line.price * (1 - discount.rate))",
                            "        line.total = allocate(subtotal, discount, line)",
                        ),
                        bash(
                            "pytest tests/cart -q",
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

SHOP_SEARCH = Scenario(
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
                        read(
                            "src/shop/search/api.py",
                            60,
                            20,
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
                        edit(
                            "src/shop/search/api.py",
                            'sort=["-score"], offset=page * 20',
                            'sort=["-score", "id"], search_after=cursor',
                        ),
                        bash(
                            "pytest tests/search -q", "......................\n22 passed in 1.40s"
                        ),
                    ),
                ),
                Step(say="已修复：分页改用稳定排序 + search_after 游标，移动端不再出现重复商品。"),
            ),
        ),
    ),
)

SHOP_ROUTER = Scenario(
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
                        tool(
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
                        glob(
                            "src/checkout/**/*.tsx",
                            "src/checkout/App.tsx\nsrc/checkout/routes.tsx\n"
                            "src/checkout/steps/Payment.tsx",
                        ),
                        bash(
                            "npm install react-router-dom@6 && npm test -- checkout",
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
