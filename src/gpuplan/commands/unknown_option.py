"""An option the command does not have, in the house's one line: the option as typed, the command it is not an
option of, the command's own options closest to it and where they are all listed. click said "No such option:
'--gpu-count'" with its own guesses ('--cpu-cores', '--gpu', '--spot-discount' for `train --gpu-count`; none for
`campaign FILE --tokens 1B`, whose stage fields go in the file) (hostile wave 27b)."""

from __future__ import annotations

import click

COUNT_WORDS = frozenset({"count", "num", "number", "n", "total", "nb"})
"""Words that ask for a number of things: `--gpu-count`, `--num-gpus`, `--n-gpus` are gpuplan's `--gpus` (a count is
the plural noun in gpuplan's vocabulary: --gpus, --tokens)."""
FRAMEWORK_NAMES = {"tensor-model-parallel": "--tp", "tensor-parallel": "--tp", "tp": "--tp",
                   "pipeline-model-parallel": "--pp", "pipeline-parallel": "--pp", "pp": "--pp",
                   "context-parallel": "--cp", "cp": "--cp", "expert-model-parallel": "--ep",
                   "expert-parallel": "--ep", "ep": "--ep", "expert-tensor-parallel": "--etp", "zero-stage": "--zero"}
"""The frameworks' own names of gpuplan's degrees, '-size' left off: Megatron-LM's --tensor-model-parallel-size,
--pipeline-model-parallel-size, --context-parallel-size, --expert-model-parallel-size, --expert-tensor-parallel-size
(megatron/training/arguments.py), vLLM's --tensor-parallel-size / --pipeline-parallel-size (vllm/engine/arg_utils.py),
SGLang's --tp-size (sglang/srt/server_args.py), DeepSpeed's zero_optimization.stage. difflib offered
--sequence-parallel for --tensor-parallel and --group-size for --tp-size."""
CUTOFF = 0.6
"""difflib's default cutoff for get_close_matches (a ratio of matching characters, 0 to 1)."""
WORD_BONUS = 0.25
"""Added to a candidate whose first word and the typed name's share a stem (gpu / gpus, seq / sequence): difflib's
ratio alone put --cpu-cores and --spot-discount before --gpu and --gpus for --gpu-count."""


def unknown_option_line(name: str, ctx: click.Context) -> str:
    """``--gpu-count: not an option of gpuplan train; did you mean --gpus? (gpuplan train --help lists them)``."""
    command = ctx.command
    options = [opt for param in command.params if isinstance(param, click.Option) and not param.hidden
               for opt in (*param.opts, *param.secondary_opts)]
    if not name.split("=", 1)[0].strip("-"):  # '--=8', '--=': no name between the dashes and '='
        hint = "; an option is written --NAME or --NAME=VALUE"
    elif ctx.command_path.split()[-1] == "campaign" and _budget_field(name):
        hint = "; a stage's field goes in FILE: at the top level (every stage inherits it) or in a stage"
    else:
        near = closest_options(name, options)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
    return f"{_shown(name)}: not an option of {ctx.command_path}{hint} ({ctx.command_path} --help lists them)"


MAX_NAME_CHARS = 64
"""Characters of an unknown option's name that are quoted and matched (the longest gpuplan option has 29): a 5,000-
character name is cut, its length named, and gets no suggestion."""


def _shown(name: str) -> str:
    """The name as typed, control and bidi characters escaped (errors.printable: an ESC in it coloured the terminal),
    cut at MAX_NAME_CHARS with its length named."""
    from gpuplan.errors import printable

    if len(name) <= MAX_NAME_CHARS:
        return printable(name)
    return f"{printable(name[:MAX_NAME_CHARS])}... ({len(name):,} characters)"


def closest_options(name: str, options: list[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``options`` closest to ``name``, best first: difflib's ratio over the names without their
    dashes, plus WORD_BONUS where the first words share a stem; a count word (COUNT_WORDS) beside a noun asks for the
    option named by the plural noun first (--gpu-count, --num-gpus -> --gpus)."""
    import difflib  # only a mistyped option needs it

    typed = name.lstrip("-").lower().replace("_", "-")
    if not typed or len(name) > MAX_NAME_CHARS:
        return []
    words = typed.split("-")
    nouns = [w for w in words if w not in COUNT_WORDS]
    plural = {f"{nouns[0].rstrip('s')}s"} if len(nouns) == 1 and len(words) > 1 else set()
    known = FRAMEWORK_NAMES.get(typed.removesuffix("-size").removesuffix("-degree"))
    scored = [(-9.0, known)] if known in options else []
    for option in dict.fromkeys(options):
        bare = option.lstrip("-")
        if option == known:
            continue
        if bare.startswith("no-") and not typed.startswith("no-"):
            continue  # --no-compile is --compile's other form: the positive one is offered
        score = 1.0 + WORD_BONUS if bare in plural else difflib.SequenceMatcher(None, typed, bare).ratio()
        if _same_stem(words[0], bare.split("-")[0]):
            score += WORD_BONUS
        if score >= CUTOFF:
            scored.append((-score, option))
    return [option for _, option in sorted(scored)[:n]]


def _same_stem(a: str, b: str) -> bool:
    """One word the start of the other, three letters at least (gpu / gpus, seq / sequence; not tp / tpot)."""
    return min(len(a), len(b)) >= 3 and (a.startswith(b) or b.startswith(a))


def _budget_field(name: str) -> bool:
    """Whether ``--name`` is a field of `gpuplan budget` (a campaign stage's fields)."""
    from gpuplan.jobs import JOBS

    try:
        return name.lstrip("-").replace("-", "_") in JOBS["budget"].schema.model_fields
    except (ImportError, KeyError):
        return False


UNICODE_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
"""Dashes a word processor or chat client puts for '--' or '-' (Unicode's Pd hyphens and dashes U+2010-2015, the
minus sign U+2212, the small and fullwidth hyphen-minus U+FE58 / U+FE63 / U+FF0D)."""


def dash_typed_option(argv: list[str]) -> str | None:
    """The line for the first word, before a bare '--', that starts with a Unicode dash then a letter
    (``—gpus``: an option pasted from a document): click read it as the command's TARGET, so `train —gpus 8` was
    told "arguments: got '8'; not expected" and `train —gpus` "model: got '—gpus'; not in the catalog", naming
    neither the dash nor the option (hostile wave 28). None when every word is written with ASCII hyphens."""
    for arg in argv:
        if arg == "--":
            return None
        bare = arg.lstrip("-" + UNICODE_DASHES)
        head = arg[:len(arg) - len(bare)]
        dash = next((c for c in head if c in UNICODE_DASHES), None)
        if dash is None or not bare[:1].isalpha():
            continue
        import unicodedata  # only such a word needs it

        fixed = ("-" if len(bare.split("=", 1)[0]) == 1 else "--") + bare
        return (f"{_shown(arg)}: starts with the {unicodedata.name(dash, 'dash').lower()} U+{ord(dash):04X}, not "
                f"the ASCII hyphen-minus an option is written with; write {_shown(fixed)} "
                f"(a file so named: ./{_shown(arg)})")
    return None
