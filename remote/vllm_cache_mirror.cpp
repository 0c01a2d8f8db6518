// vLLM's cache as its KV events tell it: stores take the lowest free slot, removals free theirs.
#include "remote/vllm_cache_mirror.h"

#include <algorithm>

namespace pagedchat::remote {

int32_t VllmCacheMirror::Tier::take() {
  if (!free.empty()) {
    const int32_t slot = *free.begin();
    free.erase(free.begin());
    return slot;
  }
  held.emplace_back();
  return static_cast<int32_t>(held.size()) - 1;
}

std::vector<VllmMirrorChange> VllmCacheMirror::apply(const VllmKvBatch& batch) {
  std::vector<VllmMirrorChange> changes;
  for (const VllmKvEvent& e : batch.events) {
    switch (e.kind) {
      case VllmKvEventKind::block_stored: {
        Tier& tier = tier_of(e.medium);
        const bool host = &tier == &host_;
        block_size_ = e.block_size;
        // The chain: the parent's, while it is held; else a new one (a prompt's first block).
        int32_t chain = 0;  // 0: a new one, made when a block of this event first needs it
        if (e.parent_block_hash)
          if (auto it = chain_of_.find({e.group_idx, *e.parent_block_hash}); it != chain_of_.end()) chain = it->second;
        for (size_t i = 0; i < e.block_hashes.size(); ++i) {
          const std::pair<int32_t, VllmBlockHash> key{e.group_idx, e.block_hashes[i]};
          ++num_stored_;
          if (tier.slot_of.count(key)) {
            ++num_restored_;  // stored again while held (vLLM does not, but a replayed batch may)
            continue;
          }
          VllmMirrorBlock b;
          b.hash = e.block_hashes[i];
          b.parent = i == 0 ? e.parent_block_hash : std::optional<VllmBlockHash>(e.block_hashes[i - 1]);
          // A chain is the parent's already when this block is also held in the other tier.
          const auto known = chain_of_.find(key);
          if (known != chain_of_.end() && chain == 0) chain = known->second;  // the blocks after it continue its chain
          if (chain == 0) chain = next_chain_++;
          b.chain = known != chain_of_.end() ? known->second : chain;
          const size_t first = i * static_cast<size_t>(e.block_size);
          if (first < e.token_ids.size()) {
            const size_t end = std::min(e.token_ids.size(), first + static_cast<size_t>(e.block_size));
            b.tokens.assign(e.token_ids.begin() + static_cast<std::ptrdiff_t>(first), e.token_ids.begin() + static_cast<std::ptrdiff_t>(end));
          }
          b.num_tokens = static_cast<int32_t>(b.tokens.size());
          b.lora_name = e.lora_name;
          b.group = e.group_idx;
          chain_of_[key] = b.chain;
          const int32_t slot = tier.take();
          changes.push_back({VllmMirrorChange::Kind::stored, host, slot, b.chain});
          tier.held[static_cast<size_t>(slot)] = std::move(b);
          tier.slot_of[key] = slot;
        }
        break;
      }
      case VllmKvEventKind::block_removed: {
        Tier& tier = tier_of(e.medium);
        Tier& other = &tier == &device_ ? host_ : device_;
        for (const VllmBlockHash& h : e.block_hashes) {
          const std::pair<int32_t, VllmBlockHash> key{e.group_idx, h};
          const auto it = tier.slot_of.find(key);
          if (it == tier.slot_of.end()) {
            ++num_unknown_removed_;
            continue;
          }
          ++num_removed_;
          const int32_t slot = it->second;
          changes.push_back({VllmMirrorChange::Kind::removed, &tier == &host_, slot, tier.held[static_cast<size_t>(slot)]->chain});
          tier.held[static_cast<size_t>(slot)].reset();
          tier.free.insert(slot);
          tier.slot_of.erase(it);
          if (!other.slot_of.count(key)) chain_of_.erase(key);
        }
        break;
      }
      case VllmKvEventKind::all_blocks_cleared:
        // vLLM's reset_prefix_cache: every tier's blocks go (the slots stay, empty).
        for (Tier* tier : {&device_, &host_})
          for (size_t slot = 0; slot < tier->held.size(); ++slot) {
            if (!tier->held[slot]) continue;
            changes.push_back({VllmMirrorChange::Kind::removed, tier == &host_, static_cast<int32_t>(slot), tier->held[slot]->chain});
            tier->held[slot].reset();
            tier->free.insert(static_cast<int32_t>(slot));
            ++num_removed_;
          }
        device_.slot_of.clear();
        host_.slot_of.clear();
        chain_of_.clear();
        break;
    }
  }
  return changes;
}

void VllmCacheMirror::clear() { *this = VllmCacheMirror(); }

}  // namespace pagedchat::remote
