// A request's cache salt from a client's string (see request.h).
#include "engine/engine/request.h"

namespace pagedchat {

uint64_t cache_salt_of(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h ? h : 1;  // 0 means "no salt"
}

}  // namespace pagedchat
