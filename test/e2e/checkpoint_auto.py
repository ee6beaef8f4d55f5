"""checkpoint-auto.test (2): the stderr line of an auto:<memory> resolution and the plan's
JSON. Asserts that the chosen policy's plan + reserve fits the memory, that the JSON's
total is the chosen plan's, and that no other candidate that fits is predicted faster.
Usage: checkpoint-auto.test.py ERR JSON MEMORY RESERVE"""
import json
import re
import sys

err, plan, memory, reserve = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
text = open(err).read()
m = re.search(r"-> (\S+) \(plan (\d+) bytes \+ reserve (\d+) <= (\d+); predicted ([0-9.]+) ms"
              r"[^;]*; (.*)\)\s*$", text, re.M)
assert m, text
chosen, total, res, mem, ms, rest = m[1], int(m[2]), int(m[3]), int(m[4]), float(m[5]), m[6]
assert (res, mem) == (reserve, memory), (res, mem)
assert total + reserve <= memory, (total, reserve, memory)
j = json.load(open(plan))
assert j["total_bytes"] == total, (j["total_bytes"], total)
assert chosen != "none", chosen  # none does not fit 6 GiB
fits = {}
for part in rest.split("; "):
    c = re.match(r"(\S+) [0-9.]+ [GM]iB(?:, ([0-9.]+) ms| \(does not fit\))$", part)
    assert c, part
    if c[2]:
        fits[c[1]] = float(c[2])
assert chosen in fits and fits[chosen] == ms, (chosen, fits)
assert all(ms <= t for t in fits.values()), fits
assert "none" not in fits and len(fits) >= 2, fits
print("auto: PASS", chosen, f"{ms} ms", sorted(fits.items(), key=lambda kv: kv[1]))
