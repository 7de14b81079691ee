#!/usr/bin/env python3
"""Writes the imatrix fuzz seed corpus (tests/fuzz/corpus/imatrix): a GGUF importance matrix
in llama-imatrix's layout, written with the gguf PyPI package's writer, and a legacy .dat file
in llama.cpp's older layout (entry count, then per entry: name length, name, call count, value
count, float sums; then the chunk count and the dataset name). Rerun to regenerate."""
import pathlib
import struct

import numpy as np
import gguf

OUT = pathlib.Path(__file__).parent / "corpus" / "imatrix"


def write_gguf(path):
    w = gguf.GGUFWriter(str(path), arch="imatrix")
    w.add_array("imatrix.datasets", ["ppl_text.txt"])
    w.add_uint32("imatrix.chunk_count", 2)
    w.add_uint32("imatrix.chunk_size", 16)
    w.add_tensor("blk.0.attn_q.weight.in_sum2", np.linspace(0.5, 4.0, 8, dtype=np.float32))
    w.add_tensor("blk.0.attn_q.weight.counts", np.array([32.0], dtype=np.float32))
    # Two experts: sums split into one count each.
    w.add_tensor("blk.0.ffn_up_exps.weight.in_sum2", np.arange(1, 9, dtype=np.float32))
    w.add_tensor("blk.0.ffn_up_exps.weight.counts", np.array([4.0, 0.0], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_legacy(path):
    entries = [("blk.0.attn_k.weight", 3, [1.5, 3.0, 6.0, 0.25]),
               ("output.weight", 0, [1.0, 2.0])]
    b = struct.pack("<i", len(entries))
    for name, ncall, sums in entries:
        raw = name.encode()
        b += struct.pack("<i", len(raw)) + raw + struct.pack("<ii", ncall, len(sums))
        b += struct.pack(f"<{len(sums)}f", *sums)
    ds = b"ppl_text.txt"
    b += struct.pack("<i", 2) + struct.pack("<i", len(ds)) + ds
    path.write_bytes(b)


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    write_gguf(OUT / "experts.gguf")
    write_legacy(OUT / "legacy.dat")
