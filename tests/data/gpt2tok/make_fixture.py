#!/usr/bin/env python3
"""make_fixture.py - the GPT-2 tokenizer fixture of tests/unit/test_gpt2tok.c.

Writes, in GPT-2's own formats, a small tokenizer (encoder.json, vocab.bpe:
the 256 byte tokens in GPT-2's order, merges learned here from a short
English text cut by GPT-2's pattern, "<|endoftext|>" last) and cases.tsv:
sentences (hex) with the ids that tiktoken (0.14, tiktoken.load's own
reader of GPT-2's files, its gpt2 pattern) encodes them to. Needs the
regex and tiktoken packages from PyPI (python3 -m venv v &&
v/bin/pip install regex tiktoken); run from this directory.
"""
import json
import regex
from tiktoken.core import Encoding
from tiktoken.load import data_gym_to_mergeable_bpe_ranks

PAT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
TIKTOKEN_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


B2U = bytes_to_unicode()
CORPUS = """The quick brown fox jumps over the lazy dog. The dog didn't mind; it's
the fox's fifth jump today, and they'll meet again at 10:45 tomorrow.
Thé café served crème brûlée — naïve tourists paid €12.50 each!
    Indented lines, tabs\tand   runs of spaces  matter to GPT-2's pattern.
Numbers: 1234567, 3.14159, 2024-05-20; we've seen 'em all, haven't we?
"""


def learn(text, nmerges):
    words = {}
    for piece in regex.findall(PAT, text):
        w = tuple(B2U[b] for b in piece.encode())
        words[w] = words.get(w, 0) + 1
    merges, have = [], set(B2U.values())
    for _ in range(nmerges):
        pairs = {}
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + c
        cand = sorted((-c, p) for p, c in pairs.items() if c >= 2 and p[0] + p[1] not in have)
        if not cand:
            break
        a, b = cand[0][1]
        merges.append((a, b))
        have.add(a + b)
        nw = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            nw[tuple(out)] = nw.get(tuple(out), 0) + c
        words = nw
    return merges


merges = learn(CORPUS, 120)
order = [b for b in range(256) if chr(b).isprintable() and chr(b) != " "]
order += [b for b in range(256) if b not in order]
enc = {B2U[b]: i for i, b in enumerate(order)}
for i, (a, b) in enumerate(merges):
    enc[a + b] = 256 + i
enc["<|endoftext|>"] = len(enc)
with open("encoder.json", "w", encoding="utf-8") as f:
    json.dump(enc, f, ensure_ascii=False)
with open("vocab.bpe", "w", encoding="utf-8") as f:
    f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))

ranks = data_gym_to_mergeable_bpe_ranks("vocab.bpe", "encoder.json")
tk = Encoding("gpt2-fixture", pat_str=TIKTOKEN_PAT, mergeable_ranks=ranks,
              special_tokens={"<|endoftext|>": len(enc) - 1})
cases = [
    "The quick brown fox jumps over the lazy dog.",
    "they'll meet again at 10:45; it's the fox's jump, we've seen 'em",
    "Thé café — crème brûlée for €12.50!",
    "   Indented\tand  spaced   \n\nlines\n",
    "unseen wordsXYZ and 99 bottles",
    "Ünïcödé 漢字 ελληνικά 123abc",
]
with open("cases.tsv", "w") as f:
    f.write("text_hex\tids\n")
    for c in cases:
        f.write(c.encode().hex() + "\t" + " ".join(map(str, tk.encode_ordinary(c))) + "\n")
