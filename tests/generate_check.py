#!/usr/bin/env python3
"""generate: `attnscope generate` against PyTorch's greedy runs, and its refusals.

    generate_check.py ATTNSCOPE ROOT

For each case of tests/golden/generate/prompts.tsv (gen_generate.py: repeated full forward passes
in torch, no cache), `attnscope generate MODEL --text PROMPT --max-new 32 --csv` (fewer where the
context ends the golden) must choose the
same ids at the same positions, stop where the golden stops, and give each token's probability
within test_interp.c's tolerance, 2 p e Z with e = 3e-5 (the logits' error through every layer;
a step's row comes from the KV-cache path, within test_causal's tolerance of a fresh pass), Z
the row's largest |logit|. Then a sampled run is the same twice with one seed, and each bad input
gets its message and exit status 2; a tokenizer.json writes what vocab.json and merges.txt do.
Prints the largest share of the tolerance a probability used.
"""

import csv
import io
import os
import subprocess
import sys

EPS = 3e-5


def run(exe, *args):
    p = subprocess.run([exe, "generate", *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def model_arg(root, model):
    # the llama case's tokenizer lives with the GPT-2 goldens: its scene names it
    if model.endswith("families/llama-gqa"):
        return os.path.join(root, "tests/golden/families/scenes/llama-gqa.yaml")
    return os.path.join(root, model)


def check_case(exe, root, case, model, prompt, fails):
    gold = list(csv.DictReader(open(os.path.join(root, "tests/golden/generate", case + ".csv"))))
    # a golden that stopped short of 32 stopped at the context: as many as there is room for
    new = str(len(gold)) if len(gold) < 32 else "32"
    rc, out, err = run(exe, model_arg(root, model), "--text", prompt, "--max-new", new, "--csv")
    if rc != 0:
        fails.append("%s: exit %d: %s" % (case, rc, err.strip()))
        return 0.0
    got = list(csv.DictReader(io.StringIO(out)))
    worst = 0.0
    if len(got) != len(gold):
        fails.append("%s: %d tokens, the golden %d (stderr: %s)" %
                     (case, len(got), len(gold), err.strip().splitlines()[-1:]))
    for g, w in zip(got, gold):
        if (g["step"], g["position"], g["id"]) != (w["step"], w["position"], w["id"]):
            fails.append("%s: step %s: position %s id %s, the golden position %s id %s" %
                         (case, w["step"], g["position"], g["id"], w["position"], w["id"]))
            break
        if g["rank"] != "1":
            fails.append("%s: step %s: greedy chose rank %s" % (case, w["step"], g["rank"]))
        p, want = float(g["prob"]), float(w["prob"])
        tol = 2 * want * EPS * float(w["zmax"])
        worst = max(worst, abs(p - want) / tol)
        if abs(p - want) > tol:
            fails.append("%s: step %s: prob %.9g, the golden %.9g (tolerance %.3g)" %
                         (case, w["step"], p, want, tol))
    return worst


def expect_refused(exe, what, args, words, fails):
    rc, out, err = run(exe, *args)
    if rc != 2 or not all(w in err for w in words):
        fails.append("%s: exit %d, stderr %r (wanted 2 and %r)" % (what, rc, err.strip(), words))


def main():
    exe, root = sys.argv[1], sys.argv[2]
    fails = []
    rows = list(csv.DictReader(open(os.path.join(root, "tests/golden/generate/prompts.tsv")),
                               delimiter="\t"))
    for r in rows:
        share = check_case(exe, root, r["case"], r["model"], r["prompt"], fails)
        print("generate: %s: the largest share of a probability's tolerance %.1f%%" %
              (r["case"], 100 * share))

    english = os.path.join(root, "models/english")
    # the stop: the golden's gpt2 case ends at its context of 32
    rc, out, err = run(exe, os.path.join(root, "tests/golden/gpt2"), "--text", "The cat sat", "-n",
                       "29")
    if rc != 0 or "at the model's context: 32 tokens (n_positions)" not in out:
        fails.append("gpt2 to its context: exit %d, %r" % (rc, out.strip().splitlines()[-2:]))
    # a sampled run: the same for one seed, each token within the top k
    sampled = [english, "--text", "The cat sat on the", "-n", "24", "-t", "0.9", "-k", "20",
               "-p", "0.95", "--csv"]
    a, b = run(exe, *sampled, "--seed", "7"), run(exe, *sampled, "--seed", "7")
    c = run(exe, *sampled, "--seed", "8")
    if a[0] != 0 or a[1] != b[1]:
        fails.append("sampled with seed 7 twice: not the same (%s)" % a[2].strip())
    if a[1] == c[1]:
        fails.append("seeds 7 and 8 drew the same 24 tokens")
    if any(int(r["rank"]) > 20 for r in csv.DictReader(io.StringIO(a[1]))):
        fails.append("a sampled token past --top-k 20")
    # --stop: the run ends once the new text holds it
    rc, out, err = run(exe, english, "--text", "Once upon a time", "-n", "30", "--stop", " then")
    if rc != 0 or "# stopped at --stop" not in out:
        fails.append("--stop: exit %d, %r" % (rc, out.strip().splitlines()[-2:]))

    # tokenizer.json's path (hftok's token bytes): the same tokens and text as vocab.json's
    hf = run(exe, os.path.join(root, "tests/fixtures/hf/induction.yaml"), "-n", "6")
    text = open(os.path.join(root, "tests/fixtures/hf/induction.yaml")).read().split('text: "')[1]
    bpe = run(exe, os.path.join(root, "models/induction"), "--text", text.split('"')[0], "-n", "6")
    strip = lambda out: [l for l in out.splitlines() if not l.startswith("# stopped")][1:]
    if hf[0] != 0 or strip(hf[1]) != strip(bpe[1]) or not hf[1].rstrip().endswith("gold rain"):
        fails.append("tokenizer.json against vocab.json: %r / %r" % (hf[1][-200:], bpe[1][-200:]))

    induction = os.path.join(root, "models/induction")
    expect_refused(exe, "--max-new 0", [english, "--max-new", "0"], ["--max-new", "'0'"], fails)
    expect_refused(exe, "past the context", [english, "--text", "Once upon a time", "-n", "500"],
                   ["--max-new 500", "context (n_positions) is 128", "at most 121 new"], fails)
    expect_refused(exe, "--top-p 0", [english, "--top-p", "0"], ["--top-p '0'"], fails)
    expect_refused(exe, "--top-p 1.5", [english, "--top-p", "1.5"], ["--top-p '1.5'"], fails)
    expect_refused(exe, "greedy and sampled", [english, "--greedy", "-t", "0.7"], ["--greedy"],
                   fails)
    expect_refused(exe, "BERT", [os.path.join(root, "tests/golden/families/scenes/bert-dog.yaml")],
                   ["[MASK]", "predict shows"], fails)
    expect_refused(exe, "no EOS", [induction], ["names no end-of-text token", "--max-new"], fails)
    expect_refused(exe, "no vocabulary", [os.path.join(root, "scenes/10-mha.yaml")],
                   ["no next token to write"], fails)
    for f in fails:
        print("FAIL " + f)
    print("generate: %d cases, %d failures" % (len(rows), len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
