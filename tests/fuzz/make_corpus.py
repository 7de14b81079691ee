#!/usr/bin/env python3
"""Writes the GGUF fuzz seed corpus (tests/fuzz/corpus/gguf) with the gguf PyPI package's
writer, so the seeds come from an implementation that is not ours. Rerun to regenerate."""
import pathlib

import numpy as np
import gguf

OUT = pathlib.Path(__file__).parent / "corpus" / "gguf"


def write(name, fill):
    path = OUT / name
    w = gguf.GGUFWriter(str(path), arch="llama")
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def all_types(w):
    w.add_uint8("t.u8", 7)
    w.add_int8("t.i8", -7)
    w.add_uint16("t.u16", 700)
    w.add_int16("t.i16", -700)
    w.add_uint32("t.u32", 70000)
    w.add_int32("t.i32", -70000)
    w.add_float32("t.f32", 0.5)
    w.add_uint64("t.u64", 1 << 40)
    w.add_int64("t.i64", -(1 << 40))
    w.add_float64("t.f64", 0.25)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo")
    w.add_array("t.strs", ["a", "bc", ""])
    w.add_array("t.ints", [1, 2, 3])
    w.add_array("t.floats", [0.5, 1.5])
    w.add_tensor("a", np.arange(8, dtype=np.float32))


def quantized(w):
    w.add_uint32("general.alignment", 64)
    w.add_tensor("q8", np.zeros((2, 34), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("q4k", np.ones((1, 144), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    w.add_tensor("h", np.ones((2, 3), dtype=np.float16))


def vocab(w):
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>", "\u2581a", "b"])
    w.add_token_scores([0.0, 0.0, 0.0, -1.0, -2.0])
    w.add_token_types([2, 3, 3, 1, 1])


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    write("all_types.gguf", all_types)
    write("quantized.gguf", quantized)
    write("vocab.gguf", vocab)
    print("wrote", sorted(p.name for p in OUT.iterdir()))
