// Operation counts for a hang's diagnosis: a benchmark whose operations wait on peers (a
// collective) counts each batch it issues and completes, so that when a case passes its deadline
// rank 0 can name the ranks that never started the operation their peers wait in (two relaxed
// atomic increments a batch: nothing a timed loop can feel). Part of the public face of
// bench/core.
#pragma once

namespace clusterbench::progress {

/// Around each batch of `ops` operations a benchmark issues to its peers.
void started(long long ops);
void finished(long long ops);

}  // namespace clusterbench::progress
