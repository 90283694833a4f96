"""`flashviz trace --kernel` fuzzed through the real entry point: kernel files and flags drawn by hypothesis, each
case run as `python -m flashviz trace --kernel k.py:attn_fwd ...` in a subprocess, in a folder of its own.

A case is tests/fixtures/kernels/fa2_plain.py (a correct FA2 forward) with one draw from each of these:
- at import: nothing, sys.exit / exit() / SystemExit, KeyboardInterrupt, GeneratorExit, a BaseException of its own, an
  exception that cannot say itself, a 5,000-character message, a missing module, a relative import, a neighbour file
  that imports fine or exits, a print, a file that does not parse or holds a NUL byte, sys.exit under __main__;
- in the kernel's loop: nothing, sys.exit, exit(), KeyboardInterrupt, GeneratorExit, a ValueError, a loop past the
  step budget;
- the stores: all of them, O without its last row or half of D, L without three rows or not at all, O stored by
  block 0 only, no O at all;
- the flags: --grid (none, too small along X or Y, exact, too large, past the interpreter's limit, garbage), --bind
  (none, unknown or duplicate parameters, Q and K or V and K swapped, O and L swapped, garbage), --meta (the tiles,
  a missing tile, an unknown parameter, N_CTX overridden, CAUSAL forced), --carry (none, right, unknown, swapped,
  the wrong shape, not a float, too many), N, heads, causal, the seed.

Each draw says what it makes of a run: nothing certain, a failure (exit code 1 or 2, no `correct` line), or bad input
(exit code 2, found before the kernel runs). Every answer is held to: exit code 0, 1 or 2; no traceback; exit code 2
is exactly one line `flashviz: error: --FLAG: ...` and nothing on stdout; exit code 1 is a divergence on stdout or one
line `flashviz: error: kernel: ...` (or `stdout:`); exit code 0 is a `correct:` line whose O and L (head 0, from the
document) match float64 computed here from the seed's inputs, and whose traffic table stored every row of O and L.
No `correct` verdict for a kernel that leaves rows of O or L unwritten: those draws are failures.

bench/fuzz_kernels.py runs the same generator for a few hundred cases and prints the counts.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

pytest.importorskip("triton")
pytest.importorskip("torch")

PLAIN = (Path(__file__).parent / "fixtures" / "kernels" / "fa2_plain.py").read_text()
FUNCTION = "attn_fwd"
D = 16
# what a draw makes of a run: nothing certain, a failure (exit 1 or 2), bad input found before the run (exit 2)
ANY, FAILS, BAD = 0, 1, 2
ERROR_LINE = re.compile(r"^flashviz(?: [a-z-]+)*: error: (?:--[a-z][a-z-]*|kernel|stdout): \S")
TOL_O, TOL_L = 4e-3, 1e-4  # float16's tolerances for O and L (flashviz.yourkernel.carries.TOLERANCE)


@dataclass
class Case:
    argv: list[str]
    files: dict[str, str | bytes]  # name -> text, in the case's folder; the kernel is k.py
    expect: int = ANY
    why: list[str] = field(default_factory=list)  # the draws, for the report of a failure
    n: int = 40
    heads: int = 1
    causal: bool = False
    seed: int = 0


# ---- what to draw ----------------------------------------------------------------------------------------------------
AT_IMPORT = [  # (name, text before the file, files beside it, expect)
    ("nothing", "", {}, ANY),
    ("sys.exit(0)", "sys.exit(0)\n", {}, BAD),
    ("sys.exit(text)", "sys.exit('bye\\nnow')\n", {}, BAD),
    ("exit()", "exit(3)\n", {}, BAD),
    ("SystemExit(2**100)", "raise SystemExit(2**100)\n", {}, BAD),
    ("KeyboardInterrupt", "raise KeyboardInterrupt\n", {}, BAD),
    ("GeneratorExit", "raise GeneratorExit\n", {}, BAD),
    ("own BaseException", "class Stop(BaseException):\n    pass\n\n\nraise Stop('stop')\n", {}, BAD),
    (
        "str fails",
        "class Bad(Exception):\n    def __str__(self):\n        raise ValueError\n\n\nraise Bad()\n",
        {},
        BAD,
    ),
    ("long message", "raise RuntimeError('x' * 5000 + '\\n' * 3 + '\\x1b[2J')\n", {}, BAD),
    ("missing module", "import flashviz_fuzz_no_such_module\n", {}, BAD),
    ("relative import", "from . import nothing\n", {}, BAD),
    ("neighbour", "from fuzz_helper import SCALE\n", {"fuzz_helper.py": "SCALE = 1.0\n"}, ANY),
    ("neighbour exits", "import fuzz_exits\n", {"fuzz_exits.py": "import sys\nsys.exit(5)\n"}, BAD),
    ("print", "print('imported')\n", {}, ANY),
    ("recursion", "def f():\n    return f()\n\n\nf()\n", {}, BAD),
    ("syntax", "def (:\n", {}, BAD),
    ("exit under __main__", "if __name__ == '__main__':\n    sys.exit(1)\n", {}, ANY),
]
LOOP_END = "        m_i = m_new\n"
IN_KERNEL = [  # (name, statement at the end of the loop's body, expect)
    ("nothing", "", ANY),
    ("sys.exit", "sys.exit(3)", FAILS),
    ("exit()", "exit(4)", FAILS),
    ("KeyboardInterrupt", "raise KeyboardInterrupt", FAILS),
    ("GeneratorExit", "raise GeneratorExit", FAILS),
    ("ValueError", "raise ValueError('in the kernel')", FAILS),
]
O_MASK = "mask=offs_m[:, None] < N_CTX)"
L_STORE = "    tl.store(M + off_hz * N_CTX + offs_m, m_i + tl.log(l_i), mask=offs_m < N_CTX)\n"
O_STORE = "    tl.store(o_ptrs, o.to(Out.dtype.element_ty), mask=offs_m[:, None] < N_CTX)\n"
STORES = [  # (name, old, new): every one but the first leaves rows of O or L unwritten (block 0 only: when N > Br)
    ("all", "", ""),
    ("O without its last row", O_MASK, "mask=offs_m[:, None] < N_CTX - 1)"),
    ("O half of D", O_MASK, "mask=(offs_m[:, None] < N_CTX) & (offs_d[None, :] < HEAD_DIM // 2))"),
    ("L without 3 rows", "mask=offs_m < N_CTX)", "mask=offs_m < N_CTX - 3)"),
    ("no L", L_STORE, ""),
    ("O by block 0 only", O_MASK, "mask=(offs_m[:, None] < N_CTX) & (start_m == 0))"),
    ("no O", O_STORE, ""),
]
GARBAGE = ["0", "1,2,3,4", "a", "-1", "²", "1,,1", "9" * 30, " ", "65536"]


def _pick(draw, rnd: random.Random, table: list, keep: int) -> tuple:
    """The table's first row (its default) in `keep` percent of draws, else any row: most cases run the kernel, and
    every flag is still drawn bad now and then. (The odds come from `rnd`, seeded by a drawn integer: hypothesis'
    own integers and randoms favour their ends, so that a 1-in-20 test met one case in three.)"""
    return table[0] if rnd.random() * 100 < keep else draw(st.sampled_from(table))


def _apply(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


@st.composite
def case(draw) -> Case:
    rnd = random.Random(draw(st.integers(0, 2**64 - 1)))
    n = draw(st.sampled_from([16, 24, 40]))
    heads = draw(st.sampled_from([1, 1, 2]))
    causal = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    why: list[str] = []
    expect = ANY

    def worse(e: int, name: str) -> None:
        nonlocal expect
        expect = max(expect, e)
        why.append(name)

    # --meta: the tiles first, which say how many blocks of Q there are
    meta_choices = [
        ("tiles", "BLOCK_M=16,BLOCK_N=16", ANY),
        ("taller blocks", "BLOCK_M=32,BLOCK_N=16", ANY),
        ("no BLOCK_N", "BLOCK_M=16", BAD),
        ("unknown parameter", "BLOCK_M=16,BLOCK_N=16,NOPE=1", BAD),
        ("N_CTX=8", "BLOCK_M=16,BLOCK_N=16,N_CTX=8", FAILS),  # rows 8.. of O and L are never stored
        ("garbage", draw(st.sampled_from(["BLOCK_M=abc", "=", "BLOCK_M=16,BLOCK_M=16", "BLOCK_M=inf"])), BAD),
    ]
    if not causal:
        meta_choices.append(("CAUSAL forced", "BLOCK_M=16,BLOCK_N=16,CAUSAL=True", FAILS))
    name, meta, e = _pick(draw, rnd, meta_choices, 80)
    block_m = 32 if name == "taller blocks" else 16
    worse(e, f"meta: {name}")

    # the file
    name, prelude, files, e = _pick(draw, rnd, AT_IMPORT, 65)
    worse(e, f"import: {name}")
    text = _apply(PLAIN, "import triton\n", f"import sys\n\n{prelude}\nimport triton\n")
    name, stmt, e = _pick(draw, rnd, IN_KERNEL, 65)
    worse(e, f"kernel: {name}")
    if stmt:
        text = _apply(text, LOOP_END, f"{LOOP_END}        {stmt}\n")
    budget: list[str] = []
    if rnd.random() < 0.08:  # a loop far past the step budget
        text = _apply(text, "range(0, end, BLOCK_N)", "range(0, end * 100000, BLOCK_N)")
        budget = ["--budget", str(draw(st.integers(1, 12)))]
        worse(FAILS, "kernel: loop past the budget")
    name, old, new = _pick(draw, rnd, STORES, 40)
    if old:
        text = _apply(text, old, new)
        one_block = name == "O by block 0 only" and n <= block_m  # block 0 holds every row: it stores them all
        worse(ANY if one_block else FAILS, f"stores: {name}")
    files = {**files, "k.py": text}
    if rnd.random() < 0.04:
        files["k.py"] = text.encode() + b"\x00\n"  # a NUL byte: no Python file
        worse(BAD, "file: a NUL byte")

    argv = ["trace", "--kernel", f"k.py:{FUNCTION}", "--n", str(n), "--d", str(D), "--seed", str(seed), *budget]
    argv += ["--meta", meta]
    if heads > 1:
        argv += ["--heads", str(heads)]
    if causal:
        argv.append("--causal")

    # --grid
    tr = -(-n // block_m)
    grids = [
        ("default", None, ANY),
        ("exact", f"{tr},{heads}", ANY),
        ("too large along X", f"{tr + 2},{heads}", ANY),
        ("too large along Y", f"{tr},{heads + 1}", FAILS),  # the rows of a head that does not exist
        ("past the limit", draw(st.sampled_from(["65535,65535", "4097", "2048,3"])), BAD),
        ("garbage", draw(st.sampled_from(GARBAGE)), BAD),
    ]
    if tr > 1:
        grids.append(("too small along X", f"1,{heads}", FAILS))
    if heads > 1:
        grids.append(("too small along Y", f"{tr}x1", FAILS))
    name, grid, e = _pick(draw, rnd, grids, 65)
    if grid is not None:
        argv += ["--grid", grid]
    worse(e, f"grid: {name}")

    # --bind
    name, bind, e = _pick(
        draw,
        rnd,
        [
            ("none", None, ANY),
            ("Q and K swapped", "Q=K,K=Q", FAILS),
            ("V and K swapped", "V=K,K=V", FAILS),
            ("O and L swapped", "O=M,L=Out", FAILS),
            ("unknown parameter", "Q=query", BAD),
            ("two L", "L=Out", BAD),
            ("garbage", draw(st.sampled_from(["=", "Q=", "Q=K=V", ",", "Q=K,Q=V"])), BAD),
        ],
        85,
    )
    if bind is not None:
        argv += ["--bind", bind]
    worse(e, f"bind: {name}")

    # --carry
    name, carry, e = _pick(
        draw,
        rnd,
        [
            ("none", None, ANY),
            ("right", "m_i,l_i,acc", ANY),
            ("two by role", "m=m_i,l=l_i", ANY),
            ("unknown", "foo,bar,baz", BAD),
            ("m and l swapped", "l_i,m_i,acc", FAILS),
            ("acc as m", "acc,l_i,m_i", FAILS),
            ("not a float", "m_i,l_i,cols", FAILS),
            ("too many", "m_i,l_i,acc,o", BAD),
            ("garbage", draw(st.sampled_from(["m_i,,acc", "x=1", "m=", "m_i l_i", "1,2,3"])), BAD),
        ],
        80,
    )
    if carry is not None:
        argv += ["--carry", carry]
    worse(e, f"carry: {name}")
    argv += ["-o", "out.json"]
    return Case(argv, files, expect, why, n, heads, causal, seed)


# ---- running and judging -----------------------------------------------------------------------------------------
def run(c: Case, folder: Path, timeout: float | None = None) -> subprocess.CompletedProcess:
    """One case in `folder` (timeout: only for bench/fuzz_kernels.py, which reports a hang instead of waiting)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in c.files.items():
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return subprocess.run(
        [sys.executable, "-m", "flashviz", *c.argv],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        cwd=folder,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "CI": "1", "TRITON_INTERPRET": "1"},
        timeout=timeout,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def reference(c: Case) -> tuple[np.ndarray, np.ndarray]:
    """Head 0's O and L in float64, from the seed's inputs as flashviz draws them (Q, K, V in that order, standard
    normal float32 of shape (Z, H, N, D), rounded to float16: flashviz/yourkernel/run.py)."""
    rng = np.random.default_rng(c.seed)
    q, k, v = (rng.standard_normal((1, c.heads, c.n, D), dtype=np.float32)[0, 0] for _ in range(3))
    q, k, v = (x.astype(np.float16).astype(np.float64) for x in (q, k, v))
    s = q @ k.T / np.sqrt(D)  # (N, N)
    if c.causal:
        s[np.triu_indices(c.n, 1)] = -np.inf
    m = s.max(1)
    p = np.exp(s - m[:, None])
    return (p @ v) / p.sum(1)[:, None], m + np.log(p.sum(1))


def problems(c: Case, out: subprocess.CompletedProcess, folder: Path) -> list[str]:
    """What is wrong with one case's answer (nothing: [])."""
    found = []
    stdout, stderr = out.stdout, out.stderr
    errors = [line for line in stderr.splitlines() if not line.startswith("wrote out.json")]
    verdicts = [line for line in stdout.splitlines() if line != "imported"]
    correct = any(line.startswith("correct") for line in verdicts)
    if "Traceback" in stdout + stderr:
        found.append("traceback")
    if out.returncode not in (0, 1, 2):
        return [*found, f"exit code {out.returncode}"]
    if out.returncode == 2:
        if verdicts:
            found.append("exit code 2 with a verdict on stdout")
        if len(errors) != 1 or not ERROR_LINE.match(errors[0]) or errors[0].startswith("flashviz: error: kernel:"):
            found.append(f"exit code 2 is not one line 'flashviz: error: --FLAG: ...' ({len(errors)} lines)")
    elif out.returncode == 1:
        if errors and (len(errors) != 1 or not ERROR_LINE.match(errors[0])):
            found.append(f"exit code 1 with {len(errors)} lines on stderr, not one 'flashviz: error: ...'")
        if not errors and not (verdicts and " diverge" in verdicts[0]):
            found.append("exit code 1 with neither a divergence nor an error line")
    else:
        if not (verdicts and verdicts[0].startswith("correct: ")) or errors:
            found.append("exit code 0 without a 'correct:' line, or with an error")
        else:
            found += _held_to_float64(c, folder)
    if correct and out.returncode != 0:
        found.append(f"a 'correct' line with exit code {out.returncode}")
    if c.expect == BAD and out.returncode != 2:
        found.append(f"bad input ({', '.join(c.why)}) exited {out.returncode}, not 2")
    if c.expect >= FAILS and (out.returncode == 0 or correct):
        found.append(f"a kernel that must fail ({', '.join(c.why)}) is called correct")
    return found


def _held_to_float64(c: Case, folder: Path) -> list[str]:
    """A run called correct: head 0's O and L as the document holds them against float64, and every row of O and L
    stored (by the traffic table's bytes)."""
    from flashviz.tracing.codec import decode_array

    doc = json.loads((folder / "out.json").read_text())
    found = []
    o = decode_array(doc["arrays"]["O"]).reshape(c.n, D).astype(np.float64)
    lse = decode_array(doc["arrays"]["L"]).reshape(c.n).astype(np.float64)
    ref_o, ref_l = reference(c)
    if not np.all(np.isfinite(o)) or np.abs(o - ref_o).max() / np.abs(ref_o).max() > TOL_O:
        found.append("called correct, but head 0's O is not float64's attention")
    if not np.all(np.isfinite(lse)) or np.abs(lse - ref_l).max() / max(1.0, np.abs(ref_l).max()) > TOL_L:
        found.append("called correct, but head 0's L is not float64's log-sum-exp")
    written = {t["tensor"]: t["written_bytes"] for t in doc["traffic"]["tensors"]}
    if written["O"] < c.heads * c.n * D * 2 or written["L"] < c.heads * c.n * 4:
        found.append(f"called correct, but O or L was stored short of every row ({written})")
    return found


@settings(
    max_examples=int(os.environ.get("FLASHVIZ_KERNEL_FUZZ_EXAMPLES", "24")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(c=case())
def test_kernel_files_and_flags_answer_in_one_line(tmp_path_factory, c):
    folder = tmp_path_factory.mktemp("kernel-fuzz")
    out = run(c, folder)
    assert problems(c, out, folder) == [], (c.why, c.argv, out.returncode, out.stdout[:600], out.stderr[-1500:])


def test_the_generator_draws_every_kind_of_case():
    """Each table's draws apply to the file (the planted text is there, once); every row of the file's tables, and
    bad, failing and other cases, each in a good share of the draws."""
    for _, old, new in STORES[1:]:
        _apply(PLAIN, old, new)
    _apply(PLAIN, LOOP_END, LOOP_END)
    _apply(PLAIN, "range(0, end, BLOCK_N)", "range(0, end, BLOCK_N)")
    seen: list[str] = []
    expects: list[int] = []

    @seed(0)  # the draws, not the inputs: the same 1,000 cases every run
    @settings(max_examples=1000, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(c=case())
    def draw(c):
        seen.extend(c.why)
        expects.append(c.expect)

    draw()
    for prefix, table in (("import", AT_IMPORT), ("kernel", IN_KERNEL), ("stores", STORES[1:])):
        names = {f"{prefix}: {row[0]}" for row in table} - {f"{prefix}: nothing"}
        assert names <= set(seen), names - set(seen)
    for prefix in ("meta", "grid", "bind", "carry"):
        assert len({w for w in seen if w.startswith(f"{prefix}: ")}) >= 6, prefix
    for kind in (ANY, FAILS, BAD):
        assert expects.count(kind) >= len(expects) // 8, (kind, expects.count(kind))
