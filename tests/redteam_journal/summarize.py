"""journalred: results.ndjson -> a per-case table (verdict counts)."""
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = collections.defaultdict(list)
for r in rows: by[r["case"]].append(r)
for c in sorted(by, key=lambda x: (len(x), x)):
    v = collections.Counter(r["verdict"] for r in by[c])
    print(f"| {c} | {len(by[c])} | " + ", ".join(f"{k} {n}" for k, n in sorted(v.items())) + " |")
