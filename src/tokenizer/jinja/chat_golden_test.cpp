// Byte-for-byte comparison of our chat template rendering against Python jinja2's
// (tests/data/chat_templates/goldens.json, made by make_goldens.py).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tokenizer/jinja/chat_template.h"

namespace geniex::jinja {
namespace {

using json = nlohmann::ordered_json;

std::string data_dir() {
  const char* root = std::getenv("GENIEX_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/chat_templates/";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  auto ctx = [&](const std::string& s) {
    return json(s.substr(i > 40 ? i - 40 : 0, 100))
        .dump(-1, ' ', false, json::error_handler_t::replace);
  };
  return "first difference at byte " + std::to_string(i) + "\n  want: " + ctx(want) +
         "\n  got:  " + ctx(got);
}

TEST(ChatGolden, MatchesJinja2ByteForByte) {
  const std::string dir = data_dir();
  json spec = json::parse(read_file(dir + "conversations.json"), nullptr, false);
  json goldens = json::parse(read_file(dir + "goldens.json"), nullptr, false);
  ASSERT_FALSE(spec.is_discarded()) << "cannot read " << dir << "conversations.json";
  ASSERT_FALSE(goldens.is_discarded()) << "cannot read " << dir << "goldens.json";
  const json& results = goldens["results"];

  std::tm now{};
  now.tm_year = 2025 - 1900;
  now.tm_mon = 0;
  now.tm_mday = 15;
  now.tm_hour = 10;
  now.tm_min = 30;
  now.tm_wday = 3;
  now.tm_yday = 14;
  ASSERT_EQ(spec["now"].get<std::string>(), "2025-01-15T10:30:00");

  struct Count {
    int pass = 0, fail = 0;
  };
  std::map<std::string, Count> counts;
  int total = 0, shown = 0;
  for (const auto& [name, t] : spec["templates"].items()) {
    std::string src = read_file(dir + t["file"].get<std::string>());
    ASSERT_FALSE(src.empty()) << "missing template " << t["file"];
    auto parsed = Template::parse(src);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status().to_string();
    for (const auto& conv : spec["conversations"]) {
      std::string key = name + "/" + conv["id"].get<std::string>();
      ASSERT_TRUE(results.contains(key)) << "no golden for " << key;
      const json& want = results[key];
      ChatTemplateInputs in;
      in.messages = conv["messages"];
      if (!conv["tools"].is_null()) in.tools = conv["tools"];
      in.add_generation_prompt = conv["add_generation_prompt"].get<bool>();
      in.bos_token = t["bos_token"].get<std::string>();
      in.eos_token = t["eos_token"].get<std::string>();
      in.extra_context = conv["extra"];
      in.now = now;
      auto got = render_chat_template(*parsed, in);
      ++total;
      bool ok;
      std::string why;
      if (want.contains("output")) {
        const std::string expect = want["output"].get<std::string>();
        ok = got.ok() && *got == expect;
        if (!ok)
          why = got.ok() ? first_difference(expect, *got)
                         : "unexpected error: " + got.status().to_string();
      } else {
        // jinja2 raised: we must fail too; raise_exception messages must match.
        ok = !got.ok();
        if (ok && want["error"] == "TemplateError") {
          ok = got.status().message().find(want["message"].get<std::string>()) != std::string::npos;
          if (!ok) why = "raise_exception message differs: " + got.status().message();
        } else if (!ok) {
          why = "jinja2 raised " + want["error"].get<std::string>() + " (" +
                want["message"].get<std::string>() + ") but we rendered " +
                json(*got).dump().substr(0, 200);
        }
      }
      (ok ? counts[name].pass : counts[name].fail)++;
      if (!ok && shown++ < 25) ADD_FAILURE() << key << ": " << why;
    }
  }
  std::string summary;
  int failed = 0;
  for (const auto& [name, c] : counts) {
    summary += "  " + name + ": " + std::to_string(c.pass) + " passed, " + std::to_string(c.fail) +
               " failed\n";
    failed += c.fail;
  }
  EXPECT_EQ(failed, 0) << "per template:\n" << summary;
  EXPECT_GE(total, 300);
  std::cout << "chat golden cases: " << total << "\n" << summary;
}

}  // namespace
}  // namespace geniex::jinja
