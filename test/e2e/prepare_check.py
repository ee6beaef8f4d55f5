"""Checks of `tgc data prepare` (test/e2e/prepare-*.test; docs/prepare.md).

  prepare_check.py corpus DIR [--parquet]
      Writes the same 40 documents three ways: DIR/txt/doc-NNN.txt (one per file),
      DIR/docs.jsonl (field "body", plus an "id"), and with --parquet DIR/docs.parquet
      (column "body", row groups of 7 rows, pyarrow). Mixed text: ASCII prose, code, runs
      of spaces and tabs, digits, accents, CJK and emoji.
  prepare_check.py train-bpe DIR OUT.json
      Trains a tiny GPT-2-style byte-level BPE (vocab 400, special token <|endoftext|>)
      with the `tokenizers` package on DIR/txt and saves it as OUT.json.
  prepare_check.py check-hf DATA TOKENIZER.json DIR
      Every split of DATA must be, token for token, what transformers'
      PreTrainedTokenizerFast(tokenizer_file=TOKENIZER.json) gives for the split's
      documents joined with <|endoftext|> after each (the text prepare encoded); the
      documents (found through DATA/<split>-docs.npy) must be the corpus's, each once.
  prepare_check.py same DATA1 DATA2 [--files]
      The two data directories hold the same ids and document starts in every split (the
      shards concatenated); with --files also byte-identical .npy files and meta.json.
  prepare_check.py shards DATA
      Prints each split's shard files and token counts from meta.json and checks them
      against the files (sizes, dtype) and the document starts (int64, increasing, below
      the split's tokens, each document ending with the EOS).
  prepare_check.py inflate IN.json OUT.json N
      IN with N added tokens "<extra_K>" (ids after the vocabulary): a vocabulary above
      65,536 (Llama 3 has 128,256) whose ids of ordinary text are IN's.
  prepare_check.py corrupt-parquet SRC OUT
      OUT = SRC with the bytes of the second row group's column chunk overwritten.
  prepare_check.py containers OUT
      The 40 documents of `corpus` (in the same order, so prepare gives the same ids)
      in the other containers prepare reads back: OUT/a-NN.txt.gz (documents 0-9),
      OUT/b-NN.md with a BOM and CRLF line ends (10-19), OUT/c.jsonl.gz with a BOM, CRLF
      inside the values and blank lines (20-29, spooled), OUT/d.jsonl with a BOM and CRLF
      line ends (30-39). Prints the bytes of c.jsonl.gz's text (what prepare spools) and
      the --max-bytes that cuts document 34 in its middle.
  prepare_check.py digest DATA
      The SHA-256 of DATA's .npy files (sorted by name, concatenated).
  prepare_check.py big DIR MB
      About MB MB of documents of words w0..w4999 (one to two thousand words each, lines of
      up to 20 words): half as DIR/big.jsonl (field "text"), a quarter as DIR/big.jsonl.gz,
      a quarter as DIR/txt/NNNN.txt; and DIR/wordlevel.json, a WordLevel tokenizer of those
      words (whitespace split, <|endoftext|>) that encodes them quickly.
  prepare_check.py check-big DATA DIR LOG MAX_GROWTH_MIB
      Every document of `big DIR` is in DATA exactly once, its ids decoding to its words;
      and LOG's "memory:" line (prepare's stderr) says tgc's peak RSS grew by less than
      MAX_GROWTH_MIB MiB over its RSS before reading the corpus, which must be larger than
      twice that: the corpus's text is not held.
  prepare_check.py autotokenizer HFDIR DATA DIR
      AutoTokenizer.from_pretrained(HFDIR) (what `tgc export --data` wrote) must encode each
      corpus document as DATA's tokenizer did (ids + EOS) — checked on the documents of
      DATA's val split — and decode them back.
"""
import json
import os
import random
import sys

import numpy as np


def fail(msg):
    print("prepare_check.py: FAIL: " + msg)
    sys.exit(1)


WORDS = ("the model reads tokens from shards while the driver maps each file into memory "
         "and samples windows at random offsets data prepare writes them atomically").split()
EXTRA = ["café", "naïve", "Übergröße", "中文文本", "日本語", "😀", "🚀 launch", "x = f(y) + 1;",
         "\tindented", "    four spaces", "3.14159", "2026-11-28", "a\u00a0b", "—dash—"]


def make_docs():
    rng = random.Random(1234)
    docs = []
    for i in range(40):
        parts = []
        for _ in range(rng.randint(20, 400)):
            r = rng.random()
            if r < 0.08:
                parts.append(rng.choice(EXTRA))
            elif r < 0.12:
                parts.append("\n")
            elif r < 0.14:
                parts.append("\n\n")
            else:
                parts.append(rng.choice(WORDS))
        text = "Document %d.\n" % i + " ".join(parts)
        if i % 3 == 0:
            text += "\n"
        docs.append(text)
    return docs


def cmd_corpus(d, parquet):
    docs = make_docs()
    os.makedirs(os.path.join(d, "txt"), exist_ok=True)
    for i, t in enumerate(docs):
        with open(os.path.join(d, "txt", "doc-%03d.txt" % i), "w", encoding="utf-8",
                  newline="") as f:
            f.write(t)
    with open(os.path.join(d, "docs.jsonl"), "w", encoding="utf-8") as f:
        for i, t in enumerate(docs):
            f.write(json.dumps({"id": i, "body": t}) + "\n")
    if parquet:
        import pyarrow as pa
        import pyarrow.parquet as pq
        table = pa.table({"id": list(range(len(docs))), "body": docs})
        pq.write_table(table, os.path.join(d, "docs.parquet"), row_group_size=7)
    print("corpus: %d documents" % len(docs))


def cmd_train_bpe(d, out):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    files = sorted(os.path.join(d, "txt", f) for f in os.listdir(os.path.join(d, "txt")))
    tok.train(files, trainer)
    tok.save(out)
    print("trained: vocab %d" % tok.get_vocab_size(with_added_tokens=True))


def load_split(data, split):
    meta = json.load(open(os.path.join(data, "meta.json")))
    s = meta["splits"][split]
    parts = [np.load(os.path.join(data, sh["file"])) for sh in s["shards"]]
    ids = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
    starts = np.load(os.path.join(data, s["document_starts"]))
    return meta, ids.astype(np.int64), starts


def documents(ids, starts):
    ends = list(starts[1:]) + [len(ids)]
    return [ids[a:b] for a, b in zip(starts, ends)]


def cmd_check_hf(data, tokfile, d):
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast
    fast = PreTrainedTokenizerFast(tokenizer_file=tokfile)
    raw = Tokenizer.from_file(tokfile)
    corpus = {t: i for i, t in enumerate(make_docs())}
    seen = set()
    total = 0
    for split in ("train", "val", "test"):
        meta, ids, starts = load_split(data, split)
        eos = meta["eos_id"]
        if eos != fast.convert_tokens_to_ids("<|endoftext|>"):
            fail("eos_id %s is not <|endoftext|>" % eos)
        texts = []
        for k, doc in enumerate(documents(ids, starts)):
            if len(doc) == 0 or doc[-1] != eos:
                fail("%s: document %d does not end with the EOS" % (split, k))
            text = raw.decode(doc[:-1].tolist(), skip_special_tokens=False)
            if text not in corpus:
                fail("%s: document %d decodes to a text that is not in the corpus: %r" %
                     (split, k, text[:80]))
            if corpus[text] in seen:
                fail("%s: document %d (corpus %d) appears twice" % (split, k, corpus[text]))
            seen.add(corpus[text])
            texts.append(text)
        # The split's text as prepare encoded it: each document, then <|endoftext|>.
        joined = "".join(t + "<|endoftext|>" for t in texts)
        want = fast(joined, add_special_tokens=False)["input_ids"]
        if want != ids.tolist():
            first = next((i for i, (a, b) in enumerate(zip(want, ids.tolist())) if a != b),
                         min(len(want), len(ids)))
            fail("%s: ids differ from PreTrainedTokenizerFast at token %d (%d vs %d tokens)" %
                 (split, first, len(ids), len(want)))
        # ... and document by document.
        per_doc = []
        for t in texts:
            per_doc += fast(t, add_special_tokens=False)["input_ids"] + [eos]
        if per_doc != ids.tolist():
            fail("%s: ids differ from PreTrainedTokenizerFast document by document" % split)
        total += len(ids)
        print("%s: %d documents, %d tokens: same as PreTrainedTokenizerFast" %
              (split, len(texts), len(ids)))
    if len(seen) != len(corpus):
        fail("%d of %d corpus documents found in the splits" % (len(seen), len(corpus)))
    print("check-hf: PASS (%d tokens)" % total)


def cmd_same(a, b, files):
    for split in ("train", "val", "test"):
        _, ia, sa = load_split(a, split)
        _, ib, sb = load_split(b, split)
        if not np.array_equal(ia, ib):
            fail("%s: ids differ (%d vs %d tokens)" % (split, len(ia), len(ib)))
        if not np.array_equal(sa, sb):
            fail("%s: document starts differ" % split)
    if files:
        names = sorted(f for f in os.listdir(a) if f.endswith(".npy") or f == "meta.json")
        if names != sorted(f for f in os.listdir(b) if f.endswith(".npy") or f == "meta.json"):
            fail("different files: %s vs %s" % (names, sorted(os.listdir(b))))
        for f in names:
            if open(os.path.join(a, f), "rb").read() != open(os.path.join(b, f), "rb").read():
                fail("%s differs" % f)
    print("same: PASS")


def cmd_shards(data):
    meta = json.load(open(os.path.join(data, "meta.json")))
    if meta.get("format") != "tgc-tokens" or meta.get("format_version") != 2:
        fail("format %r version %r" % (meta.get("format"), meta.get("format_version")))
    want_dtype = np.uint16 if meta["vocab_size"] <= 65536 else np.uint32
    if meta["dtype"] != np.dtype(want_dtype).name:
        fail("dtype %s for vocab_size %d" % (meta["dtype"], meta["vocab_size"]))
    for split in ("train", "val", "test"):
        s = meta["splits"][split]
        names = []
        total = 0
        for sh in s["shards"]:
            a = np.load(os.path.join(data, sh["file"]), mmap_mode="r")
            if a.dtype != want_dtype or a.shape != (sh["tokens"],):
                fail("%s: dtype %s shape %s, meta says %s tokens" %
                     (sh["file"], a.dtype, a.shape, sh["tokens"]))
            if int(a.max()) >= meta["vocab_size"]:
                fail("%s: id %d >= vocab_size" % (sh["file"], int(a.max())))
            total += sh["tokens"]
            names.append("%s:%d" % (sh["file"], sh["tokens"]))
        if total != s["tokens"] or total != meta["tokens"][split]:
            fail("%s: shards hold %d tokens, meta says %d" % (split, total, s["tokens"]))
        _, ids, starts = load_split(data, split)
        if starts.dtype != np.int64 or len(starts) != s["documents"]:
            fail("%s: %s document starts (%s), meta says %d documents" %
                 (split, len(starts), starts.dtype, s["documents"]))
        if starts[0] != 0 or np.any(np.diff(starts) <= 0) or starts[-1] >= total:
            fail("%s: document starts not increasing from 0 below %d" % (split, total))
        ends = np.append(starts[1:], total) - 1
        if np.any(ids[ends] != meta["eos_id"]):
            fail("%s: a document does not end with the EOS" % split)
        print("%s: %d tokens, %d documents: %s" % (split, total, len(starts), " ".join(names)))


def cmd_inflate(src, out, n):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(src)
    tok.add_tokens(["<extra_%d>" % k for k in range(n)])
    tok.save(out)
    print("inflated: vocab %d" % tok.get_vocab_size(with_added_tokens=True))


def cmd_corrupt_parquet(src, out):
    import pyarrow.parquet as pq
    md = pq.ParquetFile(src).metadata
    c = md.row_group(1).column(1)
    start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
    data = bytearray(open(src, "rb").read())
    for k in range(start, start + c.total_compressed_size):
        data[k] = 0xFF
    open(out, "wb").write(bytes(data))
    print("corrupted %d bytes from offset %d" % (c.total_compressed_size, start))


def cmd_containers(out):
    import gzip
    docs = make_docs()
    os.makedirs(out, exist_ok=True)
    for i in range(0, 10):
        with gzip.open(os.path.join(out, "a-%02d.txt.gz" % i), "wb") as f:
            f.write(docs[i].encode())
    for i in range(10, 20):
        with open(os.path.join(out, "b-%02d.md" % i), "wb") as f:
            f.write(b"\xef\xbb\xbf" + docs[i].replace("\n", "\r\n").encode())
    with gzip.open(os.path.join(out, "c.jsonl.gz"), "wb") as f:
        f.write(b"\xef\xbb\xbf")
        for i in range(20, 30):
            f.write((json.dumps({"text": docs[i].replace("\n", "\r\n")}) + "\n\n").encode())
    with open(os.path.join(out, "d.jsonl"), "wb") as f:
        f.write(b"\xef\xbb\xbf")
        for i in range(30, 40):
            f.write((json.dumps({"n": i, "text": docs[i]}, ensure_ascii=False) + "\r\n").encode())
    size = [len(t.encode()) for t in docs]
    print("containers: spooled %d bytes" % sum(size[20:30]))
    print("containers: --max-bytes %d" % (sum(size[:34]) + size[34] // 2))


def cmd_digest(data):
    import hashlib
    h = hashlib.sha256()
    for f in sorted(f for f in os.listdir(data) if f.endswith(".npy")):
        h.update(open(os.path.join(data, f), "rb").read())
    print("digest: %s" % h.hexdigest())


def big_docs(mb):
    rng = random.Random(24)
    words = ["w%d" % k for k in range(5000)]
    lines = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 20))) for _ in range(4000)]
    docs, total = [], 0
    while total < mb * 1000000:
        n = rng.randint(60, 150)
        text = "\n".join(lines[rng.randrange(len(lines))] for _ in range(n)) + "\n"
        docs.append(text)
        total += len(text)
    return words, docs


def cmd_big(d, mb):
    import gzip
    from tokenizers import Tokenizer, models, pre_tokenizers
    words, docs = big_docs(mb)
    os.makedirs(os.path.join(d, "txt"), exist_ok=True)
    q = len(docs) // 4
    with open(os.path.join(d, "big.jsonl"), "w") as f:
        for t in docs[:2 * q]:
            f.write(json.dumps({"text": t}) + "\n")
    with gzip.open(os.path.join(d, "big.jsonl.gz"), "wt", compresslevel=1) as f:
        for t in docs[2 * q:3 * q]:
            f.write(json.dumps({"text": t}) + "\n")
    # A text file is one document.
    for k, t in enumerate(docs[3 * q:]):
        with open(os.path.join(d, "txt", "%05d.txt" % k), "w") as f:
            f.write(t)
    vocab = {"<unk>": 0, "<|endoftext|>": 1}
    for w in words:
        vocab[w] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens(["<|endoftext|>"])
    tok.save(os.path.join(d, "wordlevel.json"))
    print("big: %d documents, %.1f MB" % (len(docs), sum(map(len, docs)) / 1e6))


def cmd_check_big(data, d, log, max_growth):
    import gzip
    import re
    from collections import Counter
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(os.path.join(d, "wordlevel.json"))
    # The generator's documents, as the words the WordLevel tokenizer gives back.
    want = Counter()
    for line in open(os.path.join(d, "big.jsonl")):
        want[" ".join(json.loads(line)["text"].split())] += 1
    for line in gzip.open(os.path.join(d, "big.jsonl.gz"), "rt"):
        want[" ".join(json.loads(line)["text"].split())] += 1
    for f in os.listdir(os.path.join(d, "txt")):
        want[" ".join(open(os.path.join(d, "txt", f)).read().split())] += 1
    got = Counter()
    total_bytes = 0
    for split in ("train", "val", "test"):
        meta, ids, starts = load_split(data, split)
        total_bytes += meta["bytes"][split]
        docs = [doc[:-1].tolist() for doc in documents(ids, starts)]
        for text in tok.decode_batch(docs, skip_special_tokens=False):
            got[text] += 1
    if got != want:
        fail("the documents in %s are not the corpus's: %d documents vs %d, %d differ" %
             (data, sum(got.values()), sum(want.values()), sum(((got - want) + (want - got)).values())))
    print("check-big: %d documents, each once, ids decode to their words" % sum(got.values()))
    m = re.search(r"memory: tgc's peak RSS ([0-9.]+) MiB \(([0-9.]+) MiB before reading", open(log).read())
    if not m:
        fail("%s: no 'memory:' line" % log)
    peak, before = float(m.group(1)), float(m.group(2))
    growth = peak - before
    corpus_mib = total_bytes / 2**20
    if corpus_mib <= 2 * max_growth:
        fail("the corpus (%.1f MiB) is too small for the check (growth bound %d MiB)" %
             (corpus_mib, max_growth))
    if growth >= max_growth:
        fail("tgc's peak RSS grew by %.1f MiB (%.1f -> %.1f) over a %.1f MiB corpus: not below %d MiB" %
             (growth, before, peak, corpus_mib, max_growth))
    print("check-big: tgc's peak RSS grew by less than %d MiB over a corpus of more than %d MiB: PASS" %
          (max_growth, 2 * max_growth))


def cmd_autotokenizer(hfdir, data, d):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(hfdir)
    meta = json.load(open(os.path.join(data, "meta.json")))
    eos = meta["eos_id"]
    if tok.eos_token_id != eos:
        fail("AutoTokenizer's eos_token_id %s, meta.json's eos_id %s" % (tok.eos_token_id, eos))
    config = json.load(open(os.path.join(hfdir, "config.json")))
    if config.get("eos_token_id") != eos:
        fail("config.json eos_token_id %s, meta.json's %s" % (config.get("eos_token_id"), eos))
    corpus = make_docs()
    _, ids, starts = load_split(data, "val")
    n = 0
    for doc in documents(ids, starts):
        got = None
        # The document: the corpus text whose encoding is this one.
        for t in corpus:
            enc = tok(t, add_special_tokens=False)["input_ids"]
            if enc + [eos] == doc.tolist():
                got = t
                break
        if got is None:
            fail("%s: val document %d: no corpus text encodes to its ids" % (type(tok).__name__, n))
        if tok.decode(doc[:-1].tolist()) != got:
            fail("decode does not give the document back: %r" % tok.decode(doc[:-1].tolist())[:80])
        n += 1
    print("autotokenizer: %s, %d val documents encode and decode as prepare's: PASS" %
          (type(tok).__name__, n))


def main(argv):
    cmd = argv[1]
    if cmd == "corpus":
        cmd_corpus(argv[2], "--parquet" in argv)
    elif cmd == "train-bpe":
        cmd_train_bpe(argv[2], argv[3])
    elif cmd == "check-hf":
        cmd_check_hf(argv[2], argv[3], argv[4])
    elif cmd == "same":
        cmd_same(argv[2], argv[3], "--files" in argv)
    elif cmd == "shards":
        cmd_shards(argv[2])
    elif cmd == "inflate":
        cmd_inflate(argv[2], argv[3], int(argv[4]))
    elif cmd == "corrupt-parquet":
        cmd_corrupt_parquet(argv[2], argv[3])
    elif cmd == "containers":
        cmd_containers(argv[2])
    elif cmd == "digest":
        cmd_digest(argv[2])
    elif cmd == "big":
        cmd_big(argv[2], float(argv[3]))
    elif cmd == "check-big":
        cmd_check_big(argv[2], argv[3], argv[4], int(argv[5]))
    elif cmd == "autotokenizer":
        cmd_autotokenizer(argv[2], argv[3], argv[4])
    else:
        fail("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
