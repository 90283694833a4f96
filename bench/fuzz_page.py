"""The page fuzzer at length (tests/browser/test_fuzz_page.py runs 10 examples in CI): crafted trace files in an
exported page opened from disk (file://) in Debian's chromium, as the test builds them (through the CLI's check when
it passes, spliced in raw when it does not). Two modes:

- `--sweep`: every place tests/test_fuzz_files.py's generator mutates (top-level keys, config keys, keys of the first,
  a middle and the last step, block and phase, of the picker, the picture, the kernel, one tensor, buffer, op, kernel
  and array) x 8 values (deleted, null, "x", 0, [], {}, [null], [{}]); a page that shows steps is also stepped through
  every step.
- `--random N --seed S`: N documents of the generator itself (one to three mutations, or the JSON cut short), seeded.
- `--urls N --seed S`: N query strings with options (tests/browser/fuzz_urls.py: packed sequences with and without N,
  seqlens_k, group, nk, window, softcap, causal; good, odd and bad values) on the served page (the real server in a
  thread), judged by fuzz_urls.judge: what the page says names the parameter, the form shows what is drawn, no console
  error, a URL the API takes is drawn as the API runs it. Each failing query is printed.

Judge (the test's): the page gets ready, throws nothing, asks nothing off disk, and either shows steps or says in
one line what is wrong, naming the field (not the page's safety net, "could not draw this trace"). Each failing
document is saved in --out (its name in the output); `python tests/browser/test_fuzz_page.py FILE` rebuilds its page.

    PYTHONPATH=src python bench/fuzz_page.py --sweep
    PYTHONPATH=src python bench/fuzz_page.py --random 300 --seed 1
    PYTHONPATH=src python bench/fuzz_page.py --urls 300 --seed 1
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "browser")]

DELETE = object()
VALUES = [DELETE, None, "x", 0, [], {}, [None], [{}]]


def sweep_documents():
    from test_fuzz_files import GOOD, paths, set_at

    for where in paths(GOOD):
        for value in VALUES:
            doc = copy.deepcopy(GOOD)
            try:
                set_at(doc, where, None if value is DELETE else copy.deepcopy(value), delete=value is DELETE)
            except (KeyError, IndexError, TypeError):
                continue
            yield json.dumps(doc).encode()


def random_documents(count: int, seed: int):
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded

    from test_fuzz_files import GOOD, crafted_trace

    out: list[bytes] = []

    @seeded(seed)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(data=crafted_trace(GOOD))
    def collect(data):
        out.append(data)

    collect()
    return out


def random_urls(count: int, seed: int) -> list[str]:
    from fuzz_urls import option_urls
    from fuzzing import generated
    from hypothesis import given

    out: list[str] = []

    @generated(count, seed)
    @given(query=option_urls())
    def collect(query):
        out.append(query)

    collect()
    return out


def run_urls(count: int, seed: int) -> None:
    """The served page at `count` query strings with options; prints each failure and the totals, exits 1 on any."""
    from fuzz_urls import judge as judge_url
    from pageutil import serving
    from playwright.sync_api import sync_playwright

    queries = random_urls(count, seed)
    t0 = time.perf_counter()
    failures: list[str] = []
    said = 0
    with serving() as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
        fields = {f["name"] for f in page.request.get(f"{base}/api/limits").json()["fields"]}
        for query in queries:
            wrong = judge_url(page, errors, base, query, fields)
            if wrong:
                failures.append(f"/?{query}: {wrong}")
                print(f"FAIL /?{query}: {wrong}", flush=True)
            elif page.locator("[data-testid=config-error]").is_visible():
                said += 1
        browser.close()
    took = time.perf_counter() - t0
    drawn = len(queries) - said - len(failures)
    print(
        f"urls {count}, seed {seed}: {len(queries)} pages, {drawn} drawn as asked, {said} said in one line, "
        f"{len(failures)} failures ({took:.0f} s)"
    )
    sys.exit(1 if failures else 0)


def judge(page, errors, path: Path, step_through: bool) -> str | None:
    """None when the page holds up; else what went wrong, in one line."""
    errors.clear()
    page.goto(path.as_uri())
    try:
        page.wait_for_selector("html[data-ready=true]", state="attached", timeout=60_000)
    except Exception:
        return "never ready (html[data-ready] unset)"
    total = int(page.locator("[data-testid=step-counter]").get_attribute("data-total") or 0)
    message = page.locator("[data-testid=config-error]")
    text = message.inner_text() if message.count() else ""
    if "could not draw" in text:
        return f"a view threw on what both checks let through: {text}"
    if total == 0 and (not text or "\n" in text or "Cannot read" in text or "reach the server" in text):
        return f"no steps and no one-line message: {text!r}"
    if total and step_through:
        for k in range(total):
            page.evaluate(f"window.flashviz.goto({k})")
            text = message.inner_text() if message.count() else ""
            if "could not draw" in text:
                return f"step {k}: {text}"
    if errors:
        return f"page errors: {errors[:2]}"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sweep", action="store_true", help="every mutation place x 8 values")
    ap.add_argument("--random", type=int, default=0, help="this many of the generator's documents")
    ap.add_argument("--urls", type=int, default=0, help="this many query strings with options on the served page")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="test-artifacts/fuzz-page", help="where failing documents are saved")
    a = ap.parse_args()
    if not a.sweep and not a.random and not a.urls:
        ap.error("--sweep, --random N or --urls N")
    if a.urls:
        run_urls(a.urls, a.seed)

    from playwright.sync_api import sync_playwright
    from test_fuzz_page import page_of

    out = Path(a.out).resolve()  # page.goto takes a file:// URI, which a relative path cannot be
    out.mkdir(parents=True, exist_ok=True)
    docs = list(sweep_documents()) if a.sweep else random_documents(a.random, a.seed)
    t0 = time.perf_counter()
    shown = said = 0
    failures: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_context(viewport={"width": 1000, "height": 800}).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        html = out / "page.html"
        for data in docs:
            html.write_text(page_of(data))
            wrong = judge(page, errors, html, step_through=a.sweep)
            if wrong:
                name = out / f"fuzz-page-{hashlib.sha256(data).hexdigest()[:12]}.json"
                name.write_bytes(data)
                failures.append(f"{name}: {wrong}")
                print(f"FAIL {name}: {wrong}", flush=True)
            elif int(page.locator("[data-testid=step-counter]").get_attribute("data-total") or 0):
                shown += 1
            else:
                said += 1
        browser.close()
    mode = "sweep" if a.sweep else f"random {a.random}, seed {a.seed}"
    took = time.perf_counter() - t0
    print(f"{mode}: {len(docs)} pages, {shown} shown, {said} said in one line, {len(failures)} failures ({took:.0f} s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
