"""README's everyday commands: `tgc data prepare --vocab N` must not exceed the
vocab_size of any spec compiled in that block (the driver refuses data whose vocab
exceeds the model's). Prints "README: data prepare --vocab N fits SPECS: PASS" or FAIL."""
import json, os, re, sys

root = sys.argv[1]
text = open(os.path.join(root, "README.md")).read()
block = text.split("## Everyday commands", 1)[1].split("```", 2)[1]
vocab = [int(v) for v in re.findall(r"tgc data prepare .*--vocab (\d+)", block)]
specs = sorted(set(re.findall(r"tgc compile (examples/\S+\.json)", block)))
assert len(vocab) == 1 and specs, (vocab, specs)
sizes = {s: json.load(open(os.path.join(root, s)))["model"]["vocab_size"] for s in specs}
bad = {s: v for s, v in sizes.items() if v < vocab[0]}
print("README: data prepare --vocab %d fits %s: %s"
      % (vocab[0], ", ".join("%s (%d)" % (s, v) for s, v in sizes.items()),
         "FAIL: smaller vocab in %s" % bad if bad else "PASS"))
sys.exit(1 if bad else 0)
