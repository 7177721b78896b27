#!/usr/bin/env -S /usr/bin/python3
"""BERT uncased tokenization (HF BertTokenizer: BasicTokenizer + WordpieceTokenizer) in plain Python.

BasicTokenizer: clean text (drop NUL/U+FFFD/control chars, whitespace -> ' '), put spaces around
CJK ideographs, NFC-normalise, split on whitespace, lower-case + strip accents (NFD, drop Mn)
(special tokens like [MASK] are kept as they are), split on punctuation.
WordPiece: greedy longest-match-first against the vocab, continuation pieces prefixed "##",
words longer than 100 chars or with no full match -> [UNK].

Self-check: /usr/bin/python3 tools/torch_reference/wordpiece.py [vocab.txt] [golden.json]
(compares with ../shared/data/tokenizer-golden/bert-base-uncased_llamacpp_golden.json).
"""
import json
import sys
import unicodedata

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def load_vocab(path):
    """vocab.txt: one token per line, id = line number."""
    with open(path, encoding="utf-8") as f:
        return {line.rstrip("\n"): i for i, line in enumerate(f)}


def _is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punctuation(ch):
    cp = ord(ch)
    # ASCII non-letter/number symbols count as punctuation ($, ^, `, ...), as in BERT.
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_chinese_char(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokenize(text, do_lower_case=True, never_split=SPECIAL):
    # clean text
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        out.append(" " if _is_whitespace(ch) else ch)
    # spaces around CJK ideographs
    text = "".join(f" {ch} " if _is_chinese_char(ord(ch)) else ch for ch in out)
    text = unicodedata.normalize("NFC", text)
    tokens = []
    for tok in text.split():
        if tok in never_split:
            tokens.append(tok)
            continue
        if do_lower_case:
            tok = tok.lower()
            tok = "".join(c for c in unicodedata.normalize("NFD", tok) if unicodedata.category(c) != "Mn")
        # split on punctuation: each punctuation char becomes its own token
        cur = []
        for ch in tok:
            if _is_punctuation(ch):
                if cur:
                    tokens.append("".join(cur))
                    cur = []
                tokens.append(ch)
            else:
                cur.append(ch)
        if cur:
            tokens.append("".join(cur))
    return tokens


def wordpiece(word, vocab, unk="[UNK]", max_chars=100):
    if len(word) > max_chars:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:  # longest match first
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in vocab:
                break
            end -= 1
        if end == start:  # no piece matches: the whole word is unknown
            return [unk]
        pieces.append(sub)
        start = end
    return pieces


class BertTokenizer:
    def __init__(self, vocab_file, do_lower_case=True):
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {i: t for t, i in self.vocab.items()}
        self.do_lower_case = do_lower_case
        self.pad_token_id, self.unk_token_id, self.cls_token_id, self.sep_token_id, self.mask_token_id = (
            self.vocab[t] for t in SPECIAL)

    def __len__(self):
        return len(self.vocab)

    def tokenize(self, text):
        return [p for w in basic_tokenize(text, self.do_lower_case)
                for p in (wordpiece(w, self.vocab) if w not in SPECIAL else [w])]

    def encode(self, text, add_special_tokens=True):
        ids = [self.vocab.get(t, self.unk_token_id) for t in self.tokenize(text)]
        return [self.cls_token_id] + ids + [self.sep_token_id] if add_special_tokens else ids


if __name__ == "__main__":
    vocab = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/bert-base-uncased/vocab.txt"
    golden = sys.argv[2] if len(sys.argv) > 2 else \
        "../shared/data/tokenizer-golden/bert-base-uncased_llamacpp_golden.json"
    tok = BertTokenizer(vocab)
    cases = json.load(open(golden, encoding="utf-8"))["cases"]
    bad = 0
    for c in cases:
        got = tok.encode(c["text"], add_special_tokens=False)
        if got != c["ids"]:
            bad += 1
            print(f"MISMATCH {c['text']!r}\n  want {c['ids']}\n  got  {got}")
    print(f"{len(cases) - bad}/{len(cases)} golden cases match")
    sys.exit(1 if bad else 0)
