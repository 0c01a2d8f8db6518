// Prometheus exposition of the engine's stats.
#include "server/api/metrics_text.h"

#include "engine/engine/engine.h"

namespace {

void metric(QByteArray& out, const char* name, const char* type, const char* help, double value) {
  out += QByteArray("# HELP pagedchat_") + name + ' ' + help + "\n# TYPE pagedchat_" + name + ' ' + type + "\npagedchat_" +
         name + ' ' + QByteArray::number(value, 'g', 15) + '\n';
}

}  // namespace

QByteArray prometheusText(const pagedchat::EngineStats& s, const ServerCounters& server) {
  QByteArray out;
  metric(out, "kv_blocks_total", "gauge", "KV blocks in the device pool.", s.kv.num_blocks);
  metric(out, "kv_blocks_used", "gauge", "KV blocks held by a sequence (ref count >= 1).", s.kv.num_used_blocks);
  metric(out, "kv_blocks_cached", "gauge", "KV blocks with no owner that keep their content for the prefix cache.", s.kv.num_cached_blocks);
  metric(out, "kv_blocks_free", "gauge", "KV blocks free.", s.kv.num_free_blocks);
  metric(out, "kv_block_size_tokens", "gauge", "Tokens per KV block.", s.kv.block_size);
  metric(out, "prefix_cache_lookup_tokens_total", "counter", "Prompt tokens looked up in the prefix cache.", static_cast<double>(s.kv.prefix_lookup_tokens));
  metric(out, "prefix_cache_hit_tokens_total", "counter", "Prompt tokens served from the prefix cache.", static_cast<double>(s.kv.prefix_hit_tokens));
  metric(out, "preemptions_total", "counter", "Sequences preempted (recompute).", static_cast<double>(s.num_preempted));
  metric(out, "swap_outs_total", "counter", "Sequences preempted by swapping to host memory.", static_cast<double>(s.num_swapped_out));
  metric(out, "requests_running", "gauge", "Sequences running.", s.num_running);
  metric(out, "requests_waiting", "gauge", "Sequences waiting to start.", s.num_waiting);
  metric(out, "sequences_parked", "gauge", "Sequences kept resident between turns.", s.num_parked);
  metric(out, "prompt_tokens_total", "counter", "Prompt tokens computed.", static_cast<double>(s.num_prefill_tokens));
  metric(out, "generation_tokens_total", "counter", "Tokens generated (sampled).", static_cast<double>(s.num_generated));
  metric(out, "steps_total", "counter", "Forward passes.", static_cast<double>(s.num_steps));
  metric(out, "spec_draft_tokens_total", "counter", "Speculative decoding: drafted tokens verified.", static_cast<double>(s.num_draft_tokens));
  metric(out, "spec_accepted_tokens_total", "counter", "Speculative decoding: drafted tokens kept.", static_cast<double>(s.num_accepted_tokens));
  metric(out, "spec_acceptance_rate", "gauge", "Drafted tokens kept over drafted tokens verified (0 before any).",
         s.num_draft_tokens ? static_cast<double>(s.num_accepted_tokens) / static_cast<double>(s.num_draft_tokens) : 0.0);
  const int64_t decodes = s.num_spec_decodes + s.num_plain_decodes;
  metric(out, "decode_steps_total", "counter", "Decode chunks (a sequence's one step), with or without drafts.", static_cast<double>(decodes));
  metric(out, "spec_decode_steps_total", "counter", "Decode chunks that verified drafts.", static_cast<double>(s.num_spec_decodes));
  metric(out, "tokens_per_decode_step", "gauge", "Tokens a decode chunk gave on average (1 without speculation).",
         decodes ? static_cast<double>(decodes + s.num_accepted_tokens) / static_cast<double>(decodes) : 1.0);
  metric(out, "http_requests_active", "gauge", "Completion requests in flight.", server.numActive);
  metric(out, "http_requests_total", "counter", "Completion requests given to the engine.", static_cast<double>(server.numRequests));
  metric(out, "http_requests_rejected_total", "counter", "Requests refused with an error status.", static_cast<double>(server.numRejected));
  metric(out, "http_requests_aborted_total", "counter", "Requests whose client hung up before the end.", static_cast<double>(server.numAborted));
  metric(out, "http_slow_reader_holds_total", "counter", "Requests held back because their client read its stream too slowly.",
         static_cast<double>(server.numSlowReaderHolds));
  metric(out, "http_slow_reader_aborts_total", "counter", "Held requests aborted when their client did not catch up in time.",
         static_cast<double>(server.numSlowReaderAborts));
  metric(out, "http_requests_held", "gauge", "Requests held back now (their clients read too slowly).", server.numHeld);
  metric(out, "http_connections", "gauge", "Open HTTP connections.", server.numConnections);
  metric(out, "http_connections_refused_total", "counter", "Connections over the cap, answered 503.",
         static_cast<double>(server.numConnectionsRefused));
  metric(out, "sequences_held", "gauge", "Sequences not scheduled while their clients catch up.", s.num_held);
  // What a client waits: a summary's sum and count (Prometheus' own form), and the longest.
  out += "# HELP pagedchat_time_to_first_token_seconds From a request's acceptance to its first token: queue and prompt.\n"
         "# TYPE pagedchat_time_to_first_token_seconds summary\n";
  out += "pagedchat_time_to_first_token_seconds_sum " + QByteArray::number(server.firstTokenWaitSeconds, 'g', 15) + '\n';
  out += "pagedchat_time_to_first_token_seconds_count " + QByteArray::number(static_cast<double>(server.numFirstTokenWaits), 'g', 15) + '\n';
  metric(out, "time_to_first_token_seconds_max", "gauge", "The longest wait for a first token so far.", server.maxFirstTokenWaitSeconds);
  if (s.disk_tier) {
    metric(out, "kv_disk_blocks", "gauge", "KV blocks on disk (the --kv-disk folder).", static_cast<double>(s.disk.num_files));
    metric(out, "kv_disk_bytes", "gauge", "Bytes of the KV blocks on disk.", static_cast<double>(s.disk.bytes));
    metric(out, "kv_disk_read_blocks_total", "counter", "KV blocks read back from disk into the pool.", static_cast<double>(s.kv.num_disk_reads));
    metric(out, "kv_disk_hit_tokens_total", "counter", "Prompt tokens served by blocks read from disk.", static_cast<double>(s.kv.disk_hit_tokens));
    metric(out, "kv_disk_written_blocks_total", "counter", "KV blocks queued to be written to disk.", static_cast<double>(s.kv.num_disk_writes));
    metric(out, "kv_disk_refused_blocks_total", "counter", "Block files found damaged, removed and computed again.", static_cast<double>(s.disk.num_refused));
    metric(out, "kv_disk_dropped_writes_total", "counter", "Block writes not done (a full disk, or a queue the disk could not keep up with).",
           static_cast<double>(s.disk.num_dropped));
  }
  return out;
}
