// Prompt text with its markup spans (see prompt_text.h).
#include "engine/chat/prompt_text.h"

#include <algorithm>

namespace pagedchat {

PromptText& PromptText::markup(std::string_view s) {
  if (s.empty()) return *this;
  const size_t begin = str_.size();
  str_ += s;
  if (!markup_.empty() && markup_.back().end == begin) markup_.back().end = str_.size();
  else markup_.push_back({begin, str_.size()});
  return *this;
}

PromptText& PromptText::text(std::string_view s) {
  str_ += s;
  return *this;
}

PromptText& PromptText::append(const PromptText& other) {
  size_t at = 0;
  for (const TextSpan& m : other.markup_) {
    text(std::string_view(other.str_).substr(at, m.begin - at));
    markup(std::string_view(other.str_).substr(m.begin, m.end - m.begin));
    at = m.end;
  }
  return text(std::string_view(other.str_).substr(at));
}

PromptText PromptText::suffix(size_t from) const {
  PromptText out;
  from = std::min(from, str_.size());
  out.str_ = str_.substr(from);
  for (const TextSpan& m : markup_)
    if (m.end > from) out.markup_.push_back({std::max(m.begin, from) - from, m.end - from});
  return out;
}

PromptText PromptText::slice(size_t begin, size_t end) const {
  PromptText out;
  end = std::min(end, str_.size());
  begin = std::min(begin, end);
  out.str_ = str_.substr(begin, end - begin);
  for (const TextSpan& m : markup_)
    if (m.end > begin && m.begin < end)
      out.markup_.push_back({std::max(m.begin, begin) - begin, std::min(m.end, end) - begin});
  return out;
}

PromptText PromptText::derived(std::string s) const {
  PromptText out;
  if (all_markup()) out.markup(s);
  else out.text(s);
  return out;
}

bool PromptText::starts_with(const PromptText& prefix) const {
  if (prefix.size() > size() || str_.compare(0, prefix.size(), prefix.str_) != 0) return false;
  // Our spans over the prefix's bytes, clipped to its end, must be its spans.
  std::vector<TextSpan> ours;
  for (const TextSpan& m : markup_)
    if (m.begin < prefix.size()) ours.push_back({m.begin, std::min(m.end, prefix.size())});
  return ours == prefix.markup_;
}

}  // namespace pagedchat
