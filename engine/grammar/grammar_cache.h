#pragma once
// Compiled grammars kept by their source text, so the requests of one client with one schema
// share one Grammar, and with it the engine's cached masks (engine/grammar/token_masker.h keys
// them by the grammar's identity): without this every request would build its masks again.
// Thread-safe (the server parses on its own threads); the least recently used go past kCapacity.

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/grammar/grammar.h"

namespace pagedchat::grammar {

class GrammarCache {
 public:
  static constexpr size_t kCapacity = 64;

  // The grammar made from `key` before, or make() now (its exceptions pass through; nothing is
  // kept then).
  std::shared_ptr<const Grammar> get(const std::string& key, const std::function<Grammar()>& make);
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const Grammar>>> order_;  // most recent first
  std::unordered_map<std::string, decltype(order_)::iterator> index_;
};

}  // namespace pagedchat::grammar
