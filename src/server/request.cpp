#include "server/request.h"

#include <cmath>
#include <optional>

namespace geniex::server {
namespace {

/// Reads optional typed fields of one JSON object; the first error sticks and later reads are
/// no-ops, so a parser reads every field and checks `error` once.
class Fields {
 public:
  explicit Fields(const Json& obj) : obj_(obj) {}

  std::optional<ApiError> error;

  /// The field, or nullptr when absent or JSON null (OpenAI treats null as "not given").
  const Json* get(const char* name) const {
    auto it = obj_.find(name);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<double> number(const char* name, double lo, double hi) {
    const Json* v = get(name);
    if (!v || error) return std::nullopt;
    if (!v->is_number()) {
      error = invalid_type(name, "a number");
      return std::nullopt;
    }
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) {
      error = invalid_value(
          name, "expected a value in [" + fmt(lo) + ", " + fmt(hi) + "], got " + v->dump() + ".");
      return std::nullopt;
    }
    return d;
  }

  std::optional<int64_t> integer(const char* name, int64_t lo, int64_t hi) {
    const Json* v = get(name);
    if (!v || error) return std::nullopt;
    if (!v->is_number_integer()) {
      error = invalid_type(name, "an integer");
      return std::nullopt;
    }
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      error = invalid_value(name, "expected a value <= " + std::to_string(hi) + ".");
      return std::nullopt;
    }
    const int64_t i = v->get<int64_t>();
    if (i < lo || i > hi) {
      error = invalid_value(name, "expected a value in [" + std::to_string(lo) + ", " +
                                      std::to_string(hi) + "], got " + std::to_string(i) + ".");
      return std::nullopt;
    }
    return i;
  }

  std::optional<bool> boolean(const char* name) {
    const Json* v = get(name);
    if (!v || error) return std::nullopt;
    if (!v->is_boolean()) {
      error = invalid_type(name, "a boolean");
      return std::nullopt;
    }
    return v->get<bool>();
  }

  std::optional<std::string> string(const char* name) {
    const Json* v = get(name);
    if (!v || error) return std::nullopt;
    if (!v->is_string()) {
      error = invalid_type(name, "a string");
      return std::nullopt;
    }
    return v->get<std::string>();
  }

  void fail(ApiError e) {
    if (!error) error = std::move(e);
  }

 private:
  static std::string fmt(double d) {
    std::string s = std::to_string(d);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  const Json& obj_;
};

ApiResult<Json> parse_object(std::string_view body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return malformed_body("invalid JSON");
  if (!j.is_object()) return malformed_body("the top-level value is not an object");
  return j;
}

/// Fields shared by both endpoints: model, sampling, stops, stream, n, seed, extensions.
void parse_common(Fields& f, CompletionRequest& r, const GenerationConfig& defaults) {
  GenerationConfig& c = r.config;
  // The server's defaults (geniex serve's sampling flags); the request's own fields win. Only
  // the plain settings: callbacks and filters are the handler's.
  c = GenerationConfig();
  c.max_tokens = defaults.max_tokens < 0 ? -1 : defaults.max_tokens;
  c.temperature = defaults.temperature;
  c.top_k = defaults.top_k;
  c.top_p = defaults.top_p;
  c.min_p = defaults.min_p;
  c.repetition_penalty = defaults.repetition_penalty;
  c.presence_penalty = defaults.presence_penalty;
  c.frequency_penalty = defaults.frequency_penalty;
  c.penalty_last_n = defaults.penalty_last_n;
  c.seed = defaults.seed;
  c.stop = defaults.stop;
  c.ignore_eos = defaults.ignore_eos;
  // One model is served: any name (or none) means it, as with llama-server.
  if (auto m = f.string("model")) r.model = *m;
  if (auto t = f.number("temperature", 0.0, 2.0)) c.temperature = static_cast<float>(*t);
  if (auto p = f.number("top_p", 0.0, 1.0)) {
    // Our sampler needs top_p > 0; OpenAI's 0 keeps just the most likely token, as does this.
    c.top_p = *p > 0.0 ? static_cast<float>(*p) : 1e-6f;
  }
  if (auto p = f.number("presence_penalty", -2.0, 2.0)) c.presence_penalty = static_cast<float>(*p);
  if (auto p = f.number("frequency_penalty", -2.0, 2.0)) {
    c.frequency_penalty = static_cast<float>(*p);
  }
  // llama.cpp-style extensions, accepted because many OpenAI-compatible clients send them.
  if (auto k = f.integer("top_k", 0, 1 << 30)) c.top_k = static_cast<int32_t>(*k);
  if (auto p = f.number("min_p", 0.0, 0.999)) c.min_p = static_cast<float>(*p);
  if (auto p = f.number("repetition_penalty", 0.01, 10.0)) {
    c.repetition_penalty = static_cast<float>(*p);
  }
  // llama-server's names for the settings that geniex serve also takes as flags.
  if (auto p = f.number("repeat_penalty", 0.01, 10.0))
    c.repetition_penalty = static_cast<float>(*p);
  if (auto n = f.integer("repeat_last_n", -1, 1 << 30)) c.penalty_last_n = static_cast<int32_t>(*n);
  if (auto b = f.boolean("ignore_eos")) c.ignore_eos = *b;
  if (auto s = f.integer("seed", INT64_MIN, INT64_MAX)) c.seed = static_cast<uint64_t>(*s);
  if (auto n = f.integer("n", 1, 128); n && *n != 1) {
    f.fail(unsupported("n", "only n = 1 is supported (one choice per request); send " +
                                std::to_string(*n) + " requests instead."));
  }
  if (const Json* stop = f.get("stop"); stop && !f.error) {
    c.stop.clear();  // the request's list replaces the server's
    if (stop->is_string()) {
      if (!stop->get<std::string>().empty()) c.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (stop->size() > 4) f.fail(invalid_value("stop", "at most 4 stop sequences."));
      for (size_t i = 0; i < stop->size() && !f.error; ++i) {
        const Json& s = (*stop)[i];
        if (!s.is_string()) {
          f.fail(invalid_type("stop[" + std::to_string(i) + "]", "a string"));
        } else if (!s.get<std::string>().empty()) {
          c.stop.push_back(s.get<std::string>());
        }
      }
    } else {
      f.fail(invalid_type("stop", "a string or an array of strings"));
    }
  }
  if (auto s = f.boolean("stream")) r.stream = *s;
  if (const Json* so = f.get("stream_options"); so && !f.error) {
    if (!so->is_object()) {
      f.fail(invalid_type("stream_options", "an object"));
    } else if (!r.stream) {
      f.fail(invalid_value("stream_options", "only allowed when 'stream' is true."));
    } else {
      auto it = so->find("include_usage");
      if (it != so->end() && !it->is_null()) {
        if (!it->is_boolean()) {
          f.fail(invalid_type("stream_options.include_usage", "a boolean"));
        } else {
          r.include_usage = it->get<bool>();
        }
      }
    }
  }
  if (const Json* lb = f.get("logit_bias"); lb && !f.error) {
    if (!lb->is_object()) {
      f.fail(invalid_type("logit_bias", "an object"));
    } else if (!lb->empty()) {
      f.fail(unsupported("logit_bias", "logit_bias is not supported by this server."));
    }
  }
}

/// One message's content: a string, or an array of {"type": "text", "text": ...} parts
/// (joined with newlines).
std::optional<std::string> message_content(const Json& content, const std::string& where,
                                           Fields& f) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    f.fail(invalid_type(where, "a string or an array of content parts"));
    return std::nullopt;
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!part.is_object()) {
      f.fail(invalid_type(at, "an object"));
      return std::nullopt;
    }
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) {
      f.fail(missing_param(at + ".type"));
      return std::nullopt;
    }
    if (*type != "text") {
      f.fail(unsupported(at + ".type", "content parts of type '" + type->get<std::string>() +
                                           "' are not supported; this model takes text only."));
      return std::nullopt;
    }
    auto t = part.find("text");
    if (t == part.end() || !t->is_string()) {
      f.fail(invalid_type(at + ".text", "a string"));
      return std::nullopt;
    }
    if (!text.empty()) text += '\n';
    text += t->get<std::string>();
  }
  return text;
}

void parse_messages(Fields& f, CompletionRequest& r) {
  const Json* msgs = f.get("messages");
  if (!msgs) return f.fail(missing_param("messages"));
  if (!msgs->is_array()) return f.fail(invalid_type("messages", "an array"));
  if (msgs->empty()) {
    return f.fail(invalid_value("messages", "expected an array with at least 1 message."));
  }
  for (size_t i = 0; i < msgs->size(); ++i) {
    const Json& m = (*msgs)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return f.fail(invalid_type(at, "an object"));
    auto role = m.find("role");
    if (role == m.end() || role->is_null()) return f.fail(missing_param(at + ".role"));
    if (!role->is_string()) return f.fail(invalid_type(at + ".role", "a string"));
    std::string rs = role->get<std::string>();
    if (rs == "developer") rs = "system";  // OpenAI's newer name for system instructions
    if (rs != "system" && rs != "user" && rs != "assistant") {
      return f.fail(invalid_value(at + ".role", "'" + role->get<std::string>() +
                                                    "' is not supported; expected one of "
                                                    "'system', 'developer', 'user', "
                                                    "'assistant'."));
    }
    auto content = m.find("content");
    if (content == m.end()) return f.fail(missing_param(at + ".content"));
    auto text = message_content(*content, at + ".content", f);
    if (!text) return;
    r.messages.push_back({rs, std::move(*text)});
  }
}

}  // namespace

GenerationConfig request_defaults() {
  GenerationConfig c;
  c.max_tokens = -1;
  return c;
}

ApiResult<CompletionRequest> parse_chat_request(std::string_view body,
                                                const GenerationConfig& defaults) {
  auto parsed = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const Json& j = std::get<Json>(parsed);
  CompletionRequest r;
  r.endpoint = Endpoint::kChat;
  Fields f(j);
  parse_common(f, r, defaults);
  parse_messages(f, r);
  // max_completion_tokens is the newer name; either bounds the reply.
  auto mt = f.integer("max_completion_tokens", 1, INT64_MAX);
  if (!mt) mt = f.integer("max_tokens", 1, INT64_MAX);
  if (mt) r.config.max_tokens = static_cast<int32_t>(std::min(*mt, kMaxTokensCap));
  auto lp = f.boolean("logprobs");
  auto top = f.integer("top_logprobs", 0, 20);
  if (top && !lp.value_or(false)) {
    f.fail(invalid_value("top_logprobs", "'logprobs' must be true when 'top_logprobs' is set."));
  }
  if (lp.value_or(false)) r.logprobs = static_cast<int32_t>(top.value_or(0));
  if (const Json* rf = f.get("response_format"); rf && !f.error) {
    auto type = rf->is_object() ? rf->find("type") : rf->end();
    if (!rf->is_object()) {
      f.fail(invalid_type("response_format", "an object"));
    } else if (type == rf->end() || !type->is_string()) {
      f.fail(missing_param("response_format.type"));
    } else if (*type == "json_object") {
      r.json_object = true;
    } else if (*type == "json_schema") {
      f.fail(unsupported("response_format.type",
                         "'json_schema' is not supported; use {\"type\": \"json_object\"} for "
                         "output that is valid JSON."));
    } else if (*type != "text") {
      f.fail(invalid_value("response_format.type", "expected 'text' or 'json_object', got '" +
                                                       type->get<std::string>() + "'."));
    }
  }
  if (const Json* tools = f.get("tools"); tools && !f.error) {
    if (!tools->is_array()) {
      f.fail(invalid_type("tools", "an array"));
    } else if (!tools->empty()) {
      f.fail(unsupported("tools", "tool calling is not supported by this server."));
    }
  }
  if (const Json* fns = f.get("functions"); fns && !f.error && !fns->empty()) {
    f.fail(unsupported("functions", "function calling is not supported by this server."));
  }
  if (f.error) return *f.error;
  return r;
}

ApiResult<CompletionRequest> parse_completion_request(std::string_view body,
                                                      const GenerationConfig& defaults) {
  auto parsed = parse_object(body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  const Json& j = std::get<Json>(parsed);
  CompletionRequest r;
  r.endpoint = Endpoint::kCompletion;
  Fields f(j);
  parse_common(f, r, defaults);
  const Json* p = f.get("prompt");
  if (!f.error) {
    if (!p) {
      f.fail(missing_param("prompt"));
    } else if (p->is_string()) {
      r.prompt = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
      r.prompt = (*p)[0].get<std::string>();
    } else if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {
      r.prompt_is_tokens = true;
      for (size_t i = 0; i < p->size() && !f.error; ++i) {
        const Json& t = (*p)[i];
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
          f.fail(invalid_type("prompt[" + std::to_string(i) + "]", "a token id (integer >= 0)"));
        } else {
          r.prompt_tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
        }
      }
    } else if (p->is_array() && p->size() > 1) {
      f.fail(unsupported("prompt", "one prompt per request (a string, [string] or [token ids])."));
    } else {
      f.fail(invalid_type("prompt", "a string, an array of one string, or an array of token ids"));
    }
  }
  if (auto mt = f.integer("max_tokens", 0, INT64_MAX)) {
    r.config.max_tokens = static_cast<int32_t>(std::min(*mt, kMaxTokensCap));
  } else if (!f.get("max_tokens") && r.config.max_tokens < 0) {
    r.config.max_tokens = 16;  // no server default: the completions API's documented default
  }
  if (auto lp = f.integer("logprobs", 0, 5)) r.logprobs = static_cast<int32_t>(*lp);
  if (auto echo = f.boolean("echo"); echo && *echo) {
    f.fail(unsupported("echo", "echo is not supported by this server."));
  }
  if (auto best = f.integer("best_of", 1, 20); best && *best != 1) {
    f.fail(unsupported("best_of", "only best_of = 1 is supported."));
  }
  if (auto suffix = f.string("suffix"); suffix && !suffix->empty()) {
    f.fail(unsupported("suffix", "suffix is not supported by this server."));
  }
  if (f.error) return *f.error;
  return r;
}

}  // namespace geniex::server
