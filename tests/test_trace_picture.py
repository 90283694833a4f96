"""The picture a trace describes (docs/trace-schema.md, schema /2) agrees with the run it comes from, for every
algorithm, causal or not, ragged or not: every write of the launch is in `phases` exactly as the engine's
per-element counters have it; transfers land in buffers that exist and live in the step's kernel; `block` is
blockIdx.x; the tile held, the tiling and the veils agree with what the steps really touch; the rules' closed
forms are the traffic model's; the writes' sources hold the values HBM ends up with."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flashviz.algos import ALGOS, REGISTRY
from flashviz.model import tiling
from flashviz.model.config import Config
from flashviz.tracing.build import make_trace
from flashviz.tracing.trace import SCHEMA, SchemaError, check_schema
from helpers import every_block, runnable

SIZES = st.tuples(st.integers(1, 26), st.integers(1, 5), st.integers(1, 9), st.integers(1, 9))


def launch(algo: str, n: int, d: int, br: int, bc: int, causal: bool, seed: int = 0):
    """A trace with every block recorded, as JSON (what the viewer reads), and the engine's own run of it (causal
    only where the algorithm supports it, as test_flops draws it)."""
    causal = causal and REGISTRY[algo].causal
    cfg = every_block(runnable(Config(algo=algo, n=n, d=d, br=br, bc=bc, causal=causal, seed=seed)))
    if cfg.tr * cfg.tc > 400:
        cfg = cfg.replace(br=max(br, 4), bc=max(bc, 4))
        cfg = every_block(cfg)
    trace = make_trace(cfg)
    doc = json.loads(trace.to_json())
    rec = REGISTRY[algo].engine.execute(cfg, trace.inputs)  # the same launch again: its per-element counters
    return cfg, doc, rec


def test_schema_is_2_and_a_reader_refuses_another_version_naming_both():
    doc = json.loads(make_trace(Config(n=8)).to_json())
    assert doc["schema"] == SCHEMA == "flashviz.trace/4"
    check_schema(doc)
    with pytest.raises(SchemaError, match=r"flashviz\.trace/4.*'flashviz\.trace/1'"):
        check_schema({**doc, "schema": "flashviz.trace/1"})
    with pytest.raises(SchemaError, match="no schema key"):
        check_schema({k: v for k, v in doc.items() if k != "schema"})
    with pytest.raises(SchemaError) as cut:  # a long value is cut
        check_schema({"schema": "x" * 500})
    assert "x" * 60 not in str(cut.value)


@pytest.mark.parametrize("algo", ALGOS)
@given(size=SIZES, causal=st.booleans())
def test_every_write_of_the_launch_is_in_phases_as_the_counters_have_it(algo, size, causal):
    _, doc, rec = launch(algo, *size, causal)
    counted = {name: np.zeros_like(w) for name, w in rec.hbm.writes.items()}
    for p in doc["phases"]:
        for w in p["writes"]:
            (r0, r1), (c0, c1) = w["rows"], w["cols"]
            counted[w["tensor"]][r0:r1, c0:c1] += 1
            kernel = doc["kernels"][w["kernel"]]
            assert w["op"] in kernel["ops"] and 0 <= w["block"] < kernel["grid"]["count"]
            if w["step"] is not None:  # the recorded step that made it has that very transfer
                s = doc["steps"][w["step"]]
                assert s["phase"] == p["phase"] and s["op"] == w["op"] and s["block"] == w["block"]
                assert any(
                    t["kind"] == "write"
                    and t["tensor"] == w["tensor"]
                    and t["rows"] == w["rows"]
                    and t["cols"] == w["cols"]
                    for t in s["transfers"]
                )
        recorded = [w["step"] is not None for w in p["writes"]]
        assert recorded == sorted(recorded), "the writes of blocks not recorded come first"
    for name, w in rec.hbm.writes.items():
        np.testing.assert_array_equal(counted[name], w, err_msg=name)
    assert all(w["step"] is not None for p in doc["phases"] for w in p["writes"]) or algo == "fa2-backward"


@pytest.mark.parametrize("algo", ALGOS)
@given(size=SIZES, causal=st.booleans())
def test_steps_name_their_kernel_block_and_buffers(algo, size, causal):
    _, doc, _ = launch(algo, *size, causal)
    kernels, buffers = doc["kernels"], doc["buffers"]
    assert sum(k["main"] for k in kernels.values()) == 1
    for s in doc["steps"]:
        k = kernels[s["kernel"]]
        assert s["op"] in k["ops"] and doc["ops"][s["op"]]["kernel"] == s["kernel"]
        letter = k["grid"]["letter"]
        assert s["block"] == (0 if letter is None else s["indices"][letter]), "block is blockIdx.x"
        assert 0 <= s["block"] < k["grid"]["count"]
        assert set(s["sram"]) <= {b for b, spec in buffers.items() if s["kernel"] in spec["kernels"]}
        for t in s["transfers"]:
            assert all(s["kernel"] in buffers[b]["kernels"] for b in t["buffers"]), (s["op"], t)
            if t["kind"] == "write":
                src = t["source"]
                assert len(src) == 1
                if "buffer" in src:
                    assert s["kernel"] in buffers[src["buffer"]]["kernels"]
                elif "carry" in src:
                    assert src["carry"] in s["carries"]
                else:
                    assert src["fill"] in (0, None)
        assert isinstance(s["action"], str) and s["action"]
        assert s["carries_note"] is None or 0 <= s["carries_note"] < len(doc["carries"]["notes"])
        assert s["veil"] is None or 0 <= s["veil"] < len(doc["veils"])
    # every buffer a step fills is declared with the engine's shape, as the picture draws it
    for s in doc["steps"]:
        for b, v in s["sram"].items():
            shape = buffers[b]["shape"]
            assert np.asarray(v, dtype=object).size == shape[0] * shape[1], b
    rows = [b for row in doc["picture"]["sram_rows"] for b in row]
    assert sorted(rows) == sorted(buffers)
    assert list(doc["tensors"]) == list(doc["hbm"])


@pytest.mark.parametrize("algo", ALGOS)
@given(size=SIZES, causal=st.booleans())
def test_the_tile_held_is_the_last_tile_its_unit_loaded(algo, size, causal):
    _, doc, _ = launch(algo, *size, causal)
    unit, held = None, None
    for s in doc["steps"]:
        here = (doc["kernels"][s["kernel"]]["scope"], s["block"])
        if here != unit:
            unit, held = here, None
        loaded = [t["rows"][0] for t in s["transfers"] if t["kind"] == "read" and t["tensor"] in ("K", "V")]
        if loaded and s["j"] is not None:  # a load of K or V puts the tile it starts in SRAM
            assert loaded[0] // doc["config"]["bc"] == s["j"]
        held = s["j"] if s["j"] is not None else held
        assert s["tile"] == held
        if s["op"] == "write_back" and s["j"] is None:  # after the loop: the block's last tile stays held
            i = s["indices"]["i"]
            assert s["tile"] == doc["tiling"]["last_tile"][i]


@given(n=st.integers(1, 60), br=st.integers(1, 12), bc=st.integers(1, 12), causal=st.booleans())
def test_the_tiling_is_the_masks_own(n, br, bc, causal):
    """Each (i, j) pair: skipped when no row of block i reaches column j·Bc, masked when some key of the tile is
    after some row of the block, full otherwise; judged element by element, not with flashviz.model.tiling."""
    cfg = Config(n=n, br=br, bc=bc, causal=causal, record=())
    from flashviz.tracing.assemble import tiling_of

    t = tiling_of(cfg)
    assert len(t["pairs"]) == cfg.tr and all(len(row) == cfg.tc for row in t["pairs"])
    for i in range(cfg.tr):
        rows = np.arange(i * br, min(n, (i + 1) * br))
        for j in range(cfg.tc):
            cols = np.arange(j * bc, min(n, (j + 1) * bc))
            live = cols[None, :] <= rows[:, None] if causal else np.ones((rows.size, cols.size), bool)
            kind = "s" if not live.any() else ("m" if not live.all() else "f")
            assert t["pairs"][i][j] == kind, (i, j)
        assert t["last_tile"][i] == tiling.tiles_of_block(n, br, bc, i, causal) - 1
        assert t["kv_width"][i] == min(n, (t["last_tile"][i] + 1) * bc)
    for j in range(cfg.tc):
        reach = [i for i in range(cfg.tr) if t["pairs"][i][j] != "s"]
        assert t["first_block"][j] == min(reach)


def rows_touched(steps, tensor):
    out = set()
    for s in steps:
        for t in s["transfers"]:
            if t["tensor"] == tensor:
                out |= set(range(*t["rows"]))
    return out


@pytest.mark.parametrize("algo", ALGOS)
@given(size=SIZES)
def test_veils_cover_exactly_what_the_unit_never_touches(algo, size):
    """Causal: in every unit, a tensor's veiled rows are exactly the rows its steps never move (fa1: per tile held,
    its visits' rows of Q); without causal nothing is veiled."""
    cfg, doc, _ = launch(algo, *size, True)
    _, plain, _ = launch(algo, *size, False)
    assert plain["veils"] == [] and all(s["veil"] is None for s in plain["steps"])
    if not REGISTRY[algo].causal:  # no causal launch to veil (fa2-splitkv refuses --causal)
        return
    n = cfg.n
    groups: dict[tuple, list] = {}
    for s in doc["steps"]:
        scope = doc["kernels"][s["kernel"]]["scope"]
        key = ("tile", s["tile"]) if algo == "fa1" else (scope, s["block"])
        groups.setdefault(key, []).append(s)
    for key, steps in groups.items():
        veils = {s["veil"] for s in steps if not (algo == "fa1" and s["op"] == "init")}
        assert len(veils) <= 1, key  # one set per unit
        veil = doc["veils"][veils.pop()] if veils and None not in veils else []
        for name, spec in doc["tensors"].items():
            hidden = set()
            for v in veil:
                if v["tensor"] == name and v["cols"][0] == 0:
                    hidden |= set(range(*v["rows"]))
            # what may be veiled: the rows along the axis the unit skips (fa2, standard: keys past its width; fa1's
            # tile, the backward's block j: the blocks of Q before it, O excepted, which only preprocessing reads)
            if algo == "fa1":
                eligible = key[1] is not None and spec["axes"][0] == "q"
                touched = rows_touched([s for s in steps if s["op"] != "load_kv"], name)
            elif algo == "fa2-backward":
                main = key[0] == doc["kernels"]["fa2_bwd"]["scope"]
                eligible = main and spec["axes"][0] == "q" and name != "O"
                touched = rows_touched(steps, name)
            else:
                eligible = spec["axes"][0] == "kv"
                touched = rows_touched(steps, name)
            if not eligible:
                assert not hidden, (key, name)
                continue
            assert hidden == set(range(n)) - touched, (key, name)
        # S and P (standard): the columns past the block's width on its rows
        for v in veil:
            if v["cols"][0] > 0:
                assert v["cols"] == [doc["tiling"]["kv_width"][steps[0]["indices"]["i"]], n]


@pytest.mark.parametrize("algo", ALGOS)
@given(n=st.integers(1, 10**6), d=st.integers(1, 256), br=st.integers(1, 512), bc=st.integers(1, 512))
def test_the_rules_closed_forms_are_the_traffic_models(algo, n, d, br, bc):
    model = REGISTRY[algo].traffic
    count = model.count(n, d, br, bc, False)
    numbers = {"N": n, "D": d, "Tr": -(-n // br), "Tc": -(-n // bc)}
    rules = model.rules(n, d, br, bc, False)
    assert set(rules) == set(count)
    for name, rule in rules.items():
        assert eval(rule.read, {}, numbers) == count[name]["read"], (name, rule.read)
        assert eval(rule.written, {}, numbers) == count[name]["written"], (name, rule.written)
        # the formula shown: "Tr·N·D = 3·12·4" is that count with its numbers; "…, Tc = 3" names Tc's value
        py = rule.formula.replace("\u00b7", "*").replace("\u00b2", "**2")
        if m := re.fullmatch(r"([A-Za-z()+*0-9]+) = ([0-9*]+)", py):
            left, right = eval(m[1], {}, numbers), eval(m[2])
            assert left == right and left in (count[name]["read"], count[name]["written"]), (name, rule.formula)
        elif m := re.search(r"Tc = (\d+)$", rule.formula):
            assert int(m[1]) == numbers["Tc"]
    causal = model.rules(n, d, br, bc, True)
    assert {r.text for r in causal.values()} == {r.text for r in rules.values()}


def resolve(doc, k, src, t, state):
    """The values a write's source gives, as rows of the transfer's rectangle."""
    rows, cols = t["rows"][1] - t["rows"][0], t["cols"][1] - t["cols"][0]
    if "fill" in src:
        v = -np.inf if src["fill"] is None else src["fill"]
        return np.full((rows, cols), v)
    if "carry" in src:
        a = np.asarray(doc["steps"][k]["carries"][src["carry"]], dtype=float)
    else:
        a = np.asarray(state[src["buffer"]], dtype=float)
        if doc["buffers"][src["buffer"]]["shape"][0] == 1 and a.ndim == 1:  # a one-row buffer (Sr): by column
            return a[None, t["cols"][0] : t["cols"][1]]
    a = a[:, None] if a.ndim == 1 else a
    return a[:rows, :cols]


@pytest.mark.parametrize("algo", ALGOS)
@given(size=SIZES, causal=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_the_writes_sources_hold_the_values_hbm_keeps(algo, size, causal, seed):
    """Replaying every write from its source builds HBM's final outputs: in the launch's phase order, and for an
    accumulated tensor (dQ, added into atomically, in no order) in the engine's order, whose running sums the
    sources hold."""
    cfg, doc, _ = launch(algo, *size, causal, seed=seed)
    hbm = {  # a tensor's rows: N, or more for an intermediate (fa2-splitkv's S partials of N rows each)
        name: np.full((spec["shape"][0], 1 if len(spec["shape"]) == 1 else spec["shape"][1]), np.nan)
        for name, spec in doc["tensors"].items()
    }
    states: dict[int, dict] = {}
    unit, state = None, {}
    for k, s in enumerate(doc["steps"]):
        here = (doc["kernels"][s["kernel"]]["scope"], s["block"])
        if here != unit:
            unit, state = here, {}
        state.update(s["sram"])
        states[k] = dict(state)
    writes = [w for p in doc["phases"] for w in p["writes"]]
    accumulated = {name for name, spec in doc["tensors"].items() if spec["writes"] == "accumulated"}
    in_phases = [w for w in writes if w["tensor"] not in accumulated]
    in_engine = sorted((w for w in writes if w["tensor"] in accumulated), key=lambda w: w["step"])
    for w in in_phases + in_engine:
        s = doc["steps"][w["step"]]
        t = next(
            x for x in s["transfers"] if x["kind"] == "write" and x["tensor"] == w["tensor"] and x["rows"] == w["rows"]
        )
        (r0, r1), (c0, c1) = w["rows"], w["cols"]
        hbm[w["tensor"]][r0:r1, c0:c1] = resolve(doc, w["step"], t["source"], t, states[w["step"]])
        if "fill" in w:
            assert t["source"] == {"fill": w["fill"]}
    for name, v in doc["outputs"].items():
        want = np.asarray(v, dtype=float).reshape(cfg.n, -1)
        got = hbm[name]
        if doc["tensors"][name]["writes"] == "none":  # the backward's O and L: inputs here
            continue
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("algo", ALGOS)
@given(size=SIZES, causal=st.booleans())
def test_blocks_are_the_picks_with_their_idle_phases(algo, size, causal):
    _, doc, _ = launch(algo, *size, causal)
    picker = doc["picker"]
    for k, b in enumerate(doc["blocks"]):
        pick = b[picker["letter"]]
        assert pick == k and b["label"].startswith(f"{k} \u00b7 ")
        mine = [
            s
            for s in doc["steps"]
            if s["kernel"] in picker["kernels"]
            and (s["block"] if picker["index"] == "block" else s["indices"].get("i")) == pick
        ]
        phases = {s["phase"] for s in mine}
        assert max(phases) == b["phases"] - 1
        idle = {p for a, z in b["idle"] for p in range(a, z)}
        assert not idle & phases and idle | phases == set(range(b["phases"]))


def test_rows_with_no_finite_score_are_named_in_the_carries_note(tmp_path):
    """Q = K = 1e30 with a negative scale: every score is −∞, and the online view's note says which rows."""
    x = np.full((6, 2), 1e30, dtype=np.float32)
    t = make_trace(Config(n=6, d=2, br=4, bc=4, scale=-1.0), {"Q": x, "K": x, "V": x})
    doc = json.loads(t.to_json())
    first = next(s for s in doc["steps"] if s["op"] == "online_softmax")
    assert first["indices"] == {"i": 0, "j": 0}
    assert "Rows 0, 1, 2, 3: no finite score" in doc["carries"]["notes"][first["carries_note"]][0]
    assert not any("no finite score" in n[0] for n in doc["carries"]["notes"][:1])  # load_q: nothing is NaN yet
    last = next(s for s in doc["steps"] if s["indices"].get("i") == 1 and s["op"] == "write_back")
    assert "Rows 4, 5: no finite score" in doc["carries"]["notes"][last["carries_note"]][0]  # padding rows left out


def test_the_step_table_names_blockidx_and_the_loop_indices():
    """`flashviz steps`: the block column is blockIdx.x (fa1: 0 on every row), i and j the loop indices."""
    out = subprocess.run(
        [sys.executable, "-m", "flashviz", "steps", "--algo", "fa1", "--n", "8"],
        capture_output=True,
        encoding="utf-8",
        env={**os.environ, "COLUMNS": "200"},
        check=True,
    ).stdout
    header = next(line for line in out.splitlines() if "operation" in line)
    assert [c.strip() for c in header.strip("┃ ").split("┃")][:4] == ["step", "block", "i", "j"]
    rows = [line for line in out.splitlines() if line.startswith("│") and line.split("│")[1].strip().isdigit()]
    cells = [[c.strip() for c in r.split("│")[1:5]] for r in rows]
    assert len(cells) == 2 + 2 * (1 + 2 * 4)  # init per block of Q; per tile load_kv and four steps per block
    assert {c[1] for c in cells} == {"0"} and {c[2] for c in cells} == {"0", "1", ""}
