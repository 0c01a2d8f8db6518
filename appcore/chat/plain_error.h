#pragma once
// The engine's and the loader's errors are precise and technical ("the prompt needs 40 KV
// blocks of 16 tokens; the pool has 32", "metadata 'tokenizer.ggml.merges': array count 48900
// exceeds the file"). A user first needs one plain sentence of what happened and what to do;
// the technical text stays one click away (the chat's "details", a box's "Show Details…").

#include <QString>

struct PlainError {
  QString sentence;  // for the person: what happened, and what to do when something can be done
  QString detail;    // the technical text, as it came
};

// A reply that failed (EngineBridge::replyFailed's text).
PlainError explainReplyError(const QString& detail);
// A model that could not be opened (the loader's exception text).
PlainError explainLoadError(const QString& detail);
