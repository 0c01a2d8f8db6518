#pragma once
// The disk tier's file primitives, shared by the block store (kv_disk_store.h) and the folder's
// ledger (kv_disk_ledger.h): whole files written new or read back without ever blocking on
// something that is not a regular file, and the writer a temporary file's name records.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pagedchat {

// Writes all of `bytes` to a new file at `path` (it must not exist); errno on failure (the file removed).
int write_file(const std::string& path, std::span<const uint8_t> bytes);

enum class FileRead { ok, missing, bad };

// The whole file: missing (or unreadable), or bad (not a regular file, or longer than max_bytes).
// Non-blocking open: a FIFO under the name must not stall the reader.
FileRead read_file(const std::string& path, std::vector<uint8_t>& out, size_t max_bytes);

// A temporary file's writer, from its name (<name>.<pid>.<n>.tmp), or 0.
pid_t writer_of(const std::string& name);
// Whether that writer is gone (its leftovers may be removed).
bool writer_is_dead(const std::string& name);

}  // namespace pagedchat
