"""The Python API's argument types (issue 17 item 14) and the fuzzers of the Python API and of the notebook widget's
message handler, kept in CI with bounded example counts (bench/fuzz_api.py runs the same generators at scale).

The judge of every call: it returns what it documents (a Trace whose config holds plain Python values equal to what
was asked), or raises the documented one-line error: a ConfigError (a ValueError) naming the argument, or a
TypeError/ValueError of one line. Nothing else escapes; the widget's handler lets nothing escape at all, answers a
bad message with one line naming the field (never an "internal error"), and keeps the launch it had.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flashviz
from flashviz.model.config import ConfigError

EXAMPLES = int(os.environ.get("FLASHVIZ_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
ONE_LINE = 300  # characters an error line may take


def widget_module():
    pytest.importorskip("anywidget", reason="pip install -e '.[test]' (the notebook extra)")
    from flashviz.share import widget

    return widget


# ---- item 14: each odd type of the issue ----


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"block": True}, "block"),  # wrote recorded_blocks: [true]
        ({"block": False}, "block"),
        ({"block": np.True_}, "block"),
        ({"block": 1.0}, "block"),
        ({"block": "1"}, "block"),
        ({"scale": True}, "scale"),  # was 1.0
        ({"scale": b"8"}, "scale"),  # was 8.0 (while '8' was refused)
        ({"scale": bytearray(b"8")}, "scale"),
        ({"scale": "8"}, "scale"),
        ({"scale": 10**400}, "scale"),
        ({"scale": np.array([0.5])}, "scale"),
        ({"n": True}, "n"),
        ({"seed": np.False_}, "seed"),
        ({"causal": 1}, "causal"),
        ({"causal": "true"}, "causal"),
    ],
)
def test_odd_types_are_refused_naming_the_argument(kwargs, field):
    with pytest.raises(ConfigError) as info:
        flashviz.trace(**kwargs)
    assert info.value.field == field
    assert "\n" not in str(info.value) and len(str(info.value)) < ONE_LINE


def test_numpy_scalars_are_their_python_values():
    """causal=np.True_ was refused as "must be true or false (got True)"; NumPy's scalars now count as the values
    they hold, and the trace holds plain Python values."""
    t = flashviz.trace(n=np.int64(12), d=np.int32(4), causal=np.True_, scale=np.float32(0.5), block=np.int16(1))
    plain = flashviz.trace(n=12, d=4, causal=True, scale=0.5, block=1)
    assert t.to_json() == plain.to_json()
    assert type(t.config["causal"]) is bool and type(t.config["n"]) is int
    assert [type(b) for b in t.config["recorded_blocks"]] == [int]


@pytest.mark.parametrize(
    "seqlens", [np.array([8, 8]), (np.int64(8), 8), [np.int32(8), np.int64(8)], np.array([8, 8], dtype=np.uint16)]
)
def test_list_fields_take_numpy_integers(seqlens):
    """seqlens=np.array([8, 8]) raised NumPy's "truth value of an array ... is ambiguous": a list, tuple or 1-d array
    of Python or NumPy integers is the list of ints it holds."""
    t = flashviz.trace(algo="fa2-triton", d=32, br=16, bc=16, seqlens=seqlens, seqlens_k=np.array([8, 8]))
    plain = flashviz.trace(algo="fa2-triton", d=32, br=16, bc=16, seqlens=[8, 8], seqlens_k=[8, 8])
    assert t.to_json() == plain.to_json()
    assert t.config["seqlens"] == [8, 8] and t.config["n"] == 16


@pytest.mark.parametrize("value", [np.array([[8, 8]]), np.array([8.5, 8]), np.array([], dtype=np.int64)])
def test_odd_arrays_for_a_list_field_are_one_line_errors(value):
    with pytest.raises(ConfigError) as info:
        flashviz.trace(algo="fa2-triton", d=32, br=16, bc=16, seqlens=value)
    assert info.value.field in ("seqlens", "n") and "\n" not in str(info.value)


@pytest.mark.parametrize(("option", "value"), [("group", 2), ("nk", 20), ("seqlens", [16, 16]), ("seqlens_k", [8, 8])])
def test_inputs_with_a_shaping_option_say_the_clis_rule(tmp_path, option, value):
    """group=2 with inputs first asked for "Q must be 32×32", then said K did not match Q: the rule is the CLI's, said
    once: inputs take one (N, D) shape, not with an option that shapes Q or K/V otherwise."""
    import subprocess
    import sys

    r = np.random.default_rng()
    arrays = {k: r.standard_normal((32, 32), dtype=np.float32) for k in "QKV"}
    with pytest.raises(ConfigError) as info:
        flashviz.trace(algo="fa2-triton", br=16, bc=16, inputs=arrays, **{option: value})
    assert str(info.value) == f"inputs: takes arrays of one shape (N, D): not with {option}; drop one"
    np.savez(tmp_path / "qkv.npz", **arrays)
    flag = "--" + option.replace("_", "-")
    shown = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    extra = ["--seqlens", "16,16"] if option == "seqlens_k" else []
    cli = subprocess.run(
        [sys.executable, "-m", "flashviz", "trace", "--algo", "fa2-triton", "--br", "16", "--bc", "16", "--inputs",
         str(tmp_path / "qkv.npz"), flag, shown, *extra, "-o", str(tmp_path / "t.json")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert cli.returncode == 2
    first = "seqlens" if option == "seqlens_k" else option
    assert cli.stderr.strip().endswith(f"--inputs: takes arrays of one shape (N, D): not with --{first}; drop one")


@pytest.mark.parametrize("height", ["760", -5, 0, True, 1e3, 10**6, None, [760]])
def test_show_height_is_one_line_value_error(height):
    """flashviz.show(height='760') raised traitlets' TraitError and height=-5 was accepted: both are now a ConfigError
    (a ValueError) naming height with its range, before any launch is computed."""
    widget_module()
    with pytest.raises(ConfigError) as info:
        flashviz.show(n=8, height=height)
    assert info.value.field == "height" and "120..10000" in info.value.message
    assert "\n" not in str(info.value)


def test_widget_height_and_config_set_from_python_are_checked():
    """`w.config = {'n': -1}` was accepted silently (the page then showed an error of its own): it is refused naming n
    and the launch on screen stays; a partial config is that launch with the defaults for the rest."""
    widget_module()
    w = flashviz.show(n=8, height=np.int64(500))
    assert w.height == 500
    before = dict(w.config)
    cases = [({"n": -1}, "n"), ({"n": 8, "colour": 1}, "config"), ({"scale": True}, "scale"), (None, "config")]
    for bad, field in [*cases, ([1], "config")]:
        with pytest.raises(ConfigError) as info:
            w.config = bad
        assert info.value.field == field
        assert w.config == before
    with pytest.raises(ConfigError):
        w.height = -5
    assert w.height == 500
    w.config = {"n": np.int64(16), "causal": np.True_}
    assert w.config == {**before, "n": 16, "causal": True}
    assert [type(v) for v in (w.config["n"], w.config["causal"])] == [int, bool]


# ---- the fuzzer of flashviz.trace / flashviz.show ----

ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([np.True_, np.False_, b"8", bytearray(b"4"), "8", "", "fa2", [4], (4,), {"n": 4}, object()]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.text(max_size=12),
    st.sampled_from([np.float32(0.5), np.float64(-2.0), np.int64(4), np.int8(-1), np.array(4), np.array([4, 4])]),
)
SMALL = st.one_of(st.integers(1, 16), st.sampled_from([np.int64(4), np.int32(8), np.uint8(2)]))
EDGES = st.sampled_from([0, -1, -2, 16385, 2**31, np.int64(0)])  # just outside the ranges


def argument(good):
    """A value of one argument: mostly good ones (so that launches run and the checks after the first one are
    reached), often odd ones and values just outside the range."""
    return st.integers(0, 9).flatmap(lambda k: good if k < 7 else ODD if k < 9 else EDGES)  # 7 : 2 : 1


TRACE_ARGS = {
    "algo": argument(st.sampled_from(["fa2", "fa2", "fa1", "standard", "fa2-backward"])),
    "n": argument(SMALL),
    "d": argument(SMALL),
    "br": argument(SMALL),
    "bc": argument(SMALL),
    "seed": argument(st.integers(0, 2**32 - 1)),
    "scale": argument(st.one_of(st.none(), st.floats(-4, 4), st.sampled_from([1e-7, 1e7, -0.5, np.float32(0.25)]))),
    "causal": argument(st.sampled_from([True, False, np.True_, np.False_])),
    "block": argument(st.one_of(st.none(), st.integers(0, 2))),
}


@st.composite
def trace_kwargs(draw):
    names = draw(st.lists(st.sampled_from(sorted(TRACE_ARGS)), unique=True, max_size=len(TRACE_ARGS)))
    return {name: draw(TRACE_ARGS[name], label=name) for name in names}


def plain_equal(given, got) -> bool:
    """Whether `got` (a value in the trace) is `given` (an argument) as a plain Python value."""
    if isinstance(given, (bool, np.bool_)):
        return type(got) is bool and got == bool(given)
    if isinstance(given, (int, np.integer)):
        return type(got) is int and got == int(given)
    if isinstance(given, (float, np.floating)):
        return type(got) is float and math.isclose(got, float(given), rel_tol=1e-7)
    return got == given


def judge_trace(kwargs) -> list[str]:
    """What is wrong with flashviz.trace(**kwargs)'s outcome (empty: nothing)."""
    try:
        t = flashviz.trace(**kwargs)
    except (ConfigError, ValueError, TypeError) as exc:
        line = str(exc)
        found = []
        if "\n" in line or len(line) >= ONE_LINE or not line:
            found.append(f"error is not one line: {line[:400]!r}")
        if isinstance(exc, ConfigError) and exc.field not in TRACE_ARGS and exc.field != "inputs":
            found.append(f"error names {exc.field!r}, no argument")
        return found
    except Exception as exc:  # anything else escaping is a bug
        return [f"{type(exc).__name__} escaped: {str(exc)[:200]}"]
    found = []
    cfg = t.config
    for name in ("n", "d", "br", "bc", "seed"):
        if kwargs.get(name) is not None and not plain_equal(kwargs[name], cfg[name]):  # None: the default
            found.append(f"{name}={kwargs[name]!r} became {cfg[name]!r}")
    if "causal" in kwargs and not plain_equal(kwargs["causal"], cfg["causal"]):
        found.append(f"causal={kwargs['causal']!r} became {cfg['causal']!r}")
    if kwargs.get("scale") is not None and not plain_equal(float(kwargs["scale"]), cfg["scale"]):
        found.append(f"scale={kwargs['scale']!r} became {cfg['scale']!r}")
    if kwargs.get("block") is not None and cfg["recorded_blocks"] != [int(kwargs["block"])]:
        found.append(f"block={kwargs['block']!r} recorded {cfg['recorded_blocks']!r}")
    if any(type(b) is not int for b in cfg["recorded_blocks"]):
        found.append(f"recorded_blocks holds {cfg['recorded_blocks']!r}")
    return found


@FUZZ
@given(kwargs=trace_kwargs())
def test_fuzz_flashviz_trace_arguments(kwargs):
    assert judge_trace(kwargs) == [], kwargs


def judge_show(kwargs, height) -> list[str]:
    try:
        w = flashviz.show(height=height, **kwargs)
    except (ConfigError, ValueError, TypeError) as exc:
        line = str(exc)
        return [f"error is not one line: {line[:400]!r}"] if "\n" in line or len(line) >= ONE_LINE else []
    except Exception as exc:
        return [f"{type(exc).__name__} escaped: {str(exc)[:200]}"]
    found = []
    if type(w.height) is not int or not 120 <= w.height <= 10_000:
        found.append(f"height={height!r} kept as {w.height!r}")
    return found


@FUZZ
@given(kwargs=trace_kwargs(), height=argument(st.integers(100, 2000)))
def test_fuzz_flashviz_show_arguments(kwargs, height):
    widget_module()
    assert judge_show(kwargs, height) == [], (kwargs, height)


# ---- the fuzzer of the widget's message handler ----

JSON = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=False), st.text(max_size=8)
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
CONFIG_VALUES = {
    "algo": st.one_of(st.sampled_from(["fa2", "fa1", "standard", "fa2-backward", "fa2-triton", "", "nope"]), JSON),
    "n": st.one_of(st.integers(-2, 16), JSON),
    "d": st.one_of(st.integers(-2, 16), JSON),
    "br": st.one_of(st.integers(-2, 8), JSON),
    "bc": st.one_of(st.integers(-2, 8), JSON),
    "seed": st.one_of(st.integers(-1, 2**33), JSON),
    "scale": st.one_of(st.none(), st.floats(-2, 2), JSON),
    "causal": st.one_of(st.booleans(), JSON),
}


@st.composite
def page_config(draw):
    names = draw(st.lists(st.sampled_from([*CONFIG_VALUES, "extra"]), unique=True))
    return {name: draw(CONFIG_VALUES.get(name, JSON), label=name) for name in names}


@st.composite
def message(draw):
    """What the page (or anything else in the kernel's comm) may send: mostly "ask" messages of odd content."""
    if draw(st.integers(0, 5)) == 0:
        return draw(JSON)
    content = {
        "type": draw(st.sampled_from(["ask", "ask", "ask", "tell", ""])),
        "view": draw(JSON),
        "id": draw(JSON),
        "kind": draw(st.one_of(st.sampled_from(["trace", "compare"]), JSON)),
        "config": draw(st.one_of(page_config(), page_config(), JSON)),
        "block": draw(st.one_of(st.none(), st.integers(-1, 4), JSON)),
    }
    dropped = draw(st.lists(st.sampled_from(sorted(content)), unique=True, max_size=3))
    return {k: v for k, v in content.items() if k not in dropped}


def fresh_widget():
    widget_module()
    w = flashviz.show(n=8, d=4)
    w.sent = []
    w.send = lambda content, buffers=None: w.sent.append((content, list(buffers or [])))
    return w


def judge_message(w, content) -> list[str]:
    """What is wrong with the widget's answer to one message (empty: nothing)."""
    import json

    config, trace, height = dict(w.config), w.trace, w.height
    w.sent.clear()
    try:
        w._on_message(w, content, [])
    except Exception as exc:
        return [f"{type(exc).__name__} escaped the handler: {str(exc)[:200]}"]
    found = []
    if w.config != config or w.height != height:
        found.append(f"the message changed the widget's state: {w.config}")
    asked = isinstance(content, dict) and content.get("type") == "ask"
    if not asked:
        return [*found, *([f"answered a message that asks nothing: {w.sent}"] if w.sent else [])]
    if len(w.sent) != 1:
        return [*found, f"{len(w.sent)} answers to one ask"]
    reply, buffers = w.sent[0]
    echoed = reply.get("id") == content.get("id") and reply.get("view") == content.get("view")
    if reply.get("type") != "answer" or not echoed:
        found.append(f"the answer does not match the ask: {reply}")
    if reply.get("ok") is True:
        doc = json.loads(bytes(buffers[0]))
        if content.get("kind") == "compare":
            if "algorithms" not in doc:
                found.append("a compare answer without algorithms")
            elif w.trace is not trace:
                found.append("a compare answer replaced the widget's trace")
        elif w.trace is trace or doc.get("config", {}).get("n") != w.trace.config["n"]:
            found.append("a trace answer that is not the widget's trace")
    else:
        detail = reply.get("detail", "")
        if w.trace is not trace:
            found.append("a refused ask replaced the widget's trace")
        if not isinstance(detail, str) or "\n" in detail or len(detail) >= ONE_LINE or buffers:
            found.append(f"a refusal that is not one line: {detail!r}")
        elif detail.startswith("internal error"):
            found.append(f"a bug: {detail}")
    return found


@pytest.fixture(scope="module")
def viewer():
    return fresh_widget()


@FUZZ
@given(content=message())
def test_fuzz_widget_messages(viewer, content):
    assert judge_message(viewer, content) == [], content


def judge_config(w, value) -> list[str]:
    """Setting `w.config = value` from Python: accepted whole and valid, or refused leaving the launch on screen."""
    import traitlets

    from flashviz.share.widget import CONFIG_KEYS, config_of

    before = dict(w.config)
    try:
        w.config = value
    except (ConfigError, traitlets.TraitError) as exc:
        found = [] if w.config == before else [f"refused, yet the config became {w.config}"]
        return [*found, *([f"error is not one line: {exc}"] if "\n" in str(exc) or len(str(exc)) > ONE_LINE else [])]
    except Exception as exc:
        return [f"{type(exc).__name__} escaped: {str(exc)[:200]}"]
    found = []
    if list(w.config) != list(CONFIG_KEYS):
        found.append(f"kept a partial config {w.config}")
    try:
        config_of(w.config)
    except ConfigError as exc:
        found.append(f"kept a config it refuses: {exc}")
    w.config = before
    return found


@FUZZ
@given(value=st.one_of(page_config(), JSON))
def test_fuzz_widget_config_set_from_python(viewer, value):
    assert judge_config(viewer, value) == [], value


# ---- the fuzzer of flashviz.attention's argument checking ----


@pytest.fixture(scope="module")
def attention_stubbed():
    """flashviz.attention with its kernels replaced by zeros: the fuzz is of what it accepts, not of the kernels
    (tests/test_attention.py runs those)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before Triton is first imported, as test_attention does
    pytest.importorskip("triton")
    from flashviz.algos.fa2_triton import launcher as ta
    from flashviz.ops import library

    saved = library.run_forward

    def zeros(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, left, right, softcap, backend):
        assert type(causal) is bool and type(scale) is float and type(softcap) is float, (causal, scale, softcap)
        assert backend in ("fa2", "fa3"), backend
        return torch.zeros_like(q), torch.zeros(q.shape[:3], dtype=torch.float32)

    library.run_forward = zeros
    good = torch.randn(1, 1, 4, 32, dtype=torch.bfloat16)
    yield torch, good, ta
    library.run_forward = saved


def tensors_of(good):
    """q, k or v: mostly a good tensor, else one of the wrong dtype, shape, stride or length, or no tensor."""
    wrong = st.sampled_from([good.float(), good[0], good.transpose(2, 3), good.half(), good[:, :, :0]])
    return st.integers(0, 9).flatmap(lambda k: st.just(good) if k < 8 else wrong if k < 9 else ODD)


@FUZZ
@given(data=st.data())
def test_fuzz_attention_arguments(attention_stubbed, data):
    _torch, good, ta = attention_stubbed
    if good.device.type == "cpu" and not ta.launcher().interpret:
        pytest.skip("Triton was imported before TRITON_INTERPRET=1 could be set")
    tensors = tensors_of(good)
    kwargs = {
        "causal": data.draw(argument(st.sampled_from([True, False, np.True_, np.False_])), label="causal"),
        "scale": data.draw(argument(st.one_of(st.none(), st.floats(-4, 4), st.just(np.float32(0.5)))), label="scale"),
        "return_lse": data.draw(argument(st.booleans()), label="return_lse"),
        "backend": data.draw(argument(st.sampled_from(["auto", "fa2", "fa3", "FA2"])), label="backend"),
    }
    q, k, v = (data.draw(tensors, label=name) for name in "qkv")
    try:
        flashviz.attention(q, k, v, **kwargs)
    except (ValueError, TypeError) as exc:
        line = str(exc)
        assert line and "\n" not in line and len(line) < ONE_LINE, line[:400]
    except Exception as exc:  # the fuzz reports what escaped
        pytest.fail(f"{type(exc).__name__} escaped flashviz.attention: {str(exc)[:300]}")


def test_attention_takes_numpy_scalars(attention_stubbed):
    """causal=np.True_ was refused by flashviz.attention as "causal must be True or False; got True" (and
    scale=np.float32(0.5) as no finite number), as flashviz.trace refused it."""
    _torch, good, ta = attention_stubbed
    if good.device.type == "cpu" and not ta.launcher().interpret:
        pytest.skip("Triton was imported before TRITON_INTERPRET=1 could be set")
    o, lse = flashviz.attention(good, good, good, causal=np.True_, scale=np.float32(0.5), return_lse=np.True_)
    assert o.shape == good.shape and lse.shape == good.shape[:3]
    with pytest.raises(ValueError, match=r"^causal must be True or False; got 1$"):
        flashviz.attention(good, good, good, causal=1)


def test_widget_asks_are_judged_by_the_apis_bounds_in_its_words():
    """A launch the page asks for is checked against the API's bounds first, as the server says it (the notebook's
    browser test: N=4096, D=256 is refused for its N*N*D, not for the CLI's bound on (block, tile) pairs)."""
    w = fresh_widget()
    ask = {"type": "ask", "id": 1, "kind": "trace", "config": {**w.config, "n": 4096, "d": 256}}
    assert judge_message(w, ask) == []
    reply = w.sent[-1][0]
    assert reply["ok"] is False and reply["field"] == "n" and "N*N*D must be at most" in reply["detail"]
