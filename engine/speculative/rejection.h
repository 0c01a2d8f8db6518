#pragma once
// The verifier's rule for one drafted token (speculative sampling, Leviathan et al. 2023 and
// Chen et al. 2023): with p the target's distribution at that position and q the drafter's,
// the draft d is kept with probability min(1, p(d) / q(d)); otherwise the token is drawn from
// max(0, p - q), renormalized. The token that comes out is distributed exactly as p, whatever
// q was. A lookup drafter's q is a point mass on d: d is kept with probability p(d), and a
// rejection draws from p without d. With greedy sampling p is a point mass on the argmax: d is
// kept exactly when it is the argmax, and the argmax comes out otherwise, with no draw.

#include <cstdint>

#include "engine/sample/sampler.h"

namespace pagedchat {

// p: the target's distribution (Sampler::distribution); q: the drafter's, or null for a point
// mass on `draft`. Returns draft when it is kept, else the replacement; draws from rng only when
// p is not a point mass. `residual` is scratch.
int32_t accept_or_resample(const TokenProbs& p, int32_t draft, const TokenProbs* q, Sampler& rng,
                           TokenProbs& residual);

}  // namespace pagedchat
