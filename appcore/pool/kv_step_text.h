#pragma once
// An engine step in one sentence (which chats' prompt chunks and next tokens it computed, and
// who was preempted or swapped), for the step timeline's tooltips and the batching lesson.

#include <QString>

#include <functional>

#include "appcore/pool/pool_frame.h"
#include "engine/bench/roofline.h"

// One step told in a sentence: "Step 12 computes 32 tokens in one pass: Chat B's prompt, tokens
// 32-61 (30); Chat A's next token (1)". name(seq) as for narrateKvEvents.
QString describeStepRecord(const pagedchat::StepRecord& step, const std::function<QString(pagedchat::SequenceId)>& name);
// A step that computed a prompt (or recompute) chunk and a decode together: what continuous
// batching with chunked prefill is for.
bool isMixedStep(const pagedchat::StepRecord& step);
// What the step cost and where it sits on the roofline: "6.9 GFLOP over 92.7 MiB read: 71 FLOP
// per byte, above this machine's ridge (15): compute-bound. 11.2 ms: 617 GFLOP/s, 92% of the
// roof there." roof unmeasured (zero): the counts and the time only.
QString describeStepCost(const pagedchat::StepRecord& step, const pagedchat::RooflineCeilings& roof);
// Compute-bound: its arithmetic intensity is at or past the ridge (false when roof is unmeasured).
bool isComputeBound(const pagedchat::StepRecord& step, const pagedchat::RooflineCeilings& roof);
