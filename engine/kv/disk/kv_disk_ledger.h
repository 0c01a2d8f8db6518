#pragma once
// What a disk tier's folder remembers besides its blocks (kv_disk_store.h), in two small text
// files: which model file each model identity's blocks came from, so that a file replaced under
// the same name is said rather than silently missed (its blocks are another namespace's and
// never read); and, per namespace, how fast this machine computed that model's prompts, so that a
// restore after a restart can say about what it saved before anything was computed.
// Best effort: a folder that cannot be read or written records nothing; written aside, then
// renamed, so another process sharing the folder reads either file whole.

#include <cstdint>
#include <string>

namespace pagedchat {

// Records that model_path has model_identity in <dir>/models. True when the folder had recorded
// the same path with another identity: the file changed since those blocks were written.
bool kv_disk_record_model(const std::string& dir, const std::string& model_path, uint64_t model_identity);

// The prompt rate (FLOP/s as StepCostModel counts them) saved in a namespace's folder; 0 when none.
double kv_disk_load_prompt_rate(const std::string& namespace_dir);
void kv_disk_save_prompt_rate(const std::string& namespace_dir, double flops_per_second);

}  // namespace pagedchat
