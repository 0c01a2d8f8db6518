#pragma once
// The pushdown steps under GrammarMatcher and TokenMasker: a position in a grammar is a set of
// stacks of element pointers (the top of each is the character class the next code point must
// match; an empty stack: the text may end here), advanced a code point, or a UTF-8 byte, at a
// time.
//
// TokenMasker also steps stacks cut short: their bottom part replaced by cut_context(), which
// stands for "the rest of the stack, not known here". A stack that pops down to it has left
// the part the masker looked at (it "escaped"): what the next character does there depends on
// the context, so the step drops that stack and says so.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/grammar/grammar.h"

namespace pagedchat::grammar {

using Stack = std::vector<const Element*>;

// The bottom element of a cut stack (see above); never an element of a grammar.
const Element* cut_context();

// The stack with the rule references at its top replaced by each of their alternatives, until
// a character class (or nothing, or the cut) is on top, into `out`.
void expand(const Grammar& g, Stack stack, std::vector<Stack>& out);
std::vector<Stack> deduplicated(std::vector<Stack> stacks);

// The stacks at the start of the grammar (each alternative of the root).
std::vector<Stack> initial_stacks(const Grammar& g);

// Advances `stacks` over one UTF-8 byte; `pending` holds the bytes of a character begun. False
// when no stack can go on (the stacks are then unspecified) or the bytes are not UTF-8. A byte
// that begins a character drops the stacks at the cut and sets *escaped (when given).
bool advance_byte(const Grammar& g, std::vector<Stack>& stacks, std::string& pending, unsigned char byte,
                  bool* escaped = nullptr);

// A cheap look before advance_byte: false when `byte` surely cannot come next (an ASCII
// character no stack's top admits, with no stack at the cut); true when it may.
bool may_take_byte(const std::vector<Stack>& stacks, const std::string& pending, unsigned char byte);

// Whether some stack (not one at the cut) is empty: the text may end here.
bool may_end(const std::vector<Stack>& stacks);

}  // namespace pagedchat::grammar
