// Chat template rendering with transformers' context conventions, and family fallbacks.
#include "tokenizer/jinja/chat_template.h"

#include "tokenizer/jinja/budget.h"

namespace geniex::jinja {

Value json_to_value(const nlohmann::ordered_json& j) {
  NestGuard nest;  // request JSON may nest deeply
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null: return Value::none();
    case T::boolean: return Value(j.get<bool>());
    case T::number_integer: return Value(j.get<int64_t>());
    case T::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<int64_t>(u));
    }
    case T::number_float: return Value(j.get<double>());
    case T::string: return Value(j.get<std::string>());
    case T::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(json_to_value(x));
      return Value::list(std::move(items));
    }
    case T::object: {
      Value d = Value::dict();
      for (const auto& [k, v] : j.items())
        d.as_dict()->items.emplace_back(Value(k), json_to_value(v));
      return d;
    }
    default: return Value::none();
  }
}

Value chat_context(const ChatTemplateInputs& in) {
  Value ctx = Value::dict();
  auto& d = *ctx.as_dict();
  d.set(Value("messages"), json_to_value(in.messages));
  d.set(Value("tools"), in.tools ? json_to_value(*in.tools) : Value::none());
  d.set(Value("documents"), Value::none());
  d.set(Value("add_generation_prompt"), Value(in.add_generation_prompt));
  d.set(Value("bos_token"), Value(in.bos_token));
  d.set(Value("eos_token"), Value(in.eos_token));
  if (in.extra_context.is_object())
    for (const auto& [k, v] : in.extra_context.items()) d.set(Value(k), json_to_value(v));
  return ctx;
}

Result<std::string> render_chat_template(const Template& tmpl, const ChatTemplateInputs& in) {
  RenderEnv env;
  env.limits = in.limits;
  env.now = in.now;
  Value ctx;
  try {
    ctx = chat_context(in);
  } catch (const std::exception& e) {
    return invalid_argument(std::string("chat template inputs: ") + e.what());
  }
  return tmpl.render(ctx, env);
}

Result<std::string> render_chat_template(std::string_view tmpl, const ChatTemplateInputs& in) {
  GENIEX_ASSIGN_OR_RETURN(Template t, Template::parse(tmpl));
  return render_chat_template(t, in);
}

}  // namespace geniex::jinja
