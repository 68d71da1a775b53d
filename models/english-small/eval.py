#!/usr/bin/python3
"""Measures the shipped english-small (the files beside this script) against issue 30's targets:

    /usr/bin/python3 models/english-small/eval.py

  - loss per token (nats) and top-1 accuracy on the Devil's Dictionary, a source train.py never
    trains on, in windows of 512 + 1 tokens (models/english/eval.py's windows), against 0.5 ln V;
    the same on the 5% of each training source held out, and on as many training tokens;
  - the rank of " mat" after "The cat sat on the mat. The dog sat on the";
  - the best previous-token score on 16 held-out windows, and the best induction score on 16
    passages of 40 unseen tokens each read twice (attnscope's definitions, headscore.c);
  - which of train.py's first names are one token, and an IOI-style sentence's logit difference.
The corpus is rebuilt (its packages installed) when corpus/ is missing; nothing is trained.
"""

import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train as small  # noqa: E402

base = small.base
sys.modules["train"] = base  # models/english/eval.py's own `import train`
ev = small.load_module("english_eval", os.path.join(HERE, "..", "english", "eval.py"))
sys.modules["train"] = small


def rank_of(model, tok, prompt, word):
    import torch
    ids = tok.encode(prompt)
    target = tok.encode(word)
    assert len(target) == 1, "%r is %d tokens" % (word, len(target))
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0, -1]
    return int((logits > logits[target[0]]).sum()) + 1, logits, target[0]


def main():
    import torch
    torch.set_num_threads(base.THREADS)
    tok = base.load_tokenizer(HERE)
    model = small.load_model(HERE)
    model.eval()
    if not os.path.exists(os.path.join(small.CORPUS, "unseen.jsonl")):
        base.PACKAGES = small.PACKAGES
        base.ensure_packages()
        small.build_corpus()
    train_docs = small.load_corpus("train")
    held_docs, unseen_docs = small.load_corpus("heldout"), small.load_corpus("unseen")
    V, n_ctx = len(tok.vocab), small.N_CTX
    order = list(range(len(train_docs)))
    random.Random(small.SEED + 1).shuffle(order)
    train_ids = tok.stream([train_docs[i] for i in order])
    held_ids, unseen_ids = tok.stream(held_docs), tok.stream(unseen_docs)
    print("tokens: train %d, held-out %d, unseen (the Devil's Dictionary) %d, vocab %d" % (
        len(train_ids), len(held_ids), len(unseen_ids), V))
    print("target: loss <= 0.5 ln V = %.4f nats/token, top-1 >= 30%%" % (0.5 * math.log(V)))
    for name, ids in (("unseen", unseen_ids), ("held-out", held_ids),
                      ("train", train_ids[len(train_ids) // 2:][:len(held_ids)])):
        t, c, n = ev.model_loss(model, ids, n_ctx)
        print("model %-8s loss %.4f nats/token (%d targets), top-1 accuracy %.2f%%" % (
            name, t / n, n, 100 * c / n), flush=True)
    uni, big, lam = ev.ngram_baselines(train_ids, unseen_ids, V)
    print("unseen: unigram (add-one) %.4f, bigram (interpolated, l = %.2f) %.4f" % (uni, lam, big))

    r, _, _ = rank_of(model, tok, "The cat sat on the mat. The dog sat on the", " mat")
    print("' mat' after 'The cat sat on the mat. The dog sat on the': rank %d" % r)

    windows, _ = base.probes(held_ids, small.SEED + 2)
    _, reps = base.probes(unseen_ids, small.SEED + 2)
    _, again, heads = base.evaluate(model, windows, reps)
    best_prev = max((p, L, H) for L, (prev, _, _) in enumerate(heads) for H, p in enumerate(prev))
    best_ind = max((i, L, H) for L, (_, _, ind) in enumerate(heads) for H, i in enumerate(ind))
    print("best previous-token head: layer %d head %d, %.3f (held-out windows)" % (
        best_prev[1], best_prev[2], best_prev[0]))
    print("best induction head: layer %d head %d, %.3f (unseen passages read twice; the second "
          "copy's loss %.4f)" % (best_ind[1], best_ind[2], best_ind[0], again))
    print("| layer | head | previous | induction | first |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for L, (prev, first, ind) in enumerate(heads):
        for H in range(len(prev)):
            print("| %d | %d | %.3f | %.3f | %.3f |" % (L, H, prev[H], ind[H], first[H]))

    single = [n for n in small.NAMES if len(tok.encode(" " + n)) == 1]
    print("first names one token: %d of %d" % (len(single), len(small.NAMES)))
    prompt = "When Mary and John went to the store, John gave a drink to"
    ra, logits, a = rank_of(model, tok, prompt, " Mary")
    rb, _, b = rank_of(model, tok, prompt, " John")
    print("IOI: %r -> ' Mary' rank %d, ' John' rank %d, logit difference %.3f" % (
        prompt, ra, rb, float(logits[a] - logits[b])))


if __name__ == "__main__":
    main()
