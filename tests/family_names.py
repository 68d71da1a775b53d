#!/usr/bin/env python3
"""family_names: nothing in src/ names a checkpoint family but the registry and the family's own
file (issue 28: a family is one registry row, one file and its tests).

The families are the rows of src/pretrained/families.c's ATTN_FAMILIES (X(NAME)); NAME's file is
src/pretrained/NAME.c, whose CLASSES rows give the family's architectures and model_types. Each
of those names written as a C string ("llama", "Qwen2ForCausalLM") anywhere in src/ (comments
included, as grep would find it) is a problem unless it is in families.c or its own family's file,
or is one of EXCEPTIONS below, each with its reason. An exception that no longer matches is a
problem too, so the list cannot go stale.

Usage: family_names.py SRC_DIR. Prints every problem and exits 1 when there is one.
"""
import os
import re
import sys

# (file under src/, the string): why it is not a family's name there.
EXCEPTIONS = {
    ("engine/tokenize.c", "gpt2"):
        "the tokenizer kind (a scene's tokenizer: {kind: gpt2}): GPT-2's byte-level BPE, which "
        "the Llama checkpoints of the tests read too, not the family",
}

ROW = re.compile(r"^\s*X\((\w+)\)", re.M)
CLASS = re.compile(r'\{\s*"(\w+)",\s*(?:"(\w+)"|NULL)\s*,')


def main(src):
    problems = []
    registry = os.path.join(src, "pretrained", "families.c")
    with open(registry, encoding="utf-8") as f:
        families = ROW.findall(f.read())
    if not families:
        problems.append("src/pretrained/families.c: no X(NAME) rows in ATTN_FAMILIES")
    owner = {}  # a name written as a string -> the family file that may write it
    for fam in families:
        path = os.path.join(src, "pretrained", fam + ".c")
        if not os.path.exists(path):
            problems.append(f"src/pretrained/{fam}.c: the family {fam}'s file is missing")
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if f"attn_family_{fam} =" not in text:
            problems.append(f"src/pretrained/{fam}.c: does not define attn_family_{fam}")
        owner[fam] = f"pretrained/{fam}.c"
        classes = text[text.find("CLASSES[]"):]
        for arch, model_type in CLASS.findall(classes[:classes.find("};")]):
            owner[arch] = f"pretrained/{fam}.c"
            if model_type:
                owner[model_type] = f"pretrained/{fam}.c"
    literal = re.compile(r'"(' + "|".join(map(re.escape, sorted(owner, key=len, reverse=True)))
                         + r')"') if owner else None
    used = set()
    for root, _, files in sorted(os.walk(src)):
        for name in sorted(files):
            if not name.endswith((".c", ".h")) or literal is None:
                continue
            rel = os.path.relpath(os.path.join(root, name), src)
            if rel == "pretrained/families.c":
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                lines = f.read().split("\n")
            for i, line in enumerate(lines, 1):
                for word in literal.findall(line):
                    if owner[word] == rel:
                        continue
                    if (rel, word) in EXCEPTIONS:
                        used.add((rel, word))
                        continue
                    problems.append(f'src/{rel}:{i}: "{word}" names a family (src/{owner[word]}); '
                                    "ask the registry (pretrained/families.h), or add an "
                                    "exception with its reason")
    for rel, word in sorted(set(EXCEPTIONS) - used):
        problems.append(f'src/{rel}: the exception for "{word}" matches nothing: remove it')
    for p in problems:
        print(p)
    print(f"{len(families)} families ({', '.join(families)}), {len(owner)} names, "
          f"{len(used)} exception(s), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "src"))
