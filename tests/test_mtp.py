"""Multi-token prediction in training (core/model/mtp.py): what a config declares, which frameworks
train it, the pipeline split Megatron-Bridge writes for it, and its parameters, time and memory."""

from dataclasses import replace

import pytest

from gpuplan.adapters.hf_config import model_spec_from_hf_config
from gpuplan.catalog import load_accelerator, load_model
from gpuplan.core.memory import training as M
from gpuplan.core.model.spec import count_parameters
from gpuplan.core.memory.model_states import stage_layer_counts, stage_params
from gpuplan.core.model.mtp import mtp_module_params, mtp_stage_layer_shed
from gpuplan.core.parallel import ParallelLayout
from gpuplan.core.time.step import StepSettings, gemm_efficiency, microbatch_compute_time
from gpuplan.core.comm.topology import cluster_for
from gpuplan.errors import InputError
from gpuplan.jobs.training.schema import TrainingInputs


def _config(**extra):
    return {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
            "intermediate_size": 512, "vocab_size": 1000, **extra}


def test_config_declares_mtp_modules_and_bad_values_are_refused():
    assert model_spec_from_hf_config(_config()).mtp_layers == 0
    assert model_spec_from_hf_config(_config(num_nextn_predict_layers=0)).mtp_layers == 0
    assert model_spec_from_hf_config(_config(num_nextn_predict_layers=2)).mtp_layers == 2
    for bad in (-1, 1.5, "one", 1e9):
        with pytest.raises(InputError, match="num_nextn_predict_layers"):
            model_spec_from_hf_config(_config(num_nextn_predict_layers=bad))


@pytest.mark.parametrize("framework, expected", [("megatron", 1), ("generic", 1), ("torchtitan", 0), ("hf", 0),
                                                 ("deepspeed", 0)])
def test_which_frameworks_train_the_declared_mtp_module(framework, expected):
    """Megatron-Bridge reads num_nextn_predict_layers (deepseek_v3_bridge.py); torchtitan 0.3.0's
    flavours build none; transformers drops model.layers.61 (core/model/mtp.py)."""
    assert TrainingInputs(model="deepseek-v3", framework=framework).spec().mtp_layers == expected
    assert TrainingInputs(model="deepseek-v3", framework=framework, mtp_layers=0).spec().mtp_layers == 0
    if expected:  # wave 6c: where the framework trains no MTP module, --mtp-layers 2 is refused (schema.layout_rules)
        assert TrainingInputs(model="llama-3.1-8b", framework=framework, mtp_layers=2).spec().mtp_layers == 2
    else:
        with pytest.raises(InputError, match="mtp_layers"):
            TrainingInputs(model="llama-3.1-8b", framework=framework, mtp_layers=2).spec()


def test_mtp_module_parameters_match_deepseeks_weight_notes():
    """DeepSeek-V3 README_WEIGHTS.md: the MTP module has 11.5B unique parameters beside the shared
    embedding and head (one MoE block, eh_proj, enorm/hnorm): gpuplan 11.61B, within 1.5%."""
    dense, experts = mtp_module_params(load_model("deepseek-v3"))
    assert dense + experts == pytest.approx(11.5e9, rel=0.015)


@pytest.mark.parametrize("pp, split", [
    (4, [16, 16, 16, 13]),  # recipes/deepseek/deepseek_v3.py@v0.4.2 layout_map (4, 4): E t*4 | (t*4 |)*14 t m L
    (2, [32, 29]),  # deepseek_workload_base_configs.py@v0.4.2 GB300 pp_layout "Et*4|(t*4|)*14tmL", vpp 8
    (8, [8] * 7 + [5]),  # layout_map (8, 2)
    (16, [4] * 15 + [1]),  # layout_map (16, 1)
])
def test_the_mtp_stage_sheds_layers_as_megatron_bridges_deepseek_layouts_do(pp, split):
    spec = load_model("deepseek-v3")
    shed = mtp_stage_layer_shed(spec, 1)
    assert shed == 3  # (0.103B projection + 0.585B block + 0.927B head) / 0.585B mean layer = 2.8
    assert stage_layer_counts(61, pp, shed) == split
    assert stage_layer_counts(61, 4) == [16, 15, 15, 15]  # without MTP: unchanged


def test_stage_parameters_add_the_mtp_module_and_the_embedding_copy():
    """Summed over the stages (tp = ep = 1): the main model, one MTP module, and with pp > 1 the
    word-embedding copy Megatron builds on the MTP stage (gpt_model.py: pre_process or mtp_process)."""
    spec = load_model("deepseek-v3")
    main = count_parameters(spec).total
    dense, experts = mtp_module_params(spec)
    embedding = spec.vocab_size * spec.hidden_size
    for pp, copies in ((1, 0), (4, 1)):
        layout = ParallelLayout(pp=pp)
        total = sum(stage_params(spec, layout, s, mtp=1).total for s in range(pp))
        # rel 1e-6: the stage split leaves out the routers' 256-element score-correction biases
        # (14,848 of 671B), as it does without MTP
        assert total == pytest.approx(main + dense + experts + copies * embedding, rel=1e-6)
        assert sum(stage_params(spec, layout, s).total for s in range(pp)) == pytest.approx(main, rel=1e-6)


def test_mtp_module_time_is_a_block_a_projection_and_the_head_again():
    spec, cluster = load_model("deepseek-v3"), cluster_for(load_accelerator("h100"))
    settings = StepSettings(seq_len=4096)
    kw = {"tp": 1, "cp": 1, "micro_batch": 1, "ep": 8}
    block_and_head = microbatch_compute_time(spec, cluster, settings, layers=1, head=True, **kw).total
    mtp = microbatch_compute_time(spec, cluster, settings, layers=0, head=False, mtp=1, **kw).total
    h, tokens = spec.hidden_size, 4096
    projection = 3 * tokens * 2 * (2 * h * h) / (cluster.gpu.peak("bf16") * gemm_efficiency(cluster.gpu, min(h, tokens), 512.0))
    assert mtp == pytest.approx(block_and_head + projection, rel=1e-9)


def test_memory_of_the_last_stage_carries_the_mtp_module():
    spec = load_model("deepseek-v3")
    layout = ParallelLayout(dp=32, pp=4, ep=32, zero=1, micro_batch=1, global_batch=1024)
    settings = M.MemorySettings(seq_len=4096, recipe="megatron", framework="megatron", implementation="megatron")
    without = M.stage_memory(spec, layout, settings, 3)
    with_mtp = M.stage_memory(spec, layout, replace(settings, mtp_layers=1), 3)
    assert with_mtp.weights > without.weights and with_mtp.outside_layers == pytest.approx(
        2 * without.outside_layers)  # the MTP module's own logits and loss
    second = M.stage_memory(spec, layout, replace(settings, mtp_layers=1), 1)
    assert second.weights > M.stage_memory(spec, layout, settings, 1).weights  # 16 layers, not 15


def test_mtp_collectives_are_one_more_layers_on_a_single_stage():
    """pp 1: the step's expert all-to-alls follow 61 + 1 layers (step.py passes the MTP block to
    step_communication); pp > 1: the first stage's 16 layers already outnumber the MTP stage's 13 + 1."""
    from gpuplan.core.time.step import step_time

    spec, cluster = load_model("deepseek-v3"), cluster_for(load_accelerator("b200"))
    kw = {"dp": 8, "ep": 8, "micro_batch": 1, "micro_batches": 4}
    plain = step_time(replace(spec, mtp_layers=0), cluster, StepSettings(), **kw)
    mtp = step_time(spec, cluster, StepSettings(), **kw)
    assert mtp.ep_comm == pytest.approx(plain.ep_comm * 62 / 61, rel=1e-9)
    staged = {"pp": 4, "dp": 2, "ep": 2, "micro_batch": 1, "micro_batches": 8}
    assert step_time(spec, cluster, StepSettings(), **staged).ep_comm == pytest.approx(
        step_time(replace(spec, mtp_layers=0), cluster, StepSettings(), **staged).ep_comm, rel=1e-9)


def test_published_rows_state_whether_mtp_ran(published_rows):
    """The 25.11 tables label DeepSeek-V3 'w/o MTP' on GB200 and 'w/ MTP' on B200: the rows say so
    (model.mtp_layers) and the validation builds the spec the run trained."""
    from gpuplan.jobs.validation.throughput import run_spec

    rows = published_rows
    without = rows["mbridge-25.11-deepseek-v3-gb200-256g-mxfp8"]["model"]
    assert without["mtp_layers"] == 0 and run_spec(without).mtp_layers == 0
    assert run_spec(rows["mbridge-25.11-deepseek-v3-b200-256g-mxfp8"]["model"]).mtp_layers == 1
