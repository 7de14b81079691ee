#!/usr/bin/env python3
"""Writes the SentencePiece-model fuzz seeds (tests/fuzz/corpus/spm_model) with the
`sentencepiece` package's protobuf classes, so the seeds come from an implementation that is not
ours. Rerun to regenerate (needs sentencepiece + protobuf, e.g. the goldens venv)."""
import pathlib

from sentencepiece import sentencepiece_model_pb2 as pb

OUT = pathlib.Path(__file__).parent / "corpus" / "spm_model"

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    m = pb.ModelProto()
    for text, score, typ in [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("<0x41>", 0.0, 6), ("\u2581a", -1.5, 1),
                             ("<user>", 0.0, 4), ("<unused0>", 0.0, 5)]:
        p = m.pieces.add()
        p.piece, p.score, p.type = text, score, typ
    m.trainer_spec.model_type = pb.TrainerSpec.BPE
    m.trainer_spec.vocab_size = 6
    m.normalizer_spec.add_dummy_prefix = False
    (OUT / "small.model").write_bytes(m.SerializeToString())
    print("wrote", sorted(p.name for p in OUT.iterdir()))
