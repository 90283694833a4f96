"""The page's URL with options, fuzzed (tests/browser/test_fuzz_page.py runs a few in CI, bench/fuzz_page.py --urls
runs hundreds): query strings as a reader types or edits them, with packed sequences with and without N, seqlens_k,
group, nk, window, softcap and causal, good, odd and bad values, on fa2-triton (the algorithm that runs the options)
and on others. The judge, in `judge`:

- the page gets ready and throws nothing; the console holds nothing but the browser's own line for a request the
  server refused (4xx), and only when the page says why;
- what the config bar says is one line whose every part names the URL parameter or the field it is about (never the
  page's safety net, "could not draw", nor a formatting accident);
- the form shows what is drawn: each of its fields holds the value of the launch on screen;
- a URL the API takes (the same launch fields, asked of /api/trace) is drawn as the API runs it, with no word
  against it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

from hypothesis import strategies as st

# fa2-triton runs the options; the others refuse them in one line (and some have sizes of their own)
ALGOS = ["fa2-triton"] * 6 + ["fa2", "fa2-backward", "ring", "fa2-splitkv", "standard", "fa9"]
BAD_INT = ["0", "-3", "x", "99999", "", "1.5", "1e3", "08 "]
BAD_LIST = ["0", "a,b", "1,,2", ",".join(["1"] * 17), "99999", "-1", "", "3;4"]
LAUNCH = ("algo", "n", "d", "br", "bc", "seed", "scale", "causal", "group", "nk", "window", "softcap", "seqlens",
          "seqlens_k")  # fmt: skip
PAGE_ONLY = ("step", "block", "speed")  # what the URL says of the view, not of the launch


def lengths(count: int):
    return st.lists(st.integers(1, 40), min_size=count, max_size=count).map(lambda xs: ",".join(map(str, xs)))


def maybe(draw, values: list[Any], bad: list[str], clean: bool) -> str | None:
    """Absent half the time, else one of `values`, or (not `clean`, one in four) a bad one."""
    if draw(st.booleans()):
        return None
    if not clean and draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(bad))
    return draw(st.sampled_from(values))


@st.composite
def option_urls(draw) -> str:
    """A query string for the page: a launch with options, in any order. Half of them are `clean` (fa2-triton at
    sizes its kernel runs, every value good on its own: the API may still refuse a combination), half anything."""
    clean = draw(st.booleans())
    q: dict[str, str | None] = {}
    q["algo"] = "fa2-triton" if clean else draw(st.sampled_from(ALGOS))
    if clean or draw(st.booleans()):  # sizes fa2-triton's kernel runs (the picker's own defaults otherwise)
        q["d"] = draw(st.sampled_from(["32", "64"]))
        q["br"] = q["bc"] = draw(st.sampled_from(["16", "32"]))
    count = draw(st.sampled_from([0, 1, 2, 3, 4]))
    if count:
        bad = [] if clean else [st.sampled_from(BAD_LIST)]
        q["seqlens"] = draw(st.one_of(lengths(count), *bad))
        if draw(st.booleans()):
            q["seqlens_k"] = draw(st.one_of(lengths(count), lengths(count), lengths(count + 1), *bad))
    n = draw(st.sampled_from(["", "", "sum", "64"] + ([] if clean else ["bad"])))
    if n == "sum" and count:
        q["n"] = str(sum(int(x) for x in re.findall(r"\d+", q["seqlens"] or "")) or 1)
    elif n == "64":
        q["n"] = "64"
    elif n == "bad":
        q["n"] = draw(st.sampled_from(BAD_INT))
    q["group"] = maybe(draw, ["1", "2", "4", "8"], BAD_INT, clean)
    q["nk"] = maybe(draw, ["16", "70", "128"], BAD_INT, clean)
    q["window"] = maybe(draw, ["8,0", "-1,4", "16,-1", "-1,-1", "0,0"], ["3", "a,b", "1,2,3", "-2,0", ""], clean)
    q["softcap"] = maybe(draw, ["5", "0", "30.5", "0.25"], ["-1", "x", "1e9", "nan", ""], clean)
    q["causal"] = maybe(draw, ["true", "false", "1"], ["maybe", "yes"], clean)
    q["seed"] = draw(st.one_of(st.none(), st.integers(0, 2**32 - 1).map(str)))
    q["step"] = maybe(draw, ["1", "3", "40"], ["0", "x"], clean)
    keep = {k: v for k, v in q.items() if v is not None}
    order = draw(st.permutations(list(keep)))
    return urlencode([(k, keep[k]) for k in order], safe=",")


# ---- the judge ------------------------------------------------------------------------------------------------------

FORM = """() => Object.fromEntries([...document.querySelectorAll('#config [name]')]
  .map((i) => [i.name, i.type === 'checkbox' ? i.checked : i.value]))"""
SHOWN = """() => { const t = window.flashviz.trace();
  return t && { config: t.config, state: window.flashviz.state().config, total: t.steps.length }; }"""
REFUSED = r"Failed to load resource: the server responded with a status of 4\d\d"  # the browser's line, not the page's
JUNK = ("could not draw", "Cannot read", "reach the server", "undefined", "NaN", "[object", "null")


def as_form(value: Any) -> str | bool:
    """A launch field's value as the form holds it: a list as "20,44,30", none as empty, a flag as ticked."""
    if isinstance(value, bool):
        return value
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(str(x) for x in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def drawn_value(name: str, value: Any) -> Any:
    """A traced config's value as the form writes it where it holds the field's default (an option left out)."""
    defaults = {"group": 1, "window": [-1, -1], "softcap": 0, "devices": 4}
    return None if defaults.get(name, object()) == value else value


def unexplained(message: str, fields: set[str]) -> str | None:
    """What part of the config bar's message does not name the URL parameter or field it is about, or None."""
    if "\n" in message:
        return "more than one line"
    for junk in JUNK:
        if junk in message:
            return f"says {junk!r}"
    for part in message.rstrip(".").split(" \u00b7 "):
        part = part.split(" \u2014 showing the seed's example instead")[0]
        named = re.match(r"^URL (\w+)=", part) or re.match(r"^(\w+): ", part)
        if named and (named[1] in fields or named[1] in PAGE_ONLY):
            continue
        if part.startswith(("Block ", "Switched to ")):
            continue
        return f"names no parameter: {part!r}"
    return None


def judge(page, errors: list[str], base: str, query: str, fields: set[str]) -> str | None:
    """None when the page holds up at `query`; else what went wrong, in one line. `errors`: the page's console errors
    and exceptions since the last call (cleared here); `fields`: the launch fields the server lists."""
    errors.clear()
    page.goto(f"{base}/?{query}")
    try:
        page.wait_for_selector("html[data-ready=true]", state="attached", timeout=120_000)
    except Exception:
        return "never ready"
    box = page.locator("[data-testid=config-error]")
    message = box.inner_text() if box.is_visible() else ""
    kind = box.get_attribute("data-kind") or ""
    refused = [e for e in errors if re.match(REFUSED, e)]
    others = [e for e in errors if e not in refused]
    if others:
        return f"console: {others[:2]}"
    if refused and not message:
        return "a request was refused and the page says nothing"
    why = unexplained(message, fields) if message else None
    if why:
        return f"message {why}: {message[:200]!r}"
    shown = page.evaluate(SHOWN)
    if not shown:
        return f"nothing drawn: {message[:200]!r}"
    traced, state = shown["config"], shown["state"]
    for name in ("algo", "n", "d", "br", "bc", "causal"):
        if as_form(traced.get(name)) != as_form(state.get(name)):
            return f"the page's state says {name}={state.get(name)!r}, its trace {traced.get(name)!r}"
    form = page.evaluate(FORM)
    for name, held in form.items():
        if name not in traced or name in ("block",):
            continue
        want = as_form(drawn_value(name, traced[name]))
        if name == "nk" and held == "" and (traced.get("nk") == traced.get("n") or traced.get("seqlens_k")):
            continue  # Nk left empty: N, or the sum of seqlens_k
        if name == "scale" and held == "":
            continue  # empty: 1/sqrt(D), which the trace writes out
        if name == "window" and held.replace(" ", "") == "-1,-1":
            held = ""  # both sides unbounded, as written: the default
        if held != want:
            return f"the form holds {name}={held!r} where the page draws {want!r}"
    # a URL the API takes is drawn as the API runs it, with no word against the launch
    launch = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k in LAUNCH]
    answer = page.request.get(f"{base}/api/trace?{urlencode(launch, safe=',')}")
    if answer.ok:
        ran = answer.json()["config"]
        against = [p for p in message.split(" \u00b7 ") if not re.match(r"^URL (step|block|speed)=", p)]
        if kind in ("server", "invalid") or (message and any(p.startswith("URL ") for p in against)):
            return f"the API takes this launch but the page says: {message[:200]!r}"
        for name in LAUNCH:
            if name in ran and as_form(ran[name]) != as_form(traced.get(name)):
                return f"the API runs {name}={ran[name]!r}, the page drew {traced.get(name)!r}"
    elif not message:
        return f"the API refuses this launch ({answer.status}) and the page says nothing"
    return None
