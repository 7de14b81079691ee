// Binder: looks a model's tensors up by GGUF name, checks their shapes, and remembers every
// missing name and every shape problem so that one error reports all of them (text models and
// the vision encoder of an mmproj file).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"
#include "gguf/gguf_reader.h"

namespace geniex::models {

/// Maximum number of names listed in a missing-tensor or wrong-shape error.
inline constexpr size_t kMaxListedTensors = 10;

namespace detail {
inline std::string shape_string(const uint64_t* ne, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

}  // namespace detail

/// Looks tensors up, remembering every missing name and every shape problem so that one
/// error can report all of them.
class Binder {
 public:
  explicit Binder(const gguf::GgufFile& file) : file_(file) {}

  /// The tensor `name` with shape `ne` (trailing 1s are ignored); nullptr when absent.
  const gguf::TensorInfo* bind(const std::string& name, std::initializer_list<uint64_t> ne,
                               bool required = true) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) {
      if (required) missing_.push_back(name);
      return nullptr;
    }
    std::array<uint64_t, gguf::kMaxDims> want{1, 1, 1, 1};
    size_t i = 0;
    for (const uint64_t d : ne) want[i++] = d;
    if (want != t->ne) {
      problems_.push_back(name + ": expected shape " +
                          detail::shape_string(want.data(), ne.size()) + ", found " +
                          detail::shape_string(t->ne.data(), std::max<size_t>(t->n_dims, 1)));
    } else if (ne.size() == 1 && t->type != GgmlType::kF32) {
      problems_.push_back(name + ": expected type F32, found " +
                          std::string(ggml_type_name(t->type)));
    }
    bound_.insert(t);
    return t;
  }

  Status status() const {
    if (!missing_.empty())
      return not_found("models: " + file_.name() + ": " + std::to_string(missing_.size()) +
                       " required tensor(s) missing: " + list(missing_));
    if (!problems_.empty())
      return invalid_argument("models: " + file_.name() + ": " + std::to_string(problems_.size()) +
                              " tensor(s) with a wrong shape or type: " + list(problems_));
    return {};
  }

  [[nodiscard]] size_t n_bound() const { return bound_.size(); }
  /// Records a problem found by the caller (reported with the shape problems).
  void problem(std::string what) { problems_.push_back(std::move(what)); }

 private:
  static std::string list(const std::vector<std::string>& items) {
    std::string s;
    for (size_t i = 0; i < items.size() && i < kMaxListedTensors; ++i) {
      if (i) s += "; ";
      s += items[i];
    }
    if (items.size() > kMaxListedTensors)
      s += " (and " + std::to_string(items.size() - kMaxListedTensors) + " more)";
    return s;
  }

  const gguf::GgufFile& file_;
  std::vector<std::string> missing_;
  std::vector<std::string> problems_;
  std::set<const gguf::TensorInfo*> bound_;
};

}  // namespace geniex::models
