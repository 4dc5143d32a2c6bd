// The checkpoint directory before any rank writes: created, refused if another program's, and
// cleaned of the temporaries a killed run left.
#pragma once

#include "initrt/base/program.h"

#include <cstdint>
#include <string>

namespace initrt {

/// Creates `dir` and refuses it if it holds another program's checkpoint by what one process can
/// tell cheaply: an index.json with another program id, or shard files of another mesh size.
/// With `overwrite`, removes those instead. Run once per job, before any rank writes.
bool checkOutputDir(const std::string &dir, const Program &program, bool overwrite,
                    std::string &error);

/// Refuses rank `rank`'s shard file if it is another program's (another program id, or not an
/// initc shard), unless `overwrite`, which removes it. Every rank checks its own file, so a
/// resumed 16,384-rank job reads each header once, in parallel.
bool checkOwnShard(const std::string &dir, const Program &program, int64_t rank, bool overwrite,
                   std::string &error);

/// Removes the temporary files a killed or failed run left in `dir`: of rank `rank`'s shard file,
/// or, with `rank` < 0, of every shard file and index.json. A temporary that a live writer holds
/// (removeAbandonedTemporary) is kept, wherever that writer runs. Returns how many were removed.
int removeStaleTemporaries(const std::string &dir, const Program &program, int64_t rank);

} // namespace initrt
