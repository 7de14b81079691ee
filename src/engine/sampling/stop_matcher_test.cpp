// StopMatcher: hand examples and the streaming property against a naive whole-text reference
// over random texts, random stop sets (overlapping, multi-byte UTF-8) and random splits.
#include "engine/sampling/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/sampling/rng.h"

namespace geniex::sampling {
namespace {

StopMatcher make(std::vector<std::string> stops) {
  auto m = StopMatcher::create(std::move(stops));
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

struct Streamed {
  std::string text;
  bool stopped = false;
  int32_t stop_index = -1;
};

Streamed stream(StopMatcher& m, const std::vector<std::string>& pieces) {
  Streamed out;
  for (const std::string& piece : pieces) {
    const StopMatcher::FeedResult r = m.feed(piece);
    out.text += r.emit;
    if (r.stopped) {
      out.stopped = true;
      out.stop_index = r.stop_index;
      break;
    }
  }
  if (!out.stopped) out.text += m.flush();
  return out;
}

/// Naive reference: walk end offsets; the first end at which some stop string is a suffix
/// decides; among stops ending there the longest (then the lowest index) wins.
StopPoint naive_first_stop(const std::string& text, const std::vector<std::string>& stops) {
  for (size_t end = 1; end <= text.size(); ++end) {
    int32_t best = -1;
    for (size_t s = 0; s < stops.size(); ++s) {
      const std::string& stop = stops[s];
      if (stop.size() > end || text.compare(end - stop.size(), stop.size(), stop) != 0) continue;
      if (best < 0 || stop.size() > stops[static_cast<size_t>(best)].size()) {
        best = static_cast<int32_t>(s);
      }
    }
    if (best >= 0) return {end - stops[static_cast<size_t>(best)].size(), best};
  }
  return {text.size(), -1};
}

TEST(StopMatcher, RejectsEmptyStop) {
  auto m = StopMatcher::create({"ok", ""});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("entry 1"), std::string::npos);
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m = make({});
  EXPECT_EQ(m.feed("hello").emit, "hello");
  EXPECT_EQ(m.feed(" world").emit, " world");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, StopSpanningPieces) {
  StopMatcher m = make({"</end>"});
  auto r = m.feed("Hello </");
  EXPECT_EQ(r.emit, "Hello ");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(m.held_size(), 2u);
  r = m.feed("en");
  EXPECT_EQ(r.emit, "");
  r = m.feed("d> trailing");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(r.stop_index, 0);
  EXPECT_TRUE(m.stopped());
  // After a stop nothing more comes out.
  r = m.feed("more");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, FalseStartIsReleased) {
  StopMatcher m = make({"</end>"});
  EXPECT_EQ(m.feed("a </e").emit, "a ");
  EXPECT_EQ(m.feed("x").emit, "</ex");
  EXPECT_EQ(m.feed("<").emit, "");
  EXPECT_EQ(m.flush(), "<");
}

TEST(StopMatcher, MatchInsideOnePiece) {
  StopMatcher m = make({"STOP"});
  auto r = m.feed("abcSTOPdef");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "abc");
}

TEST(StopMatcher, OverlappingStops) {
  // "ab" and "b" complete at the same byte: the longer one cuts earlier.
  StopMatcher m = make({"b", "ab"});
  auto r = m.feed("xa");
  EXPECT_EQ(r.emit, "x");  // "a" may start "ab"
  r = m.feed("b");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(r.stop_index, 1);
  // "abcd" vs "bc": "bc" completes first, whatever the split.
  for (const auto& pieces : std::vector<std::vector<std::string>>{
           {"abcd"}, {"a", "bcd"}, {"ab", "c", "d"}, {"abc", "d"}}) {
    StopMatcher n = make({"abcd", "bc"});
    const Streamed s = stream(n, pieces);
    EXPECT_TRUE(s.stopped);
    EXPECT_EQ(s.text, "a");
    EXPECT_EQ(s.stop_index, 1);
  }
}

TEST(StopMatcher, MultiByteUtf8) {
  StopMatcher m = make({"🦙!", "é"});
  // The llama emoji (4 bytes) split across pieces, then not followed by '!'.
  const std::string llama = "🦙";
  EXPECT_EQ(m.feed("I " + llama.substr(0, 2)).emit, "I ");
  EXPECT_EQ(m.feed(llama.substr(2)).emit, "");
  EXPECT_EQ(m.feed("?").emit, llama + "?");
  auto r = m.feed("caf\xc3");
  EXPECT_EQ(r.emit, "caf");
  r = m.feed("\xa9 au lait");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
}

TEST(StopMatcher, FlushAndReset) {
  StopMatcher m = make({"xyz"});
  EXPECT_EQ(m.feed("abcxy").emit, "abc");
  EXPECT_EQ(m.flush(), "xy");
  EXPECT_EQ(m.flush(), "");
  EXPECT_TRUE(m.feed("xyz").stopped);
  m.reset();
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.feed("ok").emit, "ok");
}

TEST(StopMatcher, FindFirstStopAgreesWithNaive) {
  EXPECT_EQ(find_first_stop("hello", {"x"}).stop_index, -1);
  EXPECT_EQ(find_first_stop("hello", {"x"}).offset, 5u);
  const StopPoint p = find_first_stop("xxabcd", {"abcd", "bc"});
  EXPECT_EQ(p.offset, 3u);
  EXPECT_EQ(p.stop_index, 1);
}

// Random text over an alphabet with overlapping structure and multi-byte characters.
std::string random_text(Pcg32& rng, size_t max_chars) {
  static const char* const kAlphabet[] = {"a", "b", "c", "ab", " ", "é", "🦙", "\n", "中"};
  std::string s;
  const uint32_t n = rng.next_below(static_cast<uint32_t>(max_chars) + 1);
  for (uint32_t i = 0; i < n; ++i) s += kAlphabet[rng.next_below(std::size(kAlphabet))];
  return s;
}

TEST(StopMatcher, PropertyRandomSplitsMatchReference) {
  Pcg32 rng(4242);
  int stopped_cases = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const std::string text = random_text(rng, 40);
    std::vector<std::string> stops;
    const uint32_t n_stops = rng.next_below(4);
    for (uint32_t i = 0; i < n_stops; ++i) {
      std::string stop;
      if (!text.empty() && rng.next_below(2) == 0) {
        // A substring of the text (may cut a UTF-8 character: bytes are bytes).
        const uint32_t a = rng.next_below(static_cast<uint32_t>(text.size()));
        const uint32_t len =
            1 + rng.next_below(std::min<uint32_t>(6, static_cast<uint32_t>(text.size()) - a));
        stop = text.substr(a, len);
      } else {
        while (stop.empty()) stop = random_text(rng, 3);
      }
      stops.push_back(stop);
    }
    // Random split into pieces at byte offsets, empty pieces included.
    std::vector<std::string> pieces;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t len = std::min<size_t>(rng.next_below(7), text.size() - pos);
      pieces.push_back(text.substr(pos, len));
      pos += len;
    }
    if (rng.next_below(4) == 0) pieces.emplace_back();

    StopMatcher m = make(stops);
    const Streamed got = stream(m, pieces);
    const StopPoint want = naive_first_stop(text, stops);
    ASSERT_EQ(got.text, text.substr(0, want.offset)) << "trial " << trial;
    ASSERT_EQ(got.stopped, want.stop_index >= 0) << "trial " << trial;
    if (got.stopped) {
      ASSERT_EQ(got.stop_index, want.stop_index) << "trial " << trial;
      ++stopped_cases;
    }
    const StopPoint whole = find_first_stop(text, stops);
    ASSERT_EQ(whole.offset, want.offset);
    ASSERT_EQ(whole.stop_index, want.stop_index);
  }
  EXPECT_GT(stopped_cases, 1000);  // the generator exercises both outcomes
}

TEST(StopMatcher, HoldsBackNoMoreThanNeeded) {
  // Whatever is held is a proper prefix of a stop string, so shorter than the longest stop.
  Pcg32 rng(77);
  const std::vector<std::string> stops = {"<|im_end|>", "\n\nUser:", "🦙🦙"};
  StopMatcher m = make(stops);
  for (int i = 0; i < 2000 && !m.stopped(); ++i) {
    (void)m.feed(random_text(rng, 3));
    ASSERT_LT(m.held_size(), 10u);
  }
}

}  // namespace
}  // namespace geniex::sampling
