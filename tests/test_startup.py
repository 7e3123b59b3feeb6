"""Start-up cost of the CLI (issue 39): what a command reads and imports that its answer does not need.

The speed itself is measured by benchmarks/bench_cli.py (docs/performance.md); these tests hold the
mechanisms that buy it, each of which could silently stop working.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib import resources

import pytest

from gpuplan.catalog import compiled


def test_the_compiled_toml_catalog_is_current():
    """catalog/reference/toml_catalog.json holds every catalog TOML file, parsed, with the size and
    CRC-32 of the file it came from; regenerate with `python -m gpuplan.catalog.compiled`."""
    shipped = json.loads((resources.files("gpuplan.catalog") / compiled.COMPILED).read_text("utf-8"))
    assert shipped == compiled.compile_catalog(), "stale: run python -m gpuplan.catalog.compiled"
    assert len(shipped["files"]) == len(compiled.source_paths()) >= 47  # 35 GPUs, 9 price lists, 3 tables


def test_a_compiled_file_is_what_tomllib_reads():
    root = resources.files("gpuplan.catalog")
    for path in ("hardware/h100-sxm.toml", "prices/aws.toml", "storage.toml", "reference/prediction_band.toml"):
        assert compiled.parsed_toml(path) == tomllib.loads((root / path).read_text("utf-8"))


def test_an_edited_toml_file_is_parsed_not_taken_from_the_stale_copy(monkeypatch):
    """A file whose bytes differ from the compiled copy's (size or CRC-32) is parsed afresh."""
    path = "storage.toml"
    entry = compiled._compiled()[path]
    stale = dict(entry, content={"stale": True})
    monkeypatch.setitem(compiled._compiled(), path, stale)
    assert compiled.parsed_toml(path) == {"stale": True}  # same bytes: the copy is used
    monkeypatch.setitem(compiled._compiled(), path, dict(stale, crc32=entry["crc32"] ^ 1))
    fresh = tomllib.loads((resources.files("gpuplan.catalog") / path).read_text("utf-8"))
    assert compiled.parsed_toml(path) == fresh != {"stale": True}


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_a_command_parses_no_toml():
    """`gpuplan memory` answers without tomllib (the compiled catalog)."""
    loaded = _modules_after("from gpuplan.cli import main; import io, contextlib\n"
                           "with contextlib.redirect_stdout(io.StringIO()):\n"
                           "    assert main(['memory', 'llama-2-7b', '--gpu', 'a100-80gb', '--gpus', '8', '--zero', '3']) == 0")
    assert "tomllib" not in loaded
    assert "numpy" in loaded  # the memory formulas are numpy's (the answer needs it)


def test_the_layout_search_imports_no_optional_numpy_submodule():
    """`gpuplan plan` searches ~6,000 layouts with numpy's core only: numpy.ma (a plain np.unique
    imports it, ~7 ms) and numpy.random (~17 ms) stay unloaded."""
    loaded = _modules_after("from gpuplan.cli import main; import io, contextlib\n"
                           "with contextlib.redirect_stdout(io.StringIO()):\n"
                           "    assert main(['plan', 'llama-3.1-70b', '--gpu', 'h100', '--gpus', '1024']) == 0")
    assert "gpuplan.planner.uncertainty" in loaded
    assert not {"numpy.ma", "numpy.random"} & loaded
    # an ask whose rows leave GPUs idle (planner.idle_rule) and whose front is long (jobs.plan.ranked_columns)
    loaded = _modules_after("from gpuplan.cli import main; import io, contextlib\n"
                           "with contextlib.redirect_stdout(io.StringIO()):\n"
                           "    assert main(['plan', 'llama-3.1-8b', '--gpu', 'h100', '--gpus', '1024', '--global-batch', "
                           "'1000']) == 0")
    assert not {"numpy.ma", "numpy.random"} & loaded


def test_plan_and_train_leave_out_what_only_other_paths_need():
    """Modules a plan or a train answer does not need stay unloaded: importlib.resources (its first
    files() call imports zipfile, tempfile, shutil, bz2 and lzma, ~5 ms: the best-published-MFU
    table is read by path), difflib (only a misspelt name needs it, ~1 ms), and for `train` plan's
    schema (its layout search imports jobs.plan.search, which names PlanInputs only as a type, ~2 ms)."""
    run = ("from gpuplan.cli import main; import io, contextlib\n"
           "with contextlib.redirect_stdout(io.StringIO()):\n    assert main({argv!r}) == 0")
    plan = _modules_after(run.format(argv=["plan", "llama-3.1-70b", "--gpu", "h100", "--gpus", "1024"]))
    assert "gpuplan.jobs.validation.mfu_ceiling" in plan  # the note was written from the table
    assert not {"importlib.resources", "zipfile", "tempfile", "difflib"} & plan
    train = _modules_after(run.format(argv=["train"]))
    assert "gpuplan.jobs.plan.search" in train
    assert not {"gpuplan.jobs.plan.schema", "importlib.resources", "difflib"} & train


def test_the_training_schemas_help_and_a_refusal_load_no_numpy():
    """The training, budget, memory and plan schemas import no numpy (~40 ms of CPU): core.economics.checkpoint
    and core.memory.recompute, which the option vocabulary and the budget fields read, import the numpy
    memory model on use. So `train --help` and a refused input answer without it (2026-12-05, 15 paired
    runs: 175 -> 127 ms of CPU each); an answer still loads it for the layout search."""
    schemas = _modules_after("import gpuplan.jobs.budget.schema, gpuplan.jobs.training.schema, "
                             "gpuplan.jobs.memory.schema, gpuplan.jobs.plan.schema")
    assert "gpuplan.schema.vocabulary" in schemas and "numpy" not in schemas
    run = ("from gpuplan.cli import main; import io, contextlib\n"
           "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
           "    assert main({argv!r}) == {code}")
    for argv, code in ((["train", "--help"], 0), (["train", "--gpus", "0"], 2), (["budget", "--days", "-1"], 2)):
        assert "numpy" not in _modules_after(run.format(argv=argv, code=code)), argv


def test_a_misspelt_name_still_gets_its_suggestions():
    from gpuplan.errors import closest_names

    assert closest_names("lama-2-7b", ["llama-2-7b", "llama-2-13b", "mistral-7b"])[0] == "llama-2-7b"


def test_the_command_collects_garbage_rarely_and_gives_the_threshold_back():
    """The CLI collects the youngest generation every 100,000 objects (start-up allocates ~75,000
    that live until exit: CPython's 700 ran ~100 collections, ~20 ms of CPU) and restores the
    caller's threshold when it returns (tests run it in-process)."""
    import gc
    import io
    from contextlib import redirect_stdout

    from gpuplan import cli

    before = gc.get_threshold()
    seen = []
    real = cli._lean_start
    try:
        cli._lean_start = lambda command=None: (real(command), seen.append(gc.get_threshold()))
        with redirect_stdout(io.StringIO()):
            assert cli.main(["catalog", "gpus"]) == 0
    finally:
        cli._lean_start = real
    assert seen[0][0] == cli.GC_GENERATION0 == 100_000
    assert gc.get_threshold() == before


@pytest.fixture(scope="module")
def recorded_texts() -> set[str]:
    """The dataclass method texts the benchmark commands exec, recorded in a fresh process as
    `python -m gpuplan.commands.record_dataclass_code` records them for the shipped file."""
    code = ("import json; from gpuplan.commands.record_dataclass_code import record\n"
            "print(json.dumps(sorted(record())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_kept_dataclass_code_is_what_the_interpreter_compiles(recorded_texts):
    """The file keeps exactly the texts the benchmark commands exec now (562 at 9e5ef67, counted from the file:
    107 distinct __init__ texts, 106 __repr__, 106 __eq__, 81 each of __hash__ / __setattr__ / __delattr__):
    a text it lacks is compiled again on every start, the cost the file exists to save. Each kept code
    object equals the text's own compilation (code objects compare by their bytecode, constants, names
    and line table), so a kept method is the method dataclasses writes."""
    from gpuplan.commands import dataclass_code

    kept = dataclass_code.kept_code()
    if not kept:
        pytest.skip("dataclass_code.bin is from another Python (its magic number differs)")
    assert set(kept) == recorded_texts, "stale: run python -m gpuplan.commands.record_dataclass_code"
    for text, code in kept.items():
        assert code == dataclass_code.compiled(text), text[:200]


def test_the_kept_code_is_read_without_decompressing_and_the_compressed_form_still_is(tmp_path, monkeypatch,
                                                                                     recorded_texts):
    """The file ships uncompressed (zlib's decompress was ~2 ms of every command; git and the wheel
    compress it anyway); a zlib-compressed file, the earlier form, reads to the same map."""
    import zlib

    from gpuplan.commands import dataclass_code

    import marshal

    data = dataclass_code.FILE.read_bytes()
    magic = dataclass_code.magic_number()
    assert data.startswith(magic), "the shipped file is the uncompressed form (or another Python's: re-record it)"
    kept = dataclass_code.kept_code()
    # read without decompressing (the file starts with the magic number): every recorded text, not an empty map
    assert len(kept) == len(recorded_texts) > 0
    packed = tmp_path / "packed.bin"
    packed.write_bytes(zlib.compress(magic + marshal.dumps(kept), 9))  # the earlier form: no CRC inside
    monkeypatch.setattr(dataclass_code, "FILE", packed)
    assert dataclass_code.kept_code() == kept
    packed.write_bytes(b"neither form")
    assert dataclass_code.kept_code() == {}


def test_a_damaged_kept_code_file_is_not_read(tmp_path):
    """One flipped bit in the uncompressed file had an existing text run another text's code (95 of
    300 random flips) or marshal raise SystemError before any command ran (11 of 300): the CRC-32
    after the magic number refuses every such file, and a command then compiles as before."""
    import random

    from gpuplan.commands import dataclass_code

    data = dataclass_code.FILE.read_bytes()
    start = len(dataclass_code.magic_number())
    damaged = tmp_path / "damaged.bin"
    rng = random.Random(0)
    for _ in range(40):
        flipped = bytearray(data)
        at = rng.randrange(start, len(data))  # anywhere past the magic number: checksum or payload
        flipped[at] ^= 1 << rng.randrange(8)
        damaged.write_bytes(bytes(flipped))
        assert dataclass_code.kept_code(damaged) == {}
    damaged.write_bytes(data[:start + 2])  # cut inside the checksum
    assert dataclass_code.kept_code(damaged) == {}


def test_a_dataclass_made_with_kept_code_behaves_as_one_made_without(tmp_path):
    """In a fresh process with the kept code installed: a frozen dataclass gpuplan ships (from the
    file) and one the file cannot hold (compiled as before) construct, compare, hash and refuse
    assignment as dataclasses do."""
    code = (
        "import dataclasses\n"
        "from gpuplan.commands import dataclass_code as D\n"
        "D.install()\n"
        "assert dataclasses.exec is not exec\n"
        "from gpuplan.core.parallel import ParallelLayout\n"
        "a, b = ParallelLayout(dp=2, tp=4), ParallelLayout(dp=2, tp=4)\n"
        "assert a == b and hash(a) == hash(b) and 'tp=4' in repr(a)\n"
        "try:\n    a.tp = 8\nexcept dataclasses.FrozenInstanceError:\n    pass\nelse:\n    raise SystemExit(1)\n"
        "@dataclasses.dataclass(frozen=True)\nclass Odd:\n    never_kept_field_xyz: int = 3\n"
        "assert Odd() == Odd(3) and Odd(4).never_kept_field_xyz == 4\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_the_kept_code_covers_most_of_what_a_command_compiles():
    """A command finds most of its dataclass methods in the file (it is regenerated by `python -m
    gpuplan.commands.record_dataclass_code`; a dataclass added since only compiles as before)."""
    import pytest

    from gpuplan.commands import dataclass_code

    if not dataclass_code.kept_code():
        pytest.skip("dataclass_code.bin is from another Python")
    code = ("import builtins, dataclasses, io, contextlib\n"
            "from gpuplan.commands import dataclass_code as D\n"
            "kept = D.kept_code(); seen = []\n"
            "def spy(src, g=None, l=None):\n"
            "    seen.append(src in kept); builtins.exec(src, g, l)\n"
            "dataclasses.exec = spy\n"
            "from gpuplan.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['memory', 'llama-2-7b', '--gpu', 'a100-80gb', '--gpus', '8', '--zero', '3']) == 0\n"
            "print(sum(seen), len(seen))\n")
    found, total = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                           check=True).stdout.split())
    assert total >= 200 and found >= 0.8 * total, f"{found} of {total}: regenerate dataclass_code.bin"


def test_the_kept_code_file_is_package_data():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    declared = tomllib.loads((root / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]["package-data"]
    assert "dataclass_code.bin" in declared["gpuplan.commands"]


def _entry(argv: list[str], *, thread: bool = False) -> subprocess.CompletedProcess:
    """`gpuplan <argv>` as the process entry (main() without argv), with an exit handler and an
    object whose __del__ would only run in the interpreter's teardown."""
    code = ("import atexit, sys, threading\n"
            "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
            "class Teardown:\n    def __del__(self):\n        print('teardown ran', file=sys.stderr)\n"
            "kept = Teardown()\n"
            + ("threading.Thread(target=__import__('time').sleep, args=(3,)).start()\n" if thread else "")
            + f"sys.argv = ['gpuplan', *{argv!r}]\n"
            "from gpuplan.cli import main\nsys.exit(main())\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_an_answer_command_ends_its_process_after_the_exit_handlers():
    """As the process entry, an answer command skips the interpreter's teardown (60-80 ms of CPU
    after `train`) but runs the exit handlers and writes all of its answer."""
    done = _entry(["catalog", "gpus", "--format", "csv"])
    assert done.returncode == 0
    assert len(done.stdout.strip().splitlines()) >= 35  # every accelerator, the last line included
    assert "exit handler ran" in done.stderr and "teardown ran" not in done.stderr
    refused = _entry(["memory", "--gpus", "0"])
    assert refused.returncode == 2 and refused.stderr.startswith("error: gpus")
    assert "exit handler ran" in refused.stderr and "teardown ran" not in refused.stderr


def test_an_answer_command_ends_its_process_before_the_callers_gc_threshold_is_back():
    """The caller's threshold restored first, the next allocation collected the ~400 modules' objects
    (8-9 ms of `plan`) just before the process ended: the process ends with the command's threshold,
    and nothing is collected once the answer is written."""
    code = ("import gc, os, sys\nfrom gpuplan import cli\nreal = cli._end_process\n"
            "def end(code):\n"
            "    os.write(2, f'threshold {gc.get_threshold()[0]}\\n'.encode())\n"
            "    gc.callbacks.append(lambda phase, info: phase == 'start' and os.write(2, b'collected\\n'))\n"
            "    real(code)\n"
            "cli._end_process = end\n"
            "sys.argv = ['gpuplan', 'memory', 'llama-2-7b', '--gpu', 'a100-80gb', '--gpus', '8', '--zero', '3']\n"
            "sys.exit(cli.main())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and "fits" in done.stdout
    assert f"threshold {100_000}" in done.stderr
    assert "collected" not in done.stderr


def test_other_commands_and_running_threads_get_the_normal_exit():
    for argv, thread in ((["--version"], False), (["catalog", "gpus"], True)):
        done = _entry(argv, thread=thread)
        assert done.returncode == 0
        assert "exit handler ran" in done.stderr and "teardown ran" in done.stderr


def test_openblas_runs_one_thread_for_answer_commands_only(monkeypatch):
    """An answer command's numpy needs no BLAS threads (their start costs ~70 ms of CPU here); the
    trial runs (profile, measure) keep theirs: torch may use OpenBLAS for its matmuls."""
    import gc
    import os

    from gpuplan import cli

    threshold = gc.get_threshold()
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    try:
        cli._lean_start("profile")
        assert "OPENBLAS_NUM_THREADS" not in os.environ
        cli._lean_start("plan")
        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    finally:
        gc.set_threshold(*threshold)


PLAN_70B = "['plan', 'llama-3.1-70b', '--gpu', 'h100', '--gpus', '1024']"


def _plan_run(env_value: str | None) -> tuple[str, set[str]]:
    """(answer, modules loaded) of `gpuplan plan` in a fresh interpreter with
    PYDANTIC_DISABLE_PLUGINS as given (None: unset, so the CLI sets '__all__')."""
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    if env_value is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = env_value
    code = ("import io, contextlib, sys\nfrom gpuplan.cli import main\nout = io.StringIO()\n"
            f"with contextlib.redirect_stdout(out):\n    assert main({PLAN_70B}) == 0\n"
            "print(out.getvalue().split('searched')[0])\nprint('=====')\nprint('\\n'.join(sys.modules))")
    text = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    answer, modules = text.split("=====")
    return answer, set(modules.split())


def test_pydantic_answers_no_plugins_without_importlib_metadata():
    """With plugins off (the CLI's default) on a release the hook was read for, the answer is the
    same and importlib.metadata (~12-15 ms) is never imported; with them on, pydantic's own loader
    scans the entry points as before."""
    from gpuplan.commands import pydantic_plugins as P

    if P.pydantic_release() is None:
        import pydantic.version  # noqa: F401
    release = P.pydantic_release()
    assert release is not None
    fast, fast_modules = _plan_run(None)
    slow, slow_modules = _plan_run("")
    assert fast == slow and "Layout plan: llama-3.1-70b" in fast
    assert "importlib.metadata" in slow_modules
    tested = P.TESTED_RELEASES[0] <= release <= P.TESTED_RELEASES[1]
    assert ("importlib.metadata" not in fast_modules) == tested


def test_the_installed_pydantic_asks_its_loader_for_get_plugins_only():
    """What the hook stands in for, read from the installed pydantic: create_schema_validator takes
    only get_plugins from the loader, and the loader returns () for the values the hook trusts."""
    import re
    from importlib import util

    from gpuplan.commands import pydantic_plugins as P

    import pydantic.version  # noqa: F401

    if not P.TESTED_RELEASES[0] <= P.pydantic_release() <= P.TESTED_RELEASES[1]:
        pytest.skip("the hook declines this pydantic release (a later one than those read)")
    folder = os.path.dirname(util.find_spec("pydantic.plugin").origin)
    caller = open(os.path.join(folder, "_schema_validator.py"), encoding="utf-8").read()
    assert re.findall(r"from \._loader import (.+)", caller) == ["get_plugins"]
    loader = open(os.path.join(folder, "_loader.py"), encoding="utf-8").read()
    assert "disabled_plugins in ('__all__', '1', 'true')" in loader


def test_the_hook_declines_other_releases_and_plugins_on(monkeypatch):
    from gpuplan.commands import pydantic_plugins as P

    import pydantic.version  # noqa: F401

    monkeypatch.setattr(P.PluginLoaderFinder, "declined", False)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "__all__")
    monkeypatch.setattr(P, "pydantic_release", lambda: (2, 14))
    assert P.PluginLoaderFinder.find_spec(P.LOADER) is not None
    assert P.PluginLoaderFinder.find_spec("pydantic.plugin._other") is None
    for release in ((2, 6), (2, 15), (3, 0), None):
        monkeypatch.setattr(P, "pydantic_release", lambda release=release: release)
        assert P.PluginLoaderFinder.find_spec(P.LOADER) is None
    monkeypatch.setattr(P, "pydantic_release", lambda: (2, 14))
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "some-plugin")
    assert P.PluginLoaderFinder.find_spec(P.LOADER) is None


def test_the_pydantic_schemas_keep_their_annotations_as_objects():
    """The schema modules carry no `from __future__ import annotations` (schema/ since 03:55, the training,
    budget and budget-field schemas since 1c0ceb7: pydantic takes the annotations as objects instead of
    evaluating each field's text when the class is made, their import 6.28 -> 5.13 ms CPU); each says why in a
    comment, and this keeps a formatter from putting the import back (review wave7 r3 #7)."""
    import ast
    import importlib
    from pathlib import Path

    for name in ("gpuplan.schema.model_fields", "gpuplan.schema.training_fields", "gpuplan.jobs.budget.fields",
                 "gpuplan.jobs.training.schema", "gpuplan.jobs.budget.schema"):
        source = Path(importlib.import_module(name).__file__).read_text()
        futures = [a.name for node in ast.parse(source).body if isinstance(node, ast.ImportFrom)
                   and node.module == "__future__" for a in node.names]
        assert "annotations" not in futures, name
        assert "No `from __future__ import annotations` here" in source, name
