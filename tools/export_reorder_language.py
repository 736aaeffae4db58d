"""Write resources/models/reorder.language.json: the made-up language of the bundled reorder model
(tools/train_reorder.py) -- its word classes, the word-for-word lexicon, the case markers and the
probabilities of the sentence grammar -- so that attnviz can generate fresh sentence pairs of that
language and train a model on it in the application (core/train/tasks.cpp, task "reorder").

usage: /usr/bin/python3 tools/export_reorder_language.py [--out FILE]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_reorder as tr  # noqa: E402


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(root, "resources", "models", "reorder.language.json"))
    args = ap.parse_args()
    lex = tr.make_lexicon(tr.LEXICON_SEED)
    language = {
        "description": "The bundled reorder model's language pair: an English-like SVO source and a made-up "
                       "verb-final target with mirrored noun phrases (tools/train_reorder.py).",
        "classes": {cls: words for cls, words in tr.CLASSES},
        "lexicon": lex,
        "subject_marker": tr.SUBJ,
        "object_marker": tr.OBJ,
        # random_np: 0, 1 or 2 distinct adjectives with these weights; random_sentence: an adverb with
        # probability adverb, a prepositional phrase with probability prep_phrase
        "adjective_weights": [0.35, 0.4, 0.25],
        "adverb": 0.35,
        "prep_phrase": 0.4,
        "src_specials": tr.SRC_SPECIALS,
        "tgt_specials": tr.TGT_SPECIALS,
    }
    with open(args.out, "w", encoding="utf-8") as f:  # one key a line
        f.write("{\n" + ",\n".join(" %s: %s" % (json.dumps(k), json.dumps(v, ensure_ascii=False))
                                    for k, v in language.items()) + "\n}\n")
    print("wrote %s (%d source words)" % (args.out, len(lex)))


if __name__ == "__main__":
    main()
