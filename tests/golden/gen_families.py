#!/usr/bin/python3
"""Random-weight checkpoints of the checkpoint families in Hugging Face's naming, and the numbers
PyTorch computes for them, layer by layer: every family of the registry (src/pretrained/families.c)
but GPT-2, whose checkpoints are gen_gpt2.py's. A family added to the registry adds its cases here
(docs/HACKING.md, "Adding a model family"); today the Llama family (Llama, Mistral, Qwen2, Qwen3,
OLMo 2, Phi-3, and the mixtures of experts Mixtral, Qwen2-MoE and Qwen3-MoE), BERT, GPT-NeoX
(Pythia) and Gemma 2 and 3.

Run with Debian's python3 (torch, numpy, yaml, python3-regex; gen_gpt2.py's helpers):

    /usr/bin/python3 tests/golden/gen_families.py

It rewrites tests/golden/families/ byte for byte the same on every run (fixed seeds):

  <case>/config.json, <case>/model.safetensors   a checkpoint as Hugging Face writes it
                                                  (torch's Linear weights (out, in))
  scenes/<case>.yaml                              the scene that opens it
  goldens/<case>/...                              every stage of every layer, in attnscope's
                                                  multi-layer export layout (golden/README.md),
                                                  and predictions.csv: the top-10 ids at the
                                                  last position (BERT: at every [MASK])

The forward pass below is written from Hugging Face's modelling code (modeling_llama.py,
modeling_mistral.py, modeling_qwen2.py, modeling_qwen3.py, modeling_olmo2.py, modeling_phi3.py,
modeling_mixtral.py, modeling_qwen2_moe.py, modeling_qwen3_moe.py, modeling_bert.py,
modeling_gpt_neox.py, modeling_gemma2.py, modeling_gemma3.py) in float32 torch:
RMSNorm as LlamaRMSNorm, rotate_half RoPE with the frequencies of transformers 5's
modeling_rope_utils.py (_compute_default/linear/dynamic_ntk/yarn/longrope/llama3 parameters, the
dict standardize_rope_params makes of either format, cos and sin times the attention factor,
dynamic and longrope looking at max(position_ids) + 1), repeat_kv, the causal mask with each
layer's sliding window (Mistral's in every layer, Qwen's where layer_types or max_window_layers
say; key j visible from query i when i - j < window), softmax, o_proj (with its bias under
attention_bias), SwiGLU (down(silu(gate(x)) * up(x)), with mlp_bias's biases); BERT's post-norm
encoder with token types and its MLM head. Nothing here looks at the C code.

The tokenizers: the Llama cases read tests/golden/gpt2's tiny byte-level BPE (kind gpt2; the ids
come from gen_gpt2.py's port of OpenAI's encoder); BERT reads a tiny WordPiece tokenizer.json
written here (every word of its sentences is in the vocabulary, so the ids are a lookup).
"""

import json
import math
import os
import shutil
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_gpt2 as g2  # noqa: E402  (write_csv, write_rows, write_safetensors, the BPE)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "families")
GPT2 = os.path.join(ROOT, "tests", "golden", "gpt2")

TEXT = "The river runs to the sea, and the children watch the water."

# name, arch of config.json, the config's keys, dtype, tied, extra
CASES = [
    # Llama with GQA (4 query heads, 2 KV heads), an untied lm_head, F32, F16 and BF16
    dict(name="llama-gqa", arch="LlamaForCausalLM", model_type="llama", dtype="F32",
         cfg=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=48, rms_norm_eps=1e-6,
                  rope_theta=10000.0, tie_word_embeddings=False, max_position_embeddings=64)),
    dict(name="llama-gqa-f16", same="llama-gqa", dtype="F16"),
    dict(name="llama-gqa-bf16", same="llama-gqa", dtype="BF16"),
    # Llama 3's rope scaling (one pair kept, one blended, two stretched), tied embeddings
    dict(name="llama3-rope", arch="LlamaForCausalLM", model_type="llama", dtype="F32",
         cfg=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=1, intermediate_size=40, rms_norm_eps=1e-5,
                  rope_theta=500000.0, tie_word_embeddings=True, max_position_embeddings=64,
                  rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                    high_freq_factor=4.0,
                                    original_max_position_embeddings=512))),
    # Qwen2: q/k/v biases, linear rope scaling, tied
    dict(name="qwen2-bias", arch="Qwen2ForCausalLM", model_type="qwen2", dtype="F32",
         cfg=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=64, rms_norm_eps=1e-6,
                  rope_theta=1000000.0, tie_word_embeddings=True, max_position_embeddings=64,
                  rope_scaling=dict(type="linear", factor=2.0), use_sliding_window=False)),
    # Qwen3: per-head q_norm/k_norm, head_dim 16 (heads x head_dim 64 != hidden 32), untied
    dict(name="qwen3-qknorm", arch="Qwen3ForCausalLM", model_type="qwen3", dtype="F32",
         cfg=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, intermediate_size=48, rms_norm_eps=1e-6,
                  rope_theta=1000000.0, tie_word_embeddings=False, max_position_embeddings=64,
                  attention_bias=False)),
    dict(name="qwen3-qknorm-bf16", same="qwen3-qknorm", dtype="BF16"),
    # Mistral: a sliding window of 5 tokens over a 15-token sentence
    dict(name="mistral-window", arch="MistralForCausalLM", model_type="mistral", dtype="F32",
         cfg=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=48, rms_norm_eps=1e-5,
                  rope_theta=10000.0, tie_word_embeddings=False, max_position_embeddings=64,
                  sliding_window=5)),
    dict(name="mistral-window-f16", same="mistral-window", dtype="F16"),
]

# The configurations of today's transformers, and what they compute (issue 26): small models (2
# layers, 2 heads of 16, one KV head, tied), each config.json in one format and, where the
# formats differ, a twin in the other ("-v4": transformers 4's rope_theta, rope_scaling,
# torch_dtype, use_sliding_window + max_window_layers; "-v5": transformers 5's rope_parameters,
# dtype, layer_types) holding the same weights: its scene reads the goldens of the first (the
# line "# goldens: NAME"), and its forward pass must give them bit for bit.
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
             head_dim=16, intermediate_size=32, rms_norm_eps=1e-6, tie_word_embeddings=True)
OLMO2 = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=48, rms_norm_eps=1e-5, max_position_embeddings=64)
MOE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
           max_position_embeddings=64, tie_word_embeddings=False)
PHI3 = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
            intermediate_size=40, rms_norm_eps=1e-5, max_position_embeddings=64,
            original_max_position_embeddings=16, sliding_window=9, tie_word_embeddings=False)
PHI3_SHORT, PHI3_LONG = [1.0, 1.1, 1.3, 1.7], [1.0, 2.0, 5.0, 11.0]
LONG_SHORT = [1.0, 1.02, 1.05, 1.1, 1.2, 1.4, 1.8, 2.5]
LONG_LONG = [1.0, 1.3, 2.0, 3.5, 6.0, 10.0, 18.0, 30.0]
CASES += [
    # OLMo 2: q_norm and k_norm over the whole projection (GQA: k's 16 wide), its norms on the
    # branches' outputs; untied, with attention biases; both config formats, and BF16 tied
    dict(name="olmo2", arch="Olmo2ForCausalLM", model_type="olmo2", dtype="F32", fmt="v4",
         cfg=dict(OLMO2, rope_theta=500000.0, tie_word_embeddings=False, attention_bias=True)),
    dict(name="olmo2-v5", twin="olmo2", fmt="v5",
         cfg=dict(OLMO2, tie_word_embeddings=False, attention_bias=True,
                  rope_parameters=dict(rope_type="default", rope_theta=500000.0))),
    dict(name="olmo2-tied-bf16", arch="Olmo2ForCausalLM", model_type="olmo2", dtype="BF16",
         fmt="v5", cfg=dict(OLMO2, tie_word_embeddings=True,
                            rope_parameters=dict(rope_type="default", rope_theta=10000.0))),
    # Mixtral: 4 experts of 24, two a token (always renormalised), Mistral's attention
    dict(name="mixtral", arch="MixtralForCausalLM", model_type="mixtral", dtype="F32", fmt="v4",
         moe=True, cfg=dict(MOE, intermediate_size=24, num_local_experts=4, num_experts_per_tok=2,
                            rms_norm_eps=1e-5, rope_theta=1000000.0, sliding_window=None,
                            router_aux_loss_coef=0.02, output_router_logits=False)),
    dict(name="mixtral-bf16", same="mixtral", dtype="BF16"),
    dict(name="mixtral-v5", twin="mixtral", fmt="v5",
         cfg=dict(MOE, intermediate_size=24, num_local_experts=4, num_experts_per_tok=2,
                  rms_norm_eps=1e-5, sliding_window=None,
                  rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    # Qwen2-MoE: 6 experts of 16, two a token, not renormalised, a shared expert of 40 behind its
    # sigmoid gate, Qwen2's q/k/v biases; Qwen3-MoE: 5 experts, three a token, renormalised,
    # per-head q/k norms, transformers 5's format
    dict(name="qwen2-moe", arch="Qwen2MoeForCausalLM", model_type="qwen2_moe", dtype="F32",
         fmt="v4", moe=True,
         cfg=dict(MOE, intermediate_size=48, moe_intermediate_size=16, num_experts=6,
                  num_experts_per_tok=2, norm_topk_prob=False, shared_expert_intermediate_size=40,
                  rms_norm_eps=1e-6, rope_theta=10000.0, use_sliding_window=False,
                  decoder_sparse_step=1, mlp_only_layers=[])),
    dict(name="qwen3-moe", arch="Qwen3MoeForCausalLM", model_type="qwen3_moe", dtype="F32",
         fmt="v5", moe=True,
         cfg=dict(MOE, head_dim=16, intermediate_size=48, moe_intermediate_size=20,
                  num_experts=5, num_experts_per_tok=3, norm_topk_prob=True, rms_norm_eps=1e-6,
                  rope_parameters=dict(rope_type="default", rope_theta=1000000.0))),
    dict(name="qwen3-moe-v4", twin="qwen3-moe", fmt="v4",
         cfg=dict(MOE, head_dim=16, intermediate_size=48, moe_intermediate_size=20,
                  num_experts=5, num_experts_per_tok=3, norm_topk_prob=True, rms_norm_eps=1e-6,
                  rope_theta=1000000.0)),
    # Phi-3: fused qkv_proj and gate_up_proj, half of each head turned, longrope under its old
    # name su (23 tokens past the original 16: the long factors), a window of 9 in every layer
    dict(name="phi3-longrope", arch="Phi3ForCausalLM", model_type="phi3", dtype="F32", fmt="v4",
         cfg=dict(PHI3, rope_theta=10000.0, partial_rotary_factor=0.5,
                  rope_scaling=dict(type="su", short_factor=PHI3_SHORT, long_factor=PHI3_LONG))),
    dict(name="phi3-longrope-v5", twin="phi3-longrope", fmt="v5",
         cfg=dict(PHI3, rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                             partial_rotary_factor=0.5, short_factor=PHI3_SHORT,
                                             long_factor=PHI3_LONG))),
    dict(name="phi3-longrope-bf16", same="phi3-longrope", dtype="BF16"),
    # rope_parameters with a base other than 10,000 (transformers 5 writes no rope_theta)
    dict(name="llama-theta", arch="LlamaForCausalLM", model_type="llama", dtype="F32", fmt="v5",
         cfg=dict(SMALL, max_position_embeddings=64,
                  rope_parameters=dict(rope_theta=500000.0, rope_type="default"))),
    dict(name="llama-theta-v4", twin="llama-theta", fmt="v4",
         cfg=dict(SMALL, max_position_embeddings=64, rope_theta=500000.0)),
    # YaRN as Qwen2.5's long-context configs give it: factor and the original length, the
    # attention factor its default 0.1 ln(factor) + 1
    dict(name="qwen2-yarn", arch="Qwen2ForCausalLM", model_type="qwen2", dtype="F32", fmt="v4",
         cfg=dict(SMALL, max_position_embeddings=64, rope_theta=1000.0,
                  rope_scaling=dict(type="yarn", factor=4.0,
                                    original_max_position_embeddings=16))),
    dict(name="qwen2-yarn-v5", twin="qwen2-yarn", fmt="v5",
         cfg=dict(SMALL, max_position_embeddings=64,
                  rope_parameters=dict(rope_type="yarn", rope_theta=1000.0, factor=4.0,
                                       original_max_position_embeddings=16))),
    # YaRN as DeepSeek's: mscale / mscale_all_dim make the attention factor, beta_fast and
    # beta_slow the ramp, without truncation
    dict(name="llama-yarn-mscale", arch="LlamaForCausalLM", model_type="llama", dtype="F32",
         fmt="v5",
         cfg=dict(SMALL, max_position_embeddings=256,
                  rope_parameters=dict(rope_type="yarn", rope_theta=100.0, factor=8.0,
                                       original_max_position_embeddings=32, beta_fast=8.0,
                                       beta_slow=1.0, mscale=1.0, mscale_all_dim=0.707,
                                       truncate=False))),
    dict(name="llama-yarn-mscale-v4", twin="llama-yarn-mscale", fmt="v4",
         cfg=dict(SMALL, max_position_embeddings=256, rope_theta=100.0,
                  rope_scaling=dict(rope_type="yarn", factor=8.0,
                                    original_max_position_embeddings=32, beta_fast=8.0,
                                    beta_slow=1.0, mscale=1.0, mscale_all_dim=0.707,
                                    truncate=False))),
    # dynamic NTK: 23 tokens past max_position_embeddings 16 raise the base
    dict(name="llama-dynamic", arch="LlamaForCausalLM", model_type="llama", dtype="F32", fmt="v4",
         cfg=dict(SMALL, max_position_embeddings=16, rope_theta=10000.0,
                  rope_scaling=dict(type="dynamic", factor=2.0))),
    dict(name="llama-dynamic-v5", twin="llama-dynamic", fmt="v5",
         cfg=dict(SMALL, max_position_embeddings=16,
                  rope_parameters=dict(rope_type="dynamic", rope_theta=10000.0, factor=2.0))),
    # longrope as Phi-3's config gives it: short and long factors, the original length at the top
    # level; 23 tokens take the long factors, llama-longrope-short's 10 the short ones
    dict(name="llama-longrope", arch="LlamaForCausalLM", model_type="llama", dtype="F32",
         fmt="v4",
         cfg=dict(SMALL, max_position_embeddings=64, original_max_position_embeddings=16,
                  rope_theta=10000.0,
                  rope_scaling=dict(type="longrope", short_factor=LONG_SHORT,
                                    long_factor=LONG_LONG))),
    dict(name="llama-longrope-v5", twin="llama-longrope", fmt="v5",
         cfg=dict(SMALL, max_position_embeddings=64,
                  rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                       short_factor=LONG_SHORT, long_factor=LONG_LONG,
                                       original_max_position_embeddings=16))),
    dict(name="llama-longrope-short", folder_of="llama-longrope",
         text="The river runs to the sea."),
    # Llama's attention_bias (q, k, v and o) and mlp_bias (gate, up and down)
    dict(name="llama-bias", arch="LlamaForCausalLM", model_type="llama", dtype="F32", fmt="v5",
         cfg=dict(SMALL, max_position_embeddings=64, attention_bias=True, mlp_bias=True,
                  rope_parameters=dict(rope_theta=10000.0, rope_type="default"))),
    # Qwen2's sliding window in layer 1 only: max_window_layers 1, or layer_types
    dict(name="qwen2-window", arch="Qwen2ForCausalLM", model_type="qwen2", dtype="F32", fmt="v4",
         cfg=dict(SMALL, max_position_embeddings=64, rope_theta=10000.0,
                  use_sliding_window=True, sliding_window=6, max_window_layers=1)),
    dict(name="qwen2-window-v5", twin="qwen2-window", fmt="v5",
         cfg=dict(SMALL, max_position_embeddings=64, use_sliding_window=True, sliding_window=6,
                  layer_types=["full_attention", "sliding_attention"],
                  rope_parameters=dict(rope_theta=10000.0, rope_type="default"))),
]


class GenError(Exception):
    pass


# ---- the tokenizer -------------------------------------------------------------------------


def gpt2_tokens(text):
    enc = g2.get_encoder(GPT2)
    ids = enc.encode(text)
    labels = [g2.token_label(enc.decoder[i]) for i in ids]
    return ids, labels, len(enc.encoder)


# ---- weights -------------------------------------------------------------------------------


def draws(gen):
    """rnd(*shape, scale) and norm_w(n): float32 draws from gen, in the order they are called
    (a norm's weight near 1)."""
    def rnd(*shape, scale=0.2):
        return (torch.randn(*shape, generator=gen) * scale).numpy().astype(np.float32)

    def norm_w(n):
        return (1.0 + torch.randn(n, generator=gen) * 0.1).numpy().astype(np.float32)

    return rnd, norm_w


def llama_weights(c, vocab, seed):
    """name -> float32 numpy, torch's Linear layout (out, in), as Hugging Face saves them."""
    gen = torch.Generator().manual_seed(seed)
    cfg = c["cfg"]
    d, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // H)
    inter = cfg["intermediate_size"]
    qwen2, qwen3 = c["arch"].startswith("Qwen2"), c["arch"].startswith("Qwen3")
    olmo2 = c["arch"].startswith("Olmo2")
    # attention_bias: LlamaAttention's, Qwen3's and OLMo 2's q, k, v, o; mlp_bias: LlamaMLP's three
    llama = c["arch"].startswith("Llama")
    att_bias = cfg.get("attention_bias", False) and (llama or qwen3 or olmo2)
    mlp_bias = cfg.get("mlp_bias", False) and llama

    rnd, norm_w = draws(gen)

    W = {"model.embed_tokens.weight": rnd(vocab, d, scale=1.0)}
    for L in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % L
        if not olmo2:
            W[p + "input_layernorm.weight"] = norm_w(d)
        W[p + "self_attn.q_proj.weight"] = rnd(H * hd, d)
        W[p + "self_attn.k_proj.weight"] = rnd(K * hd, d)
        W[p + "self_attn.v_proj.weight"] = rnd(K * hd, d)
        if qwen2 or att_bias:
            W[p + "self_attn.q_proj.bias"] = rnd(H * hd, scale=0.5)
            W[p + "self_attn.k_proj.bias"] = rnd(K * hd, scale=0.5)
            W[p + "self_attn.v_proj.bias"] = rnd(K * hd, scale=0.5)
        if qwen3 or olmo2:  # OLMo 2's over the whole projection
            W[p + "self_attn.q_norm.weight"] = norm_w(H * hd if olmo2 else hd)
            W[p + "self_attn.k_norm.weight"] = norm_w(K * hd if olmo2 else hd)
        W[p + "self_attn.o_proj.weight"] = rnd(d, H * hd)
        if att_bias:
            W[p + "self_attn.o_proj.bias"] = rnd(d, scale=0.5)
        W[p + "post_attention_layernorm.weight"] = norm_w(d)
        if olmo2:
            W[p + "post_feedforward_layernorm.weight"] = norm_w(d)
        W[p + "mlp.gate_proj.weight"] = rnd(inter, d)
        W[p + "mlp.up_proj.weight"] = rnd(inter, d)
        W[p + "mlp.down_proj.weight"] = rnd(d, inter)
        if mlp_bias:
            W[p + "mlp.gate_proj.bias"] = rnd(inter, scale=0.5)
            W[p + "mlp.up_proj.bias"] = rnd(inter, scale=0.5)
            W[p + "mlp.down_proj.bias"] = rnd(d, scale=0.5)
    W["model.norm.weight"] = norm_w(d)
    if not cfg["tie_word_embeddings"]:
        W["lm_head.weight"] = rnd(vocab, d)
    if c.get("moe"):  # the MLP becomes a router over experts (and Qwen2-MoE's shared expert)
        E, h = cfg.get("num_local_experts", cfg.get("num_experts")), moe_width(c)
        mx = c["arch"].startswith("Mixtral")
        for L in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % L
            for n in ("gate_proj", "up_proj", "down_proj"):
                del W[p + "mlp.%s.weight" % n]
            pre = p + ("block_sparse_moe." if mx else "mlp.")
            W[pre + "gate.weight"] = rnd(E, d, scale=1.0)
            for e in range(E):
                names = ("w1", "w3", "w2") if mx else ("gate_proj", "up_proj", "down_proj")
                W[pre + "experts.%d.%s.weight" % (e, names[0])] = rnd(h, d)
                W[pre + "experts.%d.%s.weight" % (e, names[1])] = rnd(h, d)
                W[pre + "experts.%d.%s.weight" % (e, names[2])] = rnd(d, h)
            hs = cfg.get("shared_expert_intermediate_size")
            if hs:
                W[p + "mlp.shared_expert.gate_proj.weight"] = rnd(hs, d)
                W[p + "mlp.shared_expert.up_proj.weight"] = rnd(hs, d)
                W[p + "mlp.shared_expert.down_proj.weight"] = rnd(d, hs)
                W[p + "mlp.shared_expert_gate.weight"] = rnd(1, d, scale=1.0)
    if c["arch"].startswith("Phi3"):  # qkv_proj [Q; K; V] and gate_up_proj [gate; up], stacked
        for L in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % L
            W[p + "self_attn.qkv_proj.weight"] = np.concatenate(
                [W.pop(p + "self_attn.%s_proj.weight" % x) for x in "qkv"])
            W[p + "mlp.gate_up_proj.weight"] = np.concatenate(
                [W.pop(p + "mlp.gate_proj.weight"), W.pop(p + "mlp.up_proj.weight")])
    return W


def moe_width(c):
    """An expert's width: Mixtral's intermediate_size, Qwen's moe_intermediate_size."""
    cfg = c["cfg"]
    return cfg["intermediate_size"] if c["arch"].startswith("Mixtral") else \
        cfg["moe_intermediate_size"]


def moe_ffn(c, T, p, x):
    """MixtralSparseMoeBlock / Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock in eval mode:
    router logits, softmax in float32, torch.topk, renormalised (Mixtral always, Qwen with
    norm_topk_prob), each expert's SwiGLU on the rows that chose it, times its weight, added with
    index_add_ in expert order; then Qwen2-MoE's sigmoid-gated shared expert. Returns (logits,
    routed (n, E), out)."""
    cfg = c["cfg"]
    F = torch.nn.functional
    mx = c["arch"].startswith("Mixtral")
    pre = p + ("block_sparse_moe." if mx else "mlp.")
    E, K = cfg.get("num_local_experts", cfg.get("num_experts")), cfg["num_experts_per_tok"]
    logits = x @ T[pre + "gate.weight"].t()
    probs = F.softmax(logits, dim=1, dtype=torch.float)
    w, chosen = torch.topk(probs, K, dim=-1)
    if mx or cfg.get("norm_topk_prob", False):
        w = w / w.sum(dim=-1, keepdim=True)
    routed = torch.zeros_like(probs).scatter(1, chosen, w)
    out = torch.zeros_like(x)
    names = ("w1", "w3", "w2") if mx else ("gate_proj", "up_proj", "down_proj")
    for e in range(E):
        rows, slot = torch.where(chosen == e)
        if rows.numel() == 0:
            continue
        xe = x[rows]
        g = xe @ T[pre + "experts.%d.%s.weight" % (e, names[0])].t()
        u = xe @ T[pre + "experts.%d.%s.weight" % (e, names[1])].t()
        y = (F.silu(g) * u) @ T[pre + "experts.%d.%s.weight" % (e, names[2])].t()
        out.index_add_(0, rows, y * w[rows, slot, None])
    if p + "mlp.shared_expert_gate.weight" in T:
        sp = p + "mlp.shared_expert."
        g = x @ T[sp + "gate_proj.weight"].t()
        u = x @ T[sp + "up_proj.weight"].t()
        y = (F.silu(g) * u) @ T[sp + "down_proj.weight"].t()
        out = out + torch.sigmoid(x @ T[p + "mlp.shared_expert_gate.weight"].t()) * y
    return logits, routed, out


def round_to(W, dtype):
    """The weights as the file stores them, and the float32 numbers they read back as."""
    stored, back = {}, {}
    for k, v in W.items():
        if dtype == "F32":
            stored[k] = ("F32", v)
            back[k] = v
        elif dtype == "F16":
            h = v.astype(np.float16)
            stored[k] = ("F16", h)
            back[k] = h.astype(np.float32)
        else:
            b = g2.f32_to_bf16_bits(v)
            t = torch.from_numpy(v).to(torch.bfloat16).to(torch.float32).numpy()
            if not np.array_equal(g2.bf16_bits_to_f32(b), t):
                raise GenError("%s: numpy and torch round to BF16 differently" % k)
            stored[k] = ("BF16", b)
            back[k] = t
    return stored, back


# ---- the forward pass (Hugging Face's semantics) -------------------------------------------


def rms_norm(x, w, eps):
    """LlamaRMSNorm: x * rsqrt(mean(x^2) + eps), times the weight."""
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rope_params(cfg):
    """The one RoPE dict transformers 5 computes from, in either format: rope_scaling (4's)
    before rope_parameters (convert_rope_params_to_dict), rope_theta from the dict or the top
    level (10000 by default), then standardize_rope_params: rope_type from "type" or "default",
    and for llama3, yarn and longrope the pre-training length (a top-level
    original_max_position_embeddings first, as Phi-3 writes it)."""
    rp = dict(cfg.get("rope_scaling") or cfg.get("rope_parameters") or {})
    rp.setdefault("rope_theta", cfg.get("rope_theta", 10000.0))
    rp.setdefault("rope_type", rp.get("type", "default"))
    if cfg.get("_phi3") and rp["rope_type"] in ("su", "yarn"):  # Phi3Config's old names
        rp["rope_type"] = "longrope"
    if rp["rope_type"] in ("llama3", "yarn", "longrope"):
        if "original_max_position_embeddings" in cfg:
            rp["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
        else:
            rp.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
    return rp


def inv_freq(cfg, hd, seq_len):
    """(inv_freq, attention_factor) of modeling_rope_utils.py's _compute_*_parameters for the
    rope type, for positions 0 .. seq_len - 1 (the forward pass's max(position_ids) + 1, which
    dynamic_rope_update looks at), in float32 as torch computes them."""
    rp = rope_params(cfg)
    base, kind, dim = rp["rope_theta"], rp["rope_type"], hd
    shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    inv = 1.0 / (base ** shape)
    if kind == "default":
        return inv, 1.0
    if kind == "linear":
        return inv / rp["factor"], 1.0
    if kind == "dynamic":
        # past max_position_embeddings the forward pass recomputes with seq_len a tensor: the
        # new base in float32
        mp, factor = cfg["max_position_embeddings"], rp["factor"]
        if seq_len <= mp:
            b = base * ((factor * mp / mp) - (factor - 1)) ** (dim / (dim - 2))
            return 1.0 / (b ** shape), 1.0
        seq = torch.maximum(torch.tensor(seq_len), torch.tensor(mp))
        b = base * ((factor * seq / mp) - (factor - 1)) ** (dim / (dim - 2))
        return 1.0 / (b ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), 1.0
    if kind == "yarn":
        omax = rp["original_max_position_embeddings"]
        factor = rp.get("factor")
        if factor is None:
            factor = cfg["max_position_embeddings"] / omax
        att = rp.get("attention_factor")

        def get_mscale(scale, m=1):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        if att is None:
            mscale, mscale_all = rp.get("mscale"), rp.get("mscale_all_dim")
            att = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all)) \
                if mscale and mscale_all else get_mscale(factor)
        beta_fast, beta_slow = rp.get("beta_fast") or 32, rp.get("beta_slow") or 1

        def correction_dim(rot):
            return (dim * math.log(omax / (rot * 2 * math.pi))) / (2 * math.log(base))

        low, high = correction_dim(beta_fast), correction_dim(beta_slow)
        if rp.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
        pos_freqs = base ** (torch.arange(0, dim, 2).float() / dim)
        extra, inter = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
        keep = 1 - ramp
        return inter * (1 - keep) + extra * keep, att
    if kind == "longrope":
        omax = rp["original_max_position_embeddings"]
        factor = rp.get("factor")
        if factor is None:
            factor = cfg["max_position_embeddings"] / omax
        att = rp.get("attention_factor")
        if att is None:
            att = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(omax))
        ext = torch.tensor(rp["long_factor"] if seq_len > omax else rp["short_factor"],
                           dtype=torch.float32)
        return 1.0 / (ext * base ** shape), att
    if kind == "llama3":
        factor, low, high = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"]
        old = rp["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, inv_l), 1.0
    raise GenError("rope type %s" % kind)


def windows(c):
    """Each layer's sliding window (None: full attention): Mistral's sliding_window in every
    layer (MistralConfig's default 4096); Qwen2's and Qwen3's in the layers layer_types makes
    sliding_attention, or (transformers 4, without layer_types) from max_window_layers on, and
    only with use_sliding_window."""
    cfg, arch = c["cfg"], c["arch"]
    L = cfg["num_hidden_layers"]
    if arch.startswith("Mistral"):
        return [cfg.get("sliding_window", 4096)] * L
    if arch.startswith("Phi3"):  # every layer, when given
        return [cfg.get("sliding_window")] * L
    if arch.startswith("Qwen"):
        sw = cfg.get("sliding_window", 4096) if cfg.get("use_sliding_window", False) else None
        types = cfg.get("layer_types") or [
            "sliding_attention" if sw is not None and i >= cfg.get("max_window_layers", 28)
            else "full_attention" for i in range(L)]
        return [sw if t == "sliding_attention" else None for t in types]
    return [None] * L


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def llama_forward(c, W, ids, hooks=None):
    """Every stage, layer by layer, in the export's names; the final norm and the logits.
    hooks: {layer: f(ctx (H, n, hd)) -> ctx}, TransformerLens's hook_z (the heads' contexts
    before o_proj), for ablation and patching."""
    cfg = c["cfg"]
    d, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // H)
    eps = cfg["rms_norm_eps"]
    n = len(ids)
    T = {k: torch.from_numpy(v.copy()) for k, v in W.items()}
    olmo2, phi3 = c["arch"].startswith("Olmo2"), c["arch"].startswith("Phi3")
    wins = windows(c)
    x = T["model.embed_tokens.weight"][torch.tensor(ids)]
    pos = torch.arange(n).float()
    # Phi-3 turns the first int(head_dim * partial_rotary_factor) dimensions (the rest pass)
    rp = (cfg.get("rope_parameters") or {}).get("partial_rotary_factor",
                                                 cfg.get("partial_rotary_factor", 1.0))
    rd = int(hd * rp)
    inv, att = inv_freq(dict(cfg, _phi3=phi3), rd, n)
    freqs = pos[:, None] @ inv[None, :]  # (n, hd/2), as the rotary embedding
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos() * att, emb.sin() * att  # yarn's and longrope's attention factor
    recs = []
    for L in range(cfg["num_hidden_layers"]):
        window = wins[L]
        hidden = torch.zeros(n, n, dtype=torch.bool)
        for i in range(n):
            for j in range(n):
                hidden[i, j] = j > i or (window is not None and i - j >= window)
        p = "model.layers.%d." % L
        rec = {"inputs": x}
        # OLMo 2 (modeling_olmo2.py): no norm in front of attention
        h = x if olmo2 else rms_norm(x, T[p + "input_layernorm.weight"], eps)

        def lin(name, a):
            y = a @ T[p + name + ".weight"].t()
            b = T.get(p + name + ".bias")
            return y + b if b is not None else y

        if phi3:  # one product, then cut (modeling_phi3.py)
            qkv = lin("self_attn.qkv_proj", h)
            qp, kp, vp = qkv[:, :H * hd], qkv[:, H * hd:(H + K) * hd], qkv[:, (H + K) * hd:]
        else:
            qp, kp = lin("self_attn.q_proj", h), lin("self_attn.k_proj", h)
            vp = lin("self_attn.v_proj", h)
        if olmo2:  # q_norm and k_norm over the whole projection, before the heads are cut
            qp = rms_norm(qp, T[p + "self_attn.q_norm.weight"], eps)
            kp = rms_norm(kp, T[p + "self_attn.k_norm.weight"], eps)
        q = qp.reshape(n, H, hd).transpose(0, 1)  # (H, n, hd)
        k = kp.reshape(n, K, hd).transpose(0, 1)  # (K, n, hd)
        v = vp.reshape(n, K, hd).transpose(0, 1)
        heads = [dict() for _ in range(H)]
        rep = H // K
        if olmo2:  # the projections before their norm, as the stages queries and keys show them
            qraw = lin("self_attn.q_proj", h).view(n, H, hd).transpose(0, 1)
            kraw = lin("self_attn.k_proj", h).view(n, K, hd).transpose(0, 1)
        for hh in range(H):
            heads[hh]["queries"] = qraw[hh] if olmo2 else q[hh]
            heads[hh]["keys"] = kraw[hh // rep] if olmo2 else k[hh // rep]
            heads[hh]["values"] = v[hh // rep]
            if olmo2:
                heads[hh]["queries_normed"] = q[hh]
                heads[hh]["keys_normed"] = k[hh // rep]
        if p + "self_attn.q_norm.weight" in T and not olmo2:
            q = rms_norm(q, T[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, T[p + "self_attn.k_norm.weight"], eps)
            for hh in range(H):
                heads[hh]["queries_normed"] = q[hh]
                heads[hh]["keys_normed"] = k[hh // rep]
        q = torch.cat((q[..., :rd] * cos + rotate_half(q[..., :rd]) * sin, q[..., rd:]), dim=-1)
        k = torch.cat((k[..., :rd] * cos + rotate_half(k[..., :rd]) * sin, k[..., rd:]), dim=-1)
        k_rep = k.repeat_interleave(rep, dim=0)  # repeat_kv
        v_rep = v.repeat_interleave(rep, dim=0)
        scores = q @ k_rep.transpose(1, 2)
        scaled = scores * hd ** -0.5
        masked = scaled.masked_fill(hidden, float("-inf"))
        weights = torch.softmax(masked, dim=-1)
        ctx = weights @ v_rep  # (H, n, hd)
        if hooks and L in hooks:
            ctx = hooks[L](ctx)
        wo = T[p + "self_attn.o_proj.weight"]  # (d, H hd)
        for hh in range(H):
            heads[hh].update(queries_rotated=q[hh], keys_rotated=k[hh // rep], scores=scores[hh],
                             scaled=scaled[hh], masked=masked[hh], weights=weights[hh],
                             dropout=weights[hh], context=ctx[hh])
            vw = v_rep[hh] @ wo[:, hh * hd:(hh + 1) * hd].t()  # v_j W_O^h: (n, d)
            heads[hh]["weighted_norm"] = (weights[hh].unsqueeze(-1) * vw.unsqueeze(0)).norm(dim=-1)
        concat = ctx.transpose(0, 1).reshape(n, H * hd)
        out = lin("self_attn.o_proj", concat)
        if olmo2:  # x + norm(attn(x)), then r + norm(mlp(r))
            n1 = rms_norm(out, T[p + "post_attention_layernorm.weight"], eps)
            res1 = x + n1
            gate, up = lin("mlp.gate_proj", res1), lin("mlp.up_proj", res1)
            act = torch.nn.functional.silu(gate) * up
            ffn_out = lin("mlp.down_proj", act)
            n2 = rms_norm(ffn_out, T[p + "post_feedforward_layernorm.weight"], eps)
            res2 = res1 + n2
        else:
            n1 = h
            res1 = x + out
            n2 = rms_norm(res1, T[p + "post_attention_layernorm.weight"], eps)
            if c.get("moe"):
                rl, routed, ffn_out = moe_ffn(c, T, p, n2)
                res2 = res1 + ffn_out
                rec.update(norm1=h, context=concat, output=out, residual1=res1, norm2=n2,
                           router_logits=rl, routed=routed, ffn_out=ffn_out, residual2=res2,
                           block_output=res2, heads=heads)
                recs.append(rec)
                x = res2
                continue
            if phi3:  # gate_up_proj's product, chunk(2): gate, then up; up * silu(gate)
                gate, up = lin("mlp.gate_up_proj", n2).chunk(2, dim=-1)
                act = up * torch.nn.functional.silu(gate)
            else:
                gate = lin("mlp.gate_proj", n2)
                up = lin("mlp.up_proj", n2)
                act = torch.nn.functional.silu(gate) * up
            ffn_out = lin("mlp.down_proj", act)
            res2 = res1 + ffn_out
        rec.update(norm1=n1, context=concat, output=out, residual1=res1, norm2=n2, ffn_gate=gate,
                   ffn_up=up, ffn_activated=act, ffn_out=ffn_out, residual2=res2,
                   block_output=res2, heads=heads)
        recs.append(rec)
        x = res2
    final = rms_norm(x, T["model.norm.weight"], eps)
    head = T.get("lm_head.weight", T["model.embed_tokens.weight"])
    logits = final @ head.t()
    return recs, final, logits


# ---- float64 cross-check -------------------------------------------------------------------


def llama_forward64(c, W, ids):
    """The same in float64 numpy with loops over heads by column index: each torch stage must
    agree within 1e-5 relative (catches a wrong view or transpose in llama_forward)."""
    cfg = c["cfg"]
    d, H, K = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // H)
    eps = cfg["rms_norm_eps"]
    n = len(ids)
    A = {k: v.astype(np.float64) for k, v in W.items()}
    olmo2, phi3 = c["arch"].startswith("Olmo2"), c["arch"].startswith("Phi3")
    for L in range(cfg["num_hidden_layers"] if phi3 else 0):  # the fused rows, by name
        p = "model.layers.%d." % L
        qkv, gu = A.pop(p + "self_attn.qkv_proj.weight"), A.pop(p + "mlp.gate_up_proj.weight")
        A[p + "self_attn.q_proj.weight"] = qkv[:H * hd]
        A[p + "self_attn.k_proj.weight"] = qkv[H * hd:(H + K) * hd]
        A[p + "self_attn.v_proj.weight"] = qkv[(H + K) * hd:]
        A[p + "mlp.gate_proj.weight"], A[p + "mlp.up_proj.weight"] = np.split(gu, 2)
    wins = windows(c)
    share = (cfg.get("rope_parameters") or {}).get("partial_rotary_factor",
                                                    cfg.get("partial_rotary_factor", 1.0))
    rd = int(hd * share)
    inv, att = inv_freq(dict(cfg, _phi3=phi3), rd, n)
    inv = inv.double().numpy()

    def rms(x, w):
        return w * x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)

    x = A["model.embed_tokens.weight"][ids]
    outs = []
    for L in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % L
        window = wins[L]

        def lin(name, a):
            y = a @ A[p + name + ".weight"].T
            return y + A[p + name + ".bias"] if p + name + ".bias" in A else y

        h = x if olmo2 else rms(x, A[p + "input_layernorm.weight"])
        q, k, v = lin("self_attn.q_proj", h), lin("self_attn.k_proj", h), lin("self_attn.v_proj", h)
        if olmo2:
            q, k = rms(q, A[p + "self_attn.q_norm.weight"]), rms(k, A[p + "self_attn.k_norm.weight"])
        concat = np.zeros((n, H * hd))
        for hh in range(H):
            kv = hh // (H // K)
            qh, kh, vh = q[:, hh * hd:(hh + 1) * hd], k[:, kv * hd:(kv + 1) * hd], \
                v[:, kv * hd:(kv + 1) * hd]
            if p + "self_attn.q_norm.weight" in A and not olmo2:
                qh, kh = rms(qh, A[p + "self_attn.q_norm.weight"]), rms(kh, A[p + "self_attn.k_norm.weight"])
            half = rd // 2
            qr, kr = qh.copy(), kh.copy()  # past rd: unturned
            for t in range(n):
                for i in range(half):
                    a = t * inv[i]
                    cs, sn = math.cos(a) * att, math.sin(a) * att
                    for src, dst in ((qh, qr), (kh, kr)):
                        dst[t, i] = src[t, i] * cs - src[t, i + half] * sn
                        dst[t, i + half] = src[t, i + half] * cs + src[t, i] * sn
            s = qr @ kr.T / math.sqrt(hd)
            for i in range(n):
                for j in range(n):
                    if j > i or (window is not None and i - j >= window):
                        s[i, j] = -np.inf
            e = np.exp(s - s.max(-1, keepdims=True))
            w = e / e.sum(-1, keepdims=True)
            concat[:, hh * hd:(hh + 1) * hd] = w @ vh
        if olmo2:
            res1 = x + rms(lin("self_attn.o_proj", concat), A[p + "post_attention_layernorm.weight"])
            gate = lin("mlp.gate_proj", res1)
            act = gate / (1 + np.exp(-gate)) * lin("mlp.up_proj", res1)
            x = res1 + rms(lin("mlp.down_proj", act), A[p + "post_feedforward_layernorm.weight"])
            outs.append(x)
            continue
        res1 = x + lin("self_attn.o_proj", concat)
        n2 = rms(res1, A[p + "post_attention_layernorm.weight"])
        if c.get("moe"):  # the same routing in float64, expert by expert over each row
            mx = c["arch"].startswith("Mixtral")
            pre = p + ("block_sparse_moe." if mx else "mlp.")
            E, Kx = cfg.get("num_local_experts", cfg.get("num_experts")), cfg["num_experts_per_tok"]
            names = ("w1", "w3", "w2") if mx else ("gate_proj", "up_proj", "down_proj")
            lg = n2 @ A[pre + "gate.weight"].T
            pr = np.exp(lg - lg.max(-1, keepdims=True))
            pr /= pr.sum(-1, keepdims=True)
            ffn = np.zeros_like(n2)
            for t in range(n):
                top = sorted(range(E), key=lambda e: (-pr[t, e], e))[:Kx]
                wt = pr[t, top]
                if mx or cfg.get("norm_topk_prob", False):
                    wt = wt / wt.sum()
                for e, we in zip(top, wt):
                    g = n2[t] @ A[pre + "experts.%d.%s.weight" % (e, names[0])].T
                    u = n2[t] @ A[pre + "experts.%d.%s.weight" % (e, names[1])].T
                    ffn[t] += we * ((g / (1 + np.exp(-g)) * u) @
                                    A[pre + "experts.%d.%s.weight" % (e, names[2])].T)
            if p + "mlp.shared_expert_gate.weight" in A:
                sp = p + "mlp.shared_expert."
                g, u = n2 @ A[sp + "gate_proj.weight"].T, n2 @ A[sp + "up_proj.weight"].T
                y = (g / (1 + np.exp(-g)) * u) @ A[sp + "down_proj.weight"].T
                sg = n2 @ A[p + "mlp.shared_expert_gate.weight"].T
                ffn += y / (1 + np.exp(-sg))
            x = res1 + ffn
            outs.append(x)
            continue
        gate = lin("mlp.gate_proj", n2)
        act = gate / (1 + np.exp(-gate)) * lin("mlp.up_proj", n2)
        x = res1 + lin("mlp.down_proj", act)
        outs.append(x)
    return outs


def check64(name, recs, outs):
    for L, (rec, ref) in enumerate(zip(recs, outs)):
        got = rec["block_output"].double().numpy()
        err = np.abs(got - ref) / (1 + np.abs(ref))
        if err.max() > 1e-5:
            raise GenError("%s layer %d: torch and float64 differ by %g" % (name, L, err.max()))


# ---- writing -------------------------------------------------------------------------------


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=False)
        f.write("\n")


def llama_params(W, L, cfg):
    """Layer L's parameters as attnscope's export names them (x @ W orientation)."""
    p = "model.layers.%d." % L
    if p + "self_attn.qkv_proj.weight" in W:  # Phi-3: the fused rows, by name
        d, H = cfg["hidden_size"], cfg["num_attention_heads"]
        hd, K = cfg.get("head_dim", d // H), cfg["num_key_value_heads"]
        W = dict(W)
        qkv, gu = W.pop(p + "self_attn.qkv_proj.weight"), W.pop(p + "mlp.gate_up_proj.weight")
        W[p + "self_attn.q_proj.weight"] = qkv[:H * hd]
        W[p + "self_attn.k_proj.weight"] = qkv[H * hd:(H + K) * hd]
        W[p + "self_attn.v_proj.weight"] = qkv[(H + K) * hd:]
        W[p + "mlp.gate_proj.weight"], W[p + "mlp.up_proj.weight"] = np.split(gu, 2)
    out = {
        "W_query": W[p + "self_attn.q_proj.weight"].T, "W_key": W[p + "self_attn.k_proj.weight"].T,
        "W_value": W[p + "self_attn.v_proj.weight"].T, "out": W[p + "self_attn.o_proj.weight"].T,
    }
    if p + "mlp.gate_proj.weight" in W:  # a mixture's experts are not the layer's parameters
        out.update(ffn_Wgate=W[p + "mlp.gate_proj.weight"].T, ffn_W1=W[p + "mlp.up_proj.weight"].T,
                   ffn_W2=W[p + "mlp.down_proj.weight"].T)
    if p + "post_feedforward_layernorm.weight" in W:  # OLMo 2's: on the branches' outputs
        out.update(norm1_weight=W[p + "post_attention_layernorm.weight"],
                   norm2_weight=W[p + "post_feedforward_layernorm.weight"])
    else:
        out.update(norm1_weight=W[p + "input_layernorm.weight"],
                   norm2_weight=W[p + "post_attention_layernorm.weight"])
    for src, dst in (("self_attn.q_proj.bias", "b_query"), ("self_attn.k_proj.bias", "b_key"),
                     ("self_attn.v_proj.bias", "b_value"), ("self_attn.o_proj.bias", "out_bias"),
                     ("self_attn.q_norm.weight", "q_norm_weight"),
                     ("self_attn.k_norm.weight", "k_norm_weight"),
                     ("mlp.gate_proj.bias", "ffn_bgate"), ("mlp.up_proj.bias", "ffn_b1"),
                     ("mlp.down_proj.bias", "ffn_b2")):
        if p + src in W:
            out[dst] = W[p + src]
    return out


HEAD_VEC = ("queries", "keys", "values", "queries_normed", "keys_normed", "queries_rotated",
            "keys_rotated", "context")
# no "dropout": these models' attention dropout is 0, so dropout.csv would be a byte copy of
# weights.csv, and the export leaves it out (docs/export.md)
HEAD_SQ = ("scores", "scaled", "capped", "masked", "weights", "weighted_norm")
LAYER = ("inputs", "norm1", "context", "output", "output_normed", "residual1", "norm2",
         "ffn_hidden", "ffn_gate", "ffn_up", "ffn_activated", "router_logits", "routed", "ffn_out",
         "ffn_out_normed", "residual2", "block_output")


def write_goldens(out_dir, ids, labels, recs, final, params, predictions):
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    g2.write_rows(os.path.join(out_dir, "tokens.csv"), ["position", "id", "token"],
                  [[str(i), str(t), lab] for i, (t, lab) in enumerate(zip(ids, labels))])
    for L, rec in enumerate(recs):
        ld = os.path.join(out_dir, "layer%d" % L)
        for name in LAYER:
            if name in rec:
                g2.write_csv(os.path.join(ld, name + ".csv"), rec[name], labels)
        for h, hrec in enumerate(rec["heads"]):
            hdir = os.path.join(ld, "head%d" % h)
            for name in HEAD_VEC:
                if name in hrec:
                    g2.write_csv(os.path.join(hdir, name + ".csv"), hrec[name], labels)
            for name in HEAD_SQ:
                if name in hrec:
                    g2.write_csv(os.path.join(hdir, name + ".csv"), hrec[name], labels, labels)
        for name, a in params[L].items():
            default = 1.0 if name.endswith("_weight") else 0.0
            if name.startswith("norm") and np.all(a == default):
                continue
            rl = ["b"] if a.ndim == 1 else ["d%d" % i for i in range(a.shape[0])]
            g2.write_csv(os.path.join(ld, "params", name + ".csv"), a, rl)
    if final is not None:
        g2.write_csv(os.path.join(out_dir, "final_norm.csv"), final, labels)
    for L, r in enumerate(g2.rollout(recs)):
        g2.write_csv(os.path.join(out_dir, "layer%d" % L, "rollout.csv"), r, labels, labels)
        if L == len(recs) - 1:
            g2.write_csv(os.path.join(out_dir, "rollout.csv"), r, labels, labels)
    # predictions.csv: position, rank, id, logit (the top 10, ties to the lower id)
    rows = []
    for pos, logits in predictions:
        order = sorted(range(len(logits)), key=lambda i: (-float(logits[i]), i))[:10]
        for rank, i in enumerate(order):
            rows.append([str(pos), str(rank + 1), str(i), g2.fmt(logits[i])])
    g2.write_rows(os.path.join(out_dir, "predictions.csv"), ["position", "rank", "id", "logit"],
                  rows)


def config_json(c, vocab):
    """config.json as save_pretrained writes it: transformers 4's torch_dtype, or 5's dtype and
    its version."""
    dt = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[c["dtype"]]
    cfg = dict(architectures=[c["arch"]], model_type=c["model_type"], vocab_size=vocab,
               hidden_act="silu")
    if c.get("fmt") == "v5":
        cfg.update(dtype=dt, transformers_version="5.0.0")
    else:
        cfg.update(torch_dtype=dt)
    cfg.update(c["cfg"])
    return cfg


def write_scene(name, text, folder, goldens=None):
    scene = ("# %s: random weights in Hugging Face's naming, written by gen_families.py.\n" % name)
    if goldens:
        scene += "# goldens: %s\n" % goldens
    scene += ("version: 1\ntitle: \"%s\"\ntext: \"%s\"\n"
              "tokenizer: {kind: gpt2, vocab: ../../gpt2/vocab.json, merges: ../../gpt2/merges.txt}\n"
              "model: {file: ../%s/model.safetensors}\n" % (name, text, folder))
    os.makedirs(os.path.join(OUT, "scenes"), exist_ok=True)
    with open(os.path.join(OUT, "scenes", name + ".yaml"), "w", encoding="utf-8") as f:
        f.write(scene)


def llama_case(c, by_name, ids, labels, vocab):
    """A checkpoint (c's own, or with folder_of another case's, and a text of its own), its scene
    and goldens; a twin (c["twin"]) writes its config in the other format, and its forward pass
    must give its first's goldens bit for bit (its scene reads those)."""
    if "folder_of" in c:
        first = by_name[c["folder_of"]]
        text = c["text"]
        ids, labels, _ = gpt2_tokens(text)
        cc = dict(first, name=c["name"])
        W = RUNS[first["name"]]["W"]
        with torch.no_grad():
            recs, final, logits = llama_forward(cc, W, ids)
        check64(c["name"], recs, llama_forward64(cc, W, ids))
        params = [llama_params(W, L, cc["cfg"]) for L in range(cc["cfg"]["num_hidden_layers"])]
        write_goldens(os.path.join(OUT, "goldens", c["name"]), ids, labels, recs, final, params,
                      [(len(ids) - 1, logits[-1].numpy())])
        write_scene(c["name"], text, first["name"])
        return
    twin = by_name[c["twin"]] if "twin" in c else None
    base = by_name[c["same"]] if "same" in c else twin if twin else c
    c = dict(base, name=c["name"], dtype=c.get("dtype", base["dtype"]),
             fmt=c.get("fmt", base.get("fmt")), cfg=c.get("cfg", base["cfg"]))
    seed = 20250701 + sum(ord(ch) for ch in base["name"])
    W32 = llama_weights(c, vocab, seed)
    stored, W = round_to(W32, c["dtype"])
    folder = os.path.join(OUT, c["name"])
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    g2.write_safetensors(os.path.join(folder, "model.safetensors"), stored,
                         {"format": "pt"})
    write_json(os.path.join(folder, "config.json"), config_json(c, vocab))
    back, _ = g2.read_safetensors(os.path.join(folder, "model.safetensors"))
    for k in W:
        if not np.array_equal(back[k], W[k]):
            raise GenError("%s: %s does not read back" % (c["name"], k))
    RUNS[c["name"]] = dict(kind="llama", c=c, W=W, ids=ids, labels=labels)
    with torch.no_grad():
        recs, final, logits = llama_forward(c, W, ids)
    if twin:  # the other format: the same numbers, to the bit
        first = RUNS[twin["name"]]
        def read(cfg):  # 4's "type" stays beside rope_type in transformers' dict: unread
            r = rope_params(dict(cfg, _phi3=c["arch"].startswith("Phi3")))
            r.setdefault("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
            return {k: v for k, v in r.items() if k != "type"}

        if read(c["cfg"]) != read(first["c"]["cfg"]) or windows(c) != windows(first["c"]):
            raise GenError("%s: its config reads otherwise than %s's" % (c["name"], twin["name"]))
        for L, (a, b) in enumerate(zip(recs, first["recs"])):
            if not torch.equal(a["block_output"], b["block_output"]):
                raise GenError("%s layer %d: not %s's numbers" % (c["name"], L, twin["name"]))
        write_scene(c["name"], TEXT, c["name"], goldens=twin["name"])
        return
    RUNS[c["name"]]["recs"] = recs
    check64(c["name"], recs, llama_forward64(c, W, ids))
    params = [llama_params(W, L, c["cfg"]) for L in range(c["cfg"]["num_hidden_layers"])]
    write_goldens(os.path.join(OUT, "goldens", c["name"]), ids, labels, recs, final, params,
                  [(len(ids) - 1, logits[-1].numpy())])
    write_scene(c["name"], TEXT, c["name"])


# ---- GPT-NeoX (Pythia) ---------------------------------------------------------------------

# name, the config's keys (transformers 4's rotary_pct and rotary_emb_base, or 5's
# rope_parameters), dtype; twin: the same checkpoint with its config in the other format; same:
# another case's shape with weights of their own (a later training step, for diff).
NEOX = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
            layer_norm_eps=1e-5, max_position_embeddings=64, hidden_act="gelu")
NEOX_CASES = [
    # Pythia's layout: parallel residual, a quarter of each head turned, untied embed_out
    dict(name="pythia-par", dtype="F32", fmt="v4",
         cfg=dict(NEOX, use_parallel_residual=True, rotary_pct=0.25, rotary_emb_base=10000,
                  tie_word_embeddings=False)),
    dict(name="pythia-par-v5", twin="pythia-par", fmt="v5",
         cfg=dict(NEOX, use_parallel_residual=True, tie_word_embeddings=False,
                  rope_parameters=dict(rope_type="default", rope_theta=10000.0,
                                       partial_rotary_factor=0.25))),
    dict(name="pythia-par-bf16", same="pythia-par", dtype="BF16"),
    # the same shape further on in training: the weights of pythia-par moved (diff's pair)
    dict(name="pythia-par-step2", same="pythia-par", dtype="F32", step=2),
    # sequential residual, tied embeddings, half of each head turned on base 500, no attention
    # biases, gelu's tanh form
    dict(name="neox-seq", dtype="F32", fmt="v5",
         cfg=dict(NEOX, use_parallel_residual=False, tie_word_embeddings=True,
                  attention_bias=False, hidden_act="gelu_new",
                  rope_parameters=dict(rope_type="default", rope_theta=500.0,
                                       partial_rotary_factor=0.5))),
    dict(name="neox-seq-v4", twin="neox-seq", fmt="v4",
         cfg=dict(NEOX, use_parallel_residual=False, tie_word_embeddings=True,
                  attention_bias=False, hidden_act="gelu_new", rotary_pct=0.5,
                  rotary_emb_base=500)),
]


def neox_rope(cfg):
    """(base, share of a head turned) as GPTNeoXConfig reads them: transformers 5's
    rope_parameters first, else 4's rotary_emb_base and rotary_pct (10000 and 0.25 by default)."""
    rp = cfg.get("rope_parameters") or {}
    return (rp.get("rope_theta", cfg.get("rotary_emb_base", 10000)),
            rp.get("partial_rotary_factor", cfg.get("rotary_pct", 0.25)))


def neox_weights(cfg, vocab, seed):
    """name -> float32 numpy, GPTNeoXForCausalLM's names and torch's Linear layout (out, in)."""
    gen = torch.Generator().manual_seed(seed)
    d, inter = cfg["hidden_size"], cfg["intermediate_size"]
    bias = cfg.get("attention_bias", True)

    rnd, norm_w = draws(gen)

    W = {"gpt_neox.embed_in.weight": rnd(vocab, d, scale=1.0)}
    for L in range(cfg["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % L
        W[p + "input_layernorm.weight"] = norm_w(d)
        W[p + "input_layernorm.bias"] = rnd(d, scale=0.1)
        W[p + "post_attention_layernorm.weight"] = norm_w(d)
        W[p + "post_attention_layernorm.bias"] = rnd(d, scale=0.1)
        W[p + "attention.query_key_value.weight"] = rnd(3 * d, d)
        W[p + "attention.dense.weight"] = rnd(d, d)
        if bias:
            W[p + "attention.query_key_value.bias"] = rnd(3 * d, scale=0.5)
            W[p + "attention.dense.bias"] = rnd(d, scale=0.5)
        W[p + "mlp.dense_h_to_4h.weight"] = rnd(inter, d)
        W[p + "mlp.dense_h_to_4h.bias"] = rnd(inter, scale=0.5)
        W[p + "mlp.dense_4h_to_h.weight"] = rnd(d, inter)
        W[p + "mlp.dense_4h_to_h.bias"] = rnd(d, scale=0.5)
    W["gpt_neox.final_layer_norm.weight"] = norm_w(d)
    W["gpt_neox.final_layer_norm.bias"] = rnd(d, scale=0.1)
    if not cfg["tie_word_embeddings"]:
        W["embed_out.weight"] = rnd(vocab, d)
    return W


def neox_forward(cfg, W, ids):
    """GPTNeoXForCausalLM in eval mode (modeling_gpt_neox.py): LayerNorm in front of attention
    and the MLP; query_key_value viewed (n, heads, 3 head_dim) and cut into q, k, v; RoPE with
    rotate_half over the first int(head_dim * rotary_pct) dimensions, the rest passed through;
    scores times head_dim^-0.5, the causal mask, softmax; dense; then mlp_output + attn_output +
    hidden_states (use_parallel_residual, the MLP reading the layer's input) or the two residual
    adds one after the other; final_layer_norm and embed_out (or embed_in, tied)."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd, eps, n = d // H, cfg["layer_norm_eps"], len(ids)
    base, share = neox_rope(cfg)
    rd = int(hd * share)
    T = {k: torch.from_numpy(v.copy()) for k, v in W.items()}
    F = torch.nn.functional
    act = {"gelu": F.gelu, "gelu_new": lambda t: F.gelu(t, approximate="tanh")}[cfg["hidden_act"]]

    def ln(x, prefix):
        return F.layer_norm(x, (d,), T[prefix + ".weight"], T[prefix + ".bias"], eps)

    def lin(x, prefix):
        return F.linear(x, T[prefix + ".weight"], T.get(prefix + ".bias"))

    x = T["gpt_neox.embed_in.weight"][torch.tensor(ids)]
    inv, _ = inv_freq(dict(max_position_embeddings=cfg["max_position_embeddings"],
                           rope_parameters=dict(rope_type="default", rope_theta=base)), rd, n)
    freqs = torch.arange(n).float()[:, None] @ inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    recs = []
    for L in range(cfg["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % L
        rec = {"inputs": x}
        h = ln(x, p + "input_layernorm")
        qkv = lin(h, p + "attention.query_key_value").view(n, H, 3 * hd)
        q = qkv[..., :hd].transpose(0, 1)  # (H, n, hd)
        k = qkv[..., hd:2 * hd].transpose(0, 1)
        v = qkv[..., 2 * hd:].transpose(0, 1)
        heads = [dict(queries=q[i], keys=k[i], values=v[i]) for i in range(H)]

        def turn(t):
            r, rest = t[..., :rd], t[..., rd:]
            return torch.cat((r * cos + rotate_half(r) * sin, rest), dim=-1)

        q, k = turn(q), turn(k)
        scores = q @ k.transpose(1, 2)
        scaled = scores * hd ** -0.5
        masked = scaled.masked_fill(hidden, float("-inf"))
        weights = torch.softmax(masked, dim=-1)
        ctx = weights @ v
        wo = T[p + "attention.dense.weight"]
        for i in range(H):
            vw = v[i] @ wo[:, i * hd:(i + 1) * hd].t()
            heads[i].update(queries_rotated=q[i], keys_rotated=k[i], scores=scores[i],
                            scaled=scaled[i], masked=masked[i], weights=weights[i],
                            dropout=weights[i], context=ctx[i],
                            weighted_norm=(weights[i].unsqueeze(-1) * vw.unsqueeze(0)).norm(dim=-1))
        concat = ctx.transpose(0, 1).reshape(n, d)
        out = lin(concat, p + "attention.dense")
        if cfg["use_parallel_residual"]:
            n2 = ln(x, p + "post_attention_layernorm")
        else:
            res1 = out + x
            n2 = ln(res1, p + "post_attention_layernorm")
            rec["residual1"] = res1
        hid = lin(n2, p + "mlp.dense_h_to_4h")
        a = act(hid)
        fo = lin(a, p + "mlp.dense_4h_to_h")
        res2 = fo + out + x if cfg["use_parallel_residual"] else fo + res1
        rec.update(norm1=h, context=concat, output=out, norm2=n2, ffn_hidden=hid,
                   ffn_activated=a, ffn_out=fo, residual2=res2, block_output=res2, heads=heads)
        recs.append(rec)
        x = res2
    final = ln(x, "gpt_neox.final_layer_norm")
    logits = final @ T.get("embed_out.weight", T["gpt_neox.embed_in.weight"]).t()
    return recs, final, logits


def neox_forward64(cfg, W, ids):
    """The block outputs again in float64 numpy, head by head by column index (catches a wrong
    view of query_key_value or a wrong share of RoPE in neox_forward)."""
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd, eps, n = d // H, cfg["layer_norm_eps"], len(ids)
    base, share = neox_rope(cfg)
    rd = int(hd * share)
    A = {k: v.astype(np.float64) for k, v in W.items()}
    erf = np.vectorize(math.erf)

    def ln(x, prefix):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * A[prefix + ".weight"] + A[prefix + ".bias"]

    def lin(x, prefix):
        y = x @ A[prefix + ".weight"].T
        return y + A[prefix + ".bias"] if prefix + ".bias" in A else y

    def gelu(t):
        if cfg["hidden_act"] == "gelu":
            return 0.5 * t * (1 + erf(t / math.sqrt(2)))
        return 0.5 * t * (1 + np.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3)))

    x = A["gpt_neox.embed_in.weight"][ids]
    outs = []
    for L in range(cfg["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % L
        h = ln(x, p + "input_layernorm")
        qkv = lin(h, p + "attention.query_key_value")
        concat = np.zeros((n, d))
        for i in range(H):
            q = qkv[:, 3 * hd * i:3 * hd * i + hd].copy()
            k = qkv[:, 3 * hd * i + hd:3 * hd * i + 2 * hd].copy()
            v = qkv[:, 3 * hd * i + 2 * hd:3 * hd * (i + 1)]
            for t in range(n):
                for j in range(rd // 2):
                    ang = t * base ** (-2.0 * j / rd)
                    c, s_ = math.cos(ang), math.sin(ang)
                    for m in (q, k):
                        a, b = m[t, j], m[t, j + rd // 2]
                        m[t, j], m[t, j + rd // 2] = a * c - b * s_, a * s_ + b * c
            sc = q @ k.T / math.sqrt(hd)
            sc[np.triu(np.ones((n, n), dtype=bool), 1)] = -np.inf
            w = np.exp(sc - sc.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            concat[:, i * hd:(i + 1) * hd] = w @ v
        out = lin(concat, p + "attention.dense")
        if cfg["use_parallel_residual"]:
            x = x + out + lin(gelu(lin(ln(x, p + "post_attention_layernorm"),
                                       p + "mlp.dense_h_to_4h")), p + "mlp.dense_4h_to_h")
        else:
            r1 = x + out
            x = r1 + lin(gelu(lin(ln(r1, p + "post_attention_layernorm"), p + "mlp.dense_h_to_4h")),
                         p + "mlp.dense_4h_to_h")
        outs.append(x)
    return outs


def neox_params(W, L, cfg):
    """Layer L's parameters as attnscope's export names them (x @ W orientation): the fused
    W_qkv as stored, and the query, key and value it holds head by head."""
    p = "gpt_neox.layers.%d." % L
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd = d // H
    wqkv = W[p + "attention.query_key_value.weight"].T  # (d, 3d): head h's q, k, v side by side
    cols = [[3 * hd * h + part * hd + c for h in range(H) for c in range(hd)] for part in range(3)]
    out = {"W_qkv": wqkv, "W_query": wqkv[:, cols[0]], "W_key": wqkv[:, cols[1]],
           "W_value": wqkv[:, cols[2]], "out": W[p + "attention.dense.weight"].T,
           "ffn_W1": W[p + "mlp.dense_h_to_4h.weight"].T, "ffn_b1": W[p + "mlp.dense_h_to_4h.bias"],
           "ffn_W2": W[p + "mlp.dense_4h_to_h.weight"].T, "ffn_b2": W[p + "mlp.dense_4h_to_h.bias"],
           "norm1_weight": W[p + "input_layernorm.weight"],
           "norm1_bias": W[p + "input_layernorm.bias"],
           "norm2_weight": W[p + "post_attention_layernorm.weight"],
           "norm2_bias": W[p + "post_attention_layernorm.bias"]}
    if p + "attention.query_key_value.bias" in W:
        bqkv = W[p + "attention.query_key_value.bias"]
        out.update(b_qkv=bqkv, b_query=bqkv[cols[0]], b_key=bqkv[cols[1]], b_value=bqkv[cols[2]],
                   out_bias=W[p + "attention.dense.bias"])
    return out


def neox_case(c, by_name, ids, labels, vocab):
    """A GPT-NeoX checkpoint, its scene and goldens (a twin: the other config format, which must
    give its first's numbers bit for bit; its scene reads those goldens)."""
    twin = by_name[c["twin"]] if "twin" in c else None
    base = by_name[c["same"]] if "same" in c else twin if twin else c
    c = dict(base, name=c["name"], dtype=c.get("dtype", base["dtype"]),
             fmt=c.get("fmt", base.get("fmt")), cfg=c.get("cfg", base["cfg"]),
             step=c.get("step", 1))
    seed = 20251129 + sum(ord(ch) for ch in base["name"])
    W32 = neox_weights(c["cfg"], vocab, seed)
    if c["step"] > 1:  # training moved every weight a little: a second draw, a tenth as large
        gen = torch.Generator().manual_seed(seed + c["step"])
        W32 = {k: (v + torch.randn(v.shape, generator=gen).numpy() * 0.1 * v.std())
               .astype(np.float32) for k, v in W32.items()}
    stored, W = round_to(W32, c["dtype"])
    folder = os.path.join(OUT, c["name"])
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    g2.write_safetensors(os.path.join(folder, "model.safetensors"), stored, {"format": "pt"})
    cj = config_json(dict(c, arch="GPTNeoXForCausalLM", model_type="gpt_neox"), vocab)
    write_json(os.path.join(folder, "config.json"), cj)
    back, _ = g2.read_safetensors(os.path.join(folder, "model.safetensors"))
    for k in W:
        if not np.array_equal(back[k], W[k]):
            raise GenError("%s: %s does not read back" % (c["name"], k))
    with torch.no_grad():
        recs, final, logits = neox_forward(c["cfg"], W, ids)
    if twin:
        first = RUNS[twin["name"]]
        if neox_rope(c["cfg"]) != neox_rope(first["c"]["cfg"]):
            raise GenError("%s: its config reads otherwise than %s's" % (c["name"], twin["name"]))
        for L, (a, b) in enumerate(zip(recs, first["recs"])):
            if not torch.equal(a["block_output"], b["block_output"]):
                raise GenError("%s layer %d: not %s's numbers" % (c["name"], L, twin["name"]))
        write_scene(c["name"], TEXT, c["name"], goldens=twin["name"])
        return
    RUNS[c["name"]] = dict(kind="neox", c=c, W=W, ids=ids, labels=labels, recs=recs)
    for L, (rec, ref) in enumerate(zip(recs, neox_forward64(c["cfg"], W, ids))):
        got = rec["block_output"].double().numpy()
        err = np.abs(got - ref) / (1 + np.abs(ref))
        if err.max() > 1e-5:
            raise GenError("%s layer %d: torch and float64 differ by %g" % (c["name"], L, err.max()))
    params = [neox_params(W, L, c["cfg"]) for L in range(c["cfg"]["num_hidden_layers"])]
    write_goldens(os.path.join(OUT, "goldens", c["name"]), ids, labels, recs, final, params,
                  [(len(ids) - 1, logits[-1].numpy())])
    write_scene(c["name"], TEXT, c["name"])


# ---- Gemma 2 and Gemma 3 ---------------------------------------------------------------------

GEMMA = dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
             intermediate_size=48, rms_norm_eps=1e-6, max_position_embeddings=64,
             hidden_activation="gelu_pytorch_tanh")
GEMMA_CASES = [
    # Gemma 2: layer 0 slides (a window of 6), layer 1 is full; query_pre_attn_scalar 24 (not
    # head_dim 16); the scores soft-capped at 5 and the logits at 3, small enough to bite on random
    # weights; tied, as Gemma's are
    dict(name="gemma2", arch="Gemma2ForCausalLM", model_type="gemma2", dtype="F32", fmt="v4",
         cfg=dict(GEMMA, num_hidden_layers=2, query_pre_attn_scalar=24, sliding_window=6,
                  attn_logit_softcapping=5.0, final_logit_softcapping=3.0, rope_theta=10000.0,
                  tie_word_embeddings=True, cache_implementation="hybrid")),
    dict(name="gemma2-v5", twin="gemma2", fmt="v5",
         cfg=dict(GEMMA, num_hidden_layers=2, query_pre_attn_scalar=24, sliding_window=6,
                  attn_logit_softcapping=5.0, final_logit_softcapping=3.0,
                  tie_word_embeddings=True,
                  layer_types=["sliding_attention", "full_attention"],
                  rope_parameters=dict(rope_type="default", rope_theta=10000.0))),
    dict(name="gemma2-bf16", same="gemma2", dtype="BF16"),
    # Gemma 3 (text): three layers, two sliding (a window of 5) and one full (pattern 3); per-head
    # q_norm and k_norm; the full layer's RoPE on base 1e6 stretched linearly by 2, the sliding
    # layers' on base 10,000 unscaled; no soft-capping; untied
    dict(name="gemma3", arch="Gemma3ForCausalLM", model_type="gemma3_text", dtype="F32", fmt="v4",
         cfg=dict(GEMMA, num_hidden_layers=3, query_pre_attn_scalar=16, sliding_window=5,
                  sliding_window_pattern=3, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                  rope_scaling=dict(rope_type="linear", factor=2.0), tie_word_embeddings=False,
                  final_logit_softcapping=None, attn_logit_softcapping=None)),
    dict(name="gemma3-v5", twin="gemma3", fmt="v5",
         cfg=dict(GEMMA, num_hidden_layers=3, query_pre_attn_scalar=16, sliding_window=5,
                  tie_word_embeddings=False,
                  layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                  rope_parameters=dict(
                      full_attention=dict(rope_type="linear", factor=2.0, rope_theta=1000000.0),
                      sliding_attention=dict(rope_type="default", rope_theta=10000.0)))),
]


def gemma_layers(c):
    """Each layer's window (None: full): Gemma 2's even layers and Gemma 3's all but every
    sliding_window_pattern-th slide (4's rule), or layer_types (5's)."""
    cfg = c["cfg"]
    L = cfg["num_hidden_layers"]
    pattern = cfg.get("sliding_window_pattern", 6) if c["arch"].startswith("Gemma3") else 2
    types = cfg.get("layer_types") or [
        "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(L)]
    return [cfg["sliding_window"] if t == "sliding_attention" else None for t in types]


def gemma_rope(c, local):
    """The rope dict a layer computes from: Gemma 3's sliding layers' (default, their own base)
    or the full layers' (rope_theta with rope_scaling, or 5's full_attention dict)."""
    cfg = c["cfg"]
    rp = cfg.get("rope_parameters") or {}
    g3 = c["arch"].startswith("Gemma3")
    if g3 and "full_attention" in rp:
        d = rp["sliding_attention" if local else "full_attention"]
        return dict(max_position_embeddings=cfg["max_position_embeddings"], rope_parameters=d)
    if g3 and local:
        return dict(max_position_embeddings=cfg["max_position_embeddings"],
                    rope_parameters=dict(rope_type="default",
                                         rope_theta=cfg.get("rope_local_base_freq", 10000.0)))
    out = dict(max_position_embeddings=cfg["max_position_embeddings"],
               rope_theta=cfg.get("rope_theta", 1000000.0 if g3 else 10000.0))
    for k in ("rope_scaling", "rope_parameters"):
        if cfg.get(k):
            out[k] = cfg[k]
    return out


def gemma_weights(c, vocab, seed):
    """name -> float32 numpy in Gemma's names; the norms' weights near 0, as Gemma's (1 + w)."""
    gen = torch.Generator().manual_seed(seed)
    cfg = c["cfg"]
    d, H, K, hd = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                   cfg["head_dim"])
    inter = cfg["intermediate_size"]

    rnd, _ = draws(gen)

    W = {"model.embed_tokens.weight": rnd(vocab, d, scale=1.0)}
    for L in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % L
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            W[p + n + ".weight"] = rnd(d, scale=0.1)
        W[p + "self_attn.q_proj.weight"] = rnd(H * hd, d)
        W[p + "self_attn.k_proj.weight"] = rnd(K * hd, d)
        W[p + "self_attn.v_proj.weight"] = rnd(K * hd, d)
        W[p + "self_attn.o_proj.weight"] = rnd(d, H * hd)
        if c["arch"].startswith("Gemma3"):
            W[p + "self_attn.q_norm.weight"] = rnd(hd, scale=0.1)
            W[p + "self_attn.k_norm.weight"] = rnd(hd, scale=0.1)
        W[p + "mlp.gate_proj.weight"] = rnd(inter, d)
        W[p + "mlp.up_proj.weight"] = rnd(inter, d)
        W[p + "mlp.down_proj.weight"] = rnd(d, inter)
    W["model.norm.weight"] = rnd(d, scale=0.1)
    if not cfg["tie_word_embeddings"]:
        W["lm_head.weight"] = rnd(vocab, d)
    return W


def gemma_forward(c, W, ids):
    """Gemma2ForCausalLM and Gemma3ForCausalLM in eval mode (modeling_gemma2.py,
    modeling_gemma3.py): embeddings times sqrt(hidden_size) as a float32 tensor; per layer
    RMSNorm times (1 + w) in front of attention; q and k (Gemma 3: each head RMS-normed, (1 + w));
    RoPE (rotate_half) with the layer's frequencies; scores times query_pre_attn_scalar^-0.5,
    then / cap, tanh, * cap (attn_logit_softcapping); the causal mask and the layer's window;
    softmax; o_proj; post_attention_layernorm before the residual add; pre_feedforward_layernorm,
    down(gelu_tanh(gate) * up), post_feedforward_layernorm before its add; the final norm, the
    logits, and final_logit_softcapping."""
    cfg = c["cfg"]
    d, H, K, hd = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                   cfg["head_dim"])
    eps, n, rep = cfg["rms_norm_eps"], len(ids), cfg["num_attention_heads"] // cfg["num_key_value_heads"]
    T = {k: torch.from_numpy(v.copy()) for k, v in W.items()}
    F = torch.nn.functional
    g3 = c["arch"].startswith("Gemma3")
    cap, fcap = cfg.get("attn_logit_softcapping"), cfg.get("final_logit_softcapping")

    def norm(x, name):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        return y * (1.0 + T[name])

    def lin(name, a):
        return a @ T[name + ".weight"].t()

    x = T["model.embed_tokens.weight"][torch.tensor(ids)] * torch.tensor(d ** 0.5,
                                                                           dtype=torch.float32)
    wins = gemma_layers(c)
    pos = torch.arange(n).float()
    recs = []
    for L in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % L
        window = wins[L]
        inv, att = inv_freq(gemma_rope(c, window is not None), hd, n)
        freqs = pos[:, None] @ inv[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos() * att, emb.sin() * att
        hidden = torch.zeros(n, n, dtype=torch.bool)
        for i in range(n):
            for j in range(n):
                hidden[i, j] = j > i or (window is not None and i - j >= window)
        rec = {"inputs": x}
        h = norm(x, p + "input_layernorm.weight")
        q = lin(p + "self_attn.q_proj", h).view(n, H, hd).transpose(0, 1)
        k = lin(p + "self_attn.k_proj", h).view(n, K, hd).transpose(0, 1)
        v = lin(p + "self_attn.v_proj", h).view(n, K, hd).transpose(0, 1)
        heads = [dict(queries=q[i], keys=k[i // rep], values=v[i // rep]) for i in range(H)]
        if g3:
            q, k = norm(q, p + "self_attn.q_norm.weight"), norm(k, p + "self_attn.k_norm.weight")
            for i in range(H):
                heads[i].update(queries_normed=q[i], keys_normed=k[i // rep])
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k_rep, v_rep = k.repeat_interleave(rep, dim=0), v.repeat_interleave(rep, dim=0)
        scores = q @ k_rep.transpose(1, 2)
        scaled = scores * cfg["query_pre_attn_scalar"] ** -0.5
        capped = torch.tanh(scaled / cap) * cap if cap else scaled
        masked = capped.masked_fill(hidden, float("-inf"))
        weights = torch.softmax(masked, dim=-1)
        ctx = weights @ v_rep
        wo = T[p + "self_attn.o_proj.weight"]
        for i in range(H):
            vw = v_rep[i] @ wo[:, i * hd:(i + 1) * hd].t()
            heads[i].update(queries_rotated=q[i], keys_rotated=k[i // rep], scores=scores[i],
                            scaled=scaled[i], masked=masked[i], weights=weights[i],
                            dropout=weights[i], context=ctx[i],
                            weighted_norm=(weights[i].unsqueeze(-1) * vw.unsqueeze(0)).norm(dim=-1))
            if cap:
                heads[i]["capped"] = capped[i]
        concat = ctx.transpose(0, 1).reshape(n, H * hd)
        out = lin(p + "self_attn.o_proj", concat)
        out_n = norm(out, p + "post_attention_layernorm.weight")
        res1 = x + out_n
        n2 = norm(res1, p + "pre_feedforward_layernorm.weight")
        gate, up = lin(p + "mlp.gate_proj", n2), lin(p + "mlp.up_proj", n2)
        act = F.gelu(gate, approximate="tanh") * up
        ffn_out = lin(p + "mlp.down_proj", act)
        ffn_n = norm(ffn_out, p + "post_feedforward_layernorm.weight")
        res2 = res1 + ffn_n
        rec.update(norm1=h, context=concat, output=out, output_normed=out_n, residual1=res1,
                   norm2=n2, ffn_gate=gate, ffn_up=up, ffn_activated=act, ffn_out=ffn_out,
                   ffn_out_normed=ffn_n, residual2=res2, block_output=res2, heads=heads)
        recs.append(rec)
        x = res2
    final = norm(x, "model.norm.weight")
    logits = final @ T.get("lm_head.weight", T["model.embed_tokens.weight"]).t()
    if fcap:
        logits = torch.tanh(logits / fcap) * fcap
    return recs, final, logits


def gemma_forward64(c, W, ids):
    """The block outputs again in float64 numpy, head by head by column index."""
    cfg = c["cfg"]
    d, H, K, hd = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                   cfg["head_dim"])
    eps, n = cfg["rms_norm_eps"], len(ids)
    A = {k: v.astype(np.float64) for k, v in W.items()}
    g3 = c["arch"].startswith("Gemma3")
    cap = cfg.get("attn_logit_softcapping")

    def norm(x, name):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * (1.0 + A[name])

    def gelu(t):
        return 0.5 * t * (1 + np.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3)))

    x = A["model.embed_tokens.weight"][ids] * math.sqrt(d)
    outs = []
    for L, window in enumerate(gemma_layers(c)):
        p = "model.layers.%d." % L
        inv, att = inv_freq(gemma_rope(c, window is not None), hd, n)
        inv = inv.double().numpy()
        h = norm(x, p + "input_layernorm.weight")
        q = h @ A[p + "self_attn.q_proj.weight"].T
        k = h @ A[p + "self_attn.k_proj.weight"].T
        v = h @ A[p + "self_attn.v_proj.weight"].T
        concat = np.zeros((n, H * hd))
        for hh in range(H):
            kv = hh // (H // K)
            qh, kh = q[:, hh * hd:(hh + 1) * hd].copy(), k[:, kv * hd:(kv + 1) * hd].copy()
            if g3:
                qh, kh = norm(qh, p + "self_attn.q_norm.weight"), norm(kh, p + "self_attn.k_norm.weight")
            half = hd // 2
            qr, kr = np.zeros_like(qh), np.zeros_like(kh)
            for t in range(n):
                for i in range(half):
                    a = t * inv[i]
                    cs, sn = math.cos(a) * att, math.sin(a) * att
                    for src, dst in ((qh, qr), (kh, kr)):
                        dst[t, i] = src[t, i] * cs - src[t, i + half] * sn
                        dst[t, i + half] = src[t, i + half] * cs + src[t, i] * sn
            s_ = qr @ kr.T / math.sqrt(cfg["query_pre_attn_scalar"])
            if cap:
                s_ = np.tanh(s_ / cap) * cap
            for i in range(n):
                for j in range(n):
                    if j > i or (window is not None and i - j >= window):
                        s_[i, j] = -np.inf
            e = np.exp(s_ - s_.max(-1, keepdims=True))
            concat[:, hh * hd:(hh + 1) * hd] = (e / e.sum(-1, keepdims=True)) @ v[:, kv * hd:(kv + 1) * hd]
        res1 = x + norm(concat @ A[p + "self_attn.o_proj.weight"].T, p + "post_attention_layernorm.weight")
        n2 = norm(res1, p + "pre_feedforward_layernorm.weight")
        act = gelu(n2 @ A[p + "mlp.gate_proj.weight"].T) * (n2 @ A[p + "mlp.up_proj.weight"].T)
        x = res1 + norm(act @ A[p + "mlp.down_proj.weight"].T, p + "post_feedforward_layernorm.weight")
        outs.append(x)
    return outs


def gemma_params(W, L, c):
    """Layer L's parameters as attnscope's export names them: the norms' weights as the factors
    they multiply by, 1 + w, in float32 as Gemma's RMSNorm takes them."""
    p = "model.layers.%d." % L

    def one_plus(name):
        return (np.float32(1.0) + W[p + name]).astype(np.float32)

    out = {"W_query": W[p + "self_attn.q_proj.weight"].T, "W_key": W[p + "self_attn.k_proj.weight"].T,
           "W_value": W[p + "self_attn.v_proj.weight"].T, "out": W[p + "self_attn.o_proj.weight"].T,
           "ffn_Wgate": W[p + "mlp.gate_proj.weight"].T, "ffn_W1": W[p + "mlp.up_proj.weight"].T,
           "ffn_W2": W[p + "mlp.down_proj.weight"].T,
           "norm1_weight": one_plus("input_layernorm.weight"),
           "norm2_weight": one_plus("pre_feedforward_layernorm.weight"),
           "post_norm1_weight": one_plus("post_attention_layernorm.weight"),
           "post_norm2_weight": one_plus("post_feedforward_layernorm.weight")}
    if p + "self_attn.q_norm.weight" in W:
        out.update(q_norm_weight=one_plus("self_attn.q_norm.weight"),
                   k_norm_weight=one_plus("self_attn.k_norm.weight"))
    return out


def gemma_case(c, by_name, ids, labels, vocab):
    """A Gemma checkpoint, its scene and goldens (a twin: the other config format, the same
    numbers bit for bit)."""
    twin = by_name[c["twin"]] if "twin" in c else None
    base = by_name[c["same"]] if "same" in c else twin if twin else c
    c = dict(base, name=c["name"], dtype=c.get("dtype", base["dtype"]),
             fmt=c.get("fmt", base.get("fmt")), cfg=c.get("cfg", base["cfg"]))
    seed = 20251129 + sum(ord(ch) for ch in base["name"])
    stored, W = round_to(gemma_weights(c, vocab, seed), c["dtype"])
    folder = os.path.join(OUT, c["name"])
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    g2.write_safetensors(os.path.join(folder, "model.safetensors"), stored, {"format": "pt"})
    cj = config_json(c, vocab)
    del cj["hidden_act"]  # Gemma's is hidden_activation
    write_json(os.path.join(folder, "config.json"), cj)
    with torch.no_grad():
        recs, final, logits = gemma_forward(c, W, ids)
    if twin:
        first = RUNS[twin["name"]]
        if gemma_layers(c) != gemma_layers(first["c"]):
            raise GenError("%s: its layers read otherwise than %s's" % (c["name"], twin["name"]))
        for L, (a, b) in enumerate(zip(recs, first["recs"])):
            if not torch.equal(a["block_output"], b["block_output"]):
                raise GenError("%s layer %d: not %s's numbers" % (c["name"], L, twin["name"]))
        write_scene(c["name"], TEXT, c["name"], goldens=twin["name"])
        return
    RUNS[c["name"]] = dict(kind="gemma", c=c, W=W, ids=ids, labels=labels, recs=recs)
    for L, (rec, ref) in enumerate(zip(recs, gemma_forward64(c, W, ids))):
        got = rec["block_output"].double().numpy()
        err = np.abs(got - ref) / (1 + np.abs(ref))
        if err.max() > 1e-5:
            raise GenError("%s layer %d: torch and float64 differ by %g" % (c["name"], L, err.max()))
    params = [gemma_params(W, L, c) for L in range(c["cfg"]["num_hidden_layers"])]
    write_goldens(os.path.join(OUT, "goldens", c["name"]), ids, labels, recs, final, params,
                  [(len(ids) - 1, logits[-1].numpy())])
    write_scene(c["name"], TEXT, c["name"])


# ---- BERT ----------------------------------------------------------------------------------

BERT_WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "a", "the", "cat", "sat",
              "on", "mat", "it", "was", "sunny", "day", "dog", "ran", "to", "river", "sea",
              "and", "children", "watch", "water", "runs", "##s", "##ing", "play"]
BERT_A = "The cat sat on the [MASK] ."
BERT_B = "It was a sunny [MASK] ."


def bert_tokenizer_json():
    """A tiny WordPiece tokenizer.json as bert-base-uncased's is built (BertNormalizer,
    BertPreTokenizer, TemplateProcessing with sentence pairs, the WordPiece decoder)."""
    vocab = {w: i for i, w in enumerate(BERT_WORDS)}
    special = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False,
                "rstrip": False, "normalized": False, "special": True}
               for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                               for t in ("[CLS]", "[SEP]")}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    }


def bert_tokens(a=BERT_A, b=BERT_B):
    """[CLS] A [SEP] B [SEP]: every word of the sentences is a whole word of the vocabulary."""
    vocab = {w: i for i, w in enumerate(BERT_WORDS)}
    labels, types = ["[CLS]"], [0]
    for t, sent in ((0, a), (1, b)):
        for w in sent.split():
            w = w if w == "[MASK]" else w.lower()
            if w not in vocab:
                raise GenError("%s is not in the BERT vocabulary" % w)
            labels.append(w)
            types.append(t)
        labels.append("[SEP]")
        types.append(t)
    return [vocab[w] for w in labels], labels, types


BERT_CFG = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                max_position_embeddings=40, type_vocab_size=2, layer_norm_eps=1e-12,
                hidden_act="gelu", position_embedding_type="absolute")


def bert_weights(seed, vocab):
    gen = torch.Generator().manual_seed(seed)
    cfg = BERT_CFG
    d, inter = cfg["hidden_size"], cfg["intermediate_size"]

    rnd, _ = draws(gen)

    def ln(prefix):
        return {prefix + ".weight": (1 + torch.randn(d, generator=gen) * 0.1).numpy(),
                prefix + ".bias": rnd(d, scale=0.1)}

    W = {"bert.embeddings.word_embeddings.weight": rnd(vocab, d, scale=1.0),
         "bert.embeddings.position_embeddings.weight": rnd(cfg["max_position_embeddings"], d),
         "bert.embeddings.token_type_embeddings.weight": rnd(2, d, scale=0.5)}
    W.update(ln("bert.embeddings.LayerNorm"))
    for L in range(cfg["num_hidden_layers"]):
        p = "bert.encoder.layer.%d." % L
        for name, o, i in (("attention.self.query", d, d), ("attention.self.key", d, d),
                           ("attention.self.value", d, d), ("attention.output.dense", d, d),
                           ("intermediate.dense", inter, d), ("output.dense", d, inter)):
            W[p + name + ".weight"] = rnd(o, i)
            W[p + name + ".bias"] = rnd(o, scale=0.1)
        W.update(ln(p + "attention.output.LayerNorm"))
        W.update(ln(p + "output.LayerNorm"))
    W["bert.pooler.dense.weight"] = rnd(d, d)
    W["bert.pooler.dense.bias"] = rnd(d)
    W["cls.predictions.transform.dense.weight"] = rnd(d, d)
    W["cls.predictions.transform.dense.bias"] = rnd(d, scale=0.1)
    W.update(ln("cls.predictions.transform.LayerNorm"))
    W["cls.predictions.bias"] = rnd(vocab, scale=0.5)
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in W.items()}


def bert_forward(W, ids, types, hooks=None):
    """BertForMaskedLM in eval mode (modeling_bert.py): embeddings + LayerNorm, post-norm layers
    with GELU (erf), the MLM head with the decoder tied to the word embeddings."""
    cfg = BERT_CFG
    d, H = cfg["hidden_size"], cfg["num_attention_heads"]
    hd, eps, n = d // H, cfg["layer_norm_eps"], len(ids)
    T = {k: torch.from_numpy(v.copy()) for k, v in W.items()}
    F = torch.nn.functional

    def ln(x, prefix):
        return F.layer_norm(x, (d,), T[prefix + ".weight"], T[prefix + ".bias"], eps)

    def lin(x, prefix):
        return F.linear(x, T[prefix + ".weight"], T[prefix + ".bias"])

    e = "bert.embeddings."
    x = (T[e + "word_embeddings.weight"][torch.tensor(ids)] +
         T[e + "token_type_embeddings.weight"][torch.tensor(types)] +
         T[e + "position_embeddings.weight"][torch.arange(n)])
    x = ln(x, e + "LayerNorm")
    recs = []
    for L in range(cfg["num_hidden_layers"]):
        p = "bert.encoder.layer.%d." % L
        rec = {"inputs": x}
        q = lin(x, p + "attention.self.query").view(n, H, hd).transpose(0, 1)
        k = lin(x, p + "attention.self.key").view(n, H, hd).transpose(0, 1)
        v = lin(x, p + "attention.self.value").view(n, H, hd).transpose(0, 1)
        scores = q @ k.transpose(1, 2)
        scaled = scores / math.sqrt(hd)
        weights = torch.softmax(scaled, dim=-1)
        ctx = weights @ v
        if hooks and L in hooks:
            ctx = hooks[L](ctx)
        wo = T[p + "attention.output.dense.weight"]
        heads = []
        for h in range(H):
            vw = v[h] @ wo[:, h * hd:(h + 1) * hd].t()
            heads.append(dict(queries=q[h], keys=k[h], values=v[h], scores=scores[h],
                              scaled=scaled[h], masked=scaled[h], weights=weights[h],
                              dropout=weights[h], context=ctx[h],
                              weighted_norm=(weights[h].unsqueeze(-1) * vw.unsqueeze(0))
                              .norm(dim=-1)))
        concat = ctx.transpose(0, 1).reshape(n, d)
        out = lin(concat, p + "attention.output.dense")
        res1 = x + out
        n1 = ln(res1, p + "attention.output.LayerNorm")
        hid = lin(n1, p + "intermediate.dense")
        act = F.gelu(hid)
        fo = lin(act, p + "output.dense")
        res2 = n1 + fo
        n2 = ln(res2, p + "output.LayerNorm")
        rec.update(norm1=n1, context=concat, output=out, residual1=res1, norm2=n2,
                   ffn_hidden=hid, ffn_activated=act, ffn_out=fo, residual2=res2,
                   block_output=n2, heads=heads)
        recs.append(rec)
        x = n2
    return recs, bert_mlm_head(T, x)


def bert_mlm_head(T, x):
    """BertOnlyMLMHead: transform (dense, GELU, LayerNorm), then the decoder tied to the word
    embeddings, plus its bias. x: (n, d) -> (n, vocab)."""
    F = torch.nn.functional
    d = BERT_CFG["hidden_size"]
    t = F.gelu(F.linear(x, T["cls.predictions.transform.dense.weight"],
                        T["cls.predictions.transform.dense.bias"]))
    t = F.layer_norm(t, (d,), T["cls.predictions.transform.LayerNorm.weight"],
                     T["cls.predictions.transform.LayerNorm.bias"], BERT_CFG["layer_norm_eps"])
    return t @ T["bert.embeddings.word_embeddings.weight"].t() + T["cls.predictions.bias"]


def bert_params(W, L):
    p = "bert.encoder.layer.%d." % L
    return {"W_query": W[p + "attention.self.query.weight"].T,
            "b_query": W[p + "attention.self.query.bias"],
            "W_key": W[p + "attention.self.key.weight"].T,
            "b_key": W[p + "attention.self.key.bias"],
            "W_value": W[p + "attention.self.value.weight"].T,
            "b_value": W[p + "attention.self.value.bias"],
            "out": W[p + "attention.output.dense.weight"].T,
            "out_bias": W[p + "attention.output.dense.bias"],
            "ffn_W1": W[p + "intermediate.dense.weight"].T,
            "ffn_b1": W[p + "intermediate.dense.bias"],
            "ffn_W2": W[p + "output.dense.weight"].T, "ffn_b2": W[p + "output.dense.bias"],
            "norm1_weight": W[p + "attention.output.LayerNorm.weight"],
            "norm1_bias": W[p + "attention.output.LayerNorm.bias"],
            "norm2_weight": W[p + "output.LayerNorm.weight"],
            "norm2_bias": W[p + "output.LayerNorm.bias"]}


def bert_case(name, dtype, a=BERT_A, b=BERT_B, folder_of=None, fmt="v4"):
    """A BERT scene of sentences a and b; folder_of: the case whose checkpoint it opens (the same
    weights), or None to write its own, its config.json as transformers 4 (fmt "v4") or 5 ("v5":
    dtype, and no position_embedding_type, which BertConfig no longer has) writes it."""
    ids, labels, types = bert_tokens(a, b)
    W32 = bert_weights(20250801, len(BERT_WORDS))
    stored, W = round_to(W32, dtype)
    ckpt = folder_of or name
    if folder_of is None:
        folder = os.path.join(OUT, name)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        g2.write_safetensors(os.path.join(folder, "model.safetensors"), stored, {"format": "pt"})
        cfg = dict(architectures=["BertForMaskedLM"], model_type="bert",
                   vocab_size=len(BERT_WORDS))
        cfg.update(BERT_CFG)
        if fmt == "v5":
            del cfg["position_embedding_type"]
            cfg.update(dtype={"F32": "float32", "F16": "float16"}[dtype],
                       transformers_version="5.0.0")
        write_json(os.path.join(folder, "config.json"), cfg)
        write_json(os.path.join(folder, "tokenizer.json"), bert_tokenizer_json())
    with torch.no_grad():
        recs, logits = bert_forward(W, ids, types)
    params = [bert_params(W, L) for L in range(BERT_CFG["num_hidden_layers"])]
    masks = [i for i, w in enumerate(labels) if w == "[MASK]"]
    # the top 10 at every [MASK]; without one, at every position (each scores its own token)
    write_goldens(os.path.join(OUT, "goldens", name), ids, labels, recs, None, params,
                  [(i, logits[i].numpy()) for i in (masks or range(len(ids)))])
    scene = ("# %s: a random BertForMaskedLM in Hugging Face's naming, two sentences and %s\n"
             "# [MASK]s, written by gen_families.py.\n"
             "version: 1\ntitle: \"%s\"\ntext: [\"%s\", \"%s\"]\n"
             "tokenizer: {kind: hf, file: ../%s/tokenizer.json}\n"
             "model: {file: ../%s/model.safetensors, arch: auto}\n"
             % (name, ["no", "one", "two"][len(masks)], name, a, b, ckpt, ckpt))
    os.makedirs(os.path.join(OUT, "scenes"), exist_ok=True)
    with open(os.path.join(OUT, "scenes", name + ".yaml"), "w", encoding="utf-8") as f:
        f.write(scene)
    RUNS[name] = dict(kind="bert", W=W, ids=ids, types=types, labels=labels)


# ---- what a head does: the lens, ablation and patching (gen_interp.py's, for the families) ----
#
# interp/<case>/lens.csv          every layer's block output through the model's head (Llama:
#                                 model.norm and lm_head; BERT: the MLM head), the top-1 token
#                                 at every position and its probability
# interp/<case>/scored.csv        what the loss scores at each position (-1: nothing): the next
#                                 token (Llama); on BERT the top-1 at each [MASK] of the run with
#                                 every head (the model's own answer), or, without a [MASK],
#                                 every position's own token
# interp/<case>/ablate_<mode>.csv every head ablated alone (hook_z: zero, or its mean over the
#                                 positions): the mean loss over the scored positions, delta_loss
# interp/patch-<pair>/            pair.csv (the clean and corrupted scenes, the metric's tokens
#                                 and position: BERT's first [MASK]), metrics.csv and
#                                 patch_<metric>.csv as gen_interp.py writes them

RUNS = {}
INTERP = os.path.join(OUT, "interp")
TIE = 1e-5


def run_logits(r, hooks=None, layer_outputs=False):
    """The logits of a kept run (n, vocab), and with layer_outputs every layer's logits."""
    with torch.no_grad():
        if r["kind"] == "bert":
            recs, logits = bert_forward(r["W"], r["ids"], r["types"], hooks)
            T = {k: torch.from_numpy(v.copy()) for k, v in r["W"].items()}
            lens = [bert_mlm_head(T, rec["block_output"]) for rec in recs] if layer_outputs else None
        else:
            recs, final, logits = llama_forward(r["c"], r["W"], r["ids"], hooks)
            T = {k: torch.from_numpy(v.copy()) for k, v in r["W"].items()}
            head = T.get("lm_head.weight", T["model.embed_tokens.weight"])
            eps = r["c"]["cfg"]["rms_norm_eps"]
            lens = ([rms_norm(rec["block_output"], T["model.norm.weight"], eps) @ head.t()
                     for rec in recs] if layer_outputs else None)
    return logits, lens


def ranked(row):
    return sorted(range(len(row)), key=lambda i: (-float(row[i]), i))


def top1(row, what):
    order = ranked(row)
    a, b = float(row[order[0]]), float(row[order[1]])
    if abs(a - b) < TIE * max(1.0, abs(a)):
        raise GenError("%s: a near-tie: ids %d and %d, logits %r and %r" % (what, order[0],
                                                                              order[1], a, b))
    return order[0]


def scored_of(r, logits):
    ids, n = r["ids"], len(r["ids"])
    if r["kind"] != "bert":
        return [ids[i + 1] if i + 1 < n else -1 for i in range(n)]
    mask = BERT_WORDS.index("[MASK]")
    if mask not in ids:
        return list(ids)
    return [top1(logits[i].numpy(), "answer at %d" % i) if t == mask else -1
            for i, t in enumerate(ids)]


def mean_loss(logits, scored):
    at = [i for i, t in enumerate(scored) if t >= 0]
    return torch.nn.functional.cross_entropy(logits[at], torch.tensor([scored[i] for i in at]),
                                             reduction="mean").item()


def ablation_hook(h, mode):
    def hook(ctx):  # (H, n, hd)
        ctx = ctx.clone()
        ctx[h] = 0.0 if mode == "zero" else ctx[h].mean(dim=0, keepdim=True)
        return ctx
    return hook


def label_of(r, i):
    if r["kind"] == "bert":
        return BERT_WORDS[i]
    return g2.token_label(g2.get_encoder(GPT2).decoder[i])


def interp_case(name):
    r = RUNS[name]
    out = os.path.join(INTERP, name)
    logits, lens = run_logits(r, layer_outputs=True)
    rows = []
    for L, lg in enumerate(lens):
        probs = torch.softmax(lg, dim=-1)
        for i in range(len(r["ids"])):
            t = top1(lg[i].numpy(), "%s lens layer %d position %d" % (name, L, i))
            rows.append([str(L), str(i), str(t), label_of(r, t), g2.fmt(probs[i, t].item())])
    g2.write_rows(os.path.join(out, "lens.csv"), ["layer", "position", "id", "token", "prob"], rows)
    scored = scored_of(r, logits)
    g2.write_rows(os.path.join(out, "scored.csv"), ["position", "id"],
                  [[str(i), str(t)] for i, t in enumerate(scored)])
    clean = mean_loss(logits, scored)
    layers, heads = len(lens), (r["c"]["cfg"] if r["kind"] != "bert" else
                                BERT_CFG)["num_attention_heads"]
    for mode in ("zero", "mean"):
        rows = []
        for L in range(layers):
            for h in range(heads):
                loss = mean_loss(run_logits(r, {L: ablation_hook(h, mode)})[0], scored)
                rows.append([str(L), str(h), mode, g2.fmt(loss), g2.fmt(loss - clean)])
        g2.write_rows(os.path.join(out, "ablate_%s.csv" % mode),
                      ["layer", "head", "mode", "loss", "delta_loss"], rows)
    print("families: interp/%s: lens, scored %s, loss %.4f" % (
        name, [t for t in scored if t >= 0][:4], clean))


def patch_pair(pair, clean_name, corrupt_name, a, b):
    clean, corrupt = RUNS[clean_name], RUNS[corrupt_name]
    if len(clean["ids"]) != len(corrupt["ids"]):
        raise GenError("patch pair %s: the scenes differ in length" % pair)
    ia, ib = BERT_WORDS.index(a), BERT_WORDS.index(b)
    pos = clean["ids"].index(BERT_WORDS.index("[MASK]"))  # the clean text's first [MASK]
    saved = {}

    def keep(L):
        def hook(ctx):
            saved[L] = ctx.clone()
            return ctx
        return hook

    layers, heads = BERT_CFG["num_hidden_layers"], BERT_CFG["num_attention_heads"]
    clean_logits = run_logits(clean, {L: keep(L) for L in range(layers)})[0]
    corrupt_logits = run_logits(corrupt)[0]
    scored = scored_of(clean, clean_logits)  # the clean run's answers

    def metric(logits, kind):
        if kind == "logit_diff":
            return (logits[pos, ia] - logits[pos, ib]).item()
        if kind == "prob":
            return torch.softmax(logits[pos], dim=-1)[ia].item()
        return mean_loss(logits, scored)

    out = os.path.join(INTERP, "patch-" + pair)
    g2.write_rows(os.path.join(out, "pair.csv"), ["clean", "corrupt", "a", "b", "position"],
                  [[clean_name, corrupt_name, a, b, str(pos)]])
    meta = []
    for kind in ("logit_diff", "prob", "loss"):
        mc, mx = metric(clean_logits, kind), metric(corrupt_logits, kind)
        meta.append([kind, g2.fmt(mc), g2.fmt(mx)])
        rows = []
        for L in range(layers):
            for h in range(heads):
                def hook(ctx, L=L, h=h):
                    ctx = ctx.clone()
                    ctx[h] = saved[L][h]
                    return ctx
                m = metric(run_logits(corrupt, {L: hook})[0], kind)
                rows.append([str(L), str(h), g2.fmt(m), g2.fmt((m - mx) / (mc - mx))])
        g2.write_rows(os.path.join(out, "patch_%s.csv" % kind),
                      ["layer", "head", "metric", "recovered"], rows)
    g2.write_rows(os.path.join(out, "metrics.csv"), ["metric", "clean", "corrupt"], meta)
    print("families: interp/patch-%s: %s" % (pair, ", ".join("%s %s -> %s" % tuple(m)
                                                              for m in meta)))


# ---- sharded, and the bad checkpoints of tests/fixtures/bad --------------------------------


def write_sharded(src, name):
    """src's tensors in two shards and an index: the same numbers, so the same goldens."""
    back, header = g2.read_safetensors(os.path.join(OUT, src, "model.safetensors"))
    folder = os.path.join(OUT, name)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    names = sorted(back)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half],
              "model-00002-of-00002.safetensors": names[half:]}
    weight_map = {}
    for shard, members in shards.items():
        stored = {}
        for k in members:
            dt = header[k]["dtype"]
            stored[k] = (dt, g2.f32_to_bf16_bits(back[k]) if dt == "BF16" else
                         back[k].astype(np.float16) if dt == "F16" else back[k])
        g2.write_safetensors(os.path.join(folder, shard), stored, {"format": "pt"})
        weight_map.update({k: shard for k in members})
    write_json(os.path.join(folder, "model.safetensors.index.json"),
               {"metadata": {"total_size": sum(v.nbytes for v in back.values())},
                "weight_map": dict(sorted(weight_map.items()))})
    shutil.copy(os.path.join(OUT, src, "config.json"), os.path.join(folder, "config.json"))
    shutil.copytree(os.path.join(OUT, "goldens", src), os.path.join(OUT, "goldens", name))
    with open(os.path.join(OUT, "scenes", src + ".yaml"), encoding="utf-8") as f:
        scene = f.read().replace("../%s/model.safetensors" % src,
                                 "../%s/model.safetensors.index.json" % name)
    scene = scene.replace("# %s:" % src, "# %s (two shards and an index):" % name)
    with open(os.path.join(OUT, "scenes", name + ".yaml"), "w", encoding="utf-8") as f:
        f.write(scene)


def write_bad(vocab):
    """Checkpoints with one fault each, for tests/fixtures/bad/model_family_*.yaml."""
    bad = os.path.join(OUT, "bad")
    if os.path.isdir(bad):
        shutil.rmtree(bad)
    c = dict(CASES[0], cfg=dict(CASES[0]["cfg"], num_hidden_layers=1, hidden_size=16,
                                intermediate_size=16))
    W = llama_weights(c, vocab, 7)
    cfg = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=vocab,
               hidden_act="silu")
    cfg.update(c["cfg"])

    def put(name, tensors, config, index=None):
        folder = os.path.join(bad, name)
        for shard, members in tensors.items():
            g2.write_safetensors(os.path.join(folder, shard),
                                 {k: ("F32", W[k]) for k in members})
        write_json(os.path.join(folder, "config.json"), config)
        if index is not None:
            write_json(os.path.join(folder, "model.safetensors.index.json"), index)

    names = sorted(W)
    put("mamba", {"model.safetensors": names}, dict(cfg, architectures=["MambaForCausalLM"]))
    put("wide", {"model.safetensors": names}, dict(cfg, hidden_size=24))
    # a rope type of transformers 5 that attnscope does not compute (Gemma 4's)
    put("rope", {"model.safetensors": names},
        dict(cfg, rope_scaling={"rope_type": "proportional", "factor": 4.0}))
    # the two formats written, and disagreeing: rope_theta 10000 and 500000
    put("formats", {"model.safetensors": names},
        dict(cfg, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}))
    # LlamaForCausalLM's names without model.embed_tokens: the missing tensor is named
    put("no-embed", {"model.safetensors": [k for k in names if k != "model.embed_tokens.weight"]},
        cfg)
    a, b = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    wm = {k: (a if i % 2 == 0 else b) for i, k in enumerate(names)}
    put("missing-shard", {a: [k for k in names if wm[k] == a]}, cfg, {"weight_map": wm})
    put("two-shards", {a: [k for k in names if wm[k] == a] + ["model.norm.weight"],
                       b: [k for k in names if wm[k] == b and k != "model.norm.weight"] +
                       ["model.norm.weight"]},
        cfg, {"weight_map": wm})


def main():
    ids, labels, vocab = gpt2_tokens(TEXT)
    by_name = {c["name"]: c for c in CASES}
    for d in ("scenes", "goldens"):
        if os.path.isdir(os.path.join(OUT, d)):
            shutil.rmtree(os.path.join(OUT, d))
    for c in CASES:
        llama_case(c, by_name, ids, labels, vocab)
        print("families: %s" % c["name"])
    by_gemma = {c["name"]: c for c in GEMMA_CASES}
    for c in GEMMA_CASES:
        gemma_case(c, by_gemma, ids, labels, vocab)
        print("families: %s" % c["name"])
    by_neox = {c["name"]: c for c in NEOX_CASES}
    for c in NEOX_CASES:
        neox_case(c, by_neox, ids, labels, vocab)
        print("families: %s" % c["name"])
    write_sharded("llama-gqa-bf16", "llama-gqa-sharded")
    print("families: llama-gqa-sharded")
    write_bad(vocab)
    for name, dtype, fmt in (("bert-pair", "F32", "v4"), ("bert-pair-f16", "F16", "v5")):
        bert_case(name, dtype, fmt=fmt)
        print("families: %s" % name)
    # the same checkpoint: a text without [MASK], and the corrupted half of a patching pair
    bert_case("bert-nomask", "F32", "The cat sat on the mat .", "It was a sunny day .",
              folder_of="bert-pair")
    bert_case("bert-dog", "F32", "The dog sat on the [MASK] .", BERT_B, folder_of="bert-pair")
    print("families: bert-nomask, bert-dog")
    if os.path.isdir(INTERP):
        shutil.rmtree(INTERP)
    for name in ("bert-pair", "bert-nomask", "llama-gqa"):
        interp_case(name)
    patch_pair("bert", "bert-pair", "bert-dog", "mat", "sea")


if __name__ == "__main__":
    main()
