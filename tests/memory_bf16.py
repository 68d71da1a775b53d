"""memory_bf16: a BF16 checkpoint is widened one layer at a time, never whole.

Usage: memory_bf16.py ATTNSCOPE_BINARY SOURCE_ROOT

docs/checkpoints.md states that a TinyLlama-1.1B-shaped BF16 checkpoint (2.2 GB) at 128 tokens
peaks at 561 MiB of the process's own memory (RssAnon: the mapped file's page cache does not
count), because F16/BF16 Linear weights are multiplied a block of stored rows at a time and any
other lazy matrix is widened into one shared buffer, one matrix at a time. That figure needs the
2.2 GB file; this test holds the same property on a checkpoint it writes itself in a few seconds:

  a Llama (GQA) of 32 layers, d 512, 8 heads of 64 and 2 KV heads, FFN 2048, BF16, untied:
  3.8 M weights a layer, 7.25 MiB a layer in BF16 (232 MiB of file), 14.5 MiB a layer in F32
  (464 MiB for the whole model).

It runs `attnscope predict` on a 15-token text twice, sampling /proc/PID/status's RssAnon every
millisecond: on all 32 layers, and with the scene's `layers: 2` (the same file: the process
without 30 of its layers). What the 30 layers add is then the engine's own cost of a layer:

  * what it keeps: at 15 tokens 0.76 MiB a layer when every layer's stages stay (the d-wide and
    FFN-wide rows, the heads' 15 x 15 matrices), 0.05 MiB since predict computes a layer at a
    time (attn_net_compute_lean); the bound allows 2 MiB, which either fits;
  * never its weights in F32: 14.5 MiB a layer, 435 MiB over the 30 layers.

So the test asserts that 30 layers add less than 30 x 2 MiB = 60 MiB (a regression that kept
every layer's F32 copy adds 435 MiB, 7 times the bound; one that widened the whole model at once
the same), and that the whole run's peak stays below the 2-layer peak plus that, plus one
matrix's widening buffer (the FFN's 4 MiB) and the turn buffer (1 MiB). It also checks that a
layer of F32 weights is indeed far above the per-layer bound, so the bound cannot drift to where
it would pass a regression. Sampling every millisecond sees a cost held for a layer's forward
pass; an F32 copy held to the end is seen by any sample. Measured with the lean compute: 2 layers
21.9 MiB, 32 layers 23.5 MiB (+0.05 MiB a layer); with model.c's take() made to keep an F32 copy
of each lazy matrix (the regression this guards against) 40.1 and 485.5 MiB (+14.9 MiB a layer):
it fails (and did before the lean compute: 40.0 and 503.9 MiB).
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

LAYERS, D, HEADS, KV, FFN, HD = 32, 512, 8, 2, 2048, 64
TEXT = "The river runs to the sea, and the children watch the water."
PER_LAYER_BOUND_MIB = 2.0  # a layer's stages at 15 tokens (0.76 MiB measured at most), with room
BUFFERS_MIB = 4.0 + 1.0    # the widening buffer (the largest matrix, 2048 x 512) and the turn


def mib(kb):
    return kb / 1024.0


def tensors(vocab):
    """(name, shape) in the order Hugging Face writes a LlamaForCausalLM."""
    out = [("model.embed_tokens.weight", (vocab, D))]
    for L in range(LAYERS):
        p = "model.layers.%d." % L
        out += [(p + "input_layernorm.weight", (D,)),
                (p + "self_attn.q_proj.weight", (HEADS * HD, D)),
                (p + "self_attn.k_proj.weight", (KV * HD, D)),
                (p + "self_attn.v_proj.weight", (KV * HD, D)),
                (p + "self_attn.o_proj.weight", (D, HEADS * HD)),
                (p + "post_attention_layernorm.weight", (D,)),
                (p + "mlp.gate_proj.weight", (FFN, D)),
                (p + "mlp.up_proj.weight", (FFN, D)),
                (p + "mlp.down_proj.weight", (D, FFN))]
    out += [("model.norm.weight", (D,)), ("lm_head.weight", (vocab, D))]
    return out


def write_checkpoint(folder, vocab):
    """config.json and a BF16 model.safetensors: weights of magnitude 2^-7 .. 2^-6 with random
    signs (one 64 Ki-value block of them, repeated), norms of 1."""
    rng = random.Random(20261126)
    block = bytearray()
    for _ in range(65536):  # bf16: sign, exponent 120 (2^-7), 7 random mantissa bits
        bits = (rng.getrandbits(1) << 15) | (120 << 7) | rng.getrandbits(7)
        block += struct.pack("<H", bits)
    block = bytes(block)
    one = struct.pack("<H", 0x3F80)
    header, offset, names = {"__metadata__": {"format": "pt"}}, 0, tensors(vocab)
    for name, shape in names:
        size = 2
        for s in shape:
            size *= s
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset,
                                                                               offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in names:
            size = 2
            for s in shape:
                size *= s
            if len(shape) == 1:
                f.write(one * (size // 2))
                continue
            while size > 0:
                chunk = block[:size]
                f.write(chunk)
                size -= len(chunk)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab,
              "hidden_size": D, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
              "num_key_value_heads": KV, "head_dim": HD, "intermediate_size": FFN,
              "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": False,
              "max_position_embeddings": 256, "hidden_act": "silu", "torch_dtype": "bfloat16"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    return offset


def peak_rss_anon(cmd):
    """Runs cmd, sampling its RssAnon (kB) every millisecond; returns (peak kB, exit status)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, path = 0, "/proc/%d/status" % p.pid
    while p.poll() is None:
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        peak = max(peak, int(line.split()[1]))
                        break
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
        time.sleep(0.001)
    err = p.stderr.read().decode(errors="replace")
    if p.returncode != 0:
        sys.stderr.write(err)
    return peak, p.returncode


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    binary, root = sys.argv[1], sys.argv[2]
    gpt2 = os.path.join(root, "tests", "golden", "gpt2")
    with open(os.path.join(gpt2, "vocab.json")) as f:
        vocab = len(json.load(f))
    failed = []
    with tempfile.TemporaryDirectory(prefix="attnscope-memory-") as tmp:
        t0 = time.time()
        size = write_checkpoint(tmp, vocab)
        per_layer_f32 = (2 * HEADS * HD * D + 2 * KV * HD * D + 3 * FFN * D) * 4 / 2**20
        print("memory: wrote %d layers of BF16 (%.0f MiB) in %.1f s; a layer in F32 is %.1f MiB"
              % (LAYERS, size / 2**20, time.time() - t0, per_layer_f32))
        runs = {}
        for layers in (2, LAYERS):
            scene = os.path.join(tmp, "scene-%d.yaml" % layers)
            with open(scene, "w") as f:
                f.write("version: 1\ntext: \"%s\"\nlayers: %d\n"
                        "tokenizer: {kind: gpt2, vocab: %s, merges: %s}\n"
                        "model: {file: %s, arch: auto}\n" % (
                            TEXT, layers, os.path.join(gpt2, "vocab.json"),
                            os.path.join(gpt2, "merges.txt"),
                            os.path.join(tmp, "model.safetensors")))
            # the best of two: a sample that lands on a passing peak of another process's
            # pages (none here) cannot make it fail, and a regression is there every time
            best = None
            for _ in range(2):
                kb, rc = peak_rss_anon([binary, "predict", scene, "--top", "1"])
                if rc != 0:
                    print("memory: attnscope predict exited %d on %d layers" % (rc, layers))
                    return 1
                best = kb if best is None else min(best, kb)
            runs[layers] = mib(best)
            print("memory: %2d layers: peak RssAnon %.1f MiB" % (layers, runs[layers]))
    grown = runs[LAYERS] - runs[2]
    per_layer = grown / (LAYERS - 2)
    bound = (LAYERS - 2) * PER_LAYER_BOUND_MIB
    print("memory: %d more layers add %.1f MiB (%.2f MiB a layer); the bound is %.0f MiB "
          "(%.1f a layer), the F32 weights of those layers %.0f MiB"
          % (LAYERS - 2, grown, per_layer, bound, PER_LAYER_BOUND_MIB,
             (LAYERS - 2) * per_layer_f32))
    if per_layer_f32 < 4 * PER_LAYER_BOUND_MIB:
        failed.append("a layer's F32 weights (%.1f MiB) are not far above the per-layer bound"
                      % per_layer_f32)
    if grown > bound:
        failed.append("%d layers added %.1f MiB, more than their stages' bound of %.0f MiB: F32 "
                      "copies of BF16 weights are kept" % (LAYERS - 2, grown, bound))
    whole = runs[2] + bound + BUFFERS_MIB
    if runs[LAYERS] > whole:
        failed.append("the %d-layer peak %.1f MiB is above %.1f MiB" % (LAYERS, runs[LAYERS],
                                                                         whole))
    for f in failed:
        print("memory: FAIL: " + f)
    print("%d passed, %d failed" % (1 if not failed else 0, 1 if failed else 0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
