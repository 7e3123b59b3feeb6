"""Hugging Face ids: a catalog model by its hf_repo; any other id fetched as config.json only,
through huggingface_hub, from a local stand-in for the Hub (HF_ENDPOINT), cached, offline-aware."""

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

TINY = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 688,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000,
        "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16"}
# embeddings 2 x 1000 x 256 + 2 layers x (4 x 256^2 attention + 3 x 256 x 688 MLP + 2 x 256 norms) + 256
TINY_PARAMS = 2 * 1000 * 256 + 2 * (4 * 256 * 256 + 3 * 256 * 688 + 2 * 256) + 256


def test_a_catalog_model_by_its_hugging_face_id(run_json):
    data = run_json("train", "meta-llama/Llama-3.1-8B", "--gpus", "64")
    assert data["inputs"]["model"] == "llama-3.1-8b"


def test_an_unknown_id_offline_says_how_to_pass_a_config(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "gpuplan", "train", "someorg/some-model"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "HF_HUB_OFFLINE" in run.stderr and "--model path/to/config.json" in run.stderr


class _StandIn(BaseHTTPRequestHandler):
    """Answers like the Hub's resolve endpoint for one repository's config.json."""

    requests: list[str] = []
    body = json.dumps(TINY).encode()

    def _answer(self, with_body: bool) -> None:
        type(self).requests.append(f"{self.command} {self.path}")
        if self.path != "/testorg/tiny-llama/resolve/main/config.json":
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.send_header("ETag", '"tiny-etag"')
        self.send_header("X-Repo-Commit", "0" * 40)
        self.end_headers()
        if with_body:
            self.wfile.write(self.body)

    def do_HEAD(self):  # noqa: N802
        self._answer(False)

    def do_GET(self):  # noqa: N802
        self._answer(True)

    def log_message(self, *args):
        pass


@pytest.fixture
def hub():
    pytest.importorskip("huggingface_hub", reason="huggingface_hub not installed (pip install 'gpuplan[hub]')")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _StandIn.requests = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_an_unknown_id_is_fetched_as_config_json_only_and_cached(hub, tmp_path):
    env = {"HF_ENDPOINT": hub, "HF_HOME": str(tmp_path), "HF_HUB_DISABLE_TELEMETRY": "1", "PATH": "/usr/bin:/bin"}
    command = [sys.executable, "-m", "gpuplan", "memory", "testorg/tiny-llama", "--json"]
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["inputs"]["model"] == "tiny-llama"
    # the default framework (megatron): bf16 params 2 + fp32 main grads 4 + fp32 master 4 + Adam 8 = 18 B/param
    assert data["results"]["model_states_total"] == pytest.approx(18 * TINY_PARAMS)
    assert _StandIn.requests and all(r.endswith("/config.json") for r in _StandIn.requests)  # never weights
    cached = subprocess.run(command, capture_output=True, text=True, env=env | {"HF_HUB_OFFLINE": "1"}, timeout=60)
    assert cached.returncode == 0, cached.stderr
    assert json.loads(cached.stdout)["results"] == data["results"]


def test_an_id_the_hub_does_not_have(hub, tmp_path):
    env = {"HF_ENDPOINT": hub, "HF_HOME": str(tmp_path), "HF_HUB_DISABLE_TELEMETRY": "1", "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "gpuplan", "train", "testorg/missing"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "model: got 'testorg/missing'" in run.stderr
