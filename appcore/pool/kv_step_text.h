#pragma once
// An engine step in one sentence (which chats' prompt chunks and next tokens it computed, and
// who was preempted or swapped), for the step timeline's tooltips and the batching lesson.

#include <QString>

#include <functional>

#include "appcore/pool/pool_frame.h"

// One step told in a sentence: "Step 12 computes 32 tokens in one pass: Chat B's prompt, tokens
// 32-61 (30); Chat A's next token (1)". name(seq) as for narrateKvEvents.
QString describeStepRecord(const pagedchat::StepRecord& step, const std::function<QString(pagedchat::SequenceId)>& name);
// A step that computed a prompt (or recompute) chunk and a decode together: what continuous
// batching with chunked prefill is for.
bool isMixedStep(const pagedchat::StepRecord& step);
