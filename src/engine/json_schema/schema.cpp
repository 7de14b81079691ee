#include "engine/json_schema/schema.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace geniex::engine::json_schema {
namespace {

using Json = nlohmann::ordered_json;  // properties keep the schema's order

// '#': a decimal digit, '%': a hex digit, anything else itself.
const std::map<std::string, std::vector<std::string>>& format_templates() {
  static const std::map<std::string, std::vector<std::string>> t = {
      {"date", {"####-##-##"}},
      {"time", {"##:##:##", "##:##:##Z"}},
      {"date-time", {"####-##-##T##:##:##", "####-##-##T##:##:##Z"}},
      {"uuid", {"%%%%%%%%-%%%%-%%%%-%%%%-%%%%%%%%%%%%"}},
  };
  return t;
}

const std::set<std::string>& annotations() {
  static const std::set<std::string> a = {"title",    "description", "default",  "examples",
                                          "$schema",  "$id",         "$comment", "deprecated",
                                          "readOnly", "writeOnly",   "$defs",    "definitions"};
  return a;
}

const std::set<std::string>& supported() {
  static const std::set<std::string> k = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "$ref"};
  return k;
}

class Compiler {
 public:
  explicit Compiler(const Json& root) : root_(root) {}

  Result<int32_t> node(const Json& s, const std::string& path, int depth) {
    if (depth > 64) return invalid_argument("json schema: nested too deeply at " + path);
    if (s.is_boolean()) {
      if (!s.get<bool>())
        return invalid_argument("json schema: 'false' at " + path + " allows no value");
      return add(Node{});
    }
    if (!s.is_object())
      return invalid_argument("json schema: " + path + " is not a schema (an object or a boolean)");
    for (const auto& [k, v] : s.items()) {
      if (supported().count(k) == 0 && annotations().count(k) == 0) {
        return invalid_argument("json schema: unsupported keyword '" + k + "' at " + path);
      }
    }
    if (s.contains("$ref")) return ref(s, path, depth);
    if (s.contains("enum") || s.contains("const")) return literals(s, path);
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const Json& alts = s[key];
      if (!alts.is_array() || alts.empty())
        return invalid_argument("json schema: " + path + "/" + key + " must be a non-empty array");
      Node n;
      n.kind = Kind::kAnyOf;
      for (size_t i = 0; i < alts.size(); ++i) {
        GENIEX_ASSIGN_OR_RETURN(
            int32_t a, node(alts[i], path + "/" + key + "/" + std::to_string(i), depth + 1));
        n.alts.push_back(a);
      }
      return add(std::move(n));
    }
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) return typed(s, t.get<std::string>(), path, depth);
      if (!t.is_array() || t.empty())
        return invalid_argument("json schema: " + path +
                                "/type must be a string or a non-empty array");
      Node n;
      n.kind = Kind::kAnyOf;
      for (const Json& one : t) {
        if (!one.is_string())
          return invalid_argument("json schema: " + path + "/type lists a non-string");
        GENIEX_ASSIGN_OR_RETURN(int32_t a, typed(s, one.get<std::string>(), path, depth));
        n.alts.push_back(a);
      }
      return add(std::move(n));
    }
    if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required"))
      return typed(s, "object", path, depth);
    if (s.contains("items") || s.contains("minItems") || s.contains("maxItems"))
      return typed(s, "array", path, depth);
    if (s.contains("minLength") || s.contains("maxLength") || s.contains("format"))
      return typed(s, "string", path, depth);
    if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
        s.contains("exclusiveMaximum"))
      return typed(s, "number", path, depth);
    return add(Node{});
  }

  Schema take() { return std::move(out_); }

 private:
  int32_t add(Node n) {
    out_.nodes.push_back(std::move(n));
    return static_cast<int32_t>(out_.nodes.size() - 1);
  }

  static Result<int64_t> count(const Json& s, const char* key, const std::string& path) {
    if (!s.contains(key)) return int64_t{-1};
    const Json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      return invalid_argument("json schema: " + path + "/" + key +
                              " must be a non-negative integer");
    return v.get<int64_t>();
  }

  static Result<std::optional<double>> bound(const Json& s, const char* key,
                                             const std::string& path) {
    if (!s.contains(key)) return std::optional<double>();
    const Json& v = s[key];
    if (!v.is_number())
      return invalid_argument("json schema: " + path + "/" + key + " must be a number");
    return std::optional<double>(v.get<double>());
  }

  Result<int32_t> ref(const Json& s, const std::string& path, int depth) {
    for (const auto& [k, v] : s.items()) {
      if (k != "$ref" && annotations().count(k) == 0)
        return invalid_argument("json schema: '" + k + "' beside $ref at " + path +
                                " is not supported");
    }
    if (!s["$ref"].is_string())
      return invalid_argument("json schema: " + path + "/$ref must be a string");
    const std::string target = s["$ref"].get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    const Json* t = nullptr;
    if (target == "#") {
      t = &root_;
    } else {
      for (const char* base : {"#/$defs/", "#/definitions/"}) {
        const std::string b = base;
        if (target.rfind(b, 0) != 0) continue;
        const std::string name = target.substr(b.size());
        const auto defs = root_.find(b.substr(2, b.size() - 3));
        if (defs == root_.end() || !defs->is_object()) continue;
        if (const auto it = defs->find(name); it != defs->end()) t = &*it;
      }
    }
    if (t == nullptr)
      return invalid_argument("json schema: $ref '" + target + "' at " + path +
                              " does not resolve (only #, #/$defs/NAME and #/definitions/NAME)");
    // Reserve the node first so that a recursive reference finds it.
    const int32_t idx = add(Node{});
    refs_[target] = idx;
    GENIEX_ASSIGN_OR_RETURN(int32_t body, node(*t, target, depth + 1));
    Node& n = out_.nodes[static_cast<size_t>(idx)];
    n.kind = Kind::kAnyOf;
    n.alts = {body};
    return idx;
  }

  Result<int32_t> literals(const Json& s, const std::string& path) {
    Node n;
    n.kind = Kind::kLiterals;
    if (s.contains("const")) n.literals.push_back(s["const"].dump());
    if (s.contains("enum")) {
      const Json& e = s["enum"];
      if (!e.is_array() || e.empty())
        return invalid_argument("json schema: " + path + "/enum must be a non-empty array");
      for (const Json& v : e) n.literals.push_back(v.dump());
    }
    return add(std::move(n));
  }

  Result<int32_t> typed(const Json& s, const std::string& type, const std::string& path,
                        int depth) {
    Node n;
    if (type == "object") {
      n.kind = Kind::kObject;
      std::set<std::string> required;
      if (s.contains("required")) {
        if (!s["required"].is_array())
          return invalid_argument("json schema: " + path + "/required must be an array");
        for (const Json& r : s["required"]) {
          if (!r.is_string())
            return invalid_argument("json schema: " + path + "/required lists a non-string");
          required.insert(r.get<std::string>());
        }
      }
      if (s.contains("properties")) {
        const Json& props = s["properties"];
        if (!props.is_object())
          return invalid_argument("json schema: " + path + "/properties must be an object");
        for (const auto& [name, sub] : props.items()) {
          Prop p;
          const std::string quoted = Json(name).dump();
          p.key = quoted.substr(1, quoted.size() - 2);
          p.required = required.erase(name) > 0;
          GENIEX_ASSIGN_OR_RETURN(p.node, node(sub, path + "/properties/" + name, depth + 1));
          n.props.push_back(std::move(p));
        }
      }
      if (!required.empty())
        return invalid_argument("json schema: " + path + " requires '" + *required.begin() +
                                "', which its properties do not declare");
      const Json extra = s.value("additionalProperties", Json(true));
      if (!extra.is_boolean() && !extra.is_object())
        return invalid_argument("json schema: " + path +
                                "/additionalProperties must be a boolean or a schema");
      // Declared properties: only they are generated (valid whatever additionalProperties).
      if (n.props.empty() && extra != Json(false)) {
        GENIEX_ASSIGN_OR_RETURN(n.extra, node(extra, path + "/additionalProperties", depth + 1));
      }
    } else if (type == "array") {
      n.kind = Kind::kArray;
      if (s.contains("items")) {
        if (s["items"].is_array())
          return invalid_argument("json schema: " + path +
                                  "/items as an array (tuples) is not supported");
        GENIEX_ASSIGN_OR_RETURN(n.items, node(s["items"], path + "/items", depth + 1));
      }
      GENIEX_ASSIGN_OR_RETURN(int64_t mn, count(s, "minItems", path));
      GENIEX_ASSIGN_OR_RETURN(n.max_items, count(s, "maxItems", path));
      n.min_items = std::max<int64_t>(0, mn);
      if (n.max_items >= 0 && n.min_items > n.max_items)
        return invalid_argument("json schema: " + path + " has minItems > maxItems");
    } else if (type == "string") {
      n.kind = Kind::kString;
      GENIEX_ASSIGN_OR_RETURN(int64_t mn, count(s, "minLength", path));
      GENIEX_ASSIGN_OR_RETURN(n.max_len, count(s, "maxLength", path));
      n.min_len = std::max<int64_t>(0, mn);
      if (n.max_len >= 0 && n.min_len > n.max_len)
        return invalid_argument("json schema: " + path + " has minLength > maxLength");
      if (s.contains("format")) {
        const Json& f = s["format"];
        const auto it = f.is_string() ? format_templates().find(f.get<std::string>())
                                      : format_templates().end();
        if (it == format_templates().end())
          return invalid_argument("json schema: format " + f.dump() + " at " + path +
                                  " is not supported (date, time, date-time, uuid)");
        n.formats = it->second;
      }
    } else if (type == "number" || type == "integer") {
      n.kind = type == "number" ? Kind::kNumber : Kind::kInteger;
      GENIEX_ASSIGN_OR_RETURN(n.minimum, bound(s, "minimum", path));
      GENIEX_ASSIGN_OR_RETURN(n.maximum, bound(s, "maximum", path));
      GENIEX_ASSIGN_OR_RETURN(n.exclusive_minimum, bound(s, "exclusiveMinimum", path));
      GENIEX_ASSIGN_OR_RETURN(n.exclusive_maximum, bound(s, "exclusiveMaximum", path));
    } else if (type == "boolean") {
      n.kind = Kind::kBoolean;
    } else if (type == "null") {
      n.kind = Kind::kNull;
    } else {
      return invalid_argument("json schema: unknown type '" + type + "' at " + path);
    }
    return add(std::move(n));
  }

  const Json& root_;
  Schema out_;
  std::map<std::string, int32_t> refs_;
};

bool matches_template(const std::string& t, const std::string& s) {
  if (t.size() != s.size()) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (t[i] == '#' ? !std::isdigit(c) : t[i] == '%' ? !std::isxdigit(c) : t[i] != s[i])
      return false;
  }
  return true;
}

int64_t utf8_length(const std::string& s) {
  int64_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

bool check(const Schema& sc, int32_t idx, const Json& v, int depth) {
  if (depth > 128) return false;
  if (idx < 0) return true;
  const Node& n = sc.nodes[static_cast<size_t>(idx)];
  switch (n.kind) {
    case Kind::kAny: return true;
    case Kind::kAnyOf:
      for (int32_t a : n.alts) {
        if (check(sc, a, v, depth + 1)) return true;
      }
      return false;
    case Kind::kLiterals:
      for (const std::string& l : n.literals) {
        if (Json::parse(l) == v) return true;
      }
      return false;
    case Kind::kBoolean: return v.is_boolean();
    case Kind::kNull: return v.is_null();
    case Kind::kNumber: return v.is_number() && in_bounds(n, v.get<double>());
    case Kind::kInteger: return v.is_number_integer() && in_bounds(n, v.get<double>());
    case Kind::kString: {
      if (!v.is_string()) return false;
      const std::string s = v.get<std::string>();
      const int64_t len = utf8_length(s);
      if (len < n.min_len || (n.max_len >= 0 && len > n.max_len)) return false;
      if (n.formats.empty()) return true;
      for (const std::string& t : n.formats) {
        if (matches_template(t, s)) return true;
      }
      return false;
    }
    case Kind::kArray: {
      if (!v.is_array()) return false;
      const auto sz = static_cast<int64_t>(v.size());
      if (sz < n.min_items || (n.max_items >= 0 && sz > n.max_items)) return false;
      for (const Json& e : v) {
        if (!check(sc, n.items, e, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kObject: {
      if (!v.is_object()) return false;
      if (n.props.empty()) {
        for (const auto& [k, e] : v.items()) {
          if (n.extra < 0 && !v.empty()) return false;
          if (!check(sc, n.extra, e, depth + 1)) return false;
        }
        return true;
      }
      size_t seen = 0;
      for (const Prop& p : n.props) {
        const std::string name = Json::parse("\"" + p.key + "\"").get<std::string>();
        if (!v.contains(name)) {
          if (p.required) return false;
          continue;
        }
        ++seen;
        if (!check(sc, p.node, v[name], depth + 1)) return false;
      }
      return seen == v.size();
    }
  }
  return false;
}

}  // namespace

bool in_bounds(const Node& n, double v) {
  if (n.minimum && v < *n.minimum) return false;
  if (n.maximum && v > *n.maximum) return false;
  if (n.exclusive_minimum && v <= *n.exclusive_minimum) return false;
  if (n.exclusive_maximum && v >= *n.exclusive_maximum) return false;
  return true;
}

Result<Schema> compile(std::string_view schema_json) {
  Json root = Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return invalid_argument("json schema: not valid JSON");
  Compiler c(root);
  GENIEX_ASSIGN_OR_RETURN(int32_t top, c.node(root, "#", 0));
  Schema s = c.take();
  if (top != 0) {
    // The root was added after its children: put an alias at index 0.
    Node alias;
    alias.kind = Kind::kAnyOf;
    alias.alts = {top + 1};
    for (Node& n : s.nodes) {
      for (Prop& p : n.props) p.node += 1;
      if (n.extra >= 0) n.extra += 1;
      if (n.items >= 0) n.items += 1;
      for (int32_t& a : n.alts) a += 1;
    }
    s.nodes.insert(s.nodes.begin(), std::move(alias));
  }
  return s;
}

bool validates(const Schema& schema, std::string_view json_text) {
  const Json v = Json::parse(json_text, nullptr, false);
  if (v.is_discarded() || schema.nodes.empty()) return false;
  return check(schema, 0, v, 0);
}

}  // namespace geniex::engine::json_schema
