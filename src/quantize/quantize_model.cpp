#include "quantize/quantize_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/fp16.h"
#include "core/thread_pool.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"
#include "quantize/imatrix_file.h"

namespace geniex::quantize {
namespace {

constexpr uint32_t kQuantVersion = 2;  // GGML_QNT_VERSION
constexpr uint64_t kSlabBytes = 64ull << 20;
constexpr uint64_t kMinTaskElements = 32 * 512;

// The first value of a scalar-or-array integer key (per-layer head counts), or `fallback`.
int first_int(const gguf::GgufFile& f, const std::string& key, int fallback) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) return fallback;
  if (auto u = v->as_uint()) return static_cast<int>(*u);
  if (auto i = v->as_int()) return static_cast<int>(*i);
  if (auto a = v->as_int_array(); a && !a->empty()) return static_cast<int>((*a)[0]);
  return fallback;
}

Result<ModelShape> shape_of(const gguf::GgufFile& f) {
  ModelShape s;
  GENIEX_ASSIGN_OR_RETURN(s.arch, f.get_string("general.architecture"));
  s.n_layer = first_int(f, s.arch + ".block_count", 0);
  s.n_head = first_int(f, s.arch + ".attention.head_count", 0);
  s.n_head_kv = first_int(f, s.arch + ".attention.head_count_kv", s.n_head);
  s.n_expert = first_int(f, s.arch + ".expert_count", 0);
  return s;
}

bool is_float_source(GgmlType t) {
  return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16;
}

void to_f32(GgmlType t, const uint8_t* src, float* dst, size_t n) {
  if (t == GgmlType::kF32) {
    std::memcpy(dst, src, n * sizeof(float));
  } else if (t == GgmlType::kF16) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h = 0;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = fp16_to_fp32(h);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h = 0;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = bf16_to_fp32(h);
    }
  }
}

// Drops the mapped pages of a tensor that has been written (whole pages inside it only), so the
// resident size stays near one tensor instead of growing to the whole input.
void release_pages(std::span<const uint8_t> data) {
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data.data());
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + data.size()) / page * page;
  if (last > first) {
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // NOLINT
  }
}

uint64_t row_bytes(GgmlType t, uint64_t n) {
  const auto& tr = traits(t);
  return n / tr.block_size * tr.type_size;
}

// The output file under a temporary name; removed unless commit() renamed it.
class TempOutput {
 public:
  static Result<std::unique_ptr<TempOutput>> create(const std::string& final_path) {
    auto out = std::unique_ptr<TempOutput>(new TempOutput());
    out->final_ = final_path;
    out->tmp_ = final_path + ".tmp." + std::to_string(::getpid());
    out->f_ = std::fopen(out->tmp_.c_str(), "wb");
    if (out->f_ == nullptr) {
      return io_error("cannot create " + out->tmp_ + ": " + std::strerror(errno));
    }
    return out;
  }
  ~TempOutput() {
    if (f_ != nullptr) std::fclose(f_);
    if (!committed_) std::remove(tmp_.c_str());
  }
  TempOutput(const TempOutput&) = delete;
  TempOutput& operator=(const TempOutput&) = delete;

  Status write(const void* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, f_) != n) {
      return io_error("writing " + tmp_ + ": " + std::strerror(errno));
    }
    written_ += n;
    return {};
  }
  Status pad(uint64_t align) {
    static const uint8_t kZeros[256] = {};
    while (written_ % align != 0) {
      GENIEX_TRY(write(kZeros, std::min<uint64_t>(sizeof(kZeros), align - written_ % align)));
    }
    return {};
  }
  Status commit() {
    const bool flushed = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
    const bool closed = std::fclose(f_) == 0;
    f_ = nullptr;
    if (!flushed || !closed) return io_error("writing " + tmp_ + ": " + std::strerror(errno));
    if (std::rename(tmp_.c_str(), final_.c_str()) != 0) {
      return io_error("cannot rename " + tmp_ + " to " + final_ + ": " + std::strerror(errno));
    }
    committed_ = true;
    return {};
  }
  [[nodiscard]] uint64_t written() const { return written_; }

 private:
  TempOutput() = default;
  std::string final_;
  std::string tmp_;
  std::FILE* f_ = nullptr;
  uint64_t written_ = 0;
  bool committed_ = false;
};

struct Plan {
  const gguf::TensorInfo* src = nullptr;
  TensorDesc desc;
  TensorChoice choice;
  const std::vector<float>* imatrix = nullptr;
};

// Quantizes one tensor slab by slab into `out`, rows spread over the pool.
Status quantize_tensor(const Plan& p, ThreadPool& pool, TempOutput& out,
                       const std::atomic<bool>* cancel) {
  const uint64_t n_per_row = p.desc.ne[0];
  const uint64_t rows_per_expert = p.desc.ne[1];
  const uint64_t n_rows = p.desc.ne[1] * p.desc.ne[2] * p.desc.ne[3];
  const GgmlType src_t = p.src->type;
  const GgmlType dst_t = p.choice.type;
  const uint64_t src_row = row_bytes(src_t, n_per_row);
  const uint64_t dst_row = row_bytes(dst_t, n_per_row);
  const uint64_t rows_per_task = std::max<uint64_t>(1, kMinTaskElements / n_per_row);
  const uint64_t slab_rows = std::max<uint64_t>(
      rows_per_task, kSlabBytes / std::max<uint64_t>(1, dst_row + 4 * n_per_row));
  std::vector<uint8_t> dst(std::min(slab_rows, n_rows) * dst_row);
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()));
  std::mutex err_mu;
  Status first_error;
  std::atomic<bool> failed{false};
  for (uint64_t r0 = 0; r0 < n_rows; r0 += slab_rows) {
    if (cancel != nullptr && cancel->load())
      return Status(StatusCode::kResourceExhausted, "interrupted; nothing written");
    const uint64_t rows = std::min(slab_rows, n_rows - r0);
    const auto n_tasks = static_cast<int64_t>((rows + rows_per_task - 1) / rows_per_task);
    pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
      if (failed.load(std::memory_order_relaxed)) return;
      const uint64_t t0 = static_cast<uint64_t>(task) * rows_per_task;
      const uint64_t tn = std::min(rows_per_task, rows - t0);
      std::vector<float>& buf = scratch[static_cast<size_t>(thread)];
      if (buf.size() < tn * n_per_row) buf.resize(tn * n_per_row);
      const uint8_t* src = p.src->data.data() + (r0 + t0) * src_row;
      to_f32(src_t, src, buf.data(), tn * n_per_row);
      // Rows of one expert share its slice of the importance matrix.
      for (uint64_t r = 0; r < tn;) {
        const uint64_t global = r0 + t0 + r;
        const uint64_t expert = global / rows_per_expert;
        const uint64_t run = std::min(tn - r, rows_per_expert - global % rows_per_expert);
        std::span<const float> im;
        if (p.imatrix != nullptr) {
          im = std::span<const float>(p.imatrix->data() + expert * n_per_row, n_per_row);
        }
        Status st = quant::quantize_rows(
            dst_t, std::span<const float>(buf.data() + r * n_per_row, run * n_per_row),
            std::span<uint8_t>(dst.data() + (t0 + r) * dst_row, run * dst_row), n_per_row, im);
        if (!st.ok()) {
          std::lock_guard<std::mutex> lock(err_mu);
          if (first_error.ok()) first_error = std::move(st);
          failed.store(true);
          return;
        }
        r += run;
      }
    });
    if (failed.load()) return first_error;
    GENIEX_TRY(out.write(dst.data(), rows * dst_row));
  }
  return {};
}

std::vector<gguf::KeyValue> output_metadata(const gguf::GgufFile& in, const FileTypeInfo& ft,
                                            const std::string& imatrix_path, const Imatrix* im) {
  std::vector<gguf::KeyValue> kv;
  for (const auto& e : in.metadata()) {
    if (e.key == "general.quantization_version" || e.key == "general.file_type" ||
        e.key == "split.no" || e.key == "split.count" || e.key == "split.tensors.count") {
      continue;
    }
    kv.push_back(e);
  }
  using gguf::Value;
  using gguf::ValueType;
  kv.push_back({"general.quantization_version", Value::of_uint(ValueType::kUint32, kQuantVersion)});
  kv.push_back(
      {"general.file_type", Value::of_uint(ValueType::kUint32, static_cast<uint32_t>(ft.ftype))});
  if (im != nullptr) {
    // llama-quantize records these as KV overrides, 127 characters at most per string.
    kv.push_back({"quantize.imatrix.file", Value::of_string(imatrix_path.substr(0, 127))});
    if (!im->datasets.empty()) {
      kv.push_back({"quantize.imatrix.dataset", Value::of_string(im->datasets[0].substr(0, 127))});
    }
    kv.push_back(
        {"quantize.imatrix.entries_count", Value::of_uint(ValueType::kUint32, im->entries.size())});
    if (im->chunk_count > 0) {
      kv.push_back({"quantize.imatrix.chunks_count",
                    Value::of_uint(ValueType::kUint32, static_cast<uint64_t>(im->chunk_count))});
    }
  }
  return kv;
}

}  // namespace

Result<QuantizeReport> quantize_model(const std::string& in_path, const std::string& out_path,
                                      const QuantizeOptions& opts) {
  std::error_code ec;
  if (std::filesystem::equivalent(in_path, out_path, ec)) {
    return invalid_argument("input and output are the same file: " + in_path);
  }
  GENIEX_ASSIGN_OR_RETURN(gguf::GgufFile in, gguf::GgufFile::open(in_path));
  GENIEX_ASSIGN_OR_RETURN(const ModelShape shape, shape_of(in));

  std::unique_ptr<Imatrix> imatrix;
  PolicyOptions policy = opts.policy;
  if (!opts.imatrix_path.empty()) {
    GENIEX_ASSIGN_OR_RETURN(Imatrix m, load_imatrix(opts.imatrix_path));
    imatrix = std::make_unique<Imatrix>(std::move(m));
    policy.has_imatrix = true;
  }

  std::vector<TensorDesc> descs;
  for (const auto& t : in.tensors()) {
    descs.push_back({t.name, t.n_dims, t.ne, t.type});
  }
  const std::vector<size_t> order = llama_tensor_order(descs);
  std::vector<TensorDesc> ordered;
  for (size_t i : order) ordered.push_back(descs[i]);
  const std::vector<TensorChoice> choices = choose_types(ordered, shape, opts.file_type, policy);

  QuantizeReport rep;
  std::vector<Plan> plans;
  std::vector<gguf::TensorHeader> headers;
  size_t imatrix_hits = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    Plan p{&in.tensors()[order[k]], ordered[k], choices[k], nullptr};
    const GgmlType from = p.src->type;
    const GgmlType to = p.choice.type;
    if (from != to) {
      if (!is_float_source(from)) {
        return invalid_argument("tensor " + p.desc.name + " is already " +
                                std::string(ggml_type_name(from)) +
                                ": requantizing is not supported (start from an F32/F16/BF16 "
                                "model)");
      }
      if (!quant::can_quantize(to)) {
        return invalid_argument("tensor " + p.desc.name + " cannot be written as " +
                                std::string(ggml_type_name(to)) + " (no quantizer)");
      }
      if (p.desc.ne[0] % traits(to).block_size != 0) {
        return invalid_argument("tensor " + p.desc.name + " has rows of " +
                                std::to_string(p.desc.ne[0]) + " values, which type " +
                                std::string(ggml_type_name(to)) + " (blocks of " +
                                std::to_string(traits(to).block_size) + ") cannot take");
      }
      if (imatrix != nullptr) {
        auto it = imatrix->entries.find(p.desc.name);
        if (it != imatrix->entries.end()) {
          ++imatrix_hits;
          if (it->second.size() == p.desc.ne[0] * p.desc.ne[2]) {
            p.imatrix = &it->second;
          } else if (p.desc.name != "token_embd.weight" &&
                     p.desc.name != "per_layer_token_embd.weight") {
            return invalid_argument("imatrix " + opts.imatrix_path + " does not fit this model: " +
                                    std::to_string(it->second.size()) + " values for " +
                                    p.desc.name + ", which has " +
                                    std::to_string(p.desc.ne[0] * p.desc.ne[2]) + " columns");
          }
        }
      }
      ++rep.n_quantized;
    }
    if (p.choice.fallback) ++rep.n_fallback;
    std::vector<uint64_t> ne(p.desc.ne.begin(), p.desc.ne.begin() + effective_dims(p.desc));
    headers.push_back({p.desc.name, to, std::move(ne)});
    rep.n_elements += p.src->n_elements();
    rep.size_in += p.src->n_bytes;
    plans.push_back(std::move(p));
  }
  if (imatrix != nullptr && rep.n_quantized > 0 && imatrix_hits == 0) {
    return invalid_argument("imatrix " + opts.imatrix_path +
                            " has no entry for any tensor of this model (made for another model?)");
  }

  const std::vector<gguf::KeyValue> kv =
      output_metadata(in, opts.file_type, opts.imatrix_path, imatrix.get());
  uint64_t align = 0;
  GENIEX_ASSIGN_OR_RETURN(std::vector<uint8_t> header,
                          gguf::serialize_header(kv, headers, &align, nullptr));

  const int threads = opts.threads > 0 ? opts.threads : ThreadPool::default_threads();
  GENIEX_ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::create(threads));
  rep.threads = pool->size();
  GENIEX_ASSIGN_OR_RETURN(std::unique_ptr<TempOutput> out, TempOutput::create(out_path));
  GENIEX_TRY(out->write(header.data(), header.size()));
  for (size_t k = 0; k < plans.size(); ++k) {
    const Plan& p = plans[k];
    if (opts.cancel != nullptr && opts.cancel->load()) {
      return Status(StatusCode::kResourceExhausted, "interrupted; nothing written");
    }
    if (opts.on_tensor) opts.on_tensor(k, plans.size(), p.desc.name, p.src->type, p.choice.type);
    const uint64_t before = out->written();
    if (p.src->type == p.choice.type) {
      GENIEX_TRY(out->write(p.src->data.data(), p.src->data.size()));
    } else {
      GENIEX_TRY(quantize_tensor(p, *pool, *out, opts.cancel));
    }
    rep.size_out += out->written() - before;
    GENIEX_TRY(out->pad(align));
    release_pages(p.src->data);
  }
  rep.file_bytes = out->written();
  GENIEX_TRY(out->commit());
  rep.n_tensors = plans.size();
  rep.imatrix_entries = imatrix != nullptr ? imatrix->entries.size() : 0;
  return rep;
}

}  // namespace geniex::quantize
