"""Cost of caller authentication per request (issue 9): Ed25519 JWT signing on the host,
verification on the worker, side by side with decoding the request envelope itself.

Run: ``.venv/bin/python bench/bench_auth.py [--n 20000]``; prints µs per operation
(median of 5 rounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from worker.authn.binding import Binding
from worker.authn.keyring import Keyring, keyring_entry
from worker.authn.tokens import CallerAuthenticator, CallerSigner, generate_key_pair
from worker.contract.envelopes import decode_request


def per_op_us(fn: Callable[[int], object], n: int, rounds: int = 5) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(n):
            fn(i)
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        private, public = generate_key_pair()
        key_file = Path(tmp) / "h.key"
        key_file.write_text(private)
        ring = Path(tmp) / "keyring.json"
        ring.write_text(json.dumps({"keys": [keyring_entry("h", public, ["/work"])]}))
        signer = CallerSigner.from_file("h", key_file)
        auth = CallerAuthenticator(Keyring(ring))
        bodies = [
            {
                "v": 1, "kind": "request", "id": f"r{i}", "reply_to": "sessionq.replies",
                "tool": "session_search", "arguments": {"query": "needle"},
                "caller": {"session_id": "s1"},
            }
            for i in range(args.n)
        ]
        tokens = [signer.sign(body, "/work/app") for body in bodies]
        envelopes = [
            orjson.dumps({**body, "caller": {"session_id": "s1", "token": tokens[i]}})
            for i, body in enumerate(bodies)
        ]
        sign = per_op_us(lambda i: signer.sign(bodies[i], "/work/app"), args.n)
        verify = per_op_us(
            lambda i: auth.verify(tokens[i], f"r{i}", "s1", Binding(bodies[i])), args.n
        )
        decode = per_op_us(lambda i: decode_request(envelopes[i]), args.n)
    print(f"caller authentication, {args.n} operations x 5 rounds (median µs per operation)")
    print(f"  host: sign a token                  {sign:8.1f} µs")
    print(f"  worker: verify a token (+ its req)  {verify:8.1f} µs")
    print(f"  baseline: decode the request record {decode:8.1f} µs (envelope with its token)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
