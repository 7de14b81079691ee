// StopMatcher: stop strings over a stream of decoded text pieces. Text that can no longer
// begin a stop string is emitted at once; a tail that is a prefix of some stop string is held
// back until the next piece decides it. Matching is byte-wise (a valid UTF-8 stop string only
// matches at character boundaries of valid UTF-8 text); pieces that split a character are
// passed through as they come.
//
// The stop point is the first place where any stop string is complete: the occurrence with
// the smallest end offset, and among those ending there the longest (earliest start). This
// does not depend on how the text is split into pieces: for any split, the concatenated emits
// (+ flush() when not stopped) equal the full text cut before that occurrence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace geniex::sampling {

class StopMatcher {
 public:
  struct FeedResult {
    std::string emit;         ///< text now safe to show
    bool stopped = false;     ///< a stop string completed; emit ends right before it
    int32_t stop_index = -1;  ///< which stop string (index into the configured list), or -1
  };

  /// kInvalidArgument when a stop string is empty. An empty list never stops.
  static Result<StopMatcher> create(std::vector<std::string> stops);

  /// Feeds the next piece. After a stop, every further feed returns {"", true, index}.
  FeedResult feed(std::string_view piece);
  /// The held-back text at the end of generation ("" after a stop); clears it.
  std::string flush();
  /// Forgets held text and the stopped state, keeping the stop strings.
  void reset();

  [[nodiscard]] bool stopped() const { return stop_index_ >= 0; }
  [[nodiscard]] size_t held_size() const { return held_.size(); }
  [[nodiscard]] const std::vector<std::string>& stops() const { return stops_; }

 private:
  explicit StopMatcher(std::vector<std::string> stops);

  /// Length of the longest suffix of held_ that is a proper prefix of some stop string.
  [[nodiscard]] size_t partial_match_length() const;

  std::vector<std::string> stops_;
  size_t max_stop_len_ = 0;
  std::string held_;  // held-back text, then the working buffer during feed()
  int32_t stop_index_ = -1;
};

/// The reference semantics (a plain scan of the whole text), for tests and for callers that
/// have the whole text: the offset where `text` is cut and the stop's index, or
/// {text.size(), -1} when no stop string occurs.
struct StopPoint {
  size_t offset = 0;
  int32_t stop_index = -1;
};
StopPoint find_first_stop(std::string_view text, const std::vector<std::string>& stops);

}  // namespace geniex::sampling
