"""How long GET /api/compare takes to answer (issue 17 item 10: it ran the engine for its phase curves, 6.1 s at
N=4096, D=64, Br=128, Bc=11 where `flashviz compare` takes 0.25 s). One request per config after a warm-up request,
on a fresh app through Starlette's TestClient (no network); prints a Markdown table.

    python bench/compare_api_bench.py
"""

from __future__ import annotations

import time
import warnings

CONFIGS = ("n=4096&d=64&br=128&bc=11", "n=4096&d=64&br=64&bc=64", "n=1024&d=64&br=64&bc=64&causal=true")


def main() -> None:
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

    from flashviz import server

    client = TestClient(server.create_app())
    client.get("/api/compare?n=8")  # imports and first-request costs
    print("| query | status | seconds | bytes |")
    print("|---|---:|---:|---:|")
    for query in CONFIGS:
        t0 = time.perf_counter()
        r = client.get(f"/api/compare?{query}")
        print(f"| `{query}` | {r.status_code} | {time.perf_counter() - t0:.3f} | {len(r.content):,} |")


if __name__ == "__main__":
    main()
