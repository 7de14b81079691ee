#include "engine/sampling/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace geniex::sampling {
namespace {

/// Earliest-completing occurrence of any stop in `text` whose end lies after `min_end`
/// (occurrences ending at or before it are known to be absent). Ties on the end go to the
/// longest stop, then the lowest index.
StopPoint earliest_completion(std::string_view text, const std::vector<std::string>& stops,
                              size_t min_end) {
  StopPoint best{text.size(), -1};
  size_t best_end = SIZE_MAX;
  for (size_t s = 0; s < stops.size(); ++s) {
    const std::string& stop = stops[s];
    if (stop.size() > text.size()) continue;
    const size_t from = min_end >= stop.size() ? min_end - stop.size() + 1 : 0;
    const size_t pos = text.find(stop, from);
    if (pos == std::string_view::npos) continue;
    const size_t end = pos + stop.size();
    if (end < best_end || (end == best_end && pos < best.offset)) {
      best_end = end;
      best = StopPoint{pos, static_cast<int32_t>(s)};
    }
  }
  return best;
}

}  // namespace

StopPoint find_first_stop(std::string_view text, const std::vector<std::string>& stops) {
  return earliest_completion(text, stops, 0);
}

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) max_stop_len_ = std::max(max_stop_len_, s.size());
  held_.reserve(max_stop_len_ * 2);
}

Result<StopMatcher> StopMatcher::create(std::vector<std::string> stops) {
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) {
      return invalid_argument("stop strings: entry " + std::to_string(i) + " is empty");
    }
  }
  return StopMatcher(std::move(stops));
}

size_t StopMatcher::partial_match_length() const {
  const std::string_view text = held_;
  size_t best = 0;
  for (const std::string& stop : stops_) {
    const std::string_view s = stop;
    for (size_t len = std::min(s.size() - 1, text.size()); len > best; --len) {
      if (text.substr(text.size() - len) == s.substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

StopMatcher::FeedResult StopMatcher::feed(std::string_view piece) {
  FeedResult r;
  if (stopped()) {
    r.stopped = true;
    r.stop_index = stop_index_;
    return r;
  }
  // Every occurrence ending inside the old held_ text was ruled out by the previous call.
  const size_t old_size = held_.size();
  held_.append(piece);
  const StopPoint hit = earliest_completion(held_, stops_, old_size);
  if (hit.stop_index >= 0) {
    stop_index_ = hit.stop_index;
    r.emit.assign(held_, 0, hit.offset);
    r.stopped = true;
    r.stop_index = hit.stop_index;
    held_.clear();
    return r;
  }
  const size_t keep = partial_match_length();
  r.emit.assign(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return r;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

void StopMatcher::reset() {
  held_.clear();
  stop_index_ = -1;
}

}  // namespace geniex::sampling
