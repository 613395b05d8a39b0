"""Derive `centroids.json` from `centroid_texts.txt` (run once; the result is committed).

python -m memoryhub.clients.e5.derive
"""

from __future__ import annotations

import hashlib
import json

from . import CENTROIDS, MODEL, TEXTS, raw_vectors, read_centroid_texts


def main() -> None:
    texts = read_centroid_texts()
    table = {}
    for side in ("query", "passage"):
        for language, sentences in texts.items():
            table[f"{side}:{language}"] = [
                round(float(v), 7) for v in raw_vectors(sentences, query=side == "query").mean(axis=0)
            ]
    counts = {language: len(sentences) for language, sentences in texts.items()}
    document = {
        "model": MODEL,
        "texts": TEXTS.name,
        "textsSha256": hashlib.sha256(TEXTS.read_bytes()).hexdigest(),
        "counts": counts,
        "centroids": table,
    }
    CENTROIDS.write_text(json.dumps(document) + "\n", encoding="utf-8")
    print(f"wrote {CENTROIDS} from {sum(counts.values())} texts")


if __name__ == "__main__":
    main()
