"""Data loading: the input rate a training step needs, and whether storage and CPUs can feed it.

    required tokens/s = global batch (tokens) / step time (s)
    bytes/s           = tokens/s x bytes per token read
                        (pre-tokenised: the token id dtype, 2 or 4 bytes;
                         raw text tokenised on the fly: ~4 bytes of UTF-8 text per token)
    CPU cores         = tokens/s per node / tokens/s one core tokenises

Units: tokens, bytes, seconds, bytes/s. Pure functions; the storage catalog is read elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Megatron-LM megatron/core/datasets/indexed_dataset.py DType.optimal_dtype: uint16 when the
# vocabulary has fewer than 65500 ids, else int32.
UINT16_VOCAB_LIMIT = 65500
# Raw text bytes per token: Llama 3's 128K tokenizer compresses English to 3.94 characters per
# token (Llama 2's: 3.17) - arXiv:2407.21783 Sec. 3.2; ASCII-heavy text is ~1 byte per character.
DEFAULT_RAW_BYTES_PER_TOKEN = 4.0
RAW_BYTES_PER_TOKEN_RANGE = (3.17, 4.0)
# The bounds --bytes-per-token takes. At least 1: byte-level BPE (GPT-2's bytes_to_unicode, tiktoken, Llama 3)
# and SentencePiece with byte_fallback give every token at least one byte of UTF-8 text, so raw text never holds
# fewer bytes than tokens (a token id of 2-4 B is --token-bytes). At most 1,000: an average past the longest
# piece is impossible, and SentencePiece caps a piece at max_sentencepiece_length = 16 characters (<= 64 B of
# UTF-8) by default (sentencepiece_model.proto TrainerSpec); 1,000 leaves room for BPE vocabularies without a cap.
MIN_RAW_BYTES_PER_TOKEN = 1.0
MAX_RAW_BYTES_PER_TOKEN = 1000.0
# One CPU core tokenises ~4.2 MB/s of text with HF tokenizers (Llama 3.1 tokenizer, 1 thread;
# tiktoken ~10 MB/s): huggingface/tokenizers PR #1584 benchmark. 4.2e6 B/s / 4 B per token.
DEFAULT_TOKENS_PER_S_PER_CORE = 1.0e6
TOKENS_PER_S_PER_CORE_RANGE = (0.5e6, 2.5e6)  # HF 2 MB/s (PR #1582) .. tiktoken 10 MB/s (#1584)
# DGX H100: two 56-core Xeon CPUs (NVIDIA DGX SuperPOD reference architecture, DGX H100 components).
DEFAULT_CPU_CORES_PER_NODE = 112


@dataclass(frozen=True)
class StorageSpec:
    """A storage tier as the planner sees it. Bandwidths in bytes/s."""

    kind: str
    name: str
    node_read: float
    """What one node can read when alone (its drives or its storage link)."""
    node_write: float
    shared_per_node: float | None = None
    """Aggregate bandwidth of a shared system / nodes, when every node uses it at once;
    None for node-local storage."""
    shared_per_node_high: float | None = None
    confidence: str = "medium"
    sources: tuple[str, ...] = ()
    notes: str = ""

    def read_per_node(self, optimistic: bool = False) -> float:
        """Effective read bytes/s per node with every node of the job reading at once."""
        return _cap(self.node_read, self.shared_high if optimistic else self.shared_per_node)

    def write_per_node(self, optimistic: bool = False) -> float:
        """Effective write bytes/s per node with every writing node writing at once."""
        return _cap(self.node_write, self.shared_high if optimistic else self.shared_per_node)

    def shared_write_total(self, nodes: int) -> float | None:
        """The job's share of a shared system in bytes/s (per-node share x its nodes); None for node-local
        storage. A checkpoint written by a few nodes (one DDP replica) is bounded by their links and this."""
        return None if self.shared_per_node is None else self.shared_per_node * nodes

    @property
    def shared_high(self) -> float | None:
        return self.shared_per_node_high or self.shared_per_node


def _cap(link: float, shared: float | None) -> float:
    return link if shared is None else min(link, shared)


def token_id_bytes(vocab_size: int) -> int:
    """Bytes per stored token id: 2 (uint16) below 65500 ids, else 4 (int32) - Megatron's rule."""
    return 2 if vocab_size < UINT16_VOCAB_LIMIT else 4


def required_tokens_per_s(global_batch_tokens: float, step_seconds: float) -> float:
    """Tokens the whole job consumes per second: global batch / step time."""
    return global_batch_tokens / step_seconds


def nodes_for(gpus: float, devices_per_node: int) -> int:
    """Nodes holding ``gpus`` accelerators (a partly used node counts)."""
    return max(1, math.ceil(gpus / devices_per_node - 1e-9))


def bytes_per_s(tokens_per_s: float, bytes_per_token: float) -> float:
    """Input bytes/s for a token rate (array-friendly)."""
    return tokens_per_s * bytes_per_token


def cores_needed(tokens_per_s: float, tokens_per_s_per_core: float) -> float:
    """CPU cores busy tokenising to sustain ``tokens_per_s`` (fractional)."""
    return tokens_per_s / tokens_per_s_per_core


@dataclass(frozen=True)
class DataLoading:
    """What one node must read and tokenise per second, and what limits it."""

    tokens_per_s: float
    """Whole job."""
    tokens_per_s_per_node: float
    read_bytes_per_token: float
    read_bytes_per_s_per_node: float
    cores_per_node: float
    """Cores busy tokenising (0 for pre-tokenised data)."""
    storage_read_per_node: float
    storage_tokens_per_s_per_node: float
    cpu_tokens_per_s_per_node: float | None
    """None when the data is pre-tokenised (no CPU limit modelled)."""

    @property
    def supply_tokens_per_s_per_node(self) -> float:
        cpu = self.cpu_tokens_per_s_per_node
        return self.storage_tokens_per_s_per_node if cpu is None else min(self.storage_tokens_per_s_per_node, cpu)

    @property
    def headroom(self) -> float:
        """Supply / need: below 1 the input pipeline, not the GPU, bounds the step."""
        return self.supply_tokens_per_s_per_node / self.tokens_per_s_per_node

    @property
    def bound_by(self) -> str:
        """'gpu' when data keeps up; else 'storage' or 'cpu', whichever supplies less."""
        if self.headroom >= 1:
            return "gpu"
        cpu = self.cpu_tokens_per_s_per_node
        return "cpu" if cpu is not None and cpu < self.storage_tokens_per_s_per_node else "storage"

    def data_bound_step_seconds(self, global_batch_tokens: float, nodes: int) -> float:
        """Step time if the input pipeline set the pace: global batch / (supply x nodes)."""
        return global_batch_tokens / (self.supply_tokens_per_s_per_node * nodes)


def data_loading(tokens_per_s: float, nodes: int, read_bytes_per_token: float, storage_read_per_node: float,
                 tokenize_on_the_fly: bool, tokens_per_s_per_core: float, cpu_cores_per_node: int) -> DataLoading:
    """Per-node input need and supply. Pre-tokenised data reads the id dtype per token; raw text
    reads ~4 bytes per token and needs CPU cores to tokenise it."""
    per_node = tokens_per_s / nodes
    cores = cores_needed(per_node, tokens_per_s_per_core) if tokenize_on_the_fly else 0.0
    cpu_supply = cpu_cores_per_node * tokens_per_s_per_core if tokenize_on_the_fly else None
    return DataLoading(
        tokens_per_s=tokens_per_s, tokens_per_s_per_node=per_node, read_bytes_per_token=read_bytes_per_token,
        read_bytes_per_s_per_node=bytes_per_s(per_node, read_bytes_per_token), cores_per_node=cores,
        storage_read_per_node=storage_read_per_node,
        storage_tokens_per_s_per_node=storage_read_per_node / read_bytes_per_token,
        cpu_tokens_per_s_per_node=cpu_supply)
