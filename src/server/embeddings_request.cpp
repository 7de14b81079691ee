#include "server/embeddings_request.h"

#include <bit>
#include <cstring>
#include <limits>

namespace geniex::server {
namespace {

bool is_token(const Json& v) {
  return v.is_number_integer() && v.get<int64_t>() >= 0 &&
         v.get<int64_t>() <= std::numeric_limits<int32_t>::max();
}

ApiResult<std::vector<int32_t>> token_array(const Json& a, const std::string& param) {
  if (a.empty()) return invalid_value(param, "a token array must not be empty.");
  std::vector<int32_t> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!is_token(a[i])) {
      return invalid_type(param + "[" + std::to_string(i) + "]", "a non-negative integer token id");
    }
    out.push_back(a[i].get<int32_t>());
  }
  return out;
}

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

ApiResult<EmbeddingsRequest> parse_embeddings_request(std::string_view body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return malformed_body("invalid JSON");
  if (!j.is_object()) return malformed_body("the top-level value is not an object");
  EmbeddingsRequest r;
  if (auto it = j.find("model"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return invalid_type("model", "a string");
    r.model = it->get<std::string>();
  }
  auto in = j.find("input");
  if (in == j.end() || in->is_null()) return missing_param("input");
  const std::string expected =
      "a string, an array of strings, an array of token ids or an array of token arrays";
  if (in->is_string()) {
    if (in->get_ref<const std::string&>().empty())
      return invalid_value("input", "the input must not be an empty string.");
    r.texts.push_back(in->get<std::string>());
  } else if (in->is_array()) {
    if (in->empty()) return invalid_value("input", "the input list must not be empty.");
    if (in->size() > kMaxEmbeddingInputs)
      return invalid_value("input", "at most " + std::to_string(kMaxEmbeddingInputs) +
                                        " inputs per request, got " + std::to_string(in->size()) +
                                        ".");
    const Json& first = (*in)[0];
    if (first.is_number()) {
      auto t = token_array(*in, "input");
      if (auto* e = std::get_if<ApiError>(&t)) return *e;
      r.token_inputs.push_back(std::move(std::get<std::vector<int32_t>>(t)));
    } else if (first.is_string()) {
      for (size_t i = 0; i < in->size(); ++i) {
        const Json& s = (*in)[i];
        const std::string p = "input[" + std::to_string(i) + "]";
        if (!s.is_string()) return invalid_type(p, "a string (the list holds strings)");
        if (s.get_ref<const std::string&>().empty())
          return invalid_value(p, "an input must not be an empty string.");
        r.texts.push_back(s.get<std::string>());
      }
    } else if (first.is_array()) {
      for (size_t i = 0; i < in->size(); ++i) {
        const std::string p = "input[" + std::to_string(i) + "]";
        if (!(*in)[i].is_array()) return invalid_type(p, "an array of token ids");
        auto t = token_array((*in)[i], p);
        if (auto* e = std::get_if<ApiError>(&t)) return *e;
        r.token_inputs.push_back(std::move(std::get<std::vector<int32_t>>(t)));
      }
    } else {
      return invalid_type("input[0]", expected);
    }
  } else {
    return invalid_type("input", expected);
  }
  if (auto it = j.find("encoding_format"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return invalid_type("encoding_format", "\"float\" or \"base64\"");
    const auto& f = it->get_ref<const std::string&>();
    if (f == "base64") {
      r.base64 = true;
    } else if (f != "float") {
      return invalid_value("encoding_format",
                           "'" + f + "' is not one of \"float\" and \"base64\".");
    }
  }
  if (auto it = j.find("dimensions"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer()) return invalid_type("dimensions", "an integer");
    const auto d = it->get<int64_t>();
    if (d < 1 || d > std::numeric_limits<int32_t>::max())
      return invalid_value("dimensions",
                           "dimensions must be at least 1, got " + std::to_string(d) + ".");
    r.dimensions = static_cast<int32_t>(d);
  }
  if (auto it = j.find("user"); it != j.end() && !it->is_null() && !it->is_string()) {
    return invalid_type("user", "a string");
  }
  return r;
}

std::string base64_floats(const std::vector<float>& v) {
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    auto u = std::bit_cast<uint32_t>(v[i]);
    for (size_t b = 0; b < 4; ++b) {
      bytes[i * 4 + b] = static_cast<char>((u >> (8 * b)) & 0xFFu);
    }
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int s = 18; s >= 0; s -= 6) out += kB64[(n >> s) & 63u];
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t n = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0u);
    out += kB64[(n >> 18) & 63u];
    out += kB64[(n >> 12) & 63u];
    out += rest == 2 ? kB64[(n >> 6) & 63u] : '=';
    out += '=';
  }
  return out;
}

Json embeddings_response(const Embeddings& e, const std::string& model, bool base64) {
  Json data = Json::array();
  for (size_t i = 0; i < e.vectors.size(); ++i) {
    Json item;
    item["object"] = "embedding";
    item["index"] = i;
    if (base64) {
      item["embedding"] = base64_floats(e.vectors[i]);
    } else {
      item["embedding"] = e.vectors[i];
    }
    data.push_back(std::move(item));
  }
  Json root;
  root["object"] = "list";
  root["data"] = std::move(data);
  root["model"] = model;
  root["usage"] = {{"prompt_tokens", e.prompt_tokens}, {"total_tokens", e.prompt_tokens}};
  return root;
}

}  // namespace geniex::server
