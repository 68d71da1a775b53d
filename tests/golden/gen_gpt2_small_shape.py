#!/usr/bin/python3
"""PyTorch goldens for the gpt2-small-shape test: GPT-2 small's shape with seeded weights.

    /usr/bin/python3 tests/golden/gen_gpt2_small_shape.py

tests/make_gpt2_shape.c writes the checkpoint at test time (498 MB is not committed); this
script makes the same weights bit for bit with NumPy (the formula is in that file's comment),
runs them through gen_gpt2.py's GPT-2 (Hugging Face's GPT2Model semantics, written without
looking at attnscope), reads the sentence with GPT-2's real tokenizer (tests/fixtures/
gpt2-tokenizer, OpenAI's encoder.py ported in gen_gpt2.py) and writes, into
tests/golden/gpt2-small-shape/, a few rows of the result as .npy files (np.save output is the
same bytes on every run):

  ids.npy                 the 130 token ids
  final_norm_rows.npy     ln_f's output at positions 0, 1, 64 and 129 (4 x 768)
  block5_row64.npy        layer 5's block output at position 64 (768)
  weights_rows.npy        row 129 of the attention weights of (layer, head) (0, 0), (5, 3),
                          (11, 11) (3 x 130)
  top_ids.npy, top_logits.npy   the 10 highest logits (ln_f's output . wte^T, GPT-2's tied
                          unembedding over all 50257 tokens) at positions 0, 64 and 129, highest
                          first: ids (3 x 10, int32) and logits (3 x 10)
  loss.npy                -ln softmax(logits)[next id] at positions 0 .. 128 (129)
  lens5_row64.npy         layer 5's block output at position 64 through ln_f and wte^T: its top
                          id and probability (2)
The rows of the top 10 are chosen without near-ties: every gap between ranks 1 .. 11 is at least
1e-3, so twelve layers of float32 noise (1e-4 relative) cannot reorder them.
"""

import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import gen_gpt2  # noqa: E402  (its GPT-2 modules and OpenAI's encoder)

OUT = os.path.join(HERE, "gpt2-small-shape")
N_LAYER, N_EMBD, N_HEAD, N_POS, N_VOCAB = 12, 768, 12, 1024, 50257
TEXT = "Hello world" + " and the cat sat on the mat." * 16
WEIGHT_ROWS = [(0, 0), (5, 3), (11, 11)]
M64 = (1 << 64) - 1


def splitmix64(x):
    """Vectorised over uint64 arrays; wraps modulo 2^64 as the C does."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def tensor_list():
    """(name, shape, base, scale) in make_gpt2_shape.c's order: k is the index here."""
    t = [("wte.weight", (N_VOCAB, N_EMBD), 0, 0.2), ("wpe.weight", (N_POS, N_EMBD), 0, 0.2),
         ("ln_f.weight", (N_EMBD,), 1, 0.1), ("ln_f.bias", (N_EMBD,), 0, 0.05)]
    for L in range(N_LAYER):
        p = "h.%d." % L
        t += [(p + "ln_1.weight", (N_EMBD,), 1, 0.1), (p + "ln_1.bias", (N_EMBD,), 0, 0.05),
              (p + "attn.c_attn.weight", (N_EMBD, 3 * N_EMBD), 0, 0.06),
              (p + "attn.c_attn.bias", (3 * N_EMBD,), 0, 0.05),
              (p + "attn.c_proj.weight", (N_EMBD, N_EMBD), 0, 0.06),
              (p + "attn.c_proj.bias", (N_EMBD,), 0, 0.05),
              (p + "ln_2.weight", (N_EMBD,), 1, 0.1), (p + "ln_2.bias", (N_EMBD,), 0, 0.05),
              (p + "mlp.c_fc.weight", (N_EMBD, 4 * N_EMBD), 0, 0.06),
              (p + "mlp.c_fc.bias", (4 * N_EMBD,), 0, 0.05),
              (p + "mlp.c_proj.weight", (4 * N_EMBD, N_EMBD), 0, 0.06),
              (p + "mlp.c_proj.bias", (N_EMBD,), 0, 0.05),
              (p + "attn.bias", None, None, None)]
    return t


def values(k, shape, base, scale):
    n = int(np.prod(shape))
    key = np.uint64((0x9E3779B97F4A7C15 * (k + 1)) & M64)
    u = splitmix64(key ^ np.arange(n, dtype=np.uint64))
    f = (u >> np.uint64(40)).astype(np.float64) * 2.0 ** -24
    return (base + scale * (2.0 * f - 1.0)).astype(np.float32).reshape(shape)


def main():
    cfg = {"activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "model_type": "gpt2",
           "n_ctx": N_POS, "n_embd": N_EMBD, "n_head": N_HEAD, "n_inner": None,
           "n_layer": N_LAYER, "n_positions": N_POS, "vocab_size": N_VOCAB}
    torch.set_num_threads(2)
    model = gen_gpt2.GPT2Model(cfg).eval()
    state = {}
    for k, (name, shape, base, scale) in enumerate(tensor_list()):
        if shape is not None:
            state[name] = torch.from_numpy(values(k, shape, base, scale))
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all(m.endswith("attn.bias") for m in missing), (missing, unexpected)

    enc = gen_gpt2.get_encoder(os.path.join(ROOT, "tests", "fixtures", "gpt2-tokenizer"))
    ids = enc.encode(TEXT)
    assert len(ids) == 130 and ids[:2] == [15496, 995], ids[:4]
    with torch.no_grad():
        final = model(torch.tensor([ids]), N_LAYER, 0)[0]
    rows = [0, 1, 64, 129]
    os.makedirs(OUT, exist_ok=True)
    np.save(os.path.join(OUT, "ids.npy"), np.array(ids, dtype=np.int32))
    np.save(os.path.join(OUT, "final_norm_rows.npy"), final[rows].numpy().astype(np.float32))
    np.save(os.path.join(OUT, "block5_row64.npy"),
            model.h[5].rec["block_output"][64].numpy().astype(np.float32))
    w = [model.h[L].rec["heads"][h]["weights"][129].numpy() for L, h in WEIGHT_ROWS]
    np.save(os.path.join(OUT, "weights_rows.npy"), np.stack(w).astype(np.float32))
    # next-token predictions: GPT-2 ties its unembedding to wte
    wte = state["wte.weight"]
    with torch.no_grad():
        logits = final @ wte.t()
        loss = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:]),
                                                 reduction="none")
        lens = model.ln_f(model.h[5].rec["block_output"][64]) @ wte.t()
    top_ids, top_logits = [], []
    for r in (0, 64, 129):
        row = logits[r].numpy()
        order = sorted(range(N_VOCAB), key=lambda i: (-float(row[i]), i))[:11]
        gaps = [float(row[order[k]] - row[order[k + 1]]) for k in range(10)]
        assert min(gaps) >= 1e-3, "position %d: a near-tie in the top 11 (%g)" % (r, min(gaps))
        top_ids.append(order[:10])
        top_logits.append(row[order[:10]])
    np.save(os.path.join(OUT, "top_ids.npy"), np.array(top_ids, dtype=np.int32))
    np.save(os.path.join(OUT, "top_logits.npy"), np.array(top_logits, dtype=np.float32))
    np.save(os.path.join(OUT, "loss.npy"), loss.numpy().astype(np.float32))
    p = torch.softmax(lens, dim=-1)
    top = int(torch.argmax(lens))
    assert float(lens[top] - torch.topk(lens, 2).values[1]) >= 1e-3
    np.save(os.path.join(OUT, "lens5_row64.npy"), np.array([top, p[top].item()], dtype=np.float32))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
