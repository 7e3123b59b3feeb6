"""Wave 15b, the README and the docs examples this session touched re-read as a new user on a fresh clone
(helper W3): what an answer printed that was not true, each through the door the user types. Each test
failed on the commit before its fix."""

NO_KV = "no memory left for the KV cache on this layout"


def test_a_sizing_that_found_a_fit_does_not_say_nothing_fits(run_json):
    """`infer llama-3.1-405b --gpu gb200 --rps 1 --ttft-p99 2s --tpot 50ms` (docs/inference.md, 'Replicas across
    compute trays') answered 2 x (tp 8) = 16 GPUs and then noted "no memory left for the KV cache on this layout:
    use more GPUs (tp)": the note spoke of the 1-GPU layout no one asked for (--rps refuses --tp), not of the
    answer. The same on H100 with a 70B (141 GB of weights on one 80 GB GPU)."""
    sized = run_json("infer", "llama-3.1-70b", "--gpu", "h100", "--rps", "1", "--ttft-p99", "2s", "--tpot", "50ms",
                     "--no-search")
    assert sized["title"].startswith("Sizing"), sized["title"]
    assert not any(NO_KV in note or "sequences of" in note and "fit, not" in note for note in sized["notes"])
    # the answer above it holds the load: 1 x (tp 4) on H100, 141 GB of weights over 4 x 80 GB
    assert sized["results"]["sized_config"] == {"gpu": "h100-sxm", "tp": 4, "replicas": 1}
    # the plain answer on that one GPU still says it, where it is the layout asked
    plain = run_json("infer", "llama-3.1-70b", "--gpu", "h100", "--no-search")
    assert any(NO_KV in note for note in plain["notes"]), plain["notes"]


def test_an_unpriced_gpu_says_how_to_price_it(run_json):
    """GB200 and GB300 have no row in the price catalog: its AWS source, instances.vantage.sh through
    tsaol/aws-gpu data/p6e-gb200_instances.js (2026-08-26), lists p6e-gb200.36xlarge with an empty "pricing"
    (Capacity Blocks only), and no other provider file has one. `infer --gpu gb200 --rps ...` and `plan --gpu gb200`
    printed "n/a (no price)" where `infer` without --rps and `train` / `budget` say "give --price": all do now."""
    sized = run_json("infer", "llama-3.1-8b", "--gpu", "gb200", "--rps", "2", "--no-search")
    cost = next(line for s in sized["sections"] for line in s["lines"] if line["key"] == "sized_cost_per_hour")
    assert cost["value"] is None and cost["text"] == "n/a (no price: give --price)", cost
    # and its configuration says how it was picked: with no price the sizing ranks by GPUs (sizing.py); in the
    # text, since the label is translated by its key (zh: the cheapest configuration)
    picked = next(line for s in sized["sections"] for line in s["lines"] if line["key"] == "sized_config")
    assert picked["text"].endswith(" = 1 GPU (the fewest GPUs: no price to rank by)"), picked["text"]
    plan = run_json("plan", "llama-3.1-8b", "--tokens", "100B", "--gpu", "gb200", "--gpus", "8")
    cost = next(line for s in plan["sections"] for line in s["lines"] if line["key"] == "best_cost")
    assert cost["value"] is None and cost["text"] == "n/a (no price: give --price)", cost
    # its layouts table said nothing (an empty cell) where infer's tables say n/a
    top = next(rows for title, rows in plan["tables"].items() if title.startswith("top "))
    assert top and {row["cost"] for row in top} == {"n/a"}, top[0]
    # the price given prices it: USD per GPU-hour x the GPUs of the configuration
    priced = run_json("infer", "llama-3.1-8b", "--gpu", "gb200", "--rps", "2", "--no-search", "--price", "10")
    cost = next(line for s in priced["sections"] for line in s["lines"] if line["key"] == "sized_cost_per_hour")
    gpus = priced["results"]["sized_config"]["replicas"] * priced["results"]["sized_config"]["tp"]
    assert cost["value"] == 10 * gpus, cost
    picked = next(line for s in priced["sections"] for line in s["lines"] if line["key"] == "sized_config")
    assert picked["label"] == "cheapest configuration on the GPU asked" and "no price" not in picked["text"]


def test_the_priced_gpu_count_docs_budget_states_is_the_catalogs():
    """docs/budget.md says how many catalog GPU types have a price row and names GB200 / GB300 among the rest."""
    import re
    from pathlib import Path

    from gpuplan.catalog import hardware_entries
    from gpuplan.catalog.pricing import lookup_price

    text = (Path(__file__).resolve().parents[1] / "docs" / "budget.md").read_text(encoding="utf-8")
    priced, total = map(int, re.search(r"(\d+) of the (\d+) catalog GPU types have a row", text).groups())
    ids = sorted(hardware_entries())
    have = [i for i in ids if lookup_price(i, "on_demand", None) is not None]
    assert (priced, total) == (len(have), len(ids)), have
    assert "gb200" not in have and "gb300" not in have


def test_the_readme_python_block_says_why_its_gpus_differ_from_gpuplan_train():
    """The README's Python block prints 1336 GPUs for the inputs the quick start's `gpuplan train` answers with
    1,352: both right (the training estimate's deadline counts the communication allowance; `train` is the
    budget view, which adds failures), but the block did not say which, so the two read as a contradiction."""
    import re
    from pathlib import Path

    from gpuplan import BudgetInputs, TrainingInputs, estimate_budget, estimate_training

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, flags=re.S)[1]
    said = int(re.search(r'report\.value\("gpus"\)\s+# (\d+):', block)[1])
    train = int(re.search(r"`gpuplan train` prints ([\d,]+): it adds failures", block)[1].replace(",", ""))
    asked = dict(params="7B", tokens="2T", gpu="a100", days=7)
    assert estimate_training(TrainingInputs(**asked, mfu=0.4)).value("gpus") == said == 1336
    assert estimate_budget(BudgetInputs(**asked)).value("gpus") == train == 1352
    assert "1,352 GPUs" in readme.split("```bash", 2)[1]  # the quick start's figure, the same answer


def test_the_readme_gpus_per_node_caps_are_the_refusals(run_cli):
    """README said `--gpus-per-node` 'is at most 8,960 (the catalog's largest scale-up domain)', but this session
    caps it per GPU type (schema/device_rules.largest_node): 9 on H100 is refused. The README now names the caps
    it quotes; each is the refusal's own 'give 1 to N'."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert "8 on HGX H100, 72 on GB200 NVL72" in readme and "never past 8,960 (a TPU v5p pod" in readme
    for gpu, cap in (("h100", "8"), ("gb200", "72"), ("tpu-v5p", "8,960")):
        over = str(int(cap.replace(",", "")) + 1)
        code, out, err = run_cli("plan", "llama-3.1-8b", "--tokens", "1B", "--gpu", gpu, "--gpus", "64",
                                 "--gpus-per-node", over)
        assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
        assert err.startswith("error: gpus_per_node:"), err
        assert f"from 1 to {cap}" in err or f"give 1 to {cap}" in err, err


def test_docs_catalog_models_has_a_row_for_every_catalog_model():
    """docs/catalog-models.md (README: 'catalog sources and choices') had 63 rows for the 67 models `gpuplan catalog
    models` lists: this session's llemma-7b / llemma-34b and the older mpt-7b / tinyllama-1.1b had none. Each row's
    count is the entry's published_params."""
    import re
    from pathlib import Path

    from gpuplan.catalog import model_entries

    text = (Path(__file__).resolve().parents[1] / "docs" / "catalog-models.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([^`]+)` \| [^|]+ \| ([\d,]+) \|", text, flags=re.M))
    entries = model_entries()
    assert sorted(rows) == sorted(entries)
    assert {k: int(v.replace(",", "")) for k, v in rows.items()} == {k: e["published_params"] for k, e in entries.items()}


def test_the_explain_table_title_does_not_read_the_step_as_its_communication(run_json):
    """README's `plan mixtral-8x7b --tokens 2T --gpu h100 --gpus 256 --explain` titled its table "Communication per
    step (2.571 s) of dp64 ...": 2.571 s is the step time, while the collectives' rows add up to 0.707 s (its
    'all' row). The title now says which: '..., in its 2.571 s step'; the 'all' row is the communication."""
    out = run_json("plan", "mixtral-8x7b", "--tokens", "2T", "--gpu", "h100", "--gpus", "256", "--explain")
    title, rows = next((k, t) for k, t in out["tables"].items() if k.startswith("Communication per step"))
    step = out["results"]["best_step_seconds"]
    assert title.endswith(f", in its {step:.3f} s step") and f"({step:.3f} s)" not in title, title
    every = next(r for r in rows if r["group"] == "all")
    assert float(every["s/step"]) < step  # the communication, less than the step it is in


def test_two_caveats_that_point_opposite_ways_say_so(run_json):
    """README's `plan llama-3.1-70b --tokens 15T --gpu h100 --gpus 512-4096 --rank-by cost` printed two notes in a
    row with opposite verdicts: 'treat this plan's time as optimistic' (51.4% MFU, above the best published Hopper
    dense BF16 run, 46.7%) and then 'treat this plan's time as pessimistic by about that much' (6 published
    llama-3.1-70b runs ran 6% faster than predicted). Both records stand; the second now says they disagree."""
    notes = run_json("plan", "llama-3.1-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "512")["notes"]
    above = next(i for i, n in enumerate(notes) if "is above the best published" in n)
    record = notes[above + 1]
    assert record.startswith("6 published runs of llama-3.1-70b") and "ran faster" in record, notes
    assert "reads this plan as optimistic: the two records disagree here" in record
    assert not record.endswith("pessimistic by about that much (docs/step.md)")


def test_the_tray_launch_is_said_only_where_there_are_trays(run_json):
    """`infer llama-3.1-405b --gpu h100 --tp 8 --pp 2` noted "launch across trays: tp 8 x pp 2 spans 2 compute trays
    of 8 (one NVLink domain of 8)": an HGX H100 node is its own NVLink domain and no compute tray, so the 16 GPUs
    are two domains (this session counted pp in the tray launch, sizing_text.multi_node_launch, meant for the
    GB200 / GB300 NVL72's 4-GPU trays). And on GB200 tp 16 x pp 8 = 128 GPUs said "(one NVLink domain of 72)"."""
    def notes(*args):
        return run_json("infer", "llama-3.1-405b", *args, "--no-search")["notes"]

    h100 = notes("--gpu", "h100", "--tp", "8", "--pp", "2")
    assert not any("tray" in n for n in h100) and any(n.startswith("pipeline parallel") for n in h100), h100
    (wide,) = [n for n in notes("--gpu", "gb200", "--tp", "16", "--pp", "8") if n.startswith("launch across trays")]
    assert "tp 16 x pp 8 spans 32 compute trays of 4 (2 NVLink domains of 72)" in wide, wide
    (two,) = [n for n in notes("--gpu", "gb200", "--tp", "8", "--pp", "2") if n.startswith("launch across trays")]
    assert "tp 8 x pp 2 spans 4 compute trays of 4 (one NVLink domain of 72)" in two, two
