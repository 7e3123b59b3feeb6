"""`gpuplan report`: a self-contained HTML (and Markdown) report of a plan file with plots;
Chinese labels with unchanged numbers; the chart series and the i18n catalogs."""

import base64
import json
import os
import re
from pathlib import Path

import pytest

from gpuplan.cli import main
from gpuplan.commands import report as report_command
from gpuplan.report import i18n
from gpuplan.report.plots import number

ROOT = Path(__file__).resolve().parents[1]
ARTICLE = ROOT / "examples/article-7b.yaml"


@pytest.fixture
def run_report(capsys):
    """`gpuplan report ...` through the CLI's main (one line + exit 2 on bad input)."""

    def run(*args):
        code = main(["report", *map(str, args)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def needs_matplotlib():
    return pytest.importorskip("matplotlib")


def images(html: str) -> list[bytes]:
    return [base64.b64decode(b) for b in re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)]


def test_article_report_is_self_contained_with_three_plots(run_report, tmp_path):
    needs_matplotlib()
    out = tmp_path / "report.html"
    code, stdout, err = run_report(ARTICLE, "--out", out)
    assert code == 0, err
    assert stdout == f"wrote {out}\n"
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>")
    # nothing fetched from elsewhere: no external scripts, styles or images
    assert "<script" not in html and "<link" not in html and not re.search(r'src="(?!data:)', html)
    svgs = images(html)
    assert len(svgs) == 3  # budget: time+cost vs GPUs; memory: stacked bars; plan: layouts + Pareto front
    assert all(s.startswith(b"<?xml") and b"<svg" in s for s in svgs)
    assert [m for m in re.findall(r'data-chart="(\w+)"', html)] == ["cluster", "memory", "layouts"]
    # the article's numbers: 6 x 7e9 x 2e12 = 8.4e22 FLOPs; 1,112.9 GPUs for compute alone
    assert "8.400e+22" in html and "1,112.9" in html
    for title in ("Training budget:", "Training memory:", "Layout plan:", "Assumptions", "Pareto front"):
        assert title in html


def test_markdown_report_links_its_plot_files(run_report, tmp_path):
    needs_matplotlib()
    code, stdout, err = run_report(ARTICLE, "--out", tmp_path / "r.html", "--markdown", tmp_path / "r.md")
    assert code == 0, err
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert links == ["r-plots/1-cluster.svg", "r-plots/2-memory.svg", "r-plots/3-layouts.svg"]
    for link in links:
        assert (tmp_path / link).read_bytes().startswith(b"<?xml")
    assert markdown.startswith("# gpuplan report: article-7b.yaml")
    assert re.search(r"\| GPUs rented \| 1,3\d\d \|", markdown)  # 7 days met with comm and failures


def test_chinese_report_same_numbers(run_report, tmp_path):
    needs_matplotlib()
    en_path, zh_path = tmp_path / "en.html", tmp_path / "zh.html"
    assert run_report(ARTICLE, "--out", en_path, "--no-plots")[0] == 0
    code, stdout, err = run_report(ARTICLE, "--out", zh_path, "--lang", "zh")
    assert code == 0, err
    assert stdout == f"已写入 {zh_path}\n"
    en, zh = en_path.read_text(encoding="utf-8"), zh_path.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in zh and "训练预算" in zh and "每 GPU 显存" in zh
    numbers = re.compile(r'<td class="num">([^<]*)</td>')
    assert numbers.findall(en) == numbers.findall(zh)  # numbers and units unchanged


def test_chinese_plots_need_a_cjk_font(tmp_path, monkeypatch):
    needs_matplotlib()
    from gpuplan.report import html as report_html
    from gpuplan.report import plots

    reports = report_command.reports_for_plan({"params": "7B", "tokens": "2T", "days": 7}, "plan", "budget")
    monkeypatch.setattr(plots, "cjk_font", lambda: None)
    docs = report_html.build_documents(reports, "zh", True, source="plan.yaml")
    assert i18n.translator("zh")("messages.no_cjk_font") in docs.html
    svg = images(docs.html)[0].decode()
    assert "Wall-clock vs GPU count" in svg  # English plot labels, Chinese page


def test_chinese_plot_labels_with_a_cjk_font():
    needs_matplotlib()
    from gpuplan.report import html as report_html
    from gpuplan.report.plots import cjk_font

    if cjk_font() is None:  # CI installs one (.ci/run): there, its absence is a failure, not a skip
        message = "no CJK font installed (e.g. Debian fonts-wqy-microhei or fonts-noto-cjk)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + "; .ci/run installs fonts-wqy-microhei")
        pytest.skip(message)
    reports = report_command.reports_for_plan({"params": "7B", "tokens": "2T", "days": 7}, "plan", "budget")
    docs = report_html.build_documents(reports, "zh", True)
    assert "墙钟时间与 GPU 数" in images(docs.html)[0].decode()


def test_no_plots_needs_no_matplotlib(run_report, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    code, _, err = run_report(ARTICLE, "--out", tmp_path / "r.html")
    assert code == 2
    assert err == ("error: plots: got 'matplotlib'; is not installed; pip install 'gpuplan[plot]' "
                   "or pass --no-plots\n")
    code, _, err = run_report(ARTICLE, "--out", tmp_path / "r.html", "--no-plots")
    assert code == 0, err
    assert "<img" not in (tmp_path / "r.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("content, fragment", [
    ("params: 7B\nspeed: fast\n", "speed: got 'fast'; unknown field"),
    ("params: 7B\ntokens: lots\n", "tokens: got 'lots'"),
    ("params: 7B\ninference: 3\n", "inference: got 3; expected a mapping"),
])
def test_bad_plan_file_one_line_exit_2(run_report, tmp_path, content, fragment):
    plan = tmp_path / "plan.yaml"
    plan.write_text(content)
    code, out, err = run_report(plan, "--out", tmp_path / "r.html", "--no-plots")
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("args, fragment", [
    (("--lang", "fr"), "lang: got 'fr'; must be one of en, zh"),
    (("--sections", "budget,speed"), "sections: got 'budget,speed'"),
])
def test_bad_options_one_line_exit_2(run_report, tmp_path, args, fragment):
    code, _, err = run_report(ARTICLE, "--out", tmp_path / "r.html", *args)
    assert code == 2 and fragment in err and err.count("\n") == 1


def test_not_a_plan_file(run_report, tmp_path):
    code, _, err = run_report(tmp_path / "plan.json", "--out", tmp_path / "r.html")
    assert code == 2 and "expected a .yaml, .yml or .toml plan file" in err


def test_serving_fields_add_the_inference_section(tmp_path):
    pytest.importorskip("gpuplan.jobs.inference.estimate", reason="inference estimator not importable")
    data = {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": 64, "context": "8K",
            "inference": {"tp": 2, "batch": 16}}
    reports = report_command.reports_for_plan(data, "plan.yaml")
    assert [r.kind for r in reports] == ["budget", "memory", "plan", "infer"]
    serving = reports[-1]
    assert "2 x NVIDIA H100" in serving.title  # tp 2 from the inference mapping, not gpus: 64
    # by hand: Llama 3.1 8B's K and V, 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B a token, / tp 2 = 65,536 B
    # a GPU, x the 8,192-token context = 536,870,912 B a sequence; the weights 8,030,261,248 parameters (32 x
    # 218,103,808 in the layers + 2 x 128,256 x 4,096 untied embedding / LM head + 266,240 norm weights) x 2 B, the
    # norms replicated: (16,060,522,496 - 532,480) / 2 + 532,480 = 8,030,527,488 B a GPU; vLLM's usable memory
    # (81,559 MiB nvidia-smi total - 512 MiB) x 0.92 = 78,185,223,946 B; with nothing else held
    # floor((78,185,223,946 - 8,030,527,488) / 536,870,912) = 130 sequences at most; the activations and the CUDA
    # graphs / NCCL runtime take 3.60 GB more (the report's kv_budget line), leaving floor(66.55 GB / 0.537 GB) = 123
    assert serving.value("kv_bytes_per_sequence") == 2 * 32 * 8 * 128 * 2 // 2 * 8192 == 536_870_912
    assert serving.value("weights_per_gpu") == (16_060_522_496 - 532_480) / 2 + 532_480 == 8_030_527_488
    assert serving.value("usable") == pytest.approx((81_559 - 512) * 2**20 * 0.92, rel=1e-12)
    assert (serving.value("usable") - serving.value("weights_per_gpu")) // serving.value("kv_bytes_per_sequence") == 130
    assert serving.value("max_sequences") == serving.value("kv_budget") // 536_870_912 == 123


def test_sections_option_and_shared_gpu_default():
    reports = report_command.reports_for_plan({"params": "7B", "tokens": "2T", "days": 7}, "plan", "memory,budget")
    assert [r.kind for r in reports] == ["memory", "budget"]
    # one accelerator for every section: the plan's built-in default (the article's A100)
    assert all("A100 80GB" in r.title for r in reports)


@pytest.mark.parametrize("cell, value", [
    (1493, 1493.0), ("1,493", 1493.0), ("$673,924", 673924.0), ("15.3%", 0.153), ("45.15 GiB", 45.15),
    ("-61.41 GiB", -61.41), ("n/a", None), ("", None), (float("nan"), None), (True, None),
])
def test_table_cells_as_numbers(cell, value):
    assert number(cell) == (pytest.approx(value) if value is not None else None)


# ----------------------------------------------------------------------------- i18n
def _keys(tree, prefix=""):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _keys(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def test_chinese_catalog_covers_every_english_message():
    en = dict(_keys({k: v for k, v in i18n.catalog("en").items() if k in ("ui", "report", "chart", "messages")}))
    zh = dict(_keys({k: v for k, v in i18n.catalog("zh").items() if k in ("ui", "report", "chart", "messages")}))
    assert set(zh) == set(en)
    for key, text in en.items():
        assert re.findall(r"\{\w+\}", zh[key]) == re.findall(r"\{\w+\}", text), key
    translated = [k for k in en if zh[k] != en[k]]
    assert len(translated) > 0.85 * len(en)  # the rest are names: gpuplan, MFU, config.json, USD


def test_phrases_keep_the_numbers():
    assert i18n.phrase("fits with 15% margin", "zh") == "留 15% 余量能否放下"
    assert i18n.phrase("fits with TP 2", "zh") == "改用 TP 2 后可放下"
    assert i18n.phrase("Memory per GPU (dp 8 x tp 1)", "zh") == "每 GPU 显存 (dp 8 x tp 1)"
    assert i18n.phrase("Training budget: llama on 2T", "zh") == "训练预算：llama on 2T"
    assert i18n.phrase("something new", "zh") == "something new"
    assert i18n.phrase("fits with 15% margin", "en") == "fits with 15% margin"


def test_every_report_label_has_a_chinese_translation():
    from gpuplan.jobs import JOBS

    bodies = {"budget": {}, "memory": {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8},
              "plan": {"model": "llama-3.1-8b", "tokens": "1T", "gpu": "h100", "gpus": "64-128"},
              "inference": {"model": "llama-3.1-8b", "gpu": "h100"},
              # SGLang's eager prefill (ttft_host_issue) and vLLM --cuda-graph-gib 0's (final read 8 item 3)
              "inference-sglang": {"model": "qwen3-235b-a22b", "gpu": "b200", "tp": 8, "engine": "sglang"},
              "inference-eager": {"model": "qwen3-14b", "gpu": "h100", "engine": "vllm", "cuda_graph_gib": 0},
              # its start-up log lines, and a setup that does not fit (alternatives.instead_section)
              "inference-nofit": {"model": "llama-3.1-70b", "gpu": "h100", "engine": "sglang"},
              "inference-sized": {"model": "llama-3.1-8b", "rps": 20, "ttft_p99": "500ms", "tpot": "50ms",
                                  "prompt": "2K", "disaggregate": True, "speculative": "eagle"},
              "training": {"model": "llama-3.1-70b", "gpu": "h100", "gpus": 1113, "tp": 8, "pp": 4, "vpp": 2}}
    missing = []
    for name, body in bodies.items():
        job = JOBS[name.split("-")[0]]
        zh = i18n.translate_report(job.run(job.schema.parse(body)), "zh")
        labels = [zh.title] + [s.title for s in zh.sections] + [line.label for s in zh.sections for line in s.lines]
        missing += [label for label in labels if not re.search(r"[\u4e00-\u9fff]", label) and label not in
                    ("MFU", "HFU")]
    assert missing == []


def test_unknown_language_is_refused():
    with pytest.raises(Exception, match="lang: got 'fr'"):
        i18n.check_lang("fr")


def test_json_catalogs_are_valid_json_with_their_language():
    for lang in i18n.LANGS:
        path = ROOT / f"src/gpuplan/web/static/i18n/{lang}.json"
        assert json.loads(path.read_text(encoding="utf-8"))["lang"] == lang


def test_moe_plan_assumptions_have_chinese_labels():
    """An MoE plan's assumptions (the EP all-to-all, the CUDA-graph scope, the search) were English in the zh
    report: the dense-model bodies above never showed them (review of ee3d16e)."""
    from gpuplan.jobs import JOBS

    job = JOBS["plan"]
    body = {"model": "qwen3-30b-a3b", "tokens": "1T", "gpu": "h100", "gpus": "64", "framework": "megatron"}
    zh = i18n.translate_report(job.run(job.schema.parse(body)), "zh")
    keys = {a.key for a in zh.assumptions}
    assert {"ep_comm", "cuda_graph_scope", "search"} <= keys
    assert [a.key for a in zh.assumptions if not re.search(r"[\u4e00-\u9fff]", a.label) and a.label != "MFU"] == []
