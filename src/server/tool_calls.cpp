#include "server/tool_calls.h"

#include <cctype>
#include <cstdlib>
#include <random>
#include <set>

namespace geniex::server {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMark = "[TOOL_CALLS]";
constexpr std::string_view kLfm2Open = "<|tool_call_start|>";
constexpr std::string_view kLfm2Close = "<|tool_call_end|>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr int kMaxParallelCalls = 4;

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  for (const char c : n) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '-') return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

/// The tool's parameters schema if our constraint compiler takes it, else any object (the
/// model's arguments are then held to JSON only; a client's schema with keywords we do not
/// support must not make tools unusable).
Json constraint_parameters(const ToolDef& t) {
  if (check_json_schema(t.parameters.dump()).ok()) return t.parameters;
  return Json{{"type", "object"}};
}

Json call_schema(const ToolDef& t, const char* args_key) {
  Json props = Json::object();
  props["name"] = Json{{"const", t.name}};
  props[args_key] = constraint_parameters(t);
  return Json{{"type", "object"},
              {"properties", std::move(props)},
              {"required", Json::array({"name", args_key})},
              {"additionalProperties", false}};
}

/// One call object of any allowed tool (the named one only, for a named choice).
Json any_call_schema(const ToolsRequest& tr, const char* args_key) {
  Json alts = Json::array();
  for (const ToolDef& t : tr.defs) {
    if (tr.choice.mode == ToolChoice::Mode::kNamed && t.name != tr.choice.name) continue;
    alts.push_back(call_schema(t, args_key));
  }
  if (alts.size() == 1) return alts[0];
  return Json{{"anyOf", std::move(alts)}};
}

Json calls_array_schema(const ToolsRequest& tr) {
  Json a = {{"type", "array"}, {"items", any_call_schema(tr, "arguments")}, {"minItems", 1}};
  // One call unless parallel calls are allowed; then at most kMaxParallelCalls (small models
  // repeat a call until the list is cut off).
  a["maxItems"] = tr.parallel ? kMaxParallelCalls : 1;
  return a;
}

std::string tools_description(const ToolsRequest& tr) {
  std::string out;
  for (const ToolDef& t : tr.defs) {
    Json j = {{"name", t.name}};
    if (!t.description.empty()) j["description"] = t.description;
    j["parameters"] = t.parameters;
    out += j.dump() + "\n";
  }
  return out;
}

/// The generic envelope's system text.
std::string generic_instructions(const ToolsRequest& tr) {
  std::string s = "You can call these tools (JSON Schema of each one's arguments):\n";
  s += tools_description(tr);
  s += "\nReply with a single JSON object and nothing else. To call tools: {\"tool_calls\": "
       "[{\"name\": \"<tool name>\", \"arguments\": {<arguments>}}]}.";
  if (tr.choice.mode == ToolChoice::Mode::kAuto) {
    s += " To answer without a tool: {\"content\": \"<your answer>\"}.";
  } else if (tr.choice.mode == ToolChoice::Mode::kNamed) {
    s += " Call the tool " + tr.choice.name + ".";
  } else {
    s += " Call at least one tool.";
  }
  return s;
}

Json arguments_json(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return text;
  return j;
}

/// Generic: the conversation with tool calls and results as plain turns the template takes
/// (strict templates demand alternating user/assistant turns: consecutive turns of one role
/// are joined).
std::vector<ChatMessage> generic_messages(const ToolsRequest& tr,
                                          const std::vector<ChatMessage>& in) {
  std::vector<ChatMessage> out;
  const std::string sys = generic_instructions(tr);
  size_t first = 0;
  if (!in.empty() && in[0].role == "system" && in[0].parts.empty()) {
    out.push_back({"system", in[0].content + "\n\n" + sys});
    first = 1;
  } else {
    out.push_back({"system", sys});
  }
  // Names of earlier calls, for the tool results.
  std::vector<std::pair<std::string, std::string>> call_names;
  auto push = [&](ChatMessage m) {
    if (!out.empty() && out.back().role == m.role && out.back().parts.empty() && m.parts.empty() &&
        out.back().role != "system") {
      out.back().content += "\n\n" + m.content;
      return;
    }
    out.push_back(std::move(m));
  };
  for (size_t i = first; i < in.size(); ++i) {
    const ChatMessage& m = in[i];
    if (m.role == "assistant" && !m.tool_calls.empty()) {
      Json calls = Json::array();
      for (const ToolCall& c : m.tool_calls) {
        calls.push_back({{"name", c.name}, {"arguments", arguments_json(c.arguments)}});
        call_names.emplace_back(c.id, c.name);
      }
      Json env = Json::object();
      if (!m.content.empty()) env["content"] = m.content;
      env["tool_calls"] = std::move(calls);
      push({"assistant", env.dump()});
    } else if (m.role == "tool") {
      std::string name = m.name;
      for (const auto& [id, n] : call_names) {
        if (id == m.tool_call_id && name.empty()) name = n;
      }
      Json r = {{"tool_call_id", m.tool_call_id}, {"name", name}, {"content", m.content}};
      push({"user", Json{{"tool_response", std::move(r)}}.dump()});
    } else {
      ChatMessage copy = m;
      copy.tool_calls.clear();
      push(std::move(copy));
    }
  }
  return out;
}

/// A call from a parsed JSON object {"name", "arguments" | "parameters"}; the name must be one
/// of the tools.
bool call_from_json(const Json& j, const ToolsRequest& tr, ToolFormat f, ToolCall& out,
                    std::string& error) {
  if (!j.is_object()) {
    error = "a tool call is not a JSON object";
    return false;
  }
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) {
    error = "a tool call has no \"name\"";
    return false;
  }
  const std::string n = name->get<std::string>();
  bool known = false;
  for (const ToolDef& t : tr.defs) known = known || t.name == n;
  if (!known) {
    error = "the model called an unknown tool '" + n + "'";
    return false;
  }
  Json args = Json::object();
  auto a = j.find("arguments");
  if (a == j.end()) a = j.find("parameters");
  if (a != j.end()) {
    args = *a;
    if (args.is_string()) {  // arguments sent as JSON text
      Json inner = Json::parse(args.get<std::string>(), nullptr, false);
      if (inner.is_discarded()) {
        error = "the arguments of '" + n + "' are not valid JSON";
        return false;
      }
      args = std::move(inner);
    }
  }
  if (!args.is_object()) {
    error = "the arguments of '" + n + "' are not a JSON object";
    return false;
  }
  out.id = make_tool_call_id(f);
  out.name = n;
  out.arguments = args.dump();
  return true;
}

bool calls_from_json(const Json& j, const ToolsRequest& tr, ToolFormat f,
                     std::vector<ToolCall>& out, std::string& error) {
  if (j.is_array()) {
    for (const Json& e : j) {
      ToolCall c;
      if (!call_from_json(e, tr, f, c, error)) return false;
      out.push_back(std::move(c));
    }
    if (out.empty()) error = "the model's tool call list is empty";
    return !out.empty();
  }
  ToolCall c;
  if (!call_from_json(j, tr, f, c, error)) return false;
  out.push_back(std::move(c));
  return true;
}

/// Parses `text` as one JSON value or a Python literal call list (LFM2).
std::optional<Json> parse_calls_text(std::string_view text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) return j;
  return parse_pythonic_calls(text);
}

/// The end of the JSON object that starts at `pos` (strings and escapes skipped), or npos.
size_t object_end(std::string_view t, size_t pos) {
  if (pos >= t.size() || t[pos] != '{') return std::string_view::npos;
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < t.size(); ++i) {
    const char c = t[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

ParsedReply failed(std::string_view text, std::string error) {
  ParsedReply r;
  r.content = std::string(text);
  r.error = std::move(error);
  return r;
}

/// The calls in every `open` ... `close` block of `text` (the last may be cut off at the end),
/// each holding JSON (or, `pythonic`, a Python literal call list); the text outside the blocks
/// is the content. One block that does not parse fails the whole reply.
ParsedReply marked_calls(std::string_view text, std::string_view open, std::string_view close,
                         bool pythonic, const char* bad, const ToolsRequest& tr, ToolFormat f) {
  ParsedReply r;
  size_t at = text.find(open);
  std::string content(text.substr(0, at));
  std::string error;
  while (at != std::string_view::npos) {
    const size_t body = at + open.size();
    size_t end = text.find(close, body);
    const std::string_view inner =
        trim(text.substr(body, end == std::string_view::npos ? text.npos : end - body));
    std::optional<Json> j;
    if (pythonic) {
      j = parse_calls_text(inner);
    } else if (Json v = Json::parse(inner, nullptr, false); !v.is_discarded()) {
      j = std::move(v);
    }
    if (!j) return failed(text, bad);
    if (!calls_from_json(*j, tr, f, r.calls, error)) return failed(text, error);
    if (end == std::string_view::npos) break;
    end += close.size();
    at = text.find(open, end);
    content += std::string(text.substr(end, at == std::string_view::npos ? text.npos : at - end));
  }
  r.content = at == std::string_view::npos && r.calls.empty() ? std::string(text)
                                                              : std::string(trim(content));
  return r;
}

// --- Python literals (LFM2's call lists) --------------------------------------------------

class PyParser {
 public:
  explicit PyParser(std::string_view s) : s_(s) {}

  std::optional<Json> calls() {
    ws();
    if (!eat('[')) return std::nullopt;
    Json out = Json::array();
    ws();
    if (eat(']')) return finish(std::move(out));
    for (;;) {
      auto c = call();
      if (!c) return std::nullopt;
      out.push_back(std::move(*c));
      ws();
      if (eat(']')) return finish(std::move(out));
      if (!eat(',')) return std::nullopt;
      ws();
    }
  }

 private:
  std::optional<Json> finish(Json j) {
    ws();
    if (i_ != s_.size()) return std::nullopt;
    return j;
  }
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])) != 0) ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::string ident() {
    const size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) != 0 ||
                              s_[i_] == '_' || s_[i_] == '-' || s_[i_] == '.')) {
      ++i_;
    }
    return std::string(s_.substr(b, i_ - b));
  }
  std::optional<Json> call() {
    std::string name = ident();
    if (name.empty()) return std::nullopt;
    ws();
    if (!eat('(')) return std::nullopt;
    Json args = Json::object();
    ws();
    if (!eat(')')) {
      for (;;) {
        ws();
        std::string key = ident();
        if (key.empty()) return std::nullopt;
        ws();
        if (!eat('=')) return std::nullopt;
        ws();
        auto v = value(0);
        if (!v) return std::nullopt;
        args[key] = std::move(*v);
        ws();
        if (eat(')')) break;
        if (!eat(',')) return std::nullopt;
      }
    }
    return Json{{"name", std::move(name)}, {"arguments", std::move(args)}};
  }
  std::optional<Json> value(int depth) {
    if (depth > 64 || i_ >= s_.size()) return std::nullopt;
    const char c = s_[i_];
    if (c == '"' || c == '\'') return str();
    if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      ++i_;
      Json a = Json::array();
      ws();
      if (eat(close)) return a;
      for (;;) {
        ws();
        auto v = value(depth + 1);
        if (!v) return std::nullopt;
        a.push_back(std::move(*v));
        ws();
        if (eat(close)) return a;
        if (!eat(',')) return std::nullopt;
        ws();
        if (eat(close)) return a;  // a trailing comma
      }
    }
    if (c == '{') {
      ++i_;
      Json o = Json::object();
      ws();
      if (eat('}')) return o;
      for (;;) {
        ws();
        auto k = value(depth + 1);
        if (!k || !k->is_string()) return std::nullopt;
        ws();
        if (!eat(':')) return std::nullopt;
        ws();
        auto v = value(depth + 1);
        if (!v) return std::nullopt;
        o[k->get<std::string>()] = std::move(*v);
        ws();
        if (eat('}')) return o;
        if (!eat(',')) return std::nullopt;
      }
    }
    const std::string word = ident_or_number();
    if (word == "True" || word == "true") return Json(true);
    if (word == "False" || word == "false") return Json(false);
    if (word == "None" || word == "null") return Json(nullptr);
    if (word.empty()) return std::nullopt;
    Json n = Json::parse(word, nullptr, false);
    if (n.is_discarded() || !n.is_number()) return std::nullopt;
    return n;
  }
  std::string ident_or_number() {
    const size_t b = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) != 0 ||
                              s_[i_] == '_' || s_[i_] == '.' || s_[i_] == '-' || s_[i_] == '+')) {
      ++i_;
    }
    return std::string(s_.substr(b, i_ - b));
  }
  std::optional<Json> str() {
    const char q = s_[i_++];
    std::string out;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == q) return Json(out);
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) return std::nullopt;
      const char e = s_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        default: out += '\\'; out += e;
      }
    }
    return std::nullopt;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

ToolFormat detect_tool_format(std::string_view src) {
  if (src.find(kLfm2Open) != std::string_view::npos) return ToolFormat::kLfm2;
  if (src.find(kMistralMark) != std::string_view::npos) return ToolFormat::kMistral;
  if (src.find(kHermesOpen) != std::string_view::npos) return ToolFormat::kHermes;
  if (src.find("<|start_header_id|>") != std::string_view::npos &&
      src.find("tools") != std::string_view::npos &&
      (src.find("\"parameters\"") != std::string_view::npos ||
       src.find(kPythonTag) != std::string_view::npos)) {
    return ToolFormat::kLlama3;
  }
  return ToolFormat::kGeneric;
}

std::string_view tool_format_name(ToolFormat f) {
  switch (f) {
    case ToolFormat::kHermes: return "hermes";
    case ToolFormat::kLlama3: return "llama3";
    case ToolFormat::kMistral: return "mistral";
    case ToolFormat::kLfm2: return "lfm2";
    case ToolFormat::kGeneric: return "generic";
  }
  return "generic";
}

ApiResult<ToolsRequest> parse_tools_request(const Json& body) {
  ToolsRequest r;
  auto tools = body.find("tools");
  if (tools != body.end() && !tools->is_null()) {
    if (!tools->is_array()) return invalid_type("tools", "an array");
    if (tools->size() > 128) return invalid_value("tools", "at most 128 tools.");
    std::set<std::string> names;
    for (size_t i = 0; i < tools->size(); ++i) {
      const Json& t = (*tools)[i];
      const std::string at = "tools[" + std::to_string(i) + "]";
      if (!t.is_object()) return invalid_type(at, "an object");
      auto type = t.find("type");
      if (type == t.end() || !type->is_string()) return missing_param(at + ".type");
      if (*type != "function") {
        return invalid_value(at + ".type", "'" + type->get<std::string>() +
                                               "' tools are not supported; expected 'function'.");
      }
      auto fn = t.find("function");
      if (fn == t.end() || fn->is_null()) return missing_param(at + ".function");
      if (!fn->is_object()) return invalid_type(at + ".function", "an object");
      auto name = fn->find("name");
      if (name == fn->end() || name->is_null()) return missing_param(at + ".function.name");
      if (!name->is_string()) return invalid_type(at + ".function.name", "a string");
      ToolDef d;
      d.name = name->get<std::string>();
      if (!valid_name(d.name)) {
        return invalid_value(at + ".function.name",
                             "'" + d.name +
                                 "' is not a valid function name: 1 to 64 letters, digits, "
                                 "underscores or dashes.");
      }
      if (!names.insert(d.name).second) {
        return invalid_value(at + ".function.name",
                             "the function name '" + d.name + "' appears twice.");
      }
      auto desc = fn->find("description");
      if (desc != fn->end() && !desc->is_null()) {
        if (!desc->is_string()) return invalid_type(at + ".function.description", "a string");
        d.description = desc->get<std::string>();
      }
      auto params = fn->find("parameters");
      if (params != fn->end() && !params->is_null()) {
        if (!params->is_object()) return invalid_type(at + ".function.parameters", "an object");
        d.parameters = *params;
      } else {
        d.parameters = Json{{"type", "object"}, {"properties", Json::object()}};
      }
      r.defs.push_back(std::move(d));
    }
    r.tools = *tools;
  }
  auto choice = body.find("tool_choice");
  if (choice != body.end() && !choice->is_null()) {
    if (choice->is_string()) {
      const std::string c = choice->get<std::string>();
      if (c == "auto") {
        r.choice.mode = ToolChoice::Mode::kAuto;
      } else if (c == "none") {
        r.choice.mode = ToolChoice::Mode::kNone;
      } else if (c == "required") {
        r.choice.mode = ToolChoice::Mode::kRequired;
      } else {
        return invalid_value("tool_choice",
                             "expected 'none', 'auto', 'required' or "
                             "{\"type\": \"function\", \"function\": {\"name\": "
                             "...}}, got '" +
                                 c + "'.");
      }
    } else if (choice->is_object()) {
      auto fn = choice->find("function");
      if (fn == choice->end() || !fn->is_object()) return missing_param("tool_choice.function");
      auto name = fn->find("name");
      if (name == fn->end() || !name->is_string()) {
        return missing_param("tool_choice.function.name");
      }
      r.choice.mode = ToolChoice::Mode::kNamed;
      r.choice.name = name->get<std::string>();
      bool known = false;
      for (const ToolDef& d : r.defs) known = known || d.name == r.choice.name;
      if (!known) {
        return invalid_value("tool_choice.function.name",
                             "no tool named '" + r.choice.name + "' in 'tools'.");
      }
    } else {
      return invalid_type("tool_choice", "a string or an object");
    }
    if ((r.choice.mode == ToolChoice::Mode::kRequired) && r.defs.empty()) {
      return invalid_value("tool_choice", "'required' needs 'tools'.");
    }
  }
  auto par = body.find("parallel_tool_calls");
  if (par != body.end() && !par->is_null()) {
    if (!par->is_boolean()) return invalid_type("parallel_tool_calls", "a boolean");
    r.parallel = par->get<bool>();
  }
  return r;
}

ToolPlan plan_tools(ToolFormat format, const ToolsRequest& tr,
                    const std::vector<ChatMessage>& messages) {
  ToolPlan p;
  p.format = format;
  const bool must =
      tr.choice.mode == ToolChoice::Mode::kRequired || tr.choice.mode == ToolChoice::Mode::kNamed;
  if (format == ToolFormat::kGeneric) {
    p.messages = generic_messages(tr, messages);
    Json calls = {{"type", "object"},
                  {"properties", {{"tool_calls", calls_array_schema(tr)}}},
                  {"required", Json::array({"tool_calls"})},
                  {"additionalProperties", false}};
    if (must) {
      p.schema = calls.dump();
    } else {
      Json answer = {{"type", "object"},
                     {"properties", {{"content", {{"type", "string"}}}}},
                     {"required", Json::array({"content"})},
                     {"additionalProperties", false}};
      p.schema = Json{{"anyOf", Json::array({std::move(calls), std::move(answer)})}}.dump();
    }
    return p;
  }
  p.messages = messages;
  p.options.tools = tr.tools.dump();
  if (!must) return p;
  switch (format) {
    case ToolFormat::kHermes:
      p.options.reply_prefix = std::string(kHermesOpen) + "\n";
      p.schema = any_call_schema(tr, "arguments").dump();
      break;
    case ToolFormat::kLlama3: p.schema = any_call_schema(tr, "parameters").dump(); break;
    case ToolFormat::kMistral:
      p.options.reply_prefix = std::string(kMistralMark);
      p.schema = calls_array_schema(tr).dump();
      break;
    case ToolFormat::kLfm2:
      p.options.reply_prefix = std::string(kLfm2Open);
      p.schema = calls_array_schema(tr).dump();
      break;
    case ToolFormat::kGeneric: break;
  }
  return p;
}

ParsedReply parse_reply(const ToolPlan& plan, const ToolsRequest& tr, std::string_view text) {
  ParsedReply r;
  const ToolFormat f = plan.format;
  if (plan.constrained()) {
    // The reply is the constrained JSON (a prefix of it when generation was cut short).
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() && f == ToolFormat::kGeneric) {
      if (auto partial = generic_content_prefix(text)) {  // an answer cut short
        r.content = std::move(*partial);
        return r;
      }
    }
    if (j.is_discarded()) return failed(text, "the tool call was cut off before it was complete");
    if (f == ToolFormat::kGeneric) {
      if (auto c = j.find("content"); c != j.end() && c->is_string()) {
        r.content = c->get<std::string>();
        return r;
      }
      auto calls = j.find("tool_calls");
      if (calls == j.end()) return failed(text, "the reply has neither content nor tool_calls");
      std::string error;
      if (!calls_from_json(*calls, tr, f, r.calls, error)) return failed(text, error);
      return r;
    }
    std::string error;
    if (!calls_from_json(j, tr, f, r.calls, error)) return failed(text, error);
    return r;
  }
  std::string error;
  switch (f) {
    case ToolFormat::kHermes:
      return marked_calls(text, kHermesOpen, kHermesClose, false,
                          "a <tool_call> does not hold valid JSON", tr, f);
    case ToolFormat::kLlama3: {
      std::string_view t = trim(text);
      const bool tagged = t.starts_with(kPythonTag);
      if (tagged) t = trim(t.substr(kPythonTag.size()));
      if (!t.starts_with('{')) {
        r.content = std::string(text);
        return r;
      }
      // One call, or several separated by ';' (Llama 3.2 writes them so).
      size_t pos = 0;
      while (pos < t.size()) {
        const size_t end = object_end(t, pos);
        Json j = end == std::string_view::npos ? Json(Json::value_t::discarded)
                                               : Json::parse(t.substr(pos, end - pos), nullptr,
                                                             /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object() || !j.contains("name")) {
          if (!tagged && r.calls.empty()) {  // plain JSON text the user asked for, not a call
            r = ParsedReply{};
            r.content = std::string(text);
            return r;
          }
          return failed(text, "the tool call is not valid JSON");
        }
        if (!calls_from_json(j, tr, f, r.calls, error)) return failed(text, error);
        pos = end;
        while (pos < t.size() &&
               (t[pos] == ';' || std::isspace(static_cast<unsigned char>(t[pos])) != 0)) {
          ++pos;
        }
      }
      return r;
    }
    case ToolFormat::kMistral: {
      const size_t at = text.find(kMistralMark);
      if (at == std::string_view::npos) {
        r.content = std::string(text);
        return r;
      }
      r.content = std::string(trim(text.substr(0, at)));
      Json j = Json::parse(trim(text.substr(at + kMistralMark.size())), nullptr, false);
      if (j.is_discarded()) return failed(text, "the [TOOL_CALLS] list is not valid JSON");
      if (!calls_from_json(j, tr, f, r.calls, error)) return failed(text, error);
      return r;
    }
    case ToolFormat::kLfm2:
      return marked_calls(text, kLfm2Open, kLfm2Close, true, "the tool call list does not parse",
                          tr, f);
    case ToolFormat::kGeneric: r.content = std::string(text); return r;
  }
  return r;
}

size_t streamable_prefix(ToolFormat format, std::string_view text) {
  std::string_view mark;
  switch (format) {
    case ToolFormat::kHermes: mark = kHermesOpen; break;
    case ToolFormat::kMistral: mark = kMistralMark; break;
    case ToolFormat::kLfm2: mark = kLfm2Open; break;
    case ToolFormat::kLlama3: {
      // A call is the whole reply: hold it while it may still be one.
      const std::string_view t = trim(text);
      if (t.empty()) return 0;
      if (t.starts_with('{') || t.starts_with(kPythonTag) ||
          kPythonTag.starts_with(t.substr(0, std::min(t.size(), kPythonTag.size())))) {
        return 0;
      }
      return text.size();
    }
    case ToolFormat::kGeneric: return 0;
  }
  const size_t at = text.find(mark);
  if (at != std::string_view::npos) return at;
  // Hold back a tail that may be the start of the mark.
  for (size_t k = std::min(mark.size() - 1, text.size()); k > 0; --k) {
    if (mark.starts_with(text.substr(text.size() - k))) return text.size() - k;
  }
  return text.size();
}

std::string make_tool_call_id(ToolFormat format) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const int n = format == ToolFormat::kMistral ? 9 : 24;
  std::string id = format == ToolFormat::kMistral ? "" : "call_";
  for (int i = 0; i < n; ++i) id += kAlnum[rng() % 62];
  return id;
}

std::optional<std::string> generic_content_prefix(std::string_view reply) {
  size_t i = 0;
  auto ws = [&] {
    while (i < reply.size() && std::isspace(static_cast<unsigned char>(reply[i])) != 0) ++i;
  };
  auto lit = [&](std::string_view s) {
    if (reply.substr(i, s.size()) != s) return false;
    i += s.size();
    return true;
  };
  ws();
  if (!lit("{")) return std::nullopt;
  ws();
  if (!lit("\"content\"")) return std::nullopt;
  ws();
  if (!lit(":")) return std::nullopt;
  ws();
  if (!lit("\"")) return std::nullopt;
  std::string out;
  while (i < reply.size()) {
    const char c = reply[i];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      ++i;
      continue;
    }
    // An escape: decode it whole, or stop before it while it is incomplete.
    size_t len = 2;
    if (i + 1 < reply.size() && reply[i + 1] == 'u') {
      len = 6;
      if (i + 6 <= reply.size()) {
        const std::string_view hex = reply.substr(i + 2, 4);
        const unsigned long cp = std::strtoul(std::string(hex).c_str(), nullptr, 16);
        if (cp >= 0xD800 && cp <= 0xDBFF) len = 12;  // a surrogate pair
      }
    }
    if (i + len > reply.size()) break;
    Json piece = Json::parse("\"" + std::string(reply.substr(i, len)) + "\"", nullptr, false);
    if (piece.is_discarded()) break;
    out += piece.get<std::string>();
    i += len;
  }
  return out;
}

std::optional<Json> parse_pythonic_calls(std::string_view text) { return PyParser(text).calls(); }

}  // namespace geniex::server
