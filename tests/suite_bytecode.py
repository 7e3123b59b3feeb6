"""The suite's bytecode, compiled once by the process that starts the run (the xdist controller, or the only process
under ``-n 0``) before any worker imports a module: tests/conftest.py's ``pytest_configure`` calls
``compile_once(config)``.

Why: where PYTHONDONTWRITEBYTECODE=1 (this project's machines and CI set it), nothing writes a cache, so every xdist
worker rewrote the asserts of all ~390 test modules again at each collection (pytest's assertion rewriting, ~35 ms a
module: 38.6 s collection per worker against 14.2 s with ``--assert=plain``, 2026-12-07 on the 2-core host), and
every ``python -m gpuplan`` the suite spawns (~140 a run) compiled gpuplan's sources again (858 subprocess-heavy tests
151.5 -> 131.8 s with src/ compiled). Here both caches are written once, in parallel, where the interpreter and
pytest write them when allowed to (``__pycache__`` beside each source, git-ignored): pytest's rewritten test modules
(``<name>.<cache_tag>-pytest-<version>.pyc``, checked by source hash when read) and src/gpuplan's plain bytecode
(``compileall``, checked by the source's mtime and size). Nothing about what runs changes: the same modules with the
same rewritten asserts, read from a cache instead of compiled again; a stale or missing file is compiled as before.

pytest's rewriting is reached through its private helpers (_pytest.assertion.rewrite: _rewrite_test, _read_pyc,
_write_pyc, get_cache_dir, PYC_TAIL; pytest 9.2). Any failure here (a pytest that renamed them, a read-only tree)
only leaves the caches unwritten: each worker then rewrites and compiles as it did before."""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path

_CONFIG = None
"""The pytest config the forked compilers inherit (set by compile_once before it forks)."""


def _rewrite_into_cache(paths: list[str]) -> int:
    """pytest's rewritten code of each test module written to its cache (atomically: _write_pyc renames a per-pid
    file into place); modules whose cache already matches their source are left alone. Returns how many were
    written."""
    from _pytest.assertion import rewrite

    state = _CONFIG.stash[rewrite.assertstate_key]
    written = 0
    for path in map(Path, paths):
        cache_dir = rewrite.get_cache_dir(path)
        pyc = cache_dir / (path.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(path, pyc) is not None:
            continue
        if not rewrite.try_makedirs(cache_dir):
            return written
        source_hash, code = rewrite._rewrite_test(path, _CONFIG)
        written += bool(rewrite._write_pyc(state, code, source_hash, pyc))
    return written


def _compile_plain(paths: list[str]) -> int:
    """The interpreter's own bytecode of each module (``py_compile`` through compileall, skipped when current)."""
    import compileall

    return sum(bool(compileall.compile_file(path, quiet=2)) for path in paths)


def _test_modules(config) -> tuple[list[str], list[str]]:
    """(the modules pytest rewrites: test files by ``python_files`` and conftest.py, the other .py files under the
    test paths, e.g. tests/helpers.py, which are imported plainly)."""
    patterns = config.getini("python_files") or ["test_*.py", "*_test.py"]
    roots = [config.rootpath / p for p in (config.getini("testpaths") or ["."])]
    rewritten, plain = [], []
    for root in roots:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else []:
            if "__pycache__" in path.parts:
                continue
            is_test = path.name == "conftest.py" or any(fnmatch.fnmatch(path.name, p) for p in patterns)
            (rewritten if is_test else plain).append(str(path))
    return rewritten, plain


def compile_once(config) -> None:
    """Write both caches before the workers start (see the module's docstring); a no-op in an xdist worker, under
    ``--assert=plain`` for the rewritten half, and wherever fork is unavailable (the caches then stay as they
    are)."""
    global _CONFIG
    if hasattr(config, "workerinput") or os.name != "posix":
        return
    import gpuplan

    rewritten, plain = _test_modules(config)
    asked = [Path(config.invocation_params.dir, arg.split("::")[0]).resolve() for arg in config.args]
    rewritten = [p for p in rewritten if Path(p).name == "conftest.py" or not asked or any(
        Path(p).resolve() == a or a in Path(p).resolve().parents for a in asked)]  # a run of one file: that file
    if config.getoption("assertmode", "rewrite") != "rewrite":
        rewritten = []
    source = Path(gpuplan.__file__).parent
    plain += [str(p) for p in sorted(source.rglob("*.py")) if "__pycache__" not in p.parts]
    _CONFIG = config
    jobs = max(1, min(os.cpu_count() or 1, 4))
    chunks = [(_rewrite_into_cache, rewritten[i::jobs]) for i in range(jobs)] + \
             [(_compile_plain, plain[i::jobs]) for i in range(jobs)]
    try:
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
            for future in [pool.submit(fn, part) for fn, part in chunks if part]:
                future.result()
    except Exception as exc:  # noqa: BLE001 - a cache left unwritten costs time, never a result
        print(f"tests/suite_bytecode.py: caches not written ({type(exc).__name__}: {exc}); "
              "each worker compiles as before", file=sys.stderr)
    finally:
        _CONFIG = None
