"""GPT-2's byte-level BPE tokenizer (openai/gpt-2 encoder.py, Hugging Face's GPT2Tokenizer) in plain
Python: vocab.json + merges.txt, the pre-tokenization pattern
  's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
written out by hand with unicodedata (Debian's python3 lacks the `regex` module), bytes_to_unicode,
and merges by rank. Independent of lazytrain's C++ (src/data/gpt2_tokenizer.cpp)."""
import json
import unicodedata


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _cls(ch):
    if ch.isspace():
        return "s"
    cat = unicodedata.category(ch)
    return "l" if cat.startswith("L") else "n" if cat.startswith("N") else "o"


def pre_tokenize(text):
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] == "'" and i + 1 < n:
            if text[i + 1:i + 3] in ("re", "ve", "ll"):
                out.append(text[i:i + 3]); i += 3; continue
            if text[i + 1] in "stmd":
                out.append(text[i:i + 2]); i += 2; continue
        k = i + 1 if text[i] == " " else i
        if k < n and _cls(text[k]) != "s":
            c, end = _cls(text[k]), k
            while end < n and _cls(text[end]) == c:
                end += 1
            out.append(text[i:end]); i = end; continue
        end = i
        while end < n and _cls(text[end]) == "s":
            end += 1
        if end < n and end - 1 > i:
            end -= 1
        out.append(text[i:end]); i = end
    return out


class GPT2Tokenizer:
    def __init__(self, directory):
        with open(f"{directory}/vocab.json", encoding="utf-8") as f:
            self.encoder = json.load(f)
        with open(f"{directory}/merges.txt", encoding="utf-8") as f:
            merges = [tuple(line.split()) for line in f.read().split("\n")[1:] if line]
        self.ranks = {m: r for r, m in enumerate(merges)}
        self.byte_encoder = bytes_to_unicode()
        self.cache = {}
        self.eos_token_id = self.encoder["<|endoftext|>"]

    def __len__(self):
        return len(self.encoder)

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token)
        while len(word) > 1:
            pairs = [(self.ranks.get((a, b), float("inf")), i) for i, (a, b) in enumerate(zip(word, word[1:]))]
            rank, _ = min(pairs)
            if rank == float("inf"):
                break
            first, second = next((a, b) for a, b in zip(word, word[1:]) if self.ranks.get((a, b)) == rank)
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == first and word[i + 1] == second:
                    merged.append(first + second); i += 2
                else:
                    merged.append(word[i]); i += 1
            word = merged
        ids = [self.encoder[t] for t in word]
        self.cache[token] = ids
        return ids

    def encode(self, text):
        ids = []
        for piece in pre_tokenize(text):
            ids.extend(self.bpe("".join(self.byte_encoder[b] for b in piece.encode("utf-8"))))
        return ids
