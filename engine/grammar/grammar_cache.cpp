// Grammars by source text, least recently used out first (see grammar_cache.h).
#include "engine/grammar/grammar_cache.h"

namespace pagedchat::grammar {

std::shared_ptr<const Grammar> GrammarCache::get(const std::string& key, const std::function<Grammar()>& make) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
  }
  // Made outside the lock: a large schema takes a while, and other requests need not wait.
  auto grammar = std::make_shared<const Grammar>(make());
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;  // made meanwhile
  order_.emplace_front(key, grammar);
  index_[key] = order_.begin();
  if (order_.size() > kCapacity) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
  return grammar;
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

}  // namespace pagedchat::grammar
